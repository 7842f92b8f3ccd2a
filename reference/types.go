package reference

import (
	"fmt"
	"strings"
)

// DType is an element type of an allreduce. The numeric values are part of the
// kernel ABI (kernels/device/abi.cuh uses the same numbers); do not reorder.
type DType uint8

const (
	F32  DType = 0
	F16  DType = 1
	BF16 DType = 2
)

// DTypes lists every element type in a stable order.
var DTypes = []DType{F32, F16, BF16}

// Size is the width of one element in bytes.
func (d DType) Size() int {
	switch d {
	case F32:
		return 4
	case F16, BF16:
		return 2
	}
	panic(fmt.Sprintf("reference: unknown dtype %d", d))
}

func (d DType) String() string {
	switch d {
	case F32:
		return "f32"
	case F16:
		return "f16"
	case BF16:
		return "bf16"
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// ParseDType accepts the names String returns plus the usual aliases.
func ParseDType(s string) (DType, error) {
	switch strings.ToLower(s) {
	case "f32", "fp32", "float32", "float":
		return F32, nil
	case "f16", "fp16", "float16", "half":
		return F16, nil
	case "bf16", "bfloat16":
		return BF16, nil
	}
	return 0, fmt.Errorf("unknown dtype %q (valid: f32, f16, bf16)", s)
}

// Op is a reduction operator. Values are part of the kernel ABI.
type Op uint8

const (
	Sum Op = 0
	Max Op = 1
	Min Op = 2
)

// Ops lists every operator in a stable order.
var Ops = []Op{Sum, Max, Min}

func (o Op) String() string {
	switch o {
	case Sum:
		return "sum"
	case Max:
		return "max"
	case Min:
		return "min"
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// ParseOp accepts the names String returns.
func ParseOp(s string) (Op, error) {
	switch strings.ToLower(s) {
	case "sum":
		return Sum, nil
	case "max":
		return Max, nil
	case "min":
		return Min, nil
	}
	return 0, fmt.Errorf("unknown op %q (valid: sum, max, min)", s)
}

// InputKind selects how inputs are generated and therefore how strictly a
// result can be compared.
type InputKind uint8

const (
	// Random inputs use the full mantissa; sums are compared bit for bit with
	// an order-aware reference where the variant declares its order, and
	// within an error bound of the float64 reference otherwise.
	Random InputKind = 0
	// Exact inputs are small integers whose sum is exactly representable in
	// every dtype for any order, so any correct implementation matches bit
	// for bit.
	Exact InputKind = 1
	// Special inputs are signed zeros, subnormals, infinities, NaNs and the
	// largest finite values (special.go). Results are compared bit for bit
	// where IEEE 754 defines them, and by class (a NaN; either zero) where
	// it leaves a choice (doc.go).
	Special InputKind = 2
)

func (k InputKind) String() string {
	switch k {
	case Random:
		return "random"
	case Exact:
		return "exact"
	case Special:
		return "special"
	}
	return fmt.Sprintf("input(%d)", uint8(k))
}

// ParseInputKind accepts the names String returns.
func ParseInputKind(s string) (InputKind, error) {
	switch strings.ToLower(s) {
	case "random", "rand":
		return Random, nil
	case "exact":
		return Exact, nil
	case "special":
		return Special, nil
	}
	return 0, fmt.Errorf("unknown input kind %q (valid: random, exact, special)", s)
}

// Order is the reduction order an implementation declares. It decides
// whether a sum can be compared bit for bit.
type Order uint8

const (
	// OrderUnknown: compare sums within the error bound of the float64
	// reference (random inputs) or bit for bit (exact inputs).
	OrderUnknown Order = 0
	// OrderRankAscendingF32: acc = float32(x[0]); acc += float32(x[r]) for
	// r = 1..N-1 in float32; the result rounded once to the dtype. Every rank
	// gets the same bits, and so does the reference.
	OrderRankAscendingF32 Order = 1
)

func (o Order) String() string {
	switch o {
	case OrderUnknown:
		return "unknown"
	case OrderRankAscendingF32:
		return "rank-ascending-f32"
	}
	return fmt.Sprintf("order(%d)", uint8(o))
}

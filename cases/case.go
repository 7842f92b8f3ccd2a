// Package cases is the case matrix: what one case is, its stable ID, the
// default and quick matrices, and the filters that select from them.
package cases

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/registry"
	"github.com/artest/artest/reference"
)

// Mode is how an allreduce is called.
type Mode struct {
	// InPlace: the output overwrites the input.
	InPlace bool
	// Registered: the input already lives in the IPC (registered) buffer;
	// otherwise it lives in private memory and each call copies it in first
	// (staged), as frameworks do for tensors they did not allocate.
	Registered bool
	// Graph: the calls are captured into a CUDA graph and replayed.
	Graph bool
	// Offset shifts input and output by this many elements from a 256-byte
	// aligned address, so 16-byte vector paths meet misaligned buffers.
	Offset int
}

// AllModes is every combination of the three boolean axes, offset 0.
var AllModes = func() []Mode {
	var ms []Mode
	for _, reg := range []bool{true, false} {
		for _, ip := range []bool{false, true} {
			for _, g := range []bool{false, true} {
				ms = append(ms, Mode{InPlace: ip, Registered: reg, Graph: g})
			}
		}
	}
	return ms
}()

// String spells the mode as case IDs do: "oop-reg-plain", "ip-stg-graph",
// with "-offN" appended when Offset is not zero.
func (m Mode) String() string {
	s := "oop"
	if m.InPlace {
		s = "ip"
	}
	if m.Registered {
		s += "-reg"
	} else {
		s += "-stg"
	}
	if m.Graph {
		s += "-graph"
	} else {
		s += "-plain"
	}
	if m.Offset != 0 {
		s += fmt.Sprintf("-off%d", m.Offset)
	}
	return s
}

// ParseMode reads what String writes.
func ParseMode(s string) (Mode, error) {
	parts := strings.Split(s, "-")
	bad := fmt.Errorf("bad mode %q: want {oop|ip}-{reg|stg}-{plain|graph}[-offN], e.g. oop-reg-plain", s)
	if len(parts) != 3 && len(parts) != 4 {
		return Mode{}, bad
	}
	var m Mode
	switch parts[0] {
	case "oop":
	case "ip":
		m.InPlace = true
	default:
		return Mode{}, bad
	}
	switch parts[1] {
	case "reg":
		m.Registered = true
	case "stg":
	default:
		return Mode{}, bad
	}
	switch parts[2] {
	case "graph":
		m.Graph = true
	case "plain":
	default:
		return Mode{}, bad
	}
	if len(parts) == 4 {
		n, err := strconv.Atoi(strings.TrimPrefix(parts[3], "off"))
		if err != nil || !strings.HasPrefix(parts[3], "off") || n <= 0 || n > MaxOffset {
			return Mode{}, fmt.Errorf("bad mode %q: offset must be off1..off%d", s, MaxOffset)
		}
		m.Offset = n
	}
	return m, nil
}

// MaxOffset bounds Mode.Offset (elements).
const MaxOffset = 64

// Case is one allreduce configuration to verify and time. Its variant is
// the one the matrix resolved from the run's set (registry.Set): the runner
// and the backends take it from here and look nothing up again.
type Case struct {
	Variant *kernels.Variant
	// Coll is the collective; Bytes is its full buffer (the allreduce's
	// message, the reduce-scatter's input, the all-gather's output), and
	// each rank's part of the other two is Bytes/Ranks.
	Coll  reference.Coll
	DType reference.DType
	// Op is the reduction; an all-gather has none and keeps reference.Sum
	// here (OpName writes "-").
	Op    reference.Op
	Bytes int64
	Mode  Mode
	Ranks int
	// Input is the kind of the case's inputs: the run's --input (random or
	// exact, which the ID does not name), or special, which it does.
	Input reference.InputKind
}

// Count is the number of elements of the full buffer.
func (c Case) Count() int64 { return c.Bytes / int64(c.DType.Size()) }

// NoOp is the op segment of an all-gather's ID: it reduces nothing.
const NoOp = "-"

// OpName is the op as the ID writes it: NoOp for an all-gather.
func (c Case) OpName() string {
	if !c.Coll.Reduces() {
		return NoOp
	}
	return c.Op.String()
}

// CollName is the collective as reports name it: "" for the allreduce
// (the IDs and reports of allreduce cases do not name it), else its name.
func (c Case) CollName() string {
	if c.Coll == reference.AllReduce {
		return ""
	}
	return c.Coll.String()
}

// ID is the stable name of the case: variant/dtype/op/size/mode/npN, e.g.
// "oneshot/bf16/sum/1MiB/oop-reg-plain/np4"; a collective other than the
// allreduce heads it, "reduce-scatter:nccl/bf16/sum/1MiB/oop-reg-plain/np4",
// and an all-gather's op is NoOp: "all-gather:nccl/bf16/-/1MiB/..."; a case
// of special inputs names them before the world size,
// "oneshot/bf16/sum/4100B/oop-reg-plain/special/np4".
func (c Case) ID() string {
	input := ""
	if c.Input == reference.Special {
		input = c.Input.String() + "/"
	}
	return fmt.Sprintf("%s/%s/%s/%s/%s/%snp%d", c.Label(), c.DType, c.OpName(), FormatSize(c.Bytes), c.Mode, input, c.Ranks)
}

// Label is the ID's first segment: the variant's name, headed by the
// collective where it is not the allreduce ("reduce-scatter:nccl"). Reports
// name a case's variant so, so that each collective of a variant gets its
// own block and rows.
func (c Case) Label() string {
	if n := c.CollName(); n != "" {
		return n + ":" + c.Variant.Name
	}
	return c.Variant.Name
}

// splitColl splits an ID's first segment into the collective and the
// variant's name: a head "reduce-scatter:" (a collective's name but the
// allreduce's) names the collective (a plugin's variant names also hold a
// colon, so only these words count), anything else is an allreduce.
func splitColl(head string) (reference.Coll, string) {
	for _, c := range reference.Colls {
		if c == reference.AllReduce {
			continue
		}
		if name, ok := strings.CutPrefix(head, c.String()+":"); ok {
			return c, name
		}
	}
	return reference.AllReduce, head
}

// VariantOfID is the variant name an ID names (its first segment without
// the collective), or the whole ID when it has no segment.
func VariantOfID(id string) string {
	head, _, _ := strings.Cut(id, "/")
	_, name := splitColl(head)
	return name
}

// ParseID reads an ID back into a case of a variant of vs (a repro
// bundle's --case, for one). Its Input is Special where the ID names it,
// else Random: the run's --input decides (Build). Whether the variant
// supports the case is the matrix's business.
func ParseID(id string, vs *registry.Set) (Case, error) {
	parts := strings.Split(id, "/")
	bad := fmt.Errorf("bad case ID %q: want [collective:]variant/dtype/op/size/mode/npN or [collective:]variant/dtype/op/size/mode/special/npN, e.g. oneshot/bf16/sum/1MiB/oop-reg-plain/np4", id)
	var c Case
	switch {
	case len(parts) == 7 && parts[5] == reference.Special.String():
		c.Input = reference.Special
		parts = append(parts[:5], parts[6])
	case len(parts) == 7:
		return Case{}, fmt.Errorf("case ID %q: %q is no input kind an ID names (only special; random and exact come from --input)", id, parts[5])
	case len(parts) != 6:
		return Case{}, bad
	}
	var err error
	var name string
	c.Coll, name = splitColl(parts[0])
	if c.DType, err = reference.ParseDType(parts[1]); err != nil {
		return Case{}, fmt.Errorf("case ID %q: %w", id, err)
	}
	switch {
	case !c.Coll.Reduces() && parts[2] != NoOp:
		return Case{}, fmt.Errorf("case ID %q: an all-gather has no op: its op segment is %q", id, NoOp)
	case c.Coll.Reduces():
		if c.Op, err = reference.ParseOp(parts[2]); err != nil {
			return Case{}, fmt.Errorf("case ID %q: %w", id, err)
		}
	}
	if c.Bytes, err = ParseSize(parts[3]); err != nil {
		return Case{}, fmt.Errorf("case ID %q: %w", id, err)
	}
	if c.Mode, err = ParseMode(parts[4]); err != nil {
		return Case{}, fmt.Errorf("case ID %q: %w", id, err)
	}
	np := strings.TrimPrefix(parts[5], "np")
	if c.Ranks, err = strconv.Atoi(np); err != nil || !strings.HasPrefix(parts[5], "np") || c.Ranks < 1 {
		return Case{}, fmt.Errorf("case ID %q: bad world size %q, want npN", id, parts[5])
	}
	if err := c.fits(); err != nil {
		return Case{}, fmt.Errorf("case ID %q: %w", id, err)
	}
	if c.Variant, err = vs.Lookup(name); err != nil {
		return Case{}, fmt.Errorf("case %s: %w", id, err)
	}
	return c, nil
}

// NamesSpecialInput reports whether id is the ID of a case of special
// inputs (variant/dtype/op/size/mode/special/npN).
func NamesSpecialInput(id string) bool {
	parts := strings.Split(id, "/")
	return len(parts) == 7 && parts[5] == reference.Special.String()
}

// fits checks that the size is a whole number of elements.
func (c Case) fits() error {
	if c.Bytes%int64(c.DType.Size()) != 0 {
		return fmt.Errorf("size %s is not a whole number of %s elements (%d bytes each)", FormatSize(c.Bytes), c.DType, c.DType.Size())
	}
	return nil
}

package reference

import (
	"fmt"
	"os"
	"testing"
)

// benchBytes is the output size a benchmark checks: 64 MiB, or the 1 GiB of
// the throughput requirement with ARTEST_BENCH_FULL=1.
func benchBytes() int {
	if os.Getenv("ARTEST_BENCH_FULL") == "1" {
		return 1 << 30
	}
	return 64 << 20
}

// benchBuf keeps the last correct output built, so the repeated calls of one
// sub-benchmark (as b.N grows) do not rebuild it.
var benchBuf struct {
	spec CheckSpec
	buf  []byte
}

func correctOutput(spec CheckSpec, bytes int) []byte {
	if benchBuf.spec != spec || len(benchBuf.buf) != bytes {
		benchBuf.buf = nil // let the old one go before building the new one
		benchBuf.spec, benchBuf.buf = spec, expectedBuffer(spec, bytes/spec.Gen.DType.Size())
	}
	return benchBuf.buf
}

// BenchmarkCheck measures Check on a correct 8-rank Random sum; MB/s is
// output bytes checked per second.
func BenchmarkCheck(b *testing.B) {
	bytes := benchBytes()
	for _, d := range DTypes {
		for _, order := range orders {
			spec := CheckSpec{Gen: Gen{Seed: 1, Kind: Random, DType: d}, Op: Sum, NRanks: 8, Order: order}
			name := fmt.Sprintf("dtype=%v/op=sum/input=random/np=8/order=%v/bytes=%d", d, order, bytes)
			b.Run(name, func(b *testing.B) {
				got := correctOutput(spec, bytes)
				b.SetBytes(int64(len(got)))
				b.ResetTimer()
				for range b.N {
					if res := Check(spec, got); !res.OK() {
						b.Fatal(res)
					}
				}
			})
		}
	}
}

// BenchmarkFill measures generating one rank's input.
func BenchmarkFill(b *testing.B) {
	buf := make([]byte, benchBytes())
	for _, g := range allGens(1) {
		b.Run(fmt.Sprintf("dtype=%v/input=%v/bytes=%d", g.DType, g.Kind, len(buf)), func(b *testing.B) {
			b.SetBytes(int64(len(buf)))
			for i := range b.N {
				g.Fill(buf, 3, i, 0)
			}
		})
	}
}

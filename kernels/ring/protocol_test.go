package ring

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/hostcxx"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/internal/cconst"
	"github.com/artest/artest/sigblock"
)

// ring.cuh (beside this file) and the shared header its constants refer
// to.
const (
	ringHeader   = "ring.cuh"
	signalHeader = "../device/signal.cuh"
)

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// ringCConstants is what ring.cuh must define, from the Go constants.
func ringCConstants() map[string]uint64 {
	return map[string]uint64{
		"RING_UNIT":           Unit,
		"RING_PARTIAL_BYTES":  PartialBytes,
		"RING_MIN_SLOT_BYTES": MinSlotBytes,
		"RING_MAX_SLOT_BYTES": MaxSlotBytes,
		"RING_MIN_SLOTS":      MinSlots,
		"RING_MAX_SLOTS":      MaxSlots,
		"RING_MAX_LANES":      MaxLanes,
		"RING_MAX_PIECES":     MaxPieces,
		// The ring's own fault switch.
		"INJECT_NO_CREDIT_WAIT": uint64(InjectNoCreditWait),
	}
}

func checkRingHeader(text string, want map[string]uint64) error {
	got, err := cconst.FromC(text)
	if err != nil {
		return err
	}
	var problems []string
	for name, w := range want {
		if g, ok := got[name]; !ok {
			problems = append(problems, name+": missing in ring.cuh")
		} else if g != w {
			problems = append(problems, fmt.Sprintf("%s = %d in ring.cuh, %d in Go", name, g, w))
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok && strings.HasPrefix(name, "RING_") {
			problems = append(problems, name+": no Go counterpart")
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("ring constants differ: %s", strings.Join(problems, "; "))
	}
	return nil
}

func ringHeaders(t *testing.T) string {
	return readFile(t, signalHeader) + "\n" + readFile(t, ringHeader)
}

func TestRingHeaderMatchesGo(t *testing.T) {
	text := ringHeaders(t)
	require.NoError(t, checkRingHeader(text, ringCConstants()))
	// The check can fail: a changed value and a constant without a twin.
	require.ErrorContains(t, checkRingHeader(strings.Replace(text, "RING_UNIT = 4u", "RING_UNIT = 8u", 1), ringCConstants()), "RING_UNIT")
	require.ErrorContains(t, checkRingHeader(text+"\nconstexpr uint32_t RING_BOGUS = 1u;\n", ringCConstants()), "RING_BOGUS")
	// The SignalBlock's ring region is the one the Go constants describe.
	require.Equal(t, sigblock.RingMaxLanes, MaxLanes)
	require.Equal(t, sigblock.RingMaxSlots, MaxSlots)
}

// ringPlanTable is launches to compare between Go and C: world sizes,
// lane counts, slot sizes and counts around every boundary of the plan
// (one round, several, a last round with fewer elements, empty pieces).
func ringPlanTable() [][5]int64 {
	var out [][5]int64
	for _, count := range []int64{0, 1, 3, 4, 5, 17, 100, 1000, 1021, 4096, 4100, 65536, 1<<20 + 3, 1 << 27} {
		for _, n := range []int64{1, 2, 3, 4, 7, 8} {
			for _, p := range [][3]int64{{1, 16, 2}, {2, 64, 4}, {3, 1024, 8}, {32, 16384, 8}, {5, 1 << 20, 64}} {
				out = append(out, [5]int64{count, n, p[0], p[1], p[2]})
			}
		}
	}
	return out
}

// TestRingPlanWithHostCompiler lets a C++ compiler evaluate ring.cuh's plan
// for every launch of ringPlanTable and every lane, and compares each plan,
// the span of every piece of the first and last rounds, and the chunk rules
// with Go. Skipped where no host C++ compiler is installed.
func TestRingPlanWithHostCompiler(t *testing.T) {
	var prog strings.Builder
	prog.WriteString("#include <cstdio>\n#include \"ring.cuh\"\nstruct L { unsigned long long c, n, lanes, sb, s; };\nconst L kTable[] = {\n")
	table := ringPlanTable()
	for _, r := range table {
		fmt.Fprintf(&prog, "  {%dull, %dull, %dull, %dull, %dull},\n", r[0], r[1], r[2], r[3], r[4])
	}
	prog.WriteString(`};
int main() {
  for (const L& x : kTable) {
    for (unsigned long long l = 0; l < x.lanes; ++l) {
      const RingPlan p = ring_plan(x.c, x.n, x.lanes, x.sb, x.s, l);
      std::printf("plan %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu\n", x.c, x.n, x.lanes, x.sb, x.s, l,
                  (unsigned long long)p.lo, (unsigned long long)p.hi,
                  (unsigned long long)(p.q * 1000000 + p.rounds), (unsigned long long)p.pieces);
      std::printf("e %llu %llu\n", (unsigned long long)p.e, (unsigned long long)p.e_last);
      if (p.pieces == 0) continue;
      const uint64_t rounds[2] = {0, p.rounds - 1};
      for (uint64_t round : rounds)
        for (uint64_t c = 0; c < p.n; ++c)
          for (uint64_t j = 0; j < p.q; ++j) {
            uint64_t lo, hi;
            ring_span(p, round, c, j, &lo, &hi);
            std::printf("span %llu %llu %llu %llu %llu\n", (unsigned long long)round, (unsigned long long)c,
                        (unsigned long long)j, (unsigned long long)lo, (unsigned long long)hi);
          }
    }
  }
  for (unsigned long long n = 1; n <= 8; ++n)
    for (unsigned long long r = 0; r < n; ++r)
      for (unsigned long long s = 0; s + 3 <= 2 * n; ++s)
        std::printf("chunk %llu %llu %llu %llu %llu\n", n, r, s, (unsigned long long)ring_send_chunk(r, s, n),
                    (unsigned long long)ring_recv_chunk(r, s, n));
  for (unsigned long long s = 2; s <= 64; s *= 2)
    std::printf("q %llu %llu\n", s, (unsigned long long)ring_step_pieces(s));
  std::printf("ok %d %d %d %d\n", ring_args_ok(2, 64, 4, 2, 64 * 4 * 2 + 15) ? 1 : 0,
              ring_args_ok(2, 64, 4, 2, 64 * 4 * 2 + 14) ? 1 : 0, ring_args_ok(2, 48, 4, 1, 0) ? 1 : 0,
              ring_args_ok(2, 64, 4, 1, 0) ? 1 : 0);
  return 0;
}
`)
	// ".." holds the shared headers ring.cuh includes.
	out := hostcxx.Output(t, prog.String(), ".", "..")

	var plan Plan
	var plans, spans, chunks int
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		num := func(i int) int64 {
			v, err := strconv.ParseInt(f[i], 10, 64)
			require.NoError(t, err, "line %q", sc.Text())
			return v
		}
		switch f[0] {
		case "plan":
			plan = NewPlan(num(1), num(2), num(3), num(4), num(5), num(6))
			got := [4]int64{num(7), num(8), num(9), num(10)}
			require.Equal(t, [4]int64{plan.Lo, plan.Hi, plan.Q*1000000 + plan.Rounds, plan.Pieces}, got, sc.Text())
			plans++
		case "e":
			require.Equal(t, [2]int64{plan.E, plan.ELast}, [2]int64{num(1), num(2)}, "%+v", plan)
		case "span":
			lo, hi := plan.Span(num(1), num(2), num(3))
			require.Equal(t, [2]int64{lo, hi}, [2]int64{num(4), num(5)}, "%+v %s", plan, sc.Text())
			spans++
		case "chunk":
			n, r, s := num(1), num(2), num(3)
			require.Equal(t, SendChunk(r, s, n), num(4), sc.Text())
			require.Equal(t, RecvChunk(r, s, n), num(5), sc.Text())
			chunks++
		case "q":
			require.Equal(t, StepPieces(num(1)), num(2))
		case "ok":
			require.Equal(t, []string{"1", "0", "0", "1"}, f[1:])
		default:
			t.Fatalf("unexpected line %q", sc.Text())
		}
	}
	require.Positive(t, spans)
	want := 0
	for n := 1; n <= 8; n++ {
		want += n * max(0, 2*n-2)
	}
	require.Equal(t, want, chunks)
	lanes := 0
	for _, r := range table {
		lanes += int(r[2])
	}
	require.Equal(t, lanes, plans)
}

// The plan's invariants over many launches: every element of the message
// is in exactly one piece of one lane, pieces never exceed a slot, Q stays
// below the ring's capacity (no deadlock), and StepPieces above half of
// it (flow control matters from 2 ranks on).
func TestRingPlanInvariants(t *testing.T) {
	for _, r := range ringPlanTable() {
		count, n, lanes, slotBytes, slots := r[0], r[1], r[2], r[3], r[4]
		if count > 1<<20+3 {
			continue // covered by the C comparison; too many elements to mark here
		}
		seen := make([]bool, count)
		for l := int64(0); l < lanes; l++ {
			p := NewPlan(count, n, lanes, slotBytes, slots, l)
			if n == 1 {
				for i := p.Lo; i < p.Hi; i++ {
					seen[i] = true
				}
				require.Zero(t, p.Pieces)
				continue
			}
			if p.Lo == p.Hi {
				require.Zero(t, p.Pieces)
				continue
			}
			require.Less(t, p.Q, slots, "Q below the capacity")
			require.LessOrEqual(t, p.E*PartialBytes, slotBytes)
			require.LessOrEqual(t, p.ELast, p.E)
			require.Zero(t, p.E%Unit)
			require.Zero(t, p.ELast%Unit)
			require.Equal(t, p.Rounds*2*(n-1)*p.Q, p.Pieces)
			for round := int64(0); round < p.Rounds; round++ {
				for c := int64(0); c < n; c++ {
					for j := int64(0); j < p.Q; j++ {
						lo, hi := p.Span(round, c, j)
						for i := lo; i < hi; i++ {
							if seen[i] {
								t.Fatalf("element %d twice: %v lane %d", i, r, l)
							}
							seen[i] = true
						}
					}
				}
			}
			// Step undoes the piece numbering.
			for _, tt := range []int64{0, p.Q - 1, p.Q, p.Pieces - 1} {
				round, step, j := p.Step(tt)
				require.Equal(t, tt, (round*2*(n-1)+step)*p.Q+j)
			}
		}
		for i, ok := range seen {
			if !ok {
				t.Fatalf("element %d of %v in no piece", i, r)
			}
		}
	}
	for s := int64(MinSlots); s <= MaxSlots; s *= 2 {
		q := StepPieces(s)
		require.Less(t, q, s)
		require.Greater(t, 2*q, s-1, "Q > S/2 (S=2: Q=1)")
	}
}

// The auto lane rule: one lane per 128 KiB, a power of two, at most 16
// (provisional numbers: see AutoBytesPerLane).
func TestRingAutoLanes(t *testing.T) {
	for _, tc := range []struct {
		bytes int64
		want  uint32
	}{
		{4, 1}, {64 << 10, 1}, {128 << 10, 1}, {256<<10 - 1, 1}, {256 << 10, 2}, {1 << 20, 8},
		{1<<20 + 12, 8}, {2 << 20, 16}, {256 << 20, 16},
	} {
		require.Equal(t, tc.want, AutoLanes(tc.bytes, 4), "%d bytes", tc.bytes)
	}
}

// Resolve: explicit values are kept where the message allows them,
// others round down to powers of two, and what comes out always passes
// Check with the staging every runner buffer has (message + 256 bytes).
func TestRingResolve(t *testing.T) {
	v := &kernels.Variant{Blocks: MaxLanes, Threads: 512, Params: params, Resolve: Resolve, GridFunc: Grid}
	resolve := func(count uint64, n uint32, elem int64, set map[string]uint32) *kernels.Args {
		a := &kernels.Args{Count: count, NRanks: n, StageBytes: count*uint64(elem) + 256}
		v.SetParams(a, set, elem)
		return a
	}
	// Defaults at a size where they fit: auto lanes, 64 KiB slots, 8 slots.
	a := resolve(16<<20/4, 4, 4, nil)
	require.Equal(t, [3]uint32{16, DefaultSlotBytes, DefaultSlots}, [3]uint32{a.Param0, a.Param1, a.Param2})
	require.Equal(t, 16, kernels.Grid(v, a, 4, v.Blocks, v.Threads))
	// At 1 MiB, 8 lanes: 8 slots of a lane's chunk (32 KiB) would not
	// fit the staging, so the slots halve once; their bytes stay.
	a = resolve(1<<20/4, 4, 4, nil)
	require.Equal(t, [3]uint32{8, 32 << 10, 4}, [3]uint32{a.Param0, a.Param1, a.Param2})
	// Explicit values are kept; non-powers of two round down.
	a = resolve(1<<20, 2, 2, map[string]uint32{"lanes": 3, "slot-bytes": 3000, "slots": 12})
	require.Equal(t, [3]uint32{3, 2048, 8}, [3]uint32{a.Param0, a.Param1, a.Param2})
	// Lanes never exceed what the message fills.
	a = resolve(5, 2, 4, map[string]uint32{"lanes": 32})
	require.Equal(t, uint32(2), a.Param0)
	a = resolve(100, 2, 4, map[string]uint32{"lanes": 24})
	require.Equal(t, uint32(13), a.Param0, "L = 8 elements: 13 lanes hold 100")
	// A small message shrinks its rings to fit its staging: the slots to
	// two first, then their bytes.
	a = resolve(1000, 2, 2, nil)
	require.Equal(t, [3]uint32{1, 1024, 2}, [3]uint32{a.Param0, a.Param1, a.Param2})

	for _, count := range []uint64{1, 2, 3, 7, 100, 1021, 4100, 65536, 1 << 20, 1<<20 + 6} {
		for _, n := range []uint32{1, 2, 3, 8} {
			for _, elem := range []int64{2, 4} {
				for _, set := range []map[string]uint32{
					nil, {"lanes": 32}, {"slots": 64}, {"slot-bytes": 1 << 20, "slots": 64, "lanes": 32}, {"slot-bytes": 16, "slots": 2},
				} {
					a := resolve(count, n, elem, set)
					lanes := int64(a.Param0)
					require.NoError(t, Check(a, int(lanes), elem), "count %d n %d elem %d %v", count, n, elem, set)
					last := NewPlan(int64(count), int64(n), lanes, int64(a.Param1), int64(a.Param2), lanes-1)
					require.Less(t, last.Lo, last.Hi, "the last lane has data: count %d %v %+v", count, set, a)
				}
			}
		}
	}
}

// Check names what is wrong with a launch.
func TestRingCheckRejects(t *testing.T) {
	ok := kernels.Args{Count: 1000, NRanks: 2, StageBytes: 4096, Param0: 2, Param1: 64, Param2: 8}
	require.NoError(t, Check(&ok, 2, 4))
	require.NoError(t, Check(&ok, 5, 4), "any grid: blocks run lanes in turn")
	for _, tc := range []struct {
		mutate func(a *kernels.Args) int
		want   string
	}{
		{func(a *kernels.Args) int { a.Param0 = 0; return 0 }, "0 lanes"},
		{func(a *kernels.Args) int { a.Param0 = 33; return 33 }, "33 lanes"},
		{func(a *kernels.Args) int { a.Param1 = 8; return 2 }, "slot bytes 8"},
		{func(a *kernels.Args) int { a.Param1 = 96; return 2 }, "slot bytes 96"},
		{func(a *kernels.Args) int { a.Param2 = 1; return 2 }, "1 slots"},
		{func(a *kernels.Args) int { a.Param2 = 128; return 2 }, "128 slots"},
		{func(a *kernels.Args) int { a.StageBytes = 2*8*64 + 14; return 2 }, "do not fit"},
	} {
		a := ok
		blocks := tc.mutate(&a)
		require.ErrorContains(t, Check(&a, blocks, 4), tc.want)
	}
	one := ok
	one.NRanks, one.StageBytes = 1, 0
	require.NoError(t, Check(&one, 2, 4), "one rank has no ring to fit")
}

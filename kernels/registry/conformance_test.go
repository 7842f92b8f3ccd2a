package registry_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/hostmodel/hostmodeltest"
	"github.com/artest/artest/kernels/registry"
	"github.com/artest/artest/reference"
	"github.com/artest/artest/sigblock"
)

// The checks every built-in variant passes, run over registry.Builtin: a
// new variant (a folder and its line in Builtin) gets them without a test
// of its own. What is a variant's own (how it resolves its parameters, the
// details of its protocol, bits shared with another variant) stays in its
// folder's tests.

// firstWait is where a launch first waits for a peer, for the variants
// whose first wait is not the start barrier: oneshot-ll and oneshot-sentinel
// have no barriers and wait for their peers' slots (their first; oneshot-ll
// runs one block there, oneshot-sentinel four, any of which may give up
// first). Such a variant finds a peer
// that launched a different call only at the deadline, not at once.
var firstWait = map[string]struct{ kind, where int }{
	"oneshot-ll":       {sigblock.DiagKindLlData, 0},
	"oneshot-sentinel": {sigblock.DiagKindSentinelData, hostmodeltest.FirstSlotOfBlock},
}

// faultSetup is the launch parameters (--param) under which a declared
// fault switch must show; a switch not named here must show with the
// defaults. no-credit-wait: one lane of 4 slots of 64 bytes makes
// thousands of pieces wrap around the ring (with 2 slots a producer can
// never run past the ring, kernels/ring/protocol.go; with the default
// parameters 10 launches at 2 and at 4 ranks stayed right).
var faultSetup = map[string]map[string]uint32{
	"no-credit-wait": {"lanes": 1, "slots": 4, "slot-bytes": 64},
}

func builtins() []kernels.Variant {
	vs := make([]kernels.Variant, len(registry.Builtin))
	for i, f := range registry.Builtin {
		vs[i] = f()
	}
	return vs
}

// forEachHostModel runs check as a subtest for every built-in variant
// with a host model (every custom one), the variants side by side: most
// of the checks' time is blocks waiting for a deadline.
func forEachHostModel(t *testing.T, check func(t *testing.T, v *kernels.Variant)) {
	t.Helper()
	n := 0
	for _, v := range builtins() {
		if v.Host == nil {
			continue
		}
		n++
		t.Run(v.Name, func(t *testing.T) {
			t.Parallel()
			check(t, &v)
		})
	}
	require.Positive(t, n)
}

// hasStartBarrier: the variant's first wait is its start barrier, where
// launch tags are compared.
func hasStartBarrier(v *kernels.Variant) bool {
	_, other := firstWait[v.Name]
	return !other
}

// The list holds every built-in variant once, each declared whole: names,
// trace ids, fault switches and their bits are unique; a custom variant
// has a host model, a kernel stem, a trace id below the plugins' range and
// a launch the kernels accept; an NCCL baseline has none of those and is
// named so; parameters fit their slots; a fault switch names one bit that
// none of the shared switches (kernels.Inject*) uses.
func TestBuiltinDeclarations(t *testing.T) {
	names, ids, faults, bits := map[string]bool{}, map[uint32]string{}, map[string]bool{}, map[uint32]string{}
	shared := kernels.InjectNoEndBarrier | kernels.InjectNoStartBarrier | kernels.InjectDelay | kernels.InjectSkipLast |
		kernels.InjectOverrun | kernels.InjectNoMidBarrier | kernels.InjectPdlNoWait
	var declared []kernels.Fault
	for _, v := range builtins() {
		require.NotEmpty(t, v.Name)
		require.False(t, names[v.Name], "%s listed twice", v.Name)
		names[v.Name] = true
		require.NotEmpty(t, v.Summary, v.Name)
		require.Nil(t, v.External, v.Name)
		require.Contains(t, []kernels.Kind{kernels.KindKernel, kernels.KindNCCL}, v.Kind, "%s: a built-in is artest's kernel or an NCCL call", v.Name)
		require.Equal(t, v.Custom(), v.Host != nil, "%s: a custom variant has a host model, nccl none", v.Name)
		require.Equal(t, v.Custom(), v.Kernel != "", v.Name)
		require.Equal(t, v.Custom(), v.ID != 0, v.Name)
		require.Equal(t, !v.Custom(), v.Name == "nccl" || strings.HasPrefix(v.Name, "nccl-"),
			"%s: the NCCL baselines, and only they, are named nccl or nccl-*: ci/gpu.sh tells the custom variants from them by name", v.Name)
		if v.ID != 0 {
			require.Empty(t, ids[v.ID], "%s and %s share trace id %#x", v.Name, ids[v.ID], v.ID)
			ids[v.ID] = v.Name
			require.Less(t, v.ID, uint32(1<<31), "%s: artest's own ids stay below the plugins' range", v.Name)
		}
		require.NotEmpty(t, v.DTypes, v.Name)
		require.Subset(t, kernels.AllDTypes, v.DTypes, v.Name)
		require.NotEmpty(t, v.Ops, v.Name)
		require.Subset(t, kernels.AllOps, v.Ops, v.Name)
		require.GreaterOrEqual(t, v.MinRanks, 1, v.Name)
		require.LessOrEqual(t, v.MinRanks, v.MaxRanks, v.Name)
		if v.Custom() {
			require.LessOrEqual(t, v.MaxRanks, sigblock.MaxRanks, "%s: the kernel arguments address at most %d ranks", v.Name, sigblock.MaxRanks)
			require.Positive(t, v.Threads, v.Name)
			require.Zero(t, v.Threads%32, "%s: whole warps", v.Name)
			require.LessOrEqual(t, v.Threads, kernels.MaxThreads, "%s: the kernels' __launch_bounds__", v.Name)
			require.True(t, v.Blocks >= 1 && v.Blocks <= sigblock.MaxBlocks, "%s: %d blocks", v.Name, v.Blocks)
			require.True(t, v.HostBlocks >= 0 && v.HostBlocks <= sigblock.MaxBlocks, "%s: %d host blocks", v.Name, v.HostBlocks)
		}
		params, slots := map[string]bool{}, map[int]string{}
		for _, p := range v.Params {
			require.False(t, params[p.Name], "%s declares %s twice", v.Name, p.Name)
			params[p.Name] = true
			require.True(t, p.Slot >= 0 && p.Slot <= 3, "%s %s: slot %d", v.Name, p.Name, p.Slot)
			require.Empty(t, slots[p.Slot], "%s: %s and %s share slot %d", v.Name, slots[p.Slot], p.Name, p.Slot)
			slots[p.Slot] = p.Name
			require.LessOrEqual(t, p.Min, p.Max, "%s %s", v.Name, p.Name)
			require.True(t, p.Default == 0 || p.Default >= p.Min && p.Default <= p.Max, "%s %s: default %d outside %d..%d", v.Name, p.Name, p.Default, p.Min, p.Max)
			require.NotEmpty(t, p.Help, "%s %s", v.Name, p.Name)
			if v.Needs&kernels.NeedMulticast != 0 {
				require.Less(t, p.Slot, 2, "%s %s: slots 2 and 3 carry the multicast delta", v.Name, p.Name)
			}
		}
		for name, val := range v.StressParams {
			p, ok := v.Param(name)
			require.True(t, ok, "%s: stress parameter %s is not one of its parameters", v.Name, name)
			require.True(t, val >= p.Min && val <= p.Max, "%s: stress %s=%d outside %d..%d", v.Name, name, val, p.Min, p.Max)
		}
		for _, fl := range v.Faults {
			require.False(t, faults[fl.Name], "fault %s declared twice", fl.Name)
			faults[fl.Name] = true
			require.Empty(t, bits[fl.Bit], "%s and %s share bit %#x", fl.Name, bits[fl.Bit], fl.Bit)
			bits[fl.Bit] = fl.Name
			require.Zero(t, fl.Bit&shared, "%s uses a shared switch's bit", fl.Name)
			require.Equal(t, 1, popcount(fl.Bit), fl.Name)
			require.NotEmpty(t, fl.Help, fl.Name)
			require.True(t, v.Custom(), "%s: a fault switch of a variant without a kernel", fl.Name)
		}
		declared = append(declared, v.Faults...)
	}
	require.Equal(t, declared, registry.Faults(), "the variants' own switches, in Builtin order")
}

func popcount(x uint32) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// Every host model computes what the order-aware reference says on every
// rank, for each collective, dtype and op it declares, out of place and in
// place, at every world size it runs (a reduce-scatter's and an
// all-gather's count rounded down to a whole chunk per rank); two launches
// in a row (the second at epoch 2), each writing the variant's trace id
// and the launch count. Without a deadline nothing gives up.
func TestHostModelsMatchTheReference(t *testing.T) {
	forEachHostModel(t, func(t *testing.T, v *kernels.Variant) {
		for _, coll := range v.Collectives() {
			matchTheReference(t, v, coll)
		}
	})
}

// Every host model's output of special inputs (signed zeros, subnormals,
// infinities, NaNs, the largest values: reference.Special) is what IEEE
// 754 says, for each dtype and op it declares, at 2, 3 and 8 ranks, out of
// place and in place: no model drops a -0, flushes a subnormal or loses a
// NaN or an overflow.
func TestHostModelsPassSpecialInputs(t *testing.T) {
	forEachHostModel(t, func(t *testing.T, v *kernels.Variant) {
		ran := 0
		for _, coll := range v.Collectives() {
			for _, w := range []struct {
				n       int
				count   int64
				inPlace bool
			}{{2, 2050, false}, {3, 1031, true}, {8, 520, false}} {
				count := hostmodeltest.CollCount(coll, w.count, w.n)
				for _, d := range reference.DTypes {
					for _, op := range reference.Ops {
						if !coll.Reduces() && op != reference.Sum {
							continue // an all-gather has no op
						}
						if !v.SupportsDType(d) || !v.SupportsOp(op) || v.RanksReason(w.n) != "" ||
							v.TooBig != nil && v.TooBig(count*int64(d.Size())) != "" {
							continue
						}
						ran++
						name := fmt.Sprintf("%s/np%d/%s/%s/%d/inplace=%v", coll, w.n, d, op, count, w.inPlace)
						world := hostmodeltest.NewWorldFor(v, w.n, d, count, w.inPlace)
						world.Coll = coll
						world.Gen.Kind = reference.Special
						world.Fill(1)
						for r, err := range world.Launch(v, op, 0, 0) {
							require.NoError(t, err, "%s rank %d", name, r)
						}
						for r := 0; r < w.n; r++ {
							cr := world.Check(r, op, 1, v.Order)
							require.Zero(t, cr.Wrong, "%s rank %d: %s", name, r, cr.String())
						}
					}
				}
			}
		}
		require.Positive(t, ran, "no world fits the variant")
	})
}

func matchTheReference(t *testing.T, v *kernels.Variant, coll reference.Coll) {
	ran := 0
	for _, tc := range []struct {
		n       int
		dtype   reference.DType
		op      reference.Op
		count   int64
		inPlace bool
	}{
		{1, reference.F32, reference.Sum, 5, false},
		{2, reference.BF16, reference.Sum, 1027, false},
		{3, reference.F16, reference.Max, 4099, true},
		{4, reference.F32, reference.Min, 777, true},
		{3, reference.BF16, reference.Sum, 4096, true},
		{8, reference.F32, reference.Sum, 1000, false},
	} {
		count := hostmodeltest.CollCount(coll, tc.count, tc.n)
		if !v.SupportsDType(tc.dtype) || !v.SupportsOp(tc.op) || v.RanksReason(tc.n) != "" ||
			v.TooBig != nil && v.TooBig(count*int64(tc.dtype.Size())) != "" {
			continue
		}
		ran++
		t.Run(fmt.Sprintf("%s/np%d/%s/%s/%d/inplace=%v", coll, tc.n, tc.dtype, tc.op, count, tc.inPlace), func(t *testing.T) {
			w := hostmodeltest.NewWorldFor(v, tc.n, tc.dtype, count, tc.inPlace)
			w.Coll = coll
			for launch := 1; launch <= 2; launch++ {
				w.Fill(launch)
				for r, err := range w.Launch(v, tc.op, 0, 0) {
					require.NoError(t, err, "rank %d", r)
				}
				for r := 0; r < tc.n; r++ {
					cr := w.Check(r, tc.op, launch, v.Order)
					require.Zero(t, cr.Wrong, "rank %d launch %d: %s", r, launch, cr.String())
					id, count := w.Trace(r)
					require.Equal(t, v.ID, id, "rank %d", r)
					require.Equal(t, uint32(launch), count)
					_, gaveUp := w.Snapshot(r).GiveUp()
					require.False(t, gaveUp, "rank %d: no deadline, no give-up", r)
				}
			}
		})
	}
	require.GreaterOrEqual(t, ran, 2, "too few worlds fit the variant")
}

// A peer that never launches: the first wait gives up after the launch's
// deadline (--device-timeout), naming the peer.
func TestHostModelsGiveUpAtTheDeadline(t *testing.T) {
	forEachHostModel(t, func(t *testing.T, v *kernels.Variant) {
		if fw, ok := firstWait[v.Name]; ok {
			hostmodeltest.CheckWaitGivesUp(t, v, fw.kind, fw.where)
			return
		}
		hostmodeltest.CheckBarrierGivesUp(t, v)
	})
}

// A peer that launches a different call (a smaller count): a variant with
// a start barrier finds the other launch tag there and gives up at once,
// naming the rank; one without gives up at the deadline.
func TestHostModelsDiagnoseADifferentCall(t *testing.T) {
	forEachHostModel(t, func(t *testing.T, v *kernels.Variant) {
		if hasStartBarrier(v) {
			hostmodeltest.CheckTagMismatch(t, v)
			return
		}
		require.Equal(t, []reference.Coll{reference.AllReduce}, v.Collectives(), "a variant without a start barrier and other collectives: test them here")
		w := hostmodeltest.NewWorldFor(v, 3, reference.F32, 1024, false)
		w.Fill(0)
		errs, took := w.LaunchTagged(t, v, []int64{1024, 1020, 1024}, hostmodeltest.SameGens(3, 1, 1, 1), hostmodeltest.WaitTimeout)
		// Any bound far below the test's limit shows the deadline ended it;
		// 100x leaves room for a loaded machine.
		require.Less(t, took, 100*hostmodeltest.WaitTimeout, "the launch must end after the deadline, not hang")
		for r := 0; r < 3; r++ {
			require.NoError(t, errs[r])
			g, ok := w.Snapshot(r).GiveUp()
			require.True(t, ok, "rank %d recorded nothing", r)
			require.Equal(t, firstWait[v.Name].kind, g.Kind, g.String())
		}
	})
}

// Matching tags change nothing: launch after launch passes, and a variant
// with barriers leaves every block's claim released and its epoch
// advanced once per launch.
func TestHostModelsPassMatchingTagsAndReleaseClaims(t *testing.T) {
	forEachHostModel(t, func(t *testing.T, v *kernels.Variant) {
		for _, coll := range v.Collectives() {
			count := hostmodeltest.CollCount(coll, 1024, 3)
			w := hostmodeltest.NewWorldFor(v, 3, reference.F32, count, false)
			w.Coll = coll
			for iter := 0; iter < 3; iter++ {
				w.Fill(iter)
				errs, _ := w.LaunchTagged(t, v, []int64{count, count, count}, hostmodeltest.SameGens(3, 1, 2, 1), 0)
				for r := 0; r < 3; r++ {
					require.NoError(t, errs[r], coll)
					_, ok := w.Snapshot(r).GiveUp()
					require.False(t, ok, coll)
				}
			}
			if !hasStartBarrier(v) {
				continue
			}
			for r := 0; r < 3; r++ {
				for b := 0; b < w.Blocks(v); b++ {
					require.Zero(t, w.Snapshot(r).Claim(b), "%s rank %d block %d", coll, r, b)
					require.Equal(t, uint32(3), w.Snapshot(r).Epoch(b), "%s rank %d block %d", coll, r, b)
				}
			}
		}
	})
}

// The shared planted bugs reach the output through every model, for each
// collective it implements: overrun writes one element past the end of
// the output (where the runner's guard bytes sit), out of place and in
// place (the last rank's, which ends at the end of its buffer: a
// reduce-scatter's in place overruns into the next rank's chunk of the
// input elsewhere); skip-last leaves the last element unwritten.
func TestHostModelsPlantedBugsReachTheOutput(t *testing.T) {
	forEachHostModel(t, func(t *testing.T, v *kernels.Variant) {
		for _, coll := range v.Collectives() {
			for _, n := range []int{1, 2, 3} {
				plantedBugsReachTheOutput(t, v, coll, n)
			}
		}
	})
}

func plantedBugsReachTheOutput(t *testing.T, v *kernels.Variant, coll reference.Coll, n int) {
	count := hostmodeltest.CollCount(coll, 100, n)
	outCount := coll.OutCount(count, n)
	last := n - 1
	for _, inPlace := range []bool{false, true} {
		if inPlace && coll == reference.ReduceScatter && n > 1 {
			continue // the other ranks' overruns land in chunks their peers read: a race, not a probe
		}
		w := hostmodeltest.NewWorldFor(v, n, reference.F32, count, inPlace)
		w.Coll = coll
		w.Fill(0)
		past := w.Mem.Bytes(w.OutPtr(last), (outCount+1)*4)[outCount*4:]
		copy(past, []byte{0xAB, 0xAB, 0xAB, 0xAB})
		for _, err := range w.Launch(v, reference.Sum, 0, kernels.InjectOverrun) {
			require.NoError(t, err)
		}
		require.NotEqual(t, []byte{0xAB, 0xAB, 0xAB, 0xAB}, past, "%s np%d in place %v: overrun writes one element past the end", coll, n, inPlace)
	}
	w := hostmodeltest.NewWorldFor(v, n, reference.F32, count, false)
	w.Coll = coll
	w.Fill(0)
	end := w.Mem.Bytes(w.OutPtr(0), outCount*4)[(outCount-1)*4:]
	copy(end, []byte{1, 2, 3, 4})
	for _, err := range w.Launch(v, reference.Sum, 0, kernels.InjectSkipLast) {
		require.NoError(t, err)
	}
	require.Equal(t, []byte{1, 2, 3, 4}, end, "%s np%d: skip-last leaves the last element alone", coll, n)
}

// Every fault switch a variant declares (Variant.Faults, --inject NAME)
// breaks its host model: with the last rank slow to start, results go
// wrong within a few launches at every world size from 2 to 4; the same
// launches without the switch stay right.
func TestDeclaredFaultsFailOnTheHostModel(t *testing.T) {
	if raceDetector {
		t.Skip("the fault switches plant data races, which the race detector reports")
	}
	for _, v := range builtins() {
		for _, fl := range v.Faults {
			t.Run(v.Name+"/"+fl.Name, func(t *testing.T) {
				for _, n := range []int{2, 3, 4} {
					w := hostmodeltest.NewWorldFor(&v, n, reference.F32, 4096, false)
					w.Params = faultSetup[fl.Name]
					w.DelayRank, w.Delay = n-1, 2*time.Millisecond
					wrong := func(iter int, inject uint32) uint64 {
						w.Fill(iter)
						var bad uint64
						for r, err := range w.Launch(&v, reference.Sum, 0, inject) {
							require.NoError(t, err, "np%d rank %d", n, r)
							spec := reference.CheckSpec{Gen: w.Gen, Op: reference.Sum, NRanks: n, Iter: iter, Order: v.Order}
							bad += reference.Check(spec, w.Result(r)).Wrong
						}
						return bad
					}
					for iter := 0; iter < 3; iter++ {
						require.Zero(t, wrong(iter, kernels.InjectDelay), "np%d iteration %d without the switch", n, iter)
					}
					var bad uint64
					for iter := 3; iter < 13 && bad == 0; iter++ {
						bad = wrong(iter, kernels.InjectDelay|fl.Bit)
					}
					require.NotZero(t, bad, "np%d: --inject %s changed nothing in 10 launches (give its setup in faultSetup)", n, fl.Name)
				}
			})
		}
	}
}

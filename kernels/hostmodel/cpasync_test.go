package hostmodel_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/hostmodel"
	"github.com/artest/artest/kernels/registry"
	"github.com/artest/artest/reference"
	"github.com/artest/artest/sigblock"
)

// fakeMemory gives every buffer its own 4 GiB window of a synthetic address
// space, as the host backend gives regions of its shared segment.
type fakeMemory struct{ bufs [][]byte }

const fakeWindowShift = 32

func (m *fakeMemory) alloc(n int64) uint64 {
	m.bufs = append(m.bufs, make([]byte, n))
	return uint64(len(m.bufs)) << fakeWindowShift
}

func (m *fakeMemory) Bytes(p uint64, n int64) []byte {
	i, off := int(p>>fakeWindowShift)-1, int64(p&(1<<fakeWindowShift-1))
	if i < 0 || i >= len(m.bufs) || off+n > int64(len(m.bufs[i])) {
		panic(fmt.Sprintf("fake memory: %d bytes at %#x are not mapped", n, p))
	}
	return m.bufs[i][off : off+n]
}

// world is n ranks' buffers in one fake memory: inputs (with one spare
// element past the end, for the overrun bug), staging, outputs, signals.
type world struct {
	mem               fakeMemory
	in, stage, out    []uint64
	sig               []uint64
	count, elem       int64
	nranks            int
	dtype             reference.DType
	gen               reference.Gen
	inPlace           bool
	inBytes, outBytes int64
}

func newWorld(n int, d reference.DType, count int64, inPlace bool) *world {
	w := &world{count: count, elem: int64(d.Size()), nranks: n, dtype: d, inPlace: inPlace,
		gen: reference.Gen{Seed: 7, Kind: reference.Random, DType: d}}
	bytes := count * w.elem
	for r := 0; r < n; r++ {
		w.in = append(w.in, w.mem.alloc(bytes+w.elem))
		w.stage = append(w.stage, w.mem.alloc(bytes))
		w.out = append(w.out, w.mem.alloc(bytes+w.elem))
		w.sig = append(w.sig, w.mem.alloc(sigblock.Size))
		sigblock.Block(w.mem.Bytes(w.sig[r], sigblock.Size)).Init(r, n)
	}
	return w
}

// fill writes iteration iter's inputs.
func (w *world) fill(iter int) {
	for r := 0; r < w.nranks; r++ {
		w.gen.Fill(w.mem.Bytes(w.in[r], w.count*w.elem), r, iter, 0)
	}
}

// launch runs variant v on every rank at once (ranks are goroutines, as
// processes are in the host backend) and returns each rank's error.
func (w *world) launch(v *kernels.Variant, op reference.Op, stages uint32, inject uint32) []error {
	errs := make([]error, w.nranks)
	var wg sync.WaitGroup
	for r := 0; r < w.nranks; r++ {
		a := &kernels.Args{Count: uint64(w.count), Rank: uint32(r), NRanks: uint32(w.nranks), Inject: inject,
			VariantID: v.ID, StageBytes: uint64(w.count * w.elem), Out: w.out[r]}
		for p := 0; p < w.nranks; p++ {
			a.PeerIn[p], a.PeerStage[p], a.PeerSignal[p] = w.in[p], w.stage[p], w.sig[p]
		}
		if w.inPlace {
			a.Out, a.Flags = w.in[r], kernels.FlagInPlace
		}
		v.SetParams(a, nil, w.elem)
		if stages != 0 {
			a.Param0 = stages
		}
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			errs[r] = hostmodel.Run(&w.mem, &hostmodel.Launch{Variant: v, DType: w.dtype, Op: op, Args: a, Blocks: v.HostBlocks})
		}(r)
	}
	wg.Wait()
	return errs
}

// result is rank r's output bytes (the message only).
func (w *world) result(r int) []byte {
	p := w.out[r]
	if w.inPlace {
		p = w.in[r]
	}
	return append([]byte(nil), w.mem.Bytes(p, w.count*w.elem)...)
}

func (w *world) trace(r int) (id, count uint32) {
	return sigblock.Block(w.mem.Bytes(w.sig[r], sigblock.Size)).Trace()
}

func lookup(t *testing.T, name string) *kernels.Variant {
	t.Helper()
	v, err := registry.Lookup(name)
	require.NoError(t, err)
	return v
}

// The host model of oneshot-cpasync computes what the oneshot model does,
// bit for bit, and what the order-aware reference says, on every rank; and
// the trace word names this variant, not oneshot.
func TestCpasyncModelMatchesOneshot(t *testing.T) {
	cp, one := lookup(t, "oneshot-cpasync"), lookup(t, "oneshot")
	for _, tc := range []struct {
		n       int
		dtype   reference.DType
		op      reference.Op
		count   int64
		inPlace bool
	}{
		{2, reference.F32, reference.Sum, 1, false},
		{3, reference.BF16, reference.Sum, 1027, false},
		{4, reference.F16, reference.Max, 4099, true},
		{3, reference.F32, reference.Min, 777, true},
	} {
		t.Run(fmt.Sprintf("np%d/%s/%s/%d/inplace=%v", tc.n, tc.dtype, tc.op, tc.count, tc.inPlace), func(t *testing.T) {
			results := map[string][][]byte{}
			for _, v := range []*kernels.Variant{cp, one} {
				w := newWorld(tc.n, tc.dtype, tc.count, tc.inPlace)
				for launch := 1; launch <= 2; launch++ { // the second launch runs at epoch 2
					w.fill(launch)
					for _, err := range w.launch(v, tc.op, 0, 0) {
						require.NoError(t, err, v.Name)
					}
					for r := 0; r < tc.n; r++ {
						got := w.result(r)
						spec := reference.CheckSpec{Gen: w.gen, Op: tc.op, NRanks: tc.n, Iter: launch, Order: v.Order}
						cr := reference.Check(spec, got)
						require.Zero(t, cr.Wrong, "%s rank %d launch %d: %s", v.Name, r, launch, cr.String())
						id, count := w.trace(r)
						require.Equal(t, v.ID, id, "%s rank %d", v.Name, r)
						require.Equal(t, uint32(launch), count)
						if launch == 2 {
							results[v.Name] = append(results[v.Name], got)
						}
					}
				}
			}
			require.Equal(t, results["oneshot"], results["oneshot-cpasync"])
		})
	}
}

// Like the kernel's trap, the model refuses a stage count outside the range.
func TestCpasyncModelRejectsBadStages(t *testing.T) {
	cp := lookup(t, "oneshot-cpasync")
	for _, stages := range []uint32{1, kernels.CpasyncMaxStages + 1} {
		w := newWorld(2, reference.F32, 64, false)
		w.fill(0)
		for _, err := range w.launch(cp, reference.Sum, stages, 0) {
			require.ErrorContains(t, err, fmt.Sprintf("stages (param0) %d", stages))
		}
	}
	for _, stages := range []uint32{kernels.CpasyncMinStages, kernels.CpasyncMaxStages} {
		w := newWorld(2, reference.F32, 64, false)
		w.fill(0)
		for _, err := range w.launch(cp, reference.Sum, stages, 0) {
			require.NoError(t, err)
		}
	}
}

// The planted bugs reach the output through this model as through
// oneshot's: skip-last leaves the last element unwritten, overrun writes
// one element past the end (where the runner's guard bytes sit).
func TestCpasyncModelPlantedBugs(t *testing.T) {
	cp := lookup(t, "oneshot-cpasync")
	const count = 100
	for _, inPlace := range []bool{false, true} {
		w := newWorld(2, reference.F32, count, inPlace)
		w.fill(0)
		out := w.mem.Bytes(w.out[0], (count+1)*4)
		if inPlace {
			out = w.mem.Bytes(w.in[0], (count+1)*4)
		}
		for i := range out[count*4:] {
			out[count*4+i] = 0xAB
		}
		for _, err := range w.launch(cp, reference.Sum, 0, kernels.InjectOverrun) {
			require.NoError(t, err)
		}
		require.NotEqual(t, []byte{0xAB, 0xAB, 0xAB, 0xAB}, out[count*4:], "overrun writes one element past the end (in place %v)", inPlace)
	}
	w := newWorld(2, reference.F32, count, false)
	w.fill(0)
	last := w.mem.Bytes(w.out[0], count*4)[(count-1)*4:]
	copy(last, []byte{1, 2, 3, 4})
	for _, err := range w.launch(cp, reference.Sum, 0, kernels.InjectSkipLast) {
		require.NoError(t, err)
	}
	require.Equal(t, []byte{1, 2, 3, 4}, last, "skip-last leaves the last element alone")
}

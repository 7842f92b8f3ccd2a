package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/backend/host"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/hostmodel"
	"github.com/artest/artest/kernels/oneshot"
	"github.com/artest/artest/kernels/registry"
	"github.com/artest/artest/reference"
	"github.com/artest/artest/sigblock"
)

// zeroStart is oneshot's host model out of place with the planted bug
// special inputs exist for: its sum starts from a +0 accumulator
// (acc = 0; acc += x_r for every rank), which gives every other input's
// sum right and turns -0 + -0 into +0.
func zeroStart(k *hostmodel.Kernel, b int) error {
	a := k.Args()
	epoch, err := k.EpochBegin(b)
	if err != nil {
		return err
	}
	if err := k.Barrier(sigblock.PhaseStart, b, epoch); err != nil {
		return err
	}
	d, count := k.DType(), int64(a.Count)
	out := k.Bytes(a.Out, count*k.Elem())
	lo, hi := hostmodel.Span(count, b, k.Blocks())
	for i := lo; i < hi; i++ {
		var acc float32
		for r := range int(a.NRanks) {
			acc += d.GetF32(k.Bytes(a.PeerIn[r], count*k.Elem()), int(i))
		}
		d.SetF32(out, int(i), acc)
	}
	if err := k.Barrier(sigblock.PhaseEnd, b, epoch); err != nil {
		return err
	}
	k.EpochEnd(b, epoch)
	return nil
}

// runCases runs cs (cases of 2 ranks) on 2 in-process ranks over the host
// backend and returns rank 0's report and summary.
func runCases(t *testing.T, set *registry.Set, cs []cases.Case) (*report.Report, string) {
	t.Helper()
	const n = 2
	world := comm.NewLocal(n)
	dir := t.TempDir()
	js := filepath.Join(dir, "r.json")
	codes := make([]int, n)
	var out bytes.Buffer
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := host.New(dir)
			defer b.Close()
			w, err := b.Setup(world[r], Capacity(cs), set)
			if err != nil {
				codes[r] = -1
				return
			}
			c := &Config{Variants: set, Cases: cs, Seed: 1, Iters: 1, Reps: 1, Timeout: 10 * time.Second,
				Header: report.Header{Tool: "artest", Ranks: n, Backend: "host"}, Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}
			if r == 0 {
				c.JSONPath, c.Stdout = js, &out
			}
			codes[r] = Run(world[r], b, w, c)
		}()
	}
	wg.Wait()
	require.Equal(t, codes[0], codes[1])
	f, err := os.Open(js)
	require.NoError(t, err)
	defer f.Close()
	rep, err := report.ReadJSON(f)
	require.NoError(t, err)
	return rep, out.String()
}

// A kernel that drops a -0 passes random inputs and fails special ones,
// and the failure names the element's inputs on every rank, in the case's
// reason (the summary's line) and in its mismatches (the JSON, the repro
// bundle), while built-in oneshot passes the same special case.
func TestSpecialInputsCatchADroppedNegativeZero(t *testing.T) {
	set := registry.Builtins()
	bad := oneshot.Variant()
	bad.Name = "zero-start"
	bad.Host = hostmodel.Body(zeroStart)
	good, err := set.Lookup("oneshot")
	require.NoError(t, err)
	c := cases.Case{Variant: &bad, DType: reference.BF16, Op: reference.Sum, Bytes: 4100, Mode: cases.Mode{Registered: true}, Ranks: 2}
	special, okSpecial := c, c
	special.Input = reference.Special
	okSpecial.Variant, okSpecial.Input = good, reference.Special
	rep, summary := runCases(t, set, []cases.Case{c, special, okSpecial})
	require.Len(t, rep.Cases, 3)

	require.Equal(t, "zero-start/bf16/sum/4100B/oop-reg-plain/np2", rep.Cases[0].ID)
	require.Equal(t, report.Pass, rep.Cases[0].Verdict, "random inputs hold no -0: %s", rep.Cases[0].Reason)
	require.Empty(t, rep.Cases[0].Input)

	got := rep.Cases[1]
	require.Equal(t, "zero-start/bf16/sum/4100B/oop-reg-plain/special/np2", got.ID)
	require.Equal(t, "special", got.Input)
	require.Equal(t, report.Fail, got.Verdict)
	require.Len(t, got.Failures, 2, "both ranks")
	f := got.Failures[0]
	require.Equal(t, "mismatch", f.Kind)
	require.NotEmpty(t, f.Mismatches)
	m := f.Mismatches[0]
	g := reference.Gen{Seed: 1, Kind: reference.Special, DType: reference.BF16}
	require.Equal(t, []uint32{g.Bits(0, 0, m.Index), g.Bits(1, 0, m.Index)}, m.Inputs)
	require.Equal(t, []uint32{0x8000, 0x8000}, m.Inputs, "the first wrong element: -0 on both ranks")
	require.Equal(t, uint32(0x0000), m.GotBits)
	require.Equal(t, uint32(0x8000), m.WantBits)
	diagnosis := "got +0 (0x0000) want -0 (0x8000); inputs: rank 0 -0 (0x8000), rank 1 -0 (0x8000)"
	require.True(t, strings.Contains(f.Detail, diagnosis), f.Detail)
	require.Contains(t, summary, "# FAIL zero-start/bf16/sum/4100B/oop-reg-plain/special/np2: rank 0 mismatch: ")
	require.Contains(t, summary, diagnosis)

	require.Equal(t, "oneshot/bf16/sum/4100B/oop-reg-plain/special/np2", rep.Cases[2].ID)
	require.Equal(t, report.Pass, rep.Cases[2].Verdict, rep.Cases[2].Reason)
}

// --check device refuses special inputs, which the device checker has no
// model of; --check auto leaves them to the host.
func TestDeviceCheckerLeavesSpecialInputsToTheHost(t *testing.T) {
	set := registry.Builtins()
	v, err := set.Lookup("oneshot")
	require.NoError(t, err)
	plain := cases.Case{Variant: v, DType: reference.BF16, Op: reference.Sum, Bytes: 4100, Mode: cases.Mode{Registered: true}, Ranks: 1}
	special := plain
	special.Input = reference.Special
	for _, tc := range []struct {
		check string
		cs    []cases.Case
		err   string
		note  string
		dev   bool
	}{
		{CheckDevice, []cases.Case{plain, special}, "--check device: case oneshot/bf16/sum/4100B/oop-reg-plain/special/np1 has special inputs", "", false},
		{CheckAuto, []cases.Case{plain, special}, "", "the special-input cases are checked on the host", true},
		{CheckAuto, []cases.Case{special}, "", "device checker off: every case has special inputs", false},
		{CheckAuto, []cases.Case{plain}, "", "", true},
	} {
		r := &run{c: comm.NewLocal(1)[0], b: deviceCheckerBackend{}, cfg: &Config{Check: tc.check, Cases: tc.cs}}
		dc, note, err := r.resolveChecker()
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tc.dev, dc != nil, tc.cs)
		if tc.note == "" {
			require.Empty(t, note)
		} else {
			require.Contains(t, note, tc.note)
		}
		r.devCheck = dc
		require.Equal(t, tc.dev, r.checksOnDevice(plain))
		require.False(t, r.checksOnDevice(special))
	}
}

// deviceCheckerBackend is a backend with a working device checker; the
// checker is only asked whether it can run.
type deviceCheckerBackend struct{ noDelay }

func (deviceCheckerBackend) DeviceCheckReason() string { return "" }

func (deviceCheckerBackend) CheckOnDevice(backend.DeviceCheck, time.Duration) ([]kernels.CheckSlot, error) {
	panic("not called")
}

package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/backend/host"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/registry"
)

// ownRegionsBackend is the host backend keeping one variant's input and
// output in two regions of its own, as the cuda backend keeps nccl-win's
// in NCCL windows; it records where every call read and wrote.
type ownRegionsBackend struct {
	*host.Backend
	variant  string
	capacity int64
	in, out  backend.Ptr
	calls    []kernels.Args
	// optional: the variant runs on the world's buffers too
	// (backend.OptionalRegioner), as the cuda backend's nccl does.
	optional bool
}

func (b *ownRegionsBackend) OwnRegionsOptional(v *kernels.Variant) bool {
	return b.optional && b.KeepsOwnRegions(v)
}

func (b *ownRegionsBackend) KeepsOwnRegions(v *kernels.Variant) bool { return v.Name == b.variant }

func (b *ownRegionsBackend) OwnRegions(_ comm.Comm, v *kernels.Variant) (in, out backend.Ptr, ok bool, err error) {
	if !b.KeepsOwnRegions(v) {
		return 0, 0, false, nil
	}
	if b.in == 0 {
		if b.in, err = b.Alloc(b.capacity); err != nil {
			return 0, 0, true, err
		}
		if b.out, err = b.Alloc(b.capacity); err != nil {
			return 0, 0, true, err
		}
	}
	return b.in, b.out, true, nil
}

func (b *ownRegionsBackend) Allreduce(l *backend.Launch) error {
	b.calls = append(b.calls, l.Args)
	return b.Backend.Allreduce(l)
}

// runOwnRegions runs cases ids on one rank over ownRegionsBackend.
func runOwnRegions(t *testing.T, ids []string, stress int) (*ownRegionsBackend, *report.Report) {
	return runOwnRegionsOptional(t, ids, stress, false)
}

func runOwnRegionsOptional(t *testing.T, ids []string, stress int, optional bool) (*ownRegionsBackend, *report.Report) {
	t.Helper()
	var b *ownRegionsBackend
	rep := runWith(t, ids, func(ob *ownRegionsBackend) any { ob.optional = optional; b = ob; return ob }, func(c *Config) { c.Stress = stress })
	return b, rep
}

// runWith runs cases ids on one rank over the backend wrap makes of an
// ownRegionsBackend (which keeps oneshot's regions), cfg adjusting the
// configuration.
func runWith(t *testing.T, ids []string, wrap func(*ownRegionsBackend) any, cfg func(*Config)) *report.Report {
	t.Helper()
	set := registry.Builtins()
	cs, err := cases.Build(set, cases.Selection{IDs: ids}, 1)
	require.NoError(t, err)
	world := comm.NewLocalWorld(1)
	hb := host.New(t.TempDir())
	defer hb.Close()
	w, err := hb.Setup(world.Rank(0), Capacity(cs), set)
	require.NoError(t, err)
	b := wrap(&ownRegionsBackend{Backend: hb, variant: "oneshot", capacity: w.Capacity}).(backend.Backend)
	js := filepath.Join(t.TempDir(), "r.json")
	var stdout, stderr bytes.Buffer
	c := &Config{Variants: set, Cases: cs, Seed: 1, Iters: 2, Reps: 1, Timeout: 10 * time.Second,
		Header: report.Header{Tool: "artest", Ranks: 1, Backend: "host"}, Stdout: &stdout, Stderr: &stderr, JSONPath: js}
	cfg(c)
	code := Run(world.Rank(0), b, w, c)
	f, err := os.Open(js)
	require.NoError(t, err, "exit %d: %s", code, stderr.String())
	defer f.Close()
	rep, err := report.ReadJSON(f)
	require.NoError(t, err)
	return rep
}

// A variant whose buffers are the backend's own is given them in every
// mode: its input is written there, the launch's own input points there,
// its output is read from there, and every case still passes (the inputs
// are nowhere else, so a launch reading the world's input would fail).
func TestOwnRegionsHoldTheCallsBuffers(t *testing.T) {
	ids := []string{"oneshot/f32/sum/4KiB/oop-reg-plain/np1", "oneshot/f32/sum/4KiB/ip-reg-plain/np1",
		"oneshot/f32/sum/4KiB/oop-stg-plain/np1", "oneshot/f32/sum/4KiB/ip-stg-plain/np1"}
	b, rep := runOwnRegions(t, ids, 0)
	require.Len(t, rep.Cases, len(ids))
	for _, c := range rep.Cases {
		require.Equal(t, report.Pass, c.Verdict, "%s: %s", c.ID, c.Reason)
	}
	require.NotEmpty(t, b.calls)
	within := func(p uint64, region backend.Ptr) bool { return p >= region && p < region+backend.Ptr(b.capacity) }
	for _, a := range b.calls {
		require.True(t, within(a.PeerIn[0], b.in), "input %#x outside the own input region", a.PeerIn[0])
		require.True(t, within(a.Out, b.in) || within(a.Out, b.out), "output %#x outside the own regions", a.Out)
	}
}

// --stress gives every iteration an output of its own, which one output
// region cannot be: such a variant's stress cases are skipped, saying so.
func TestOwnRegionsAreSkippedUnderStress(t *testing.T) {
	_, rep := runOwnRegions(t, []string{"oneshot/f32/sum/4KiB/oop-reg-plain/np1", "twoshot/f32/sum/4KiB/oop-reg-plain/np1"}, 4)
	require.Len(t, rep.Cases, 2)
	require.Equal(t, report.Skipped, rep.Cases[0].Verdict)
	require.Contains(t, rep.Cases[0].Reason, "--stress: oneshot reads and writes one input and one output region of the host backend's own")
	require.Equal(t, report.Pass, rep.Cases[1].Verdict, rep.Cases[1].Reason)
}

// Optional regions (the cuda backend's nccl and nccl-reg) hold the calls'
// buffers outside stress; under stress the variant runs on the world's
// buffers and passes instead of being skipped.
func TestOptionalOwnRegionsStepAsideUnderStress(t *testing.T) {
	id := "oneshot/f32/sum/4KiB/oop-reg-plain/np1"
	b, rep := runOwnRegionsOptional(t, []string{id}, 0, true)
	require.Equal(t, report.Pass, rep.Cases[0].Verdict, rep.Cases[0].Reason)
	require.NotZero(t, b.in, "made outside stress")
	for _, a := range b.calls {
		require.True(t, a.PeerIn[0] >= b.in && a.PeerIn[0] < b.in+backend.Ptr(b.capacity), "input %#x outside the own input region", a.PeerIn[0])
	}

	b, rep = runOwnRegionsOptional(t, []string{id}, 4, true)
	require.Equal(t, report.Pass, rep.Cases[0].Verdict, rep.Cases[0].Reason)
	require.Zero(t, b.in, "never made under stress")
	require.NotEmpty(t, b.calls)
}

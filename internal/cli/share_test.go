package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/backend/host"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/report"
)

// sharedHost plays a cuda backend whose ranks share one GPU: the host
// backend's memory and kernel models, with grid caps chosen per rank and
// variant instead of the driver's occupancy.
type sharedHost struct {
	backend.Backend
	rank int
	caps map[string][]int // variant -> cap per rank
}

func (s sharedHost) RanksPerGPU() int { return 4 }

// Name is cuda's, so that nothing the host backend's name turns on
// (its timing defaults, its size cap) stands in for what sharing does.
func (s sharedHost) Name() string { return "cuda" }

// GridCap: with a late rank, the cap of the variant's name + "/late"
// when caps has one.
func (s sharedHost) GridCap(l *backend.Launch, late bool) (int, string, error) {
	name := l.Variant.Name
	if _, ok := s.caps[name+"/late"]; ok && late {
		name += "/late"
	}
	c, ok := s.caps[name]
	if !ok {
		return 1000, "no cap", nil
	}
	return c[s.rank], fmt.Sprintf("rank %d's cap for %s", s.rank, name), nil
}

func (s sharedHost) Info() backend.Info {
	i := s.Backend.Info()
	i.Sharing = "4 ranks on 1 GPU(s), up to 4 per GPU, mps"
	return i
}

func openShared(t *testing.T, caps map[string][]int) func(*Options, comm.Comm) (backend.Backend, error) {
	dir := t.TempDir()
	return func(o *Options, c comm.Comm) (backend.Backend, error) {
		return sharedHost{Backend: host.New(dir), rank: c.Rank(), caps: caps}, nil
	}
}

// With shared GPUs every custom launch is capped at the smallest cap any
// rank computed, the report says so, and a kernel that cannot fit is
// skipped with the reason rather than launched to hang.
func TestSharedGPUsCapTheGrid(t *testing.T) {
	js := filepath.Join(t.TempDir(), "r.json")
	caps := map[string][]int{"oneshot": {6, 3, 6, 5}, "twoshot": {4, 4, 0, 4}}
	res := runWorldWith(t, 4, same("--backend", "cuda", "--variant", "oneshot,twoshot,ring", "--dtype", "f32", "--op", "sum",
		"--size", "64K", "--mode", "oop,reg,plain", "--iters", "0", "--device-timeout", "30s", "--json", js), openShared(t, caps))
	require.Equal(t, []int{0, 0, 0, 0}, res.codes, "stderr: %v\nstdout: %s", res.stderr, res.stdout[0])
	require.Contains(t, res.stdout[0], "# SHARED GPUs: 4 ranks on 1 GPU(s), up to 4 per GPU, mps; protocol coverage only, the times below mean nothing")

	rep := readReport(t, js)
	require.Equal(t, "4 ranks on 1 GPU(s), up to 4 per GPU, mps", rep.Header.SharedGPUs)
	require.Equal(t, []int{1, 0, 1}, []int{rep.Header.Warmup, rep.Header.Iters, rep.Header.Reps}, "--iters 0 given; warmup and reps as on the host")
	byVariant := map[string]report.Case{}
	for _, c := range rep.Cases {
		byVariant[c.Variant] = c
	}
	one := byVariant["oneshot"]
	require.Equal(t, report.Pass, one.Verdict, one.Reason)
	require.Equal(t, 3, one.GridCap, "the smallest rank's cap")
	require.Equal(t, "rank 1's cap for oneshot", one.GridCapFrom)
	require.Equal(t, 3, one.Blocks, "64 KiB of f32 wants 8 blocks of 512 threads; capped at 3")

	two := byVariant["twoshot"]
	require.Equal(t, report.Skipped, two.Verdict)
	require.Contains(t, two.Reason, "the grids of the 4 ranks sharing a GPU cannot all be resident at once (rank 2's cap for twoshot)")

	ring := byVariant["ring"]
	require.Equal(t, report.Pass, ring.Verdict, ring.Reason)
	require.Equal(t, 1000, ring.GridCap)
	require.Less(t, ring.Blocks, 1000, "under the cap, the variant's own grid")
}

// blockCounter records the largest grid any custom launch asked for (0, the
// backend's default, counts as uncapped).
type blockCounter struct {
	sharedHost
	most *atomic.Int64
}

func (b blockCounter) Allreduce(l *backend.Launch) error {
	n := int64(l.Blocks)
	if n <= 0 {
		n = 1 << 30
	}
	for {
		old := b.most.Load()
		if n <= old || b.most.CompareAndSwap(old, n) {
			break
		}
	}
	return b.sharedHost.Allreduce(l)
}

// Stress's launches are copies of the case's, one per iteration: they keep
// to the cap too (they once did not, and 4 ranks on one H100 hung at 1 MiB
// where the uncapped grid was 132 blocks of every rank).
func TestSharedGPUsCapStressLaunches(t *testing.T) {
	caps := map[string][]int{"oneshot": {6, 3, 6, 5}}
	most := make([]atomic.Int64, 4)
	dir := t.TempDir()
	open := func(o *Options, c comm.Comm) (backend.Backend, error) {
		return blockCounter{sharedHost{Backend: host.New(dir), rank: c.Rank(), caps: caps}, &most[c.Rank()]}, nil
	}
	res := runWorldWith(t, 4, same("--backend", "cuda", "--variant", "oneshot", "--dtype", "f32", "--op", "sum",
		"--size", "64K", "--mode", "oop,reg,plain", "--stress", "5", "--device-timeout", "30s"), open)
	require.Equal(t, []int{0, 0, 0, 0}, res.codes, "stderr: %v\nstdout: %s", res.stderr, res.stdout[0])
	for r := range most {
		require.EqualValues(t, 3, most[r].Load(), "rank %d: 64 KiB of f32 wants 8 blocks; every stress launch capped at 3", r)
	}
}

func TestSharedGPUsRefuseTimingWithoutTheFlag(t *testing.T) {
	for _, sub := range []string{"bench", "tune"} {
		res := runWorldWith(t, 2, same(sub, "--backend", "cuda", "-b", "4K", "-e", "4K", "--variant", "oneshot"), openShared(t, nil))
		require.Equal(t, []int{2, 2}, res.codes, "%s: %v", sub, res.stderr)
		require.Contains(t, res.stderr[0], "artest: "+sub+" times nothing useful while ranks share GPUs (4 ranks on 1 GPU(s), up to 4 per GPU, mps): run one rank per GPU, or pass --allow-shared-timing")
	}
	js := filepath.Join(t.TempDir(), "b.json")
	res := runWorldWith(t, 2, same("bench", "--backend", "cuda", "-b", "4K", "-e", "4K", "--variant", "oneshot", "--allow-shared-timing", "--json", js), openShared(t, nil))
	require.Equal(t, []int{0, 0}, res.codes, "%v", res.stderr)
	require.Equal(t, "4 ranks on 1 GPU(s), up to 4 per GPU, mps", readReport(t, js).Header.SharedGPUs)
}

// A plugin launches its own grid, which artest cannot cap: with shared
// GPUs its cases run uncapped (the plugin must keep its grids resident
// together; docs/limits.md) instead of being skipped on a cap for a kernel
// that is not artest's. One rank: a process sets a plugin up once.
func TestSharedGPUsLeavePluginGridsAlone(t *testing.T) {
	// A copy of its own: a process loads and sets up a plugin once per
	// path.
	so := filepath.Join(t.TempDir(), "host_oneshot.so")
	b, err := os.ReadFile(buildExamplePlugin(t))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(so, b, 0o755))

	js := filepath.Join(t.TempDir(), "r.json")
	caps := map[string][]int{"example:oneshot": {0}}
	res := runWorldWith(t, 1, same("--backend", "cuda", "--plugin", so, "--variant", "example:oneshot", "--dtype", "f32", "--op", "sum",
		"--size", "64K", "--mode", "oop,reg,plain", "--iters", "0", "--json", js), openShared(t, caps))
	require.Equal(t, []int{0}, res.codes, "stderr: %v\nstdout: %s", res.stderr, res.stdout[0])
	rep := readReport(t, js)
	require.NotEmpty(t, rep.Cases)
	for _, c := range rep.Cases {
		require.Equal(t, "example:oneshot", c.Variant)
		require.Equal(t, report.Pass, c.Verdict, c.Reason)
		require.Zero(t, c.GridCap, "no cap applied")
	}
}

// prepareFails plays a shared GPU on which one rank cannot set up the
// straggler's load.
type prepareFails struct {
	sharedHost
	h *host.Backend
}

func (p prepareFails) Straggle(d time.Duration) error { return p.h.Straggle(d) }
func (p prepareFails) JoinStraggle() error            { return p.h.JoinStraggle() }

func (p prepareFails) PrepareStraggle() error {
	if p.rank == 2 {
		return errors.New("out of memory for the load's scratch")
	}
	return nil
}

// On shared GPUs the ranks agree after stress's set-up and after every
// batch: one rank's failure stops the case on every rank, named, instead
// of leaving its peers to spin at a barrier until the device deadline.
func TestSharedStressFailureStopsEveryRank(t *testing.T) {
	dir := t.TempDir()
	open := func(o *Options, c comm.Comm) (backend.Backend, error) {
		h := host.New(dir)
		return prepareFails{sharedHost{Backend: h, rank: c.Rank()}, h}, nil
	}
	js := filepath.Join(t.TempDir(), "r.json")
	res := runWorldWith(t, 4, same("--backend", "cuda", "--case", "oneshot/f32/sum/4100B/oop-reg-plain/np4", "--stress", "5",
		"--device-timeout", "30s", "--json", js), open)
	require.Equal(t, []int{1, 1, 1, 1}, res.codes, "stderr: %v\nstdout: %s", res.stderr, res.stdout[0])
	rep := readReport(t, js)
	require.Len(t, rep.Cases, 1)
	c := rep.Cases[0]
	require.Equal(t, report.Fail, c.Verdict)
	var details []string
	for _, f := range c.Failures {
		details = append(details, fmt.Sprintf("rank %d: %s", f.Rank, f.Detail))
	}
	all := strings.Join(details, "\n")
	require.Contains(t, all, "rank 2: prepare the straggler's load: out of memory for the load's scratch")
	require.Contains(t, all, "rank 0: stopped with the other ranks after stress set-up: rank 2: prepare the straggler's load")
}

// stragglingShared is a shared GPU with the straggler's load.
type stragglingShared struct {
	blockCounter
	h *host.Backend
}

func (s stragglingShared) PrepareStraggle() error         { return nil }
func (s stragglingShared) Straggle(d time.Duration) error { return s.h.Straggle(d) }
func (s stragglingShared) JoinStraggle() error            { return s.h.JoinStraggle() }
func (s stragglingShared) Delay(d time.Duration) error    { return s.h.Delay(d) }

// Under skew or the straggler, stress on shared GPUs asks for the cap that
// leaves a late rank room (coresident.Limits.Late); plain stress and the
// schedules that start no rank late keep the ordinary cap.
func TestSharedStressLateRanksGetTheirCap(t *testing.T) {
	caps := map[string][]int{"oneshot": {6, 4, 6, 5}, "oneshot/late": {3, 2, 3, 3}}
	for _, tc := range []struct {
		schedule string
		want     int
		from     string
	}{
		{"straggler", 2, "rank 1's cap for oneshot/late"},
		{"skew", 2, "rank 1's cap for oneshot/late"},
		{"poison-after-return", 4, "rank 1's cap for oneshot"},
		{"none", 4, "rank 1's cap for oneshot"},
	} {
		t.Run(tc.schedule, func(t *testing.T) {
			most := make([]atomic.Int64, 4)
			dir := t.TempDir()
			open := func(o *Options, c comm.Comm) (backend.Backend, error) {
				h := host.New(dir)
				return stragglingShared{blockCounter{sharedHost{Backend: h, rank: c.Rank(), caps: caps}, &most[c.Rank()]}, h}, nil
			}
			js := filepath.Join(t.TempDir(), "r.json")
			res := runWorldWith(t, 4, same("--backend", "cuda", "--variant", "oneshot", "--dtype", "f32", "--op", "sum",
				"--size", "64K", "--mode", "oop,reg,plain", "--stress", "5", "--schedule", tc.schedule, "--device-timeout", "30s", "--json", js), open)
			require.Equal(t, []int{0, 0, 0, 0}, res.codes, "stderr: %v\nstdout: %s", res.stderr, res.stdout[0])
			for r := range most {
				require.EqualValues(t, tc.want, most[r].Load(), "rank %d", r)
			}
			rep := readReport(t, js)
			require.Equal(t, tc.want, rep.Cases[0].GridCap)
			require.Equal(t, tc.from, rep.Cases[0].GridCapFrom)
		})
	}
}

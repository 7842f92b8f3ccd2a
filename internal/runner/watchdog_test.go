package runner

import (
	"errors"
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
	"github.com/artest/artest/kernels"
)

// blockingBackend is a host backend whose main-thread calls can block the
// way a GPU's do: a launch that never returns (a plugin's call that
// synchronises on its own hung kernel, a stream whose launch queue is
// full) and a wait for the stream that ignores its timeout. A blocked call
// returns only once the job was aborted and release has passed, so the
// test's ranks end.
type blockingBackend struct {
	*host.Backend
	world         *comm.LocalWorld
	blockLaunches bool
	// blockFrom, above 0: the launches from this one (counted from 1) on
	// block, as behind a queue that filled.
	blockFrom int
	launches  int
	blockSync bool
	entered   atomic.Int32
}

func (b *blockingBackend) block() error {
	b.entered.Add(1)
	<-b.world.Rank(0).AbortedNotify()
	time.Sleep(500 * time.Millisecond) // the watchdogs finish their lines
	return errors.New("released after the job was aborted")
}

func (b *blockingBackend) Allreduce(l *backend.Launch) error {
	b.launches++
	if b.blockLaunches || (b.blockFrom > 0 && b.launches >= b.blockFrom) {
		return b.block()
	}
	return b.Backend.Allreduce(l)
}

func (b *blockingBackend) Sync(timeout time.Duration) error {
	if b.blockSync {
		if err := b.Backend.Sync(timeout); err != nil {
			return err
		}
		return b.block()
	}
	return b.Backend.Sync(timeout)
}

const watchdogCase = "oneshot/f32/sum/4KiB/oop-reg-plain/np2"

// watchdogRun runs watchdogCase at 2 ranks with rank blocking's main-thread
// calls blocked as set, a 200 ms --timeout and a 400 ms grace, and the
// reports written; it returns the run and the JSON report.
func watchdogRun(t *testing.T, set func(rank int, b *blockingBackend)) (worldRun, *report.Report) {
	t.Helper()
	js := filepath.Join(t.TempDir(), "r.json")
	res := runWorldWrapped(t, 2, []string{watchdogCase}, func(rank int, world *comm.LocalWorld, hb *host.Backend) backend.Backend {
		b := &blockingBackend{Backend: hb, world: world}
		set(rank, b)
		return b
	}, func(rank int, c *Config) {
		c.Iters, c.Timeout, c.WatchdogGrace, c.HangGrace = 0, 200*time.Millisecond, 400*time.Millisecond, 5*time.Second
		if rank == 0 {
			c.JSONPath = js
		}
	})
	f, err := os.Open(js)
	require.NoError(t, err, "rank 0 wrote the JSON report: %s", res.stderr)
	defer f.Close()
	rep, err := report.ReadJSON(f)
	require.NoError(t, err)
	return res, rep
}

// Every main thread blocked in its first launch, which never returns (no
// stream ever times out, since no rank comes to wait for its stream, and
// no call is in flight for a launch to wait behind): the watchdog ends the
// job once no rank made progress for --timeout plus the grace, each rank
// saying what it is in, and rank 0 writes the reports with the hung case.
func TestWatchdogEndsAJobWhoseLaunchesNeverReturn(t *testing.T) {
	var bs [2]*blockingBackend
	start := time.Now()
	res, rep := watchdogRun(t, func(rank int, b *blockingBackend) {
		bs[rank] = b
		b.blockLaunches = true
	})
	took := time.Since(start)
	code, aborted := res.world.AbortCode()
	require.True(t, aborted)
	require.Equal(t, 3, code)
	for r := 0; r < 2; r++ {
		require.Equal(t, int32(1), bs[r].entered.Load(), "rank %d blocked in its first launch", r)
		require.Contains(t, res.stderrs[r], "artest: watchdog: rank "+string(rune('0'+r))+": ")
		require.Contains(t, res.stderrs[r], "case "+watchdogCase+"; main thread inside the launch of oneshot for ")
	}
	// The first rank to see it says why; the other joins it (or sees it
	// in the same tick and says so too).
	both := res.stderrs[0] + res.stderrs[1]
	require.Regexp(t, `no rank made progress for \d+s \(--timeout 200ms plus a grace of 400ms\)`, both)
	require.Less(t, took, 10*time.Second)
	require.Less(t, took, 10*time.Second)
	require.Equal(t, 3, rep.Summary.ExitCode)
	require.Len(t, rep.Cases, 1)
	hung := rep.Cases[0]
	require.Equal(t, watchdogCase, hung.ID)
	require.Equal(t, report.Hung, hung.Verdict)
	require.Contains(t, hung.Reason, "the watchdog ended the job")
	require.Contains(t, hung.Reason, "watchdog: rank 1: ", "rank 1's line is in rank 0's report")
}

// Rank 1 blocked in a wait that never returns (a plugin call that
// synchronises on a hung kernel), rank 0 in the collective after the call,
// waiting for rank 1: neither stream times out, and the watchdog names
// both.
func TestWatchdogEndsAJobStuckInAWaitAndACollective(t *testing.T) {
	res, rep := watchdogRun(t, func(rank int, b *blockingBackend) {
		b.blockSync = rank == 1
	})
	code, aborted := res.world.AbortCode()
	require.True(t, aborted)
	require.Equal(t, 3, code)
	require.Contains(t, res.stderrs[1], "main thread inside the wait for the checked call for ")
	require.Contains(t, res.stderrs[0], "main thread inside the collective ")
	// Neither is in a launch: only the rule of no progress anywhere for
	// --timeout plus the grace ends it.
	require.Regexp(t, `no rank made progress for \d+s \(--timeout 200ms plus a grace of 400ms\)`, res.stderrs[0]+res.stderrs[1])
	require.Contains(t, res.stderrs[0], "(waiting for every rank)")
	require.Equal(t, 3, rep.Summary.ExitCode)
	require.Len(t, rep.Cases, 1)
	require.Equal(t, report.Hung, rep.Cases[0].Verdict)
	require.Contains(t, rep.Cases[0].Reason, "main thread inside the wait for the checked call")
}

// Rank 1's launch never returns; rank 0's stream times out waiting for it
// (the kernels wait with no deadline) and its diagnosis ends the job as
// before, now with rank 1's watchdog line, which says where rank 1 is.
func TestHangReportHoldsABlockedPeersLine(t *testing.T) {
	res, rep := watchdogRun(t, func(rank int, b *blockingBackend) {
		b.blockLaunches = rank == 1
	})
	rank, aborted := res.world.AbortedBy()
	require.True(t, aborted)
	require.Equal(t, 0, rank, "rank 0 ends the job after writing the reports")
	require.Contains(t, res.stderr, "hang in case "+watchdogCase+": rank 0 saw no completion")
	require.Contains(t, res.stderrs[1], "watchdog: rank 1: rank 0 found the job hung; case "+watchdogCase+"; main thread inside the launch of oneshot")
	require.Len(t, rep.Cases, 1)
	require.Contains(t, rep.Cases[0].Reason, "watchdog: rank 1: rank 0 found the job hung")
}

// A slow rank that makes progress is no hang, however long its peers wait
// in a collective for it: rank 1's kernels start 30 ms late, 60 stress
// iterations take about 2 s, ten times the timeout plus the grace, and
// the case passes.
func TestWatchdogLetsASlowRankFinish(t *testing.T) {
	if testing.Short() {
		t.Skip("2 s of stress")
	}
	res := runWorld(t, 2, []string{watchdogCase}, func(rank int, c *Config) {
		c.Stress, c.Timeout, c.WatchdogGrace = 60, 100*time.Millisecond, 100*time.Millisecond
		c.Inject = Inject{Bits: kernels.InjectDelay, DelayRank: 1, Delay: 30 * time.Millisecond}
	})
	_, aborted := res.world.AbortCode()
	require.False(t, aborted, res.stderr)
	require.Equal(t, []int{0, 0}, res.codes, res.stderr)
	require.NotContains(t, strings.Join(res.stderrs, ""), "watchdog")
}

// A stress batch whose 10th launch never returns, its first 9 enqueued and
// finished: the main threads wait behind calls in flight while the streams
// finish nothing, which is the stream timeout's rule, so the watchdog ends
// the job at --timeout, not after the grace.
func TestWatchdogEndsALaunchBlockedBehindCallsInFlight(t *testing.T) {
	js := filepath.Join(t.TempDir(), "r.json")
	start := time.Now()
	res := runWorldWrapped(t, 2, []string{watchdogCase}, func(rank int, world *comm.LocalWorld, hb *host.Backend) backend.Backend {
		return &blockingBackend{Backend: hb, world: world, blockFrom: 10}
	}, func(rank int, c *Config) {
		c.Stress, c.Timeout, c.WatchdogGrace, c.HangGrace = 100, 200*time.Millisecond, 30*time.Second, 5*time.Second
		if rank == 0 {
			c.JSONPath = js
		}
	})
	took := time.Since(start)
	code, aborted := res.world.AbortCode()
	require.True(t, aborted)
	require.Equal(t, 3, code)
	both := res.stderrs[0] + res.stderrs[1]
	require.Contains(t, both, "its stream finished nothing within --timeout 200ms while the main thread waited inside a call")
	require.Contains(t, both, "9 call(s) enqueued since the stream last finished")
	require.Less(t, took, 20*time.Second, "ended at --timeout, long before the 30 s grace")
	f, err := os.Open(js)
	require.NoError(t, err)
	defer f.Close()
	rep, err := report.ReadJSON(f)
	require.NoError(t, err)
	require.Equal(t, 3, rep.Summary.ExitCode)
}

// A folder the liveness board cannot be made in ends the run before its
// first case with one line and exit 4 on every rank, not a run without a
// watchdog.
func TestBoardThatCannotBeMadeIsExitFour(t *testing.T) {
	res := runWorld(t, 2, []string{watchdogCase}, func(rank int, c *Config) { c.BoardDir = "/nonexistent/board" })
	require.Equal(t, []int{4, 4}, res.codes, res.stderr)
	require.Contains(t, res.stderr, "artest: create the liveness board in /nonexistent/board: ")
}

//go:build integration

package integration

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// --timeout bounds the wait for one step of the stream, not for a stress
// batch: a batch whose calls each take 20 ms is no hang at --timeout 2s
// however long the whole batch takes. Every call of rank 1 sleeps 20 ms
// (--inject delay: sleeping, so the time holds on a machine of any speed
// and load), so each case's 400 calls take at least 8 s, four times the
// timeout, in one or two batches, plain launches and graph replays (the two
// ways a batch reaches the stream); 4 KiB keeps the work of a call small.
// Why 2 s holds on a loaded machine: the stream reports progress every 16
// calls (16 x 20 ms of sleep = 0.32 s, plus the work of 16 small calls), a
// sixth of the timeout; a false hang needs a rank starved of every core for
// 1.7 s.
func TestStressTimeoutMeasuresProgress(t *testing.T) {
	t.Parallel()
	const timeout = 2 * time.Second
	o := mpirun(t, 2, 5*time.Minute, "--variant", "oneshot", "--size", "4K", "--stress", "400", "--schedule", "none",
		"--timeout", timeout.String(), "--dtype", "f32", "--op", "sum", "--mode", "oop,reg,aligned",
		"--inject", "delay:rank=1,us=20000")
	require.Equal(t, 0, o.code, "%s\n%s", o.stdout, o.stderr)
	require.Contains(t, o.stdout, "# pass 2, FAIL 0, skipped 0")
	// The per-case progress lines on stderr: "# [1/2] ID pass 9.65s (...)".
	var longest time.Duration
	for _, m := range regexp.MustCompile(`(?m)^# \[\d+/\d+\] \S+ pass ([0-9.]+)s`).FindAllStringSubmatch(o.stderr, -1) {
		d, err := time.ParseDuration(m[1] + "s")
		require.NoError(t, err)
		longest = max(longest, d)
	}
	require.Greater(t, longest, 3*timeout, "no stress case ran longer than 3x --timeout, so none showed that the timeout measures progress\n%s", o.stderr)
}

// A stress call that never ends is still a hang at that timeout: rank 1's
// blocks sleep 3 s in every call, no call finishes within 100ms. The
// batch's launches block behind the stream's full queue before any rank
// comes to wait for it, so the watchdog says it, at --timeout and not
// later: the stream finished nothing within it, and the SignalBlocks say
// whom rank 0 waits for.
func TestStressHangIsStillDetected(t *testing.T) {
	t.Parallel()
	start := time.Now()
	o := mpirun(t, 2, 2*time.Minute, "--variant", "oneshot", "--dtype", "f32", "--op", "sum", "--size", "256K",
		"--mode", "oop,reg,plain,aligned", "--stress", "1000", "--schedule", "none", "--timeout", "100ms",
		"--device-timeout", "0", "--inject", "delay:rank=1,us=3000000")
	took := time.Since(start)
	require.Equal(t, 3, o.code, "%s\n%s", o.stdout, o.stderr)
	require.Contains(t, o.stderr, "its stream finished nothing within --timeout 100ms while the main thread waited inside a call (a launch behind a full queue); case oneshot/f32/sum/256KiB/oop-reg-plain/np2")
	require.Contains(t, o.stderr, "waits at the end barrier for rank 1")
	require.Less(t, took, 30*time.Second, "ended at --timeout, not after the watchdog's grace")
}

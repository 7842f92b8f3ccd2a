package runner

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// syncBuffer is a bytes.Buffer safe for the heartbeat's goroutine and the
// test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A plain run prints no line per case but, while it runs, a line each beat
// with the cases done, the total, the time left and the running case.
func TestProgressHeartbeatOfAPlainRun(t *testing.T) {
	var w syncBuffer
	const beat = 20 * time.Millisecond
	p := newProgress(&w, 10, false, beat)
	p.begin(1, "a/1")
	p.finished(1, "# [1/10] a/1 pass 0.01s", false)
	p.begin(2, "a/2")
	p.finished(2, "# [2/10] a/2 pass 0.01s", false)
	p.begin(3, "a/3")
	// The heartbeat is a goroutine: wait for its line, however slowly it
	// gets a core.
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(w.String(), "# progress:") && time.Now().Before(deadline) {
		time.Sleep(beat)
	}
	p.close()
	out := w.String()
	require.NotContains(t, out, "a/1 pass", "no line per case without --progress")
	line, _, _ := strings.Cut(out, "\n")
	require.Regexp(t, `^# progress: 2 of 10 cases done, \S+ elapsed, about \S+ left; running \[3/10\] a/3$`, line)
}

// With per-case lines (--progress, stress), each finished case prints its
// line; eta adds the elapsed time and the estimate.
func TestProgressPerCaseLines(t *testing.T) {
	var w syncBuffer
	p := newProgress(&w, 4, true, 0)
	p.begin(1, "a/1")
	p.finished(1, "# [1/4] a/1 pass 0.01s", true)
	p.begin(4, "a/4")
	p.finished(4, "# [4/4] a/4 pass 0.01s", true)
	p.close()
	lines := strings.Split(strings.TrimSpace(w.String()), "\n")
	require.Len(t, lines, 2)
	require.Regexp(t, `^# \[1/4\] a/1 pass 0.01s \(\S+ elapsed, about \S+ left\)$`, lines[0])
	require.Regexp(t, `^# \[4/4\] a/4 pass 0.01s \(\S+ elapsed\)$`, lines[1])
}

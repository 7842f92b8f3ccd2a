package runner

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// heartbeat is the longest a run that is not --quiet stays silent on rank
// 0's stderr. CI systems end jobs that print nothing for minutes (10 on
// several), and a person watching wants to know the run is alive; 10 s is
// well inside both.
const heartbeat = 10 * time.Second

// progress prints rank 0's progress lines. With perCase (--progress, and
// every stress run) each finished case gets a line; without it (a plain
// run) nothing is printed per case. Either way, when heartbeat passes with
// no line, one line says how many cases are done of how many, the time so
// far and the time the rest should take at the rate so far, and which case
// is running. Its lines share stderr with the runner's, so every write
// holds mu.
type progress struct {
	mu      sync.Mutex
	w       io.Writer
	total   int
	perCase bool
	start   time.Time
	last    time.Time // of the last line written
	done    int       // cases finished
	current string    // the running case's ID
	index   int       // its number, from 1
	stop    chan struct{}
	stopped chan struct{}
}

// newProgress starts the heartbeat (when beat > 0) over total cases.
func newProgress(w io.Writer, total int, perCase bool, beat time.Duration) *progress {
	now := time.Now()
	p := &progress{w: w, total: total, perCase: perCase, start: now, last: now,
		stop: make(chan struct{}), stopped: make(chan struct{})}
	if beat <= 0 {
		close(p.stopped)
		return p
	}
	go func() {
		defer close(p.stopped)
		t := time.NewTicker(beat / 4)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case now := <-t.C:
				p.mu.Lock()
				if now.Sub(p.last) >= beat {
					p.beat(now)
					p.last = now
				}
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// beat writes the heartbeat line; mu is held.
func (p *progress) beat(now time.Time) {
	elapsed := now.Sub(p.start)
	line := fmt.Sprintf("# progress: %d of %d cases done, %s elapsed", p.done, p.total, roundDuration(elapsed))
	if left := p.left(elapsed); left != "" {
		line += ", " + left
	}
	if p.current != "" {
		line += fmt.Sprintf("; running [%d/%d] %s", p.index, p.total, p.current)
	}
	fmt.Fprintln(p.w, line)
}

// left is the estimate of the time the cases not done yet take, at the
// rate so far ("" before the first case finished).
func (p *progress) left(elapsed time.Duration) string {
	if p.done == 0 || p.done >= p.total {
		return ""
	}
	rest := time.Duration(float64(elapsed) / float64(p.done) * float64(p.total-p.done))
	return "about " + roundDuration(rest) + " left"
}

// begin notes that case id, the n-th, starts.
func (p *progress) begin(n int, id string) {
	p.mu.Lock()
	p.index, p.current = n, id
	p.mu.Unlock()
}

// finished counts the n-th case done and, with perCase, prints its line
// with the time so far and, when eta, the time the cases left should take.
func (p *progress) finished(n int, line string, eta bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	p.done, p.current = n, ""
	if !p.perCase {
		return
	}
	elapsed := now.Sub(p.start)
	if eta {
		if left := p.left(elapsed); left != "" {
			line += fmt.Sprintf(" (%s elapsed, %s)", roundDuration(elapsed), left)
		} else {
			line += fmt.Sprintf(" (%s elapsed)", roundDuration(elapsed))
		}
	}
	fmt.Fprintln(p.w, line)
	p.last = now
}

// close stops the heartbeat.
func (p *progress) close() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.stopped
}

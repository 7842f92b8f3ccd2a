package runner

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/internal/liveness"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/kernels/registry"
	"github.com/artest/artest/reference"
	"github.com/artest/artest/sigblock"
)

// Diagnosing a hang: a stream that did not finish, or a kernel block that
// gave up waiting, read from every rank's SignalBlock, reported, and the
// job ended with exit code 3.

// specialHang is what a hang of a case of special inputs adds: what such
// inputs do to a kernel that waits on its data.
const specialHang = "the case's inputs are special values (signed zeros, subnormals, Inf, NaN): a kernel that polls its data " +
	"for a sentinel (-0.0 or +0.0 taken for \"not yet written\") waits forever where a real input equals it"

// hang handles a stream that did not finish within the timeout (or whose
// kernel gave up waiting: gaveUp): it reads every rank's SignalBlock, says
// which blocks gave up where and who waits for whom, and aborts the job with
// exit code 3. Rank 0 writes the reports of every finished case first.
func (r *run) hang(c cases.Case, what string, blocks int, gaveUp bool) {
	r.dog.enter(phaseHang, "")
	var snaps []sigblock.Snapshot
	for p := 0; p < r.w.Size; p++ {
		s, err := r.b.ReadSignal(p)
		if err != nil {
			fmt.Fprintf(r.cfg.Stderr, "artest: rank %d: read rank %d SignalBlock: %v\n", r.c.Rank(), p, err)
			continue
		}
		snaps = append(snaps, sigblock.Snapshot(s))
		dumpSignal(r.cfg.Stderr, r.cfg.Knobs.SignalDump, r.c.Rank(), p, s)
	}
	diag := ""
	if len(snaps) == r.w.Size {
		diag = sigblock.Summarize(sigblock.Diagnose(snaps, blocks))
		// The kernels' own account comes first: which block gave up at
		// which barrier or slot, waiting for whom.
		if g := sigblock.SummarizeGiveUps(nameGiveUps(r.cfg.Variants, sigblock.GiveUps(snaps))); g != "" {
			diag = strings.TrimSuffix(g+"\n"+diag, "\n")
		}
		// A ring launch waits on slot sequences and credits, not barriers.
		if ring := sigblock.SummarizeRing(sigblock.DiagnoseRing(snaps)); ring != "" {
			diag = strings.TrimPrefix(diag+"\n"+ring, "\n")
		}
	}
	// A call of an External variant that never returned says so first:
	// its barriers are its own, not in any SignalBlock. (After a give-up
	// the stream finished: nothing is still running to name.)
	if wt, ok := r.b.(backend.Waiter); ok && !gaveUp {
		if in := wt.Waiting(); in != "" {
			diag = strings.TrimSuffix(in+"\n"+diag, "\n")
		}
	}
	if diag == "" {
		diag = "no rank waits at a barrier (a rank may never have launched, or the call is not a custom kernel)"
	}
	msg := fmt.Sprintf("hang in case %s: rank %d saw no completion of %s within %s\n%s",
		c.ID(), r.c.Rank(), what, r.cfg.Timeout, indent(diag))
	if gaveUp {
		msg = r.gaveUpMessage(c, what, diag)
	}
	if c.Input == reference.Special {
		msg += "\n" + indent(specialHang)
	}
	if r.dog != nil {
		r.dog.board.Say(liveness.Hung, fmt.Sprintf("rank %d: no completion of %s within %s in case %s", r.c.Rank(), what, r.cfg.Timeout, c.ID()))
	}
	if r.c.Rank() != 0 {
		// Give rank 0 the first word: it writes the reports and the same
		// diagnosis, then aborts everyone.
		r.awaitAbort(r.cfg.HangGrace)
	}
	fmt.Fprintf(r.cfg.Stderr, "artest: %s\n", msg)
	if r.c.Rank() == 0 {
		// The hung case goes into every report under its own ID, beside
		// the run-level error.
		// The peers whose main threads are blocked outside their stream
		// (their watchdogs say what in): their lines go in too.
		if r.dog != nil {
			if peers := r.peerLines(3 * watchdogTick); peers != "" {
				msg += "\n" + indent(peers)
			}
		}
		hung := r.hungCase(c, msg, diag)
		if r.cfg.OnFail != nil {
			hung.Repro = r.cfg.OnFail(hung)
		}
		r.mu.Lock()
		if !r.interrupted && !r.reported {
			r.reportHang(&hung, msg)
		}
		r.mu.Unlock()
		if r.dog != nil {
			r.dog.board.SetState(liveness.Reported)
		}
	}
	if f, ok := r.cfg.Stdout.(*os.File); ok {
		_ = f.Sync()
	}
	r.c.Abort(exitcode.Hang)
}

// reportHang writes every report of a hung job (rank 0, r.mu held): the
// finished cases, hung (when a case hung), the run's error msg, exit 3.
func (r *run) reportHang(hung *report.Case, msg string) {
	if hung != nil {
		r.rep.Cases = append(r.rep.Cases, *hung)
		r.streamCase(*hung, len(r.rep.Cases))
	}
	r.rep.Summary.ExitCode = exitcode.Hang
	r.rep.Summary.Error = msg
	_ = r.writeReports()
	r.reported = true
}

// awaitAbort waits up to grace for another rank to abort the job. Under MPI
// that abort ends this process; in an in-process world (comm.AbortWatcher)
// this rank ends here as a killed process would, saying nothing more.
func (r *run) awaitAbort(grace time.Duration) {
	w, ok := r.raw.(comm.AbortWatcher)
	if !ok {
		time.Sleep(grace)
		return
	}
	select {
	case <-time.After(grace):
	case <-w.AbortedNotify():
		r.c.Abort(exitcode.Hang) // the first abort's code stands
	}
}

// nameGiveUps fills in the variant of vs and wait point of plugin give-ups
// (their words hold the trace id and the point's index) from the
// variant's declaration.
func nameGiveUps(vs *registry.Set, gs []sigblock.GiveUp) []sigblock.GiveUp {
	for i := range gs {
		g := &gs[i]
		if g.Kind != sigblock.DiagKindPluginWait {
			continue
		}
		if v := vs.ByID(g.Variant); v != nil && v.External != nil {
			g.Name = v.Name
			if g.Where >= 0 && g.Where < len(v.WaitPoints) {
				g.Point = v.WaitPoints[g.Where]
			}
		}
	}
	return gs
}

func indent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n")
}

// sync waits for the stream; on a timeout, or when a kernel block of this
// rank gave up waiting (its diag words say so), it does not return. A
// give-up wins over an error the stream reported with it (a plugin's call
// that returned an error status after its wait gave up): the error is the
// give-up's consequence, and the record says where it started.
func (r *run) sync(c cases.Case, what string, blocks int) error {
	leave := r.dog.enter(phaseSync, "the wait for "+what)
	err := r.b.Sync(r.cfg.Timeout)
	leave()
	if err == nil {
		r.dog.drained()
	}
	if errors.Is(err, backend.ErrTimeout) {
		r.hang(c, what, blocks, false)
	}
	if r.gaveUp() {
		r.hang(c, what, blocks, true)
	}
	return err
}

// gaveUp reports whether a kernel block of this rank gave up waiting: its
// SignalBlock's diag words hold a give-up record. Read after every sync
// (the stream is idle, so the copy is consistent); a read error (a context
// a failed launch left unusable) is left to the next step that touches the
// backend.
func (r *run) gaveUp() bool {
	s, err := r.b.ReadSignal(r.c.Rank())
	if err != nil {
		return false
	}
	_, ok := sigblock.Snapshot(s).GiveUp()
	return ok
}

// dumpSignal writes the raw SignalBlock of rank p, as rank me read it at a
// hang, to dir/rank<me>-reads-<p>.bin when ARTEST_SIGNAL_DUMP names a
// folder (dir): the summary above is built from these bytes, and a
// puzzling one can be read again offline (sigblock.Snapshot).
func dumpSignal(stderr io.Writer, dir string, me, p int, b []byte) {
	if dir == "" {
		return
	}
	path := fmt.Sprintf("%s/rank%d-reads-%d.bin", dir, me, p)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		fmt.Fprintf(stderr, "artest: rank %d: dump rank %d SignalBlock: %v\n", me, p, err)
	}
}

package runner

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/internal/liveness"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/sigblock"
)

// The watchdog ends a job that no longer makes progress, whatever its main
// threads are blocked in. The stream's timeout (sync) catches a kernel
// that does not finish while the main thread waits for it; it cannot catch
// a main thread that never comes back to wait: blocked in a launch (a
// stream whose queue is full behind a kernel that never ends), inside a
// plugin's call that synchronises on its own hung kernel, in an MPI
// collective waiting for a peer that is stuck. So every rank runs a
// watchdog on a goroutine of its own, which calls neither the backend nor
// MPI to decide, and reads the node's liveness board (internal/liveness):
// the main thread counts a beat at every step (entering and leaving every
// launch, wait and collective, every check), the backend one at every step
// of its stream (backend.ProgressNotifier). The job is hung when no rank's
// count moved for --timeout plus watchdogGrace, or when some rank said so
// on the board (its stream timed out, or its watchdog fired) and this
// rank's main thread is not inside a wait that will say so itself. Then
// every rank prints one line naming its case, the calls in flight and the
// call its main thread is in; rank 0 writes the reports of the finished
// cases and of the hung one, with every rank's line, and ends the job with
// exit code 3.

// watchdogGrace is how much longer than --timeout the watchdog lets a job
// go without any rank's progress: a stream that stops is the stream
// timeout's to report (with the SignalBlock diagnosis), which comes first.
const watchdogGrace = 10 * time.Second

// watchdogTick is how often the watchdog reads the board.
const watchdogTick = 100 * time.Millisecond

// phaseKind is what a rank's main thread is doing.
type phaseKind uint8

const (
	phaseWork phaseKind = iota // artest's own code on the host
	phaseCall                  // a backend call: a launch, a replay, a capture
	phaseSync                  // waiting for the stream, under --timeout
	phaseComm                  // a collective: waiting for every rank
	phaseHang                  // the stream timed out: hang() ends the job
)

type phase struct {
	kind  phaseKind
	what  string
	since time.Time
}

// watchdog is one rank's. A nil watchdog (no --timeout) does nothing.
type watchdog struct {
	board *liveness.Board
	rank  int
	limit time.Duration // --timeout plus the grace
	grace time.Duration
	cur   atomic.Pointer[phase]
	last  atomic.Pointer[phase] // the last call the main thread left
	// inFlight counts the calls enqueued since the last wait for the
	// stream that finished.
	inFlight atomic.Int64
	// caseAt is the index (from 1) of the case the main thread runs; 0:
	// none.
	caseAt atomic.Int64
	// caseStart is when that case started (Unix nanoseconds).
	caseStart atomic.Int64
	fired     atomic.Bool
	// step is when the backend last saw its stream finish a step (Unix
	// nanoseconds; 0: not yet).
	step atomic.Int64
	// blocks is the grid of the last launch, for the SignalBlock
	// diagnosis.
	blocks atomic.Int64
	done   chan struct{}
	exited chan struct{}
	halted bool // haltWatchdog ran (main thread only)
}

// enter makes the main thread's phase k, doing what, and returns the
// function that ends it, back to the phase it was in.
func (d *watchdog) enter(k phaseKind, what string) (leave func()) {
	if d == nil {
		return func() {}
	}
	prev := d.cur.Load()
	p := &phase{kind: k, what: what, since: time.Now()}
	d.cur.Store(p)
	d.board.Beat()
	return func() {
		d.last.Store(p)
		back := prev
		if back == nil || back.kind == phaseWork {
			back = &phase{kind: phaseWork, since: time.Now()}
		}
		d.cur.Store(back)
		d.board.Beat()
	}
}

// set makes the main thread's phase k, doing what, until the next set.
func (d *watchdog) set(k phaseKind, what string) {
	if d != nil {
		d.cur.Store(&phase{kind: k, what: what, since: time.Now()})
		d.board.Beat()
	}
}

// stepped is the backend's progress function: a step of the stream.
func (d *watchdog) stepped() {
	d.step.Store(time.Now().UnixNano())
	d.board.Beat()
}

// lastStep is when the stream last finished a step (the zero time: never).
func (d *watchdog) lastStep() time.Time {
	if ns := d.step.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

func (d *watchdog) beat() {
	if d != nil {
		d.board.Beat()
	}
}

func (d *watchdog) launched(n int) {
	if d != nil {
		d.inFlight.Add(int64(n))
	}
}

func (d *watchdog) setBlocks(n int) {
	if d != nil {
		d.blocks.Store(int64(n))
	}
}

func (d *watchdog) drained() {
	if d != nil {
		d.inFlight.Store(0)
	}
}

func (d *watchdog) atCase(i int) {
	if d != nil {
		d.caseAt.Store(int64(i))
		d.caseStart.Store(time.Now().UnixNano())
		d.board.Beat()
	}
}

// startWatchdog opens the board (collective) and starts this rank's
// watchdog; none without a --timeout.
func (r *run) startWatchdog() error {
	if r.cfg.Timeout <= 0 {
		return nil
	}
	// /dev/shm first (memory), else the temporary folder: a container
	// whose /dev/shm is read-only or full still gets its watchdog. Every
	// rank learns each attempt's outcome alike (liveness.Open agrees on
	// it), so they try the next folder together.
	dirs := []string{r.cfg.BoardDir}
	if r.cfg.BoardDir == "" {
		dirs = []string{"/dev/shm", os.TempDir()}
	}
	var b *liveness.Board
	var err error
	for _, dir := range dirs {
		if b, err = liveness.Open(r.raw, dir); err == nil {
			break
		}
	}
	if err != nil {
		return err
	}
	grace := r.cfg.WatchdogGrace
	if grace <= 0 {
		grace = watchdogGrace
	}
	d := &watchdog{board: b, rank: r.raw.Rank(), limit: r.cfg.Timeout + grace, grace: grace,
		done: make(chan struct{}), exited: make(chan struct{})}
	d.cur.Store(&phase{kind: phaseWork, since: time.Now()})
	r.dog = d
	r.c = watchedComm{Comm: r.raw, d: d}
	if pn, ok := r.b.(backend.ProgressNotifier); ok {
		pn.NotifyProgress(d.stepped)
	}
	go r.watch()
	return nil
}

// haltWatchdog stops the watchdog's goroutine once the cases are over:
// the final reports (rank 0's writes may take long) and the last
// collective are no case to watch, and a watchdog that fired there would
// turn a finished run's verdict into a hang. The board stays mapped: the
// main thread's beats still land in it until stopWatchdog.
func (r *run) haltWatchdog() {
	d := r.dog
	if d == nil || d.halted {
		return
	}
	d.halted = true
	close(d.done)
	<-d.exited
}

// stopWatchdog stops the watchdog and unmaps the board, once neither the
// watchdog nor the backend can touch it.
func (r *run) stopWatchdog() {
	d := r.dog
	if d == nil {
		return
	}
	r.haltWatchdog()
	if pn, ok := r.b.(backend.ProgressNotifier); ok {
		pn.NotifyProgress(nil)
	}
	_ = d.board.Close()
}

// watch reads the board every tick until the run ends, and ends the job
// when it is hung.
func (r *run) watch() {
	d := r.dog
	defer close(d.exited)
	n := d.board.Size()
	last := make([]uint64, n)
	seen := make([]time.Time, n)
	start := time.Now()
	for p := range seen {
		last[p], seen[p] = d.board.Beats(p), start
	}
	var peerSaidAt time.Time
	t := time.NewTicker(watchdogTick)
	defer t.Stop()
	for {
		select {
		case <-d.done:
			return
		case <-t.C:
		}
		now := time.Now()
		newest := time.Time{}
		for p := 0; p < n; p++ {
			if b := d.board.Beats(p); b != last[p] {
				last[p], seen[p] = b, now
			}
			if seen[p].After(newest) {
				newest = seen[p]
			}
		}
		said := -1
		for p := 0; p < n && said < 0; p++ {
			if s, _ := d.board.State(p); p != d.rank && s != liveness.Running {
				said = p
			}
		}
		if said >= 0 && peerSaidAt.IsZero() {
			peerSaidAt = now
		}
		ph := d.cur.Load()
		quiet := now.Sub(newest).Round(time.Second)
		noProgress := fmt.Sprintf("no rank made progress for %s (--timeout %s plus a grace of %s)", quiet, r.cfg.Timeout, d.grace)
		switch {
		case ph.kind == phaseHang:
			// hang() ends the job; only one that is itself stuck (a
			// SignalBlock read that never returns) is ended here.
			if now.Sub(ph.since) > r.cfg.HangGrace+d.grace {
				r.watchdogEnd(noProgress)
				return
			}
		case said >= 0:
			// A rank waiting for its stream comes to its own timeout
			// and diagnosis; any other rank joins at once.
			if ph.kind != phaseSync || now.Sub(seen[d.rank]) > d.limit || now.Sub(peerSaidAt) > d.limit {
				r.watchdogEnd(fmt.Sprintf("rank %d found the job hung", said))
				return
			}
		case ph.kind == phaseCall && d.inFlight.Load() > 0 && now.Sub(ph.since) > r.cfg.Timeout && now.Sub(d.lastStep()) > r.cfg.Timeout:
			// A launch blocked behind a full queue: the stream took no
			// step within --timeout, which its wait would have called a
			// hang had the main thread come to it. Only behind calls in
			// flight: a first call that takes long on the host (NCCL
			// connecting its peers, a kernel loaded lazily) has no queue
			// to be blocked behind, and is left to the rule below.
			r.watchdogEnd(fmt.Sprintf("its stream finished nothing within --timeout %s while the main thread waited inside a call (a launch behind a full queue)", r.cfg.Timeout))
			return
		case now.Sub(newest) > d.limit:
			r.watchdogEnd(noProgress)
			return
		}
	}
}

// watchdogEnd ends the hung job from the watchdog: it prints this rank's
// line and puts it on the board; rank 0 gathers the others' lines from the
// board, writes the reports and aborts the job, the others wait for rank 0
// to have written them (or HangGrace) and abort it themselves.
func (r *run) watchdogEnd(why string) {
	d := r.dog
	if !d.fired.CompareAndSwap(false, true) {
		return
	}
	line := r.watchdogLine(why)
	if s, _ := d.board.State(d.rank); s == liveness.Running {
		d.board.Say(liveness.Hung, line)
	}
	fmt.Fprintf(r.cfg.Stderr, "artest: %s\n", line)
	if d.rank != 0 {
		for end := time.Now().Add(r.cfg.HangGrace); time.Now().Before(end); time.Sleep(watchdogTick) {
			if s, _ := d.board.State(0); s == liveness.Reported {
				break
			}
		}
		r.endJob(exitcode.Hang)
		return
	}
	lines := r.boardLines(3 * watchdogTick)
	msg := fmt.Sprintf("hang: the watchdog ended the job: %s", strings.Join(lines, "\n"))
	if c, ok := r.currentCase(); ok {
		msg = fmt.Sprintf("hang in case %s: the watchdog ended the job\n%s", c.ID(), indent(strings.Join(lines, "\n")))
	}
	if r.lockWithin(r.cfg.HangGrace) {
		if !r.reported && !r.interrupted {
			var hung *report.Case
			if c, ok := r.currentCase(); ok {
				h := r.hungCase(c, msg, strings.Join(lines, "\n"))
				if r.cfg.OnFail != nil {
					h.Repro = r.cfg.OnFail(h)
				}
				hung = &h
			}
			r.reportHang(hung, msg)
		}
		r.mu.Unlock()
	} else {
		fmt.Fprintf(r.cfg.Stderr, "artest: the reports could not be written: the main thread held them for %s\n", r.cfg.HangGrace)
	}
	d.board.SetState(liveness.Reported)
	if f, ok := r.cfg.Stdout.(*os.File); ok {
		_ = f.Sync()
	}
	r.endJob(exitcode.Hang)
}

// endJob ends this rank from the watchdog with code. Not with MPI_Abort:
// Open MPI's ends the calling process with exit(3), whose atexit handlers
// tear the CUDA driver down while the main thread may be inside it (a
// graph launch blocked behind a kernel that never ends), and that thread
// then dies of SIGSEGV with a Go stack trace (seen on an H200). os.Exit
// ends the process at once, running no handlers; mpirun then ends the
// other ranks and exits with this rank's code. The in-process world of
// the tests is aborted as MPI_Abort would: its ranks are goroutines.
func (r *run) endJob(code int) {
	if _, inProcess := r.raw.(comm.AbortWatcher); inProcess {
		r.raw.Abort(code)
		return
	}
	os.Exit(code)
}

// lockWithin takes r.mu unless the main thread holds it for longer than
// wait (stuck in a report write itself).
func (r *run) lockWithin(wait time.Duration) bool {
	for end := time.Now().Add(wait); ; time.Sleep(10 * time.Millisecond) {
		if r.mu.TryLock() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// boardLines is every rank's line on the board, after waiting up to wait
// for the ranks that have not said theirs yet (their watchdogs join within
// a tick or two; a rank whose main thread waits for its stream gives its
// own diagnosis when its --timeout passes, on its own stderr).
func (r *run) boardLines(wait time.Duration) []string {
	b := r.dog.board
	for end := time.Now().Add(wait); ; time.Sleep(watchdogTick / 4) {
		all := true
		for p := 0; p < b.Size(); p++ {
			if s, _ := b.State(p); s == liveness.Running {
				all = false
			}
		}
		if all || time.Now().After(end) {
			break
		}
	}
	var lines, silent []string
	for p := 0; p < b.Size(); p++ {
		s, text := b.State(p)
		switch {
		case s != liveness.Running:
			lines = append(lines, firstLine(text))
		case b.Shared():
			silent = append(silent, fmt.Sprint(p))
		}
	}
	if len(silent) > 0 {
		lines = append(lines, fmt.Sprintf("rank(s) %s: no line (a rank waiting for its stream gives its diagnosis on its own stderr when its --timeout passes)", strings.Join(silent, ", ")))
	}
	if !b.Shared() {
		lines = append(lines, "the other ranks are on other nodes: their lines are on their own stderr")
	}
	return lines
}

// peerLines is the lines the other ranks' watchdogs put on the board
// within wait, for hang()'s report; "" when none did.
func (r *run) peerLines(wait time.Duration) string {
	b := r.dog.board
	var lines []string
	for end := time.Now().Add(wait); ; time.Sleep(watchdogTick / 4) {
		lines = lines[:0]
		for p := 0; p < b.Size(); p++ {
			if s, text := b.State(p); p != r.dog.rank && s != liveness.Running && strings.HasPrefix(text, "watchdog: ") {
				lines = append(lines, firstLine(text))
			}
		}
		if len(lines) == b.Size()-1 || time.Now().After(end) {
			break
		}
	}
	return strings.Join(lines, "\n")
}

// watchdogLine is this rank's account: the case, what its main thread is
// in and since when, the calls in flight, the last call and the plugin
// call the backend is inside.
func (r *run) watchdogLine(why string) string {
	d := r.dog
	var sb strings.Builder
	fmt.Fprintf(&sb, "watchdog: rank %d: %s", d.rank, why)
	if c, ok := r.currentCase(); ok {
		fmt.Fprintf(&sb, "; case %s", c.ID())
	} else {
		sb.WriteString("; between cases")
	}
	ph := d.cur.Load()
	since := time.Since(ph.since).Round(time.Millisecond)
	switch ph.kind {
	case phaseWork:
		fmt.Fprintf(&sb, "; main thread in artest's own code for %s", since)
	case phaseHang:
		fmt.Fprintf(&sb, "; main thread stuck in the hang diagnosis for %s", since)
	default:
		fmt.Fprintf(&sb, "; main thread inside %s for %s", ph.what, since)
	}
	fmt.Fprintf(&sb, "; %d call(s) enqueued since the stream last finished", d.inFlight.Load())
	if l := d.last.Load(); l != nil && ph.kind == phaseWork {
		fmt.Fprintf(&sb, "; last call: %s", l.what)
	}
	if wt, ok := r.b.(backend.Waiter); ok {
		if in := wt.Waiting(); in != "" {
			fmt.Fprintf(&sb, "; %s", in)
		}
	}
	if diag := r.peekDiagnosis(); diag != "" {
		fmt.Fprintf(&sb, "; %s", diag)
	}
	return sb.String()
}

// currentCase is the case the main thread runs, if any.
func (r *run) currentCase() (cases.Case, bool) {
	i := int(r.dog.caseAt.Load())
	if i < 1 || i > len(r.cfg.Cases) {
		return cases.Case{}, false
	}
	return r.cfg.Cases[i-1], true
}

// hungCase is the report of case c that did not end: msg is the run's
// error, detail this rank's diagnosis.
func (r *run) hungCase(c cases.Case, msg, detail string) report.Case {
	secs := 0.0
	if r.dog != nil {
		secs = time.Since(time.Unix(0, r.dog.caseStart.Load())).Seconds()
	}
	return report.Case{ID: c.ID(), Seconds: secs, Variant: c.Label(), Coll: c.CollName(), DType: c.DType.String(), Op: c.OpName(),
		Bytes: c.Bytes, Count: c.Count(), Mode: c.Mode.String(), Ranks: c.Ranks, Input: caseInput(c),
		Verdict: report.Hung, Reason: msg, Iters: r.cfg.Iters, Stress: r.cfg.Stress, Schedule: r.cfg.Header.Schedules,
		Failures: []report.RankFailure{{Rank: r.raw.Rank(), Kind: "hang", Detail: detail}}}
}

// watchedComm is the runner's communicator: each collective is a phase of
// the main thread, so the watchdog can say that a rank waits for its peers
// and for how long.
type watchedComm struct {
	comm.Comm
	d *watchdog
}

func (w watchedComm) Allgather(send []byte) ([]byte, error) {
	defer w.d.enter(phaseComm, "the collective Allgather (waiting for every rank)")()
	return w.Comm.Allgather(send)
}

func (w watchedComm) Bcast(buf []byte, root int) error {
	defer w.d.enter(phaseComm, fmt.Sprintf("the collective Bcast from rank %d (waiting for every rank)", root))()
	return w.Comm.Bcast(buf, root)
}

func (w watchedComm) Gather(send []byte, root int) ([][]byte, error) {
	defer w.d.enter(phaseComm, fmt.Sprintf("the collective Gather to rank %d (waiting for every rank)", root))()
	return w.Comm.Gather(send, root)
}

func (w watchedComm) Barrier() error {
	defer w.d.enter(phaseComm, "the collective Barrier (waiting for every rank)")()
	return w.Comm.Barrier()
}

// callName is how the watchdog names a launch of v.
func callName(v *kernels.Variant) string {
	if v.External != nil {
		return fmt.Sprintf("the allreduce call of %s for variant %s", v.External.Owner(), v.Name)
	}
	return "the launch of " + v.Name
}

// peekDiagnosis is who waits for whom in the SignalBlocks, where the
// backend can read them from any goroutine without a driver call
// (backend.SignalPeeker: the host backend); "" elsewhere.
func (r *run) peekDiagnosis() string {
	pk, ok := r.b.(backend.SignalPeeker)
	if !ok || r.w == nil {
		return ""
	}
	var snaps []sigblock.Snapshot
	for p := 0; p < r.w.Size; p++ {
		s, err := pk.PeekSignal(p)
		if err != nil {
			return ""
		}
		snaps = append(snaps, sigblock.Snapshot(s))
	}
	diag := sigblock.Summarize(sigblock.Diagnose(snaps, int(r.dog.blocks.Load())))
	if ring := sigblock.SummarizeRing(sigblock.DiagnoseRing(snaps)); ring != "" {
		diag = strings.TrimPrefix(diag+"\n"+ring, "\n")
	}
	return strings.ReplaceAll(strings.TrimSpace(diag), "\n", "; ")
}

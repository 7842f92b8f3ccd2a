package cuda

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/artest/artest/internal/backend"
	cu "github.com/artest/artest/internal/cudadrv"
	"github.com/artest/artest/kernels"
)

var _ backend.Stamper = (*Backend)(nil)

// The witness's stamps come in two kinds. Events (the default) are
// timestamps the GPU's front end writes when the stream's work before them
// has finished: they need no multiprocessor, so a stamp taken on a rank
// whose SMs are loaded marks its call's end, not when a block found room
// among the load's. Kernel stamps (artest_stamp, one thread writing the
// global timer) wait for that room: on 2 H200 with the SM load, correct
// kernels' kernel stamps came up to 186 us late
// (docs/results/2026-11-26-h200-sm-load-shared-catch.md). Kernel stamps
// remain where a driver cannot time events recorded inside a graph
// (stampProbe) and with ARTEST_WITNESS_STAMP=kernel, to compare the two.
const (
	stampEvents = "events"
	stampKernel = "kernel"
)

// stampState is the witness's slots and clock.
type stampState struct {
	kind   string // stampEvents or stampKernel, chosen on first use
	reason string // why kernel stamps are used, or why none can be taken

	// Event stamps: one event per slot, and the anchor, the event of the
	// last clock sync, whose time on the event clock is anchorNs. The
	// event clock is continuous: each new anchor's time is the last
	// one's plus the device time between them, so the interpolation
	// between syncs (the runner's) sees the GPU's drift.
	events  []cu.Event
	samples []cu.Event // clockSamples+1 events the syncs record
	// loadStart, loadEnd: one pair per slot around a straggler's load
	// (StraggleStamped), on the load's side stream.
	loadStart, loadEnd []cu.Event
	anchor             int // index into samples, -1 before the first sync
	anchorNs           int64

	// Kernel stamps: one 8-byte slot per stamp.
	slots  backend.Ptr
	nslots int
}

// stampMode chooses the stamps once: events unless the driver cannot time
// an event recorded inside a graph (stress captures graph modes) or
// ARTEST_WITNESS_STAMP=kernel asks for kernel stamps.
func (b *Backend) stampMode() {
	s := &b.stamp
	if s.kind != "" {
		return
	}
	s.anchor = -1
	if b.knobs.WitnessStamp == stampKernel {
		s.kind = stampKernel
		s.reason = "ARTEST_WITNESS_STAMP=kernel"
	} else if err := b.stampProbe(); err != nil {
		s.kind = stampKernel
		s.reason = fmt.Sprintf("events recorded in a graph cannot be timed here (%v)", err)
	} else {
		s.kind = stampEvents
	}
	if s.kind == stampKernel {
		if _, err := b.fn(kernels.StampKernel); err != nil {
			s.reason = fmt.Sprintf("%s, and the fatbin has no %s (%s): rebuild with make kernels", s.reason, kernels.StampKernel, b.fatbin)
			s.kind = ""
		}
	}
}

// stampProbe records one event on the idle stream and one inside a
// replayed graph, and times the second against the first.
func (b *Backend) stampProbe() error {
	a, err := b.d.EventCreate(0)
	if err != nil {
		return wrap(err)
	}
	defer b.d.EventDestroy(a)
	e, err := b.d.EventCreate(0)
	if err != nil {
		return wrap(err)
	}
	defer b.d.EventDestroy(e)
	if err := b.d.EventRecord(a, b.stream); err != nil {
		return wrap(err)
	}
	g, err := b.Capture(func() error { return wrap(b.d.EventRecordExternal(e, b.stream)) })
	if err != nil {
		return err
	}
	defer g.Destroy()
	if err := g.Launch(); err != nil {
		return err
	}
	if err := wrap(b.d.StreamSynchronize(b.stream)); err != nil {
		return err
	}
	d, err := b.d.EventElapsed(a, e)
	if err != nil {
		return wrap(err)
	}
	if d < 0 {
		return fmt.Errorf("the graph's event came %v before the one recorded ahead of it", -d)
	}
	return nil
}

// StampReason says why no stamp can be taken ("" when one can).
func (b *Backend) StampReason() string {
	b.stampMode()
	if b.stamp.kind == "" {
		return b.stamp.reason
	}
	return ""
}

// StampsWaitForSMs: kernel stamps wait for room on the SMs, events do not.
func (b *Backend) StampsWaitForSMs() bool {
	b.stampMode()
	return b.stamp.kind == stampKernel
}

// PrepareStamps readies n slots.
func (b *Backend) PrepareStamps(n int) error {
	b.stampMode()
	s := &b.stamp
	switch s.kind {
	case stampEvents:
		for _, evs := range []*[]cu.Event{&s.events, &s.loadStart, &s.loadEnd} {
			for len(*evs) < n {
				e, err := b.d.EventCreate(0)
				if err != nil {
					return fmt.Errorf("stamp event: %w", wrap(err))
				}
				*evs = append(*evs, e)
			}
		}
	case stampKernel:
		if s.nslots < n {
			if s.slots != 0 {
				_ = b.Free(s.slots)
				s.slots, s.nslots = 0, 0
			}
			p, err := b.Alloc(int64(n) * 8)
			if err != nil {
				return fmt.Errorf("alloc %d stamp slots: %w", n, err)
			}
			s.slots, s.nslots = p, n
		}
	default:
		return errors.New(s.reason)
	}
	return nil
}

// Stamp marks slot j when the stream reaches it: an event record (inside a
// capture, a graph node of its own), or one thread of artest_stamp.
func (b *Backend) Stamp(j int, capturing bool) error {
	s := &b.stamp
	switch s.kind {
	case stampEvents:
		if j >= len(s.events) {
			return fmt.Errorf("stamp %d of %d prepared", j, len(s.events))
		}
		return b.recordEvent(s.events[j], b.stream, capturing)
	case stampKernel:
		if j >= s.nslots {
			return fmt.Errorf("stamp %d of %d prepared", j, s.nslots)
		}
		return b.stampKernelAt(s.slots + backend.Ptr(8*j))
	}
	return errors.New(s.reason)
}

// recordEvent records e on stream st; inside a capture as a graph node of
// its own, which each replay records again.
func (b *Backend) recordEvent(e cu.Event, st cu.Stream, capturing bool) error {
	if capturing {
		return wrap(b.d.EventRecordExternal(e, st))
	}
	return wrap(b.d.EventRecord(e, st))
}

// LoadStampReason: loads are stamped with events only; a kernel stamp on
// the side stream would wait for the load's own blocks.
func (b *Backend) LoadStampReason() string {
	b.stampMode()
	if b.knobs.WitnessLoadStampsOff {
		return "ARTEST_WITNESS_LOAD_STAMPS=off"
	}
	if b.stamp.kind != stampEvents {
		return "loads are stamped with events only, and the stamps here are " + b.stamp.kind + " ones"
	}
	return ""
}

// LoadStamps times slot j's load stamps from the last sync's anchor.
func (b *Backend) LoadStamps(j int) (int64, int64, error) {
	s := &b.stamp
	if s.anchor < 0 || j < 0 || j >= len(s.loadStart) {
		return 0, 0, fmt.Errorf("load stamp %d: %d prepared, anchor %d", j, len(s.loadStart), s.anchor)
	}
	var out [2]int64
	for k, e := range []cu.Event{s.loadStart[j], s.loadEnd[j]} {
		d, err := b.d.EventElapsed(s.samples[s.anchor], e)
		if err != nil {
			return 0, 0, fmt.Errorf("time load stamp %d: %w", j, wrap(err))
		}
		out[k] = s.anchorNs + d.Nanoseconds()
	}
	return out[0], out[1], nil
}

func (b *Backend) stampKernelAt(p backend.Ptr) error {
	f, err := b.fn(kernels.StampKernel)
	if err != nil {
		return fmt.Errorf("kernel %s: %w", kernels.StampKernel, err)
	}
	args := kernels.StampArgs{Slot: uint64(p)}
	if err := cu.LaunchArg(b.d, f, cu.D1(1), cu.D1(1), 0, b.stream, &args); err != nil {
		return fmt.Errorf("launch %s: %w", kernels.StampKernel, wrap(err))
	}
	return nil
}

// Stamps reads slots 0..n-1 of finished work, in ns of the stamp clock;
// events are timed from the last sync's anchor.
func (b *Backend) Stamps(n int) ([]int64, error) {
	s := &b.stamp
	out := make([]int64, n)
	switch s.kind {
	case stampEvents:
		if s.anchor < 0 {
			return nil, errors.New("stamps read before any clock sync")
		}
		for j := range out {
			d, err := b.d.EventElapsed(s.samples[s.anchor], s.events[j])
			if err != nil {
				return nil, fmt.Errorf("time stamp %d: %w", j, wrap(err))
			}
			out[j] = s.anchorNs + d.Nanoseconds()
		}
	case stampKernel:
		raw := make([]byte, 8*n)
		if err := b.Download(raw, s.slots); err != nil {
			return nil, fmt.Errorf("download %d stamps: %w", n, err)
		}
		for j := range out {
			out[j] = int64(binary.LittleEndian.Uint64(raw[8*j:]))
		}
	default:
		return nil, errors.New(s.reason)
	}
	return out, nil
}

// FreeStamps releases the kernel stamps' slots (events are kept for the
// next case).
func (b *Backend) FreeStamps() {
	if b.stamp.slots != 0 {
		_ = b.Free(b.stamp.slots)
		b.stamp.slots, b.stamp.nslots = 0, 0
	}
}

func (b *Backend) closeStamps() []error {
	var errs []error
	b.FreeStamps()
	all := append(append(append(b.stamp.events, b.stamp.samples...), b.stamp.loadStart...), b.stamp.loadEnd...)
	for _, e := range all {
		errs = append(errs, b.d.EventDestroy(e))
	}
	b.stamp.events, b.stamp.samples, b.stamp.loadStart, b.stamp.loadEnd = nil, nil, nil, nil
	return errs
}

// clockSamples is how many stamps a clock sync takes; the one with the
// shortest host round trip bounds the offset best.
const clockSamples = 16

// ClockSync stamps the idle stream clockSamples times between two reads of
// the host's wall clock and keeps the tightest pair: the stamp falls
// between them, so the offset is known to within half their distance
// (about 4.5 us on H200 with kernel stamps,
// docs/results/2026-11-26-h200-x2-stress.md). GPUs of one host
// need not share a global timer; the host's wall clock is shared by every
// rank on it. Kernel stamps of ranks on one GPU read its timer exactly
// (one Domain); each rank's events run on a clock of its own.
func (b *Backend) ClockSync() (backend.ClockSync, error) {
	b.stampMode()
	host, _ := os.Hostname()
	cs := backend.ClockSync{Domain: fmt.Sprintf("%s/gpu%d", host, b.ordinal), Host: host, Stamps: b.stamp.kind}
	var err error
	switch b.stamp.kind {
	case stampEvents:
		cs.Domain = fmt.Sprintf("%s/gpu%d/events of pid %d", host, b.ordinal, os.Getpid())
		cs.Offset, cs.Uncertainty, err = b.eventClockOffset()
	case stampKernel:
		cs.Offset, cs.Uncertainty, err = b.kernelClockOffset()
	default:
		err = errors.New(b.stamp.reason)
	}
	if err != nil {
		return cs, fmt.Errorf("clock offset: %w", err)
	}
	return cs, nil
}

func (b *Backend) kernelClockOffset() (time.Duration, time.Duration, error) {
	slot, err := b.Alloc(8)
	if err != nil {
		return 0, 0, err
	}
	defer b.Free(slot)
	best := time.Duration(-1)
	var offset time.Duration
	buf := make([]byte, 8)
	for range clockSamples {
		t0 := time.Now().UnixNano()
		if err := b.stampKernelAt(slot); err != nil {
			return 0, 0, err
		}
		if err := wrap(b.d.StreamSynchronize(b.stream)); err != nil {
			return 0, 0, err
		}
		t1 := time.Now().UnixNano()
		if err := b.Download(buf, slot); err != nil {
			return 0, 0, err
		}
		gpu := int64(binary.LittleEndian.Uint64(buf))
		if span := time.Duration(t1 - t0); best < 0 || span < best {
			best = span
			offset = time.Duration(gpu - (t0+t1)/2)
		}
	}
	return offset, best / 2, nil
}

// eventClockOffset records clockSamples events (or one more before the
// first anchor) on the idle stream, each
// between two reads of the wall clock, and makes the tightest one the new
// anchor. Its time on the event clock is the old anchor's plus the device
// time between them (the wall clock's midpoint for the first anchor).
func (b *Backend) eventClockOffset() (time.Duration, time.Duration, error) {
	s := &b.stamp
	for len(s.samples) < clockSamples+1 {
		e, err := b.d.EventCreate(0)
		if err != nil {
			return 0, 0, wrap(err)
		}
		s.samples = append(s.samples, e)
	}
	best, pick := time.Duration(-1), -1
	var mid int64
	for i := range s.samples {
		if i == s.anchor {
			continue // the old anchor stays recorded until the new one is timed
		}
		t0 := time.Now().UnixNano()
		if err := wrap(b.d.EventRecord(s.samples[i], b.stream)); err != nil {
			return 0, 0, err
		}
		if err := wrap(b.d.EventSynchronize(s.samples[i])); err != nil {
			return 0, 0, err
		}
		t1 := time.Now().UnixNano()
		if span := time.Duration(t1 - t0); best < 0 || span < best {
			best, pick, mid = span, i, (t0+t1)/2
		}
	}
	ns := mid
	if s.anchor >= 0 {
		d, err := b.d.EventElapsed(s.samples[s.anchor], s.samples[pick])
		if err != nil {
			return 0, 0, wrap(err)
		}
		ns = s.anchorNs + d.Nanoseconds()
	}
	s.anchor, s.anchorNs = pick, ns
	return time.Duration(ns - mid), best / 2, nil
}

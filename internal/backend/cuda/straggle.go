package cuda

import (
	"errors"
	"fmt"
	"time"

	"github.com/artest/artest/internal/backend"
	cu "github.com/artest/artest/internal/cudadrv"
	"github.com/artest/artest/kernels"
)

var (
	_ backend.Straggler       = (*Backend)(nil)
	_ backend.LinkStraggler   = (*Backend)(nil)
	_ backend.LoadStamper     = (*Backend)(nil)
	_ backend.MemoryStraggler = (*Backend)(nil)
)

// loadState is the straggler's side stream and the scratch its load
// streams over, made by PrepareStraggle.
type loadState struct {
	side sideStream
	buf  cu.DevicePtr
}

// StraggleReason: the straggler's load needs artest_load in the fatbin.
func (b *Backend) StraggleReason() string {
	if _, err := b.fn(kernels.LoadKernel); err != nil {
		return fmt.Sprintf("the fatbin has no %s (%s): rebuild with make kernels", kernels.LoadKernel, b.fatbin)
	}
	return ""
}

// PrepareStraggle makes the side stream, the two events and the scratch
// once; later calls do nothing. Outside any capture, since allocation may
// not be captured.
func (b *Backend) PrepareStraggle() error {
	if b.load.buf != 0 {
		return nil
	}
	if err := b.load.side.open(b, "straggler"); err != nil {
		return err
	}
	p, err := b.d.MemAlloc(kernels.LoadScratchBytes)
	if err != nil {
		return fmt.Errorf("straggler scratch of %d bytes: %w", kernels.LoadScratchBytes, wrap(err))
	}
	if err := b.d.MemsetD8Async(p, 0, kernels.LoadScratchBytes, b.stream); err != nil {
		_ = b.d.MemFree(p)
		return fmt.Errorf("clear the straggler scratch: %w", wrap(err))
	}
	b.load.buf = p
	return nil
}

// Straggle forks the side stream from the main one (an event), zeroes
// the load's deadline word there and launches artest_load with
// LoadBlocksPerSM blocks per multiprocessor. Nothing on the main stream
// waits for it until JoinStraggle. Captured, the load is a branch of the
// graph beside the calls.
func (b *Backend) Straggle(d time.Duration) error { return b.straggle(d, backend.LoadOwn, -1, false) }

// StraggleOverLink starts a load of d whose blocks read the peers' input
// buffers over the links (backend.LinkStraggler).
func (b *Backend) StraggleOverLink(d time.Duration) error {
	if why := b.LinkReason(); why != "" {
		return fmt.Errorf("link load: %s", why)
	}
	return b.straggle(d, backend.LoadLink, -1, false)
}

// MemoryLoadReason is backend.MemoryStraggler's: the memory load runs
// where ranks share a GPU. Where each rank has a GPU of its own the link
// load stretches its reads of its peers, and a memory load slows every
// reader of the loaded GPU alike, the peers' reads of it too, which on 2
// H200 caught fewer missing end barriers than the SM load (vLLM's: 722 to
// 771 wrong iterations of 8000 against 1031 to 1069,
// docs/results/2026-11-26-h200-x2-nccl-graph-registration-sm-load.md).
func (b *Backend) MemoryLoadReason() string {
	if b.sharedReason == "" {
		return "each rank has a GPU of its own (the link load stretches its reads of its peers there)"
	}
	return ""
}

// StraggleMemory starts a load of d that streams this GPU's memory
// (backend.MemoryStraggler).
func (b *Backend) StraggleMemory(d time.Duration) error {
	return b.straggle(d, backend.LoadMemory, -1, false)
}

// StraggleStamped starts a load as Straggle or StraggleOverLink do, with
// event stamps in slot j on the side stream right before and after it
// (backend.LoadStamper).
func (b *Backend) StraggleStamped(d time.Duration, kind backend.LoadKind, j int, capturing bool) error {
	if why := b.LoadStampReason(); why != "" {
		return fmt.Errorf("straggler stamps: %s", why)
	}
	if j < 0 || j >= len(b.stamp.loadStart) {
		return fmt.Errorf("straggler stamp %d of %d prepared", j, len(b.stamp.loadStart))
	}
	if kind == backend.LoadLink {
		if why := b.LinkReason(); why != "" {
			return fmt.Errorf("link load: %s", why)
		}
	}
	return b.straggle(d, kind, j, capturing)
}

// straggle launches the load; slot >= 0 stamps its start and end there.
func (b *Backend) straggle(d time.Duration, kind backend.LoadKind, slot int, capturing bool) error {
	if b.load.buf == 0 {
		return errors.New("straggler: PrepareStraggle was not called")
	}
	f, err := b.fn(kernels.LoadKernel)
	if err != nil {
		return fmt.Errorf("straggler: kernel %s: %w", kernels.LoadKernel, err)
	}
	l := &b.load
	if err := l.side.forkFrom(b); err != nil {
		return err
	}
	if err := b.d.MemsetD8Async(l.buf, 0, kernels.LoadHead, l.side.stream); err != nil {
		return fmt.Errorf("straggler: zero the load's deadline: %w", wrap(err))
	}
	args := kernels.LoadArgs{Buf: uint64(l.buf), Bytes: kernels.LoadScratchBytes,
		Ns: uint64(min(max(d, 0), kernels.LoadMax).Nanoseconds())}
	perSM := kernels.LoadBlocksPerSM
	switch kind {
	case backend.LoadLink:
		linkPeers(&args, b.world)
	case backend.LoadMemory:
		args.Kind = kernels.LoadKindMemory
	default:
		if args.Kind = b.loadKind(); args.Kind == kernels.LoadKindSM {
			perSM = b.loadSMBlocksPerSM()
		}
	}
	grid := cu.D1(uint32(max(b.ownSMs(), 1) * perSM))
	if slot >= 0 {
		if err := b.recordEvent(b.stamp.loadStart[slot], l.side.stream, capturing); err != nil {
			return fmt.Errorf("straggler: stamp the load's start: %w", err)
		}
	}
	if err := cu.LaunchArg(b.d, f, grid, cu.D1(kernels.LoadThreads), 0, l.side.stream, &args); err != nil {
		return fmt.Errorf("straggler: launch %s for %v: %w", kernels.LoadKernel, d, wrap(err))
	}
	if slot >= 0 {
		if err := b.recordEvent(b.stamp.loadEnd[slot], l.side.stream, capturing); err != nil {
			return fmt.Errorf("straggler: stamp the load's end: %w", err)
		}
	}
	return nil
}

// loadKind is the straggler's load where it does not read over the links:
// the SM kind, which starves the loaded rank's blocks and touches no
// memory another rank reads. The memory kind slows every reader of the
// loaded GPU's memory alike, its peers' reads over the links too, so a
// rank that returns without waiting for the loaded one (a missing end
// barrier) is seldom early enough to be caught: on 2 H200, one rank per
// GPU, oneshot without its end barrier came out wrong in at most 1315
// iterations of 18,000 with the memory load against 1745 or more with this
// one (docs/results/2026-11-26-h200-x2-nccl-graph-registration-sm-load.md).
// ARTEST_LOAD_KIND=sm or memory chooses, to compare the two in one setting.
func (b *Backend) loadKind() uint32 {
	if b.knobs.LoadKind == "memory" {
		return kernels.LoadKindMemory
	}
	return kernels.LoadKindSM
}

// loadSMBlocksPerSM is the SM kind's blocks per multiprocessor:
// kernels.LoadSMBlocksPerSM, or ARTEST_LOAD_SM_BLOCKS (one of the values
// envKnobs lists), to measure how hard a load starves the loaded rank's
// blocks against what a correct kernel's exit shows of it.
func (b *Backend) loadSMBlocksPerSM() int {
	if n := b.knobs.LoadSMBlocks; n > 0 {
		return n
	}
	return kernels.LoadSMBlocksPerSM
}

// LinkReason says why the link load cannot run ("" when it can): it reads
// the peers' inputs over the links between GPUs, so it needs a peer on
// another GPU with peer access, and ranks that share a GPU have no link
// between them (their reads of each other are this GPU's memory reads).
func (b *Backend) LinkReason() string {
	switch {
	case b.world == nil:
		return "no world set up"
	case b.world.Size < 2:
		return "one rank: no peer to read"
	case b.sharedReason != "":
		return b.sharedReason + ": no link between them"
	case b.p2pReason != "":
		return b.p2pReason
	}
	return ""
}

// linkPeers fills a's link load with every other rank's input buffer of
// w, at most kernels.LoadMaxPeers, in rank order after this one.
func linkPeers(a *kernels.LoadArgs, w *backend.World) {
	if w == nil || w.Size < 2 {
		return
	}
	for k := 1; k < w.Size && int(a.NPeers) < kernels.LoadMaxPeers; k++ {
		a.Peers[a.NPeers] = uint64(w.Input[(w.Rank+k)%w.Size])
		a.NPeers++
	}
	a.PeerBytes = uint64(w.Capacity) &^ 15
}

// JoinStraggle makes the main stream wait for the side stream's loads
// (one event recorded after the last; a no-op when none was started since
// the last join).
func (b *Backend) JoinStraggle() error { return b.load.side.joinInto(b) }

// closeLoad frees what PrepareStraggle made.
func (b *Backend) closeLoad() []error {
	var errs []error
	l := &b.load
	if l.buf != 0 {
		errs = append(errs, b.d.MemFree(l.buf))
	}
	errs = append(errs, l.side.close(b)...)
	*l = loadState{}
	return errs
}

package cuda

import (
	"fmt"
	"os"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/comm"
	cu "github.com/artest/artest/internal/cudadrv"
	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/internal/multicast"
	"github.com/artest/artest/internal/multicast/gate"
	"github.com/artest/artest/kernels"
)

// The multicast side of the backend: the safety gate's decision, made once
// in Open before anything else touches multicast, and, when every rank's
// gate opened, the multicast segment that Setup builds. Then the world's
// input and staging buffers are the segment's two halves on every rank (for
// every variant), and each launch of a multicast variant gets the
// segment's delta in its arguments.
//
// With the gate closed nothing here calls the driver: no multicast entry
// point is resolved (internal/cudadrv refuses without a permit), every
// multimem case is skipped with the gate's reason, and a multimem launch is
// refused before it reaches the driver.
type mcState struct {
	decision gate.Decision
	seg      *multicast.Segment
	half     uint64 // offset of the staging half in the segment
}

// decideMulticast evaluates the gate: the flag, then the environment, and
// only then the device attribute (read through supported).
func decideMulticast(allow bool, lookupEnv func(string) (string, bool), supported func() (bool, error)) gate.Decision {
	return gate.Decide(gate.Inputs{Flag: allow, LookupEnv: lookupEnv, Supported: supported})
}

// openMulticast is Open's call: the environment is the one artest was
// started with (the NCCL loader sets NCCL_NVLS_ENABLE=0 for NCCL later, when
// it is unset: the gate has decided by then).
func (b *Backend) openMulticast(allow bool) {
	b.mc.decision = decideMulticast(allow, os.LookupEnv, func() (bool, error) {
		v, err := b.d.DeviceAttribute(b.dev, cu.AttrMulticastSupported)
		return v != 0, err
	})
}

// multicastSkip says why variant v, if it needs multicast, cannot run ("" if
// it can).
func (b *Backend) multicastSkip(v *kernels.Variant) string {
	if v.Needs&kernels.NeedMulticast == 0 {
		return ""
	}
	if !b.mc.decision.Open {
		return fmt.Sprintf("%s needs NVLS multicast, which is off: %s", v.Name, b.mc.decision.Reason)
	}
	if b.mc.seg == nil {
		return fmt.Sprintf("%s needs NVLS multicast: no multicast segment was set up", v.Name)
	}
	return ""
}

// multicastInfo is the gate's state for the report header.
func (b *Backend) multicastInfo() string {
	switch {
	case !b.mc.decision.Open:
		return "off: " + b.mc.decision.Reason
	case b.mc.seg == nil:
		return "gate open, no segment yet: " + b.mc.decision.Reason
	}
	return fmt.Sprintf("on: %s; %d MiB segment per GPU", b.mc.decision.Reason, b.mc.seg.Bytes>>20)
}

// stagingAlign keeps the staging half as aligned as the input half.
const stagingAlign = 4096

// setupMulticast runs in Setup after the IPC buffers exist. Every rank
// first agrees that every rank's gate is open and that multicast fits the
// world (one node, one GPU per rank); otherwise every rank records why and
// returns with multicast off, having called nothing. Then the segment, and
// the world's input and staging buffers move into it.
func (b *Backend) setupMulticast(c comm.Comm, capacity int64, w *backend.World, ordinals []int) error {
	reason := ""
	switch {
	case !b.mc.decision.Open:
		reason = b.mc.decision.Reason
	case c.LocalSize() != c.Size():
		reason = fmt.Sprintf("the %d ranks run on more than one node (%d here): one multicast object spans one node", c.Size(), c.LocalSize())
	default:
		seen := map[int]int{}
		for r, o := range ordinals {
			if q, dup := seen[o]; dup {
				reason = fmt.Sprintf("ranks %d and %d share GPU %d (--share-gpus); a multicast team needs one GPU per rank", q, r, o)
				break
			}
			seen[o] = r
		}
	}
	if agreed, err := comm.AgreeReason(c, reason); err != nil {
		return fmt.Errorf("agree on multicast: %w", err)
	} else if agreed != "" {
		if b.mc.decision.Open {
			b.mc.decision = gate.Closed(agreed)
		}
		return nil
	}
	permit, err := b.mc.decision.Permit()
	if err != nil {
		return err // unreachable: the gate is open here
	}
	half := (uint64(capacity) + stagingAlign - 1) / stagingAlign * stagingAlign
	seg, err := multicast.Setup(b.d, c, multicast.Config{Permit: permit, Device: b.dev, Bytes: 2 * half})
	if err != nil {
		return exitcode.Envf("%s: %v", gate.FlagName, err)
	}
	b.mc.seg, b.mc.half = seg, half
	if err := b.d.MemsetD8Async(seg.Local, 0, seg.Bytes, b.stream); err != nil {
		return fmt.Errorf("clear the multicast segment: %w", err)
	}
	if err := b.d.StreamSynchronize(b.stream); err != nil {
		return fmt.Errorf("clear the multicast segment: %w", err)
	}
	for r := range w.Input {
		w.Input[r] = backend.Ptr(seg.Peers[r])
		w.Staging[r] = backend.Ptr(seg.Peers[r]) + backend.Ptr(half)
	}
	return nil
}

// multicastArgs gives a launch of a multicast variant its delta, after
// checking that the launch's buffers lie in the segment. It refuses the
// launch when multicast is off: a multimem kernel on plain memory would
// execute multimem instructions on addresses no multicast object maps.
func (b *Backend) multicastArgs(v *kernels.Variant, a *kernels.Args) error {
	if v.Needs&kernels.NeedMulticast == 0 {
		return nil
	}
	if reason := b.multicastSkip(v); reason != "" {
		return fmt.Errorf("refusing to launch %s: %s", v.Name, reason)
	}
	seg := b.mc.seg
	lo, hi := uint64(seg.Local), uint64(seg.Local)+seg.Bytes
	for _, p := range []uint64{a.PeerIn[a.Rank], a.PeerStage[a.Rank]} {
		if p < lo || p >= hi {
			return fmt.Errorf("refusing to launch %s: buffer %#x is outside the multicast segment [%#x, %#x)", v.Name, p, lo, hi)
		}
	}
	kernels.SetMulticastDelta(a, seg.Delta())
	return nil
}

// closeMulticast releases the segment (the stream is idle by then).
func (b *Backend) closeMulticast() error {
	if b.mc.seg == nil {
		return nil
	}
	err := b.mc.seg.Close()
	b.mc.seg = nil
	return err
}

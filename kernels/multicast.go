package kernels

// The multicast delta: what a kernel adds to an address in this rank's
// multicast-bound buffers to get the multicast address of the same offset.
// It travels in Param2 and Param3 (not user parameters), which the
// backends (internal/backend/cuda and host) set on every launch of a
// variant that needs multicast (NeedMulticast). It lives here, not in
// kernels/multimem, because the backends set it and know no variant
// package. A kernel traps when it is 0, so a launch that was not bound to
// a multicast object never executes a multimem instruction.

// Slots of Args that carry the multicast delta.
const (
	multicastDeltaLo = 2
	multicastDeltaHi = 3
)

// SetMulticastDelta stores what a kernel adds to an address in this rank's
// multicast-bound buffers to get the multicast address of the same offset.
func SetMulticastDelta(a *Args, delta uint64) {
	*a.ParamSlot(multicastDeltaLo) = uint32(delta)
	*a.ParamSlot(multicastDeltaHi) = uint32(delta >> 32)
}

// MulticastDelta reads what SetMulticastDelta stored (0: none).
func MulticastDelta(a *Args) uint64 {
	return uint64(*a.ParamSlot(multicastDeltaHi))<<32 | uint64(*a.ParamSlot(multicastDeltaLo))
}

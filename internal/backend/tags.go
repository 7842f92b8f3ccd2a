package backend

import "github.com/artest/artest/kernels"

// SetTags writes l's launch tags (kernels.Args.SelfTag and PeerTag) once
// its grid is known: the call's hash over what every rank must agree on
// (kernels.CallHash), with each rank's registration generation as w holds
// it (World.Gen). Both backends call it for every custom launch, right
// before it is launched or captured, so a graph keeps the tags of the
// buffers it was captured with.
func SetTags(l *Launch, w *World, threads int) {
	var gens []uint32
	if w != nil {
		gens = w.Gen
	}
	a := &l.Args
	kernels.SetTags(a, kernels.CallHash(l.Variant, l.DType, l.Op, a, l.Blocks, threads), gens)
}

// BumpGen records that rank owner's input buffer was registered again.
func (w *World) BumpGen(owner int) {
	if w.Gen == nil {
		w.Gen = make([]uint32, w.Size)
	}
	w.Gen[owner]++
}

package oneshotsentinel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/hostmodel"
	"github.com/artest/artest/sigblock"
)

// Host is the host form of oneshot_sentinel.cu (read its comment for the
// protocol): push this block's slots of our input into every peer's
// staging, each element encoded (EncodeWord: one 32-bit atomic store a
// word), then reduce each slot from our own staging once every element of
// every peer's copy is nonzero, our own from our input, in rank order, and
// store zeros back. No barriers; the sequence (its parity picks the half)
// is oneshot-ll's, advanced the same way.
func Host(k *hostmodel.Kernel, b int) error {
	a := k.Args()
	n := int(a.NRanks)
	count := int64(a.Count)
	elem := k.Elem()
	perSlot := int64(kernels.VecBytes) / elem
	slots := (count + perSlot - 1) / perSlot
	region := uint64(slots) * kernels.VecBytes
	half := region * uint64(n) // sized by the message, as the kernel's
	if need := uint64(StageBytes(count*elem, n)); need > a.StageBytes {
		return fmt.Errorf("host oneshot-sentinel: %d ranks x %d bytes of slots need %d bytes of staging, %d given", n, region, need, a.StageBytes)
	}
	own := k.Own()
	seq := k.LaunchSeq()
	// Counted as soon as the sequence is read, as the kernel does; the
	// block that counts last advances the sequence at its end.
	last := own.Add(sigblock.OffLlDone, 1) == uint32(k.Blocks())
	myHalf := uint64(seq&1) * half
	lo, hi := hostmodel.Span(slots, b, k.Blocks())

	k.Delay()
	in := k.Bytes(a.PeerIn[a.Rank], count*elem)
	stages := make([][]byte, n)
	for p := range stages {
		stages[p] = k.Bytes(Align(a.PeerStage[p]), int64(myHalf+uint64(n)*region))
	}
	input := func(s int64, dst *[kernels.VecBytes]byte) {
		clear(dst[:])
		copy(dst[:], in[s*perSlot*elem:min((s+1)*perSlot, count)*elem])
	}
	var slot [kernels.VecBytes]byte
	for s := lo; s < hi; s++ {
		input(s, &slot)
		at := myHalf + uint64(a.Rank)*region + uint64(s)*kernels.VecBytes
		for p := 0; p < n; p++ {
			if p == int(a.Rank) {
				continue
			}
			for w := uint64(0); w < kernels.VecBytes/4; w++ {
				atomic.StoreUint32(word(stages[p], at+4*w), EncodeWord(binary.LittleEndian.Uint32(slot[4*w:]), elem))
			}
		}
	}
	k.RingPeers() // the pushed slots are what peers wait for

	d := k.DType()
	out := k.Bytes(a.Out, (count+1)*elem)
	end := k.OutEnd(count)
	got := make([][kernels.VecBytes]byte, n)
	for s := lo; s < hi; s++ {
		for src := 0; src < n; src++ {
			if src == int(a.Rank) {
				input(s, &got[src])
				continue
			}
			at := myHalf + uint64(src)*region + uint64(s)*kernels.VecBytes
			if err := waitSlot(k, stages[a.Rank], at, elem, seq, b, int(s), src, &got[src]); err != nil {
				return err
			}
			if !k.Injected(InjectSentinelNoClear) {
				for w := uint64(0); w < kernels.VecBytes/4; w++ {
					atomic.StoreUint32(word(stages[a.Rank], at+4*w), 0)
				}
			}
		}
		for i := s * perSlot; i < min((s+1)*perSlot, count); i++ {
			j := int(i - s*perSlot)
			acc := d.GetF32(got[0][:], j)
			for r := 1; r < n; r++ {
				acc = k.Combine(acc, d.GetF32(got[r][:], j))
			}
			if i < end {
				d.SetF32(out, int(i), acc)
			}
			if i == count-1 && k.Injected(kernels.InjectOverrun) {
				d.SetF32(out, int(count), acc)
			}
		}
	}
	if last {
		own.Store(sigblock.OffLlDone, 0)
		own.Store(sigblock.OffLlSeq, seq)
	}
	return nil
}

// waitSlot reads the slot at byte at of stage (our own staging) into dst,
// decoded, once every element of it is written, with the launch's
// deadline.
func waitSlot(k *hostmodel.Kernel, stage []byte, at uint64, elem int64, seq uint32, b, slot, src int, dst *[kernels.VecBytes]byte) error {
	var first uint32
	read := func() bool {
		ok := true
		for w := uint64(0); w < kernels.VecBytes/4; w++ {
			v := atomic.LoadUint32(word(stage, at+4*w))
			if w == 0 {
				first = v
			}
			ok = ok && WordFull(v, elem)
			binary.LittleEndian.PutUint32(dst[4*w:], DecodeWord(v))
		}
		return ok
	}
	if read() || k.Injected(InjectSentinelNoWait) {
		return nil
	}
	waited, err := k.PollUntil(time.Now(), read)
	if errors.Is(err, hostmodel.ErrTimedOut) {
		return k.GiveUp(sigblock.GiveUp{Block: b, Kind: sigblock.DiagKindSentinelData, Where: slot, Peer: src,
			Want: seq, Seen: first, Waited: waited, Lane: b})
	}
	return err
}

// word is the 32-bit staging word at byte off of buf (4-byte aligned: the
// staging base is Align'ed and every offset is a multiple of 4).
func word(buf []byte, off uint64) *uint32 {
	return (*uint32)(unsafe.Pointer(&buf[off]))
}

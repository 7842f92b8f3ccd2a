package oneshotll

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/hostmodel"
	"github.com/artest/artest/sigblock"
)

// Host is the host form of oneshot_ll.cu (read its comment for the
// protocol): push this block's slots of our input into every rank's
// staging as LL words (data | sequence<<32, one 64-bit atomic store each),
// then reduce each slot from our own staging once all its words carry this
// launch's sequence. No barriers; the sequence is the rank's, advanced by
// the last block to count itself as having read it.
func Host(k *hostmodel.Kernel, b int) error {
	a := k.Args()
	n := int(a.NRanks)
	count := int64(a.Count)
	elem := k.Elem()
	perSlot := int64(kernels.VecBytes) / elem
	slots := (count + perSlot - 1) / perSlot
	region := uint64(slots) * SlotBytes
	half := HalfBytes(a.StageBytes)
	if region*uint64(n) > half {
		return fmt.Errorf("host oneshot-ll: %d ranks x %d bytes of LL slots exceed half the staging (%d bytes)", n, region, half)
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
		base := Align(a.PeerStage[p])
		stages[p] = k.Bytes(base, int64(myHalf+uint64(n)*region))
	}
	var slot [kernels.VecBytes]byte
	for s := lo; s < hi; s++ {
		clear(slot[:])
		copy(slot[:], in[s*perSlot*elem:min((s+1)*perSlot, count)*elem])
		at := myHalf + uint64(a.Rank)*region + uint64(s)*SlotBytes
		for p := 0; p < n; p++ {
			for w := 0; w < 4; w++ {
				data := uint64(slot[4*w]) | uint64(slot[4*w+1])<<8 | uint64(slot[4*w+2])<<16 | uint64(slot[4*w+3])<<24
				atomic.StoreUint64(llWord(stages[p], at+8*uint64(w)), uint64(seq)<<32|data)
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
			at := myHalf + uint64(src)*region + uint64(s)*SlotBytes
			if err := llWait(k, stages[a.Rank], at, seq, b, int(s), src, &got[src]); err != nil {
				return err
			}
		}
		for i := s * perSlot; i < min((s+1)*perSlot, count); i++ {
			j := int(i - s*perSlot)
			acc := d.GetF32(got[0][:], j)
			for r := 1; r < n; r++ {
				x := d.GetF32(got[r][:], j)
				acc = k.Combine(acc, x)
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

// llWait reads the LL slot at byte at of stage (our own staging) into dst
// once its four words carry seq, with the launch's deadline.
func llWait(k *hostmodel.Kernel, stage []byte, at uint64, seq uint32, b, slot, src int, dst *[kernels.VecBytes]byte) error {
	lowest := func() (uint32, bool) {
		ok, seen := true, seq
		for w := 0; w < 4; w++ {
			v := atomic.LoadUint64(llWord(stage, at+8*uint64(w)))
			if f := uint32(v >> 32); f != seq {
				ok = false
				seen = f
			}
			for i := 0; i < 4; i++ {
				dst[4*w+i] = byte(v >> (8 * i))
			}
		}
		return seen, ok
	}
	seen, ok := lowest()
	if ok || k.Injected(InjectLlNoFlag) {
		return nil
	}
	waited, err := k.PollUntil(time.Now(), func() bool {
		seen, ok = lowest()
		return ok
	})
	if errors.Is(err, hostmodel.ErrTimedOut) {
		return k.GiveUp(sigblock.GiveUp{Block: b, Kind: sigblock.DiagKindLlData, Where: slot, Peer: src,
			Want: seq, Seen: seen, Waited: waited, Lane: b})
	}
	return err
}

// llWord is the 64-bit LL word at byte off of buf (8-byte aligned: the
// staging base is Align'ed and every offset is a multiple of 8).
func llWord(buf []byte, off uint64) *uint64 {
	return (*uint64)(unsafe.Pointer(&buf[off]))
}

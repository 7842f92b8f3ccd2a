// Command mpicheck exercises every call of package mpi and checks every
// result; it exits 1 on any wrong value. mpi's tests run it under mpirun
// with several world sizes, as a singleton, under a faked launcher
// environment, and with aborting ranks; it is also a quick way to check an
// MPI installation by hand:
//
//	mpirun -np 4 --oversubscribe go run ./mpi/internal/mpicheck
//
// Each rank prints "rank R/N ok" when all its checks pass.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/mpi"
	"github.com/artest/artest/mpi/internal/chunk"
)

// MPI_THREAD_FUNNELED: the main goroutine keeps the main thread.
func init() { runtime.LockOSThread() }

func main() {
	abortRank := flag.Int("abort-rank", -1, "this rank calls Abort instead of running the checks")
	abortCode := flag.Int("abort-code", 3, "exit code passed to Abort")
	watchdog := flag.Bool("watchdog", false, "abort from a watchdog goroutine while this rank waits in a collective that cannot complete")
	large := flag.Bool("large", false, "also move buffers over 2 GiB (needs about 12 GiB of memory per rank)")
	flag.Parse()

	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mpicheck:", err)
		os.Exit(2)
	}
	if *abortRank >= 0 {
		abort(w, *abortRank, *abortCode, *watchdog)
	}
	c := &checker{w: w}
	c.run(*large)
	if len(c.failures) > 0 {
		for _, f := range c.failures {
			fmt.Fprintf(os.Stderr, "rank %d/%d FAIL: %s\n", w.Rank(), w.Size(), f)
		}
		os.Exit(1)
	}
	fmt.Printf("rank %d/%d ok (local %d/%d on %s, %s)\n", w.Rank(), w.Size(), w.LocalRank(), w.LocalSize(), w.Hostname(), mpi.Version())
}

// abort makes rank end the job while the other ranks wait in a barrier that
// it never joins. With watchdog, the aborting rank's own main goroutine also
// waits inside MPI (a barrier the lowest other rank never joins, as if hung)
// and a second goroutine calls Abort, as artest's hang watchdog does.
func abort(w *mpi.World, rank, code int, watchdog bool) {
	hung := -1
	if watchdog {
		hung = (rank + 1) % w.Size()
		if hung == rank {
			hung = -1 // one rank: nobody else to wait for
		}
	}
	switch {
	case w.Rank() == rank && watchdog:
		go func() {
			time.Sleep(200 * time.Millisecond)
			w.Abort(code)
		}()
		if hung < 0 {
			time.Sleep(time.Hour)
		}
		err := w.Barrier()
		fmt.Fprintf(os.Stderr, "rank %d: barrier returned (%v) although a rank never joined\n", w.Rank(), err)
	case w.Rank() == rank:
		w.Abort(code)
		fmt.Fprintln(os.Stderr, "mpicheck: Abort returned")
	case w.Rank() == hung:
		time.Sleep(time.Hour)
	default:
		err := w.Barrier()
		fmt.Fprintf(os.Stderr, "rank %d: barrier returned (%v) although rank %d aborted\n", w.Rank(), err, rank)
	}
	os.Exit(1)
}

type checker struct {
	w        *mpi.World
	failures []string
}

func (c *checker) failf(format string, args ...any) {
	c.failures = append(c.failures, fmt.Sprintf(format, args...))
}

func (c *checker) run(large bool) {
	w := c.w
	c.checkIdentity()
	c.checkCollectives("default chunks")
	if large {
		c.checkLarge()
	}
	// Tiny pieces push every collective through many rounds, with pieces
	// that do not divide the buffers.
	saved := chunk.Limit
	chunk.Limit = 7
	c.checkCollectives("7-byte chunks")
	chunk.Limit = saved
	c.checkGuards()
	c.checkGoSignals()

	if !mpi.Initialized() {
		c.failf("Initialized() = false before Finalize")
	}
	if err := w.Finalize(); err != nil {
		c.failf("Finalize: %v", err)
	}
	if mpi.Initialized() {
		c.failf("Initialized() = true after Finalize")
	}
	if err := w.Barrier(); !errors.Is(err, comm.ErrFinalized) {
		c.failf("Barrier after Finalize: got %v, want ErrFinalized", err)
	}
	if _, err := mpi.Init(); err == nil {
		c.failf("second Init succeeded")
	}
}

func (c *checker) checkIdentity() {
	w := c.w
	if !strings.Contains(strings.ToLower(mpi.Version()), "mpi") {
		c.failf("Version() = %q", mpi.Version())
	}
	if w.Size() < 1 || w.Rank() < 0 || w.Rank() >= w.Size() {
		c.failf("rank %d of %d", w.Rank(), w.Size())
	}
	if w.LocalSize() < 1 || w.LocalSize() > w.Size() || w.LocalRank() < 0 || w.LocalRank() >= w.LocalSize() {
		c.failf("local rank %d of %d in a world of %d", w.LocalRank(), w.LocalSize(), w.Size())
	}
	if w.Hostname() == "" {
		c.failf("empty Hostname")
	}
	// Ranks and local ranks must agree across the world: every rank exactly
	// once, and on each host local ranks 0..LocalSize-1 exactly once.
	id := fmt.Sprintf("%08d %08d %08d %-64s", w.Rank(), w.LocalRank(), w.LocalSize(), w.Hostname())
	all, err := w.Allgather([]byte(id))
	if err != nil {
		c.failf("Allgather of identities: %v", err)
		return
	}
	local := map[string][]int{}
	localSize := map[string]int{}
	for r := range w.Size() {
		var rank, lrank, lsize int
		var host string
		if _, err := fmt.Sscanf(string(all[r*len(id):(r+1)*len(id)]), "%d %d %d %s", &rank, &lrank, &lsize, &host); err != nil {
			c.failf("identity of rank %d: %v", r, err)
			return
		}
		if rank != r {
			c.failf("slot %d of Allgather holds rank %d", r, rank)
		}
		local[host] = append(local[host], lrank)
		localSize[host] = lsize
	}
	for host, lranks := range local {
		slices.Sort(lranks)
		for i, lr := range lranks {
			if lr != i || len(lranks) != localSize[host] {
				c.failf("host %s: local ranks %v, local size %d", host, lranks, localSize[host])
				break
			}
		}
	}
}

// pattern is data that differs by rank, length and position.
func pattern(rank, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rank*37 + i*11 + n + 1)
	}
	return b
}

func (c *checker) checkCollectives(label string) {
	w := c.w
	size := w.Size()
	for _, n := range []int{0, 1, 7, 13, 4099} {
		out, err := w.Allgather(pattern(w.Rank(), n))
		if err != nil {
			c.failf("%s: Allgather(%d bytes): %v", label, n, err)
			continue
		}
		var want []byte
		for r := range size {
			want = append(want, pattern(r, n)...)
		}
		if len(out) != len(want) || !bytes.Equal(out, want) {
			c.failf("%s: Allgather(%d bytes): wrong data (%d bytes back)", label, n, len(out))
		}
	}
	for root := range size {
		for _, n := range []int{0, 5, 1000} {
			buf := bytes.Repeat([]byte{0xee}, n)
			if w.Rank() == root {
				buf = pattern(root, n)
			}
			if err := w.Bcast(buf, root); err != nil {
				c.failf("%s: Bcast(%d bytes, root %d): %v", label, n, root, err)
			} else if !bytes.Equal(buf, pattern(root, n)) {
				c.failf("%s: Bcast(%d bytes, root %d): wrong data", label, n, root)
			}
		}
	}
	// A slice, not a map: every rank must walk the cases in the same order.
	lengths := []struct {
		name   string
		length func(r int) int
	}{
		{"varied", func(r int) int { return r*9 + 1 }},
		{"some-zero", func(r int) int { return (r % 2) * 17 }},
		{"all-zero", func(int) int { return 0 }},
	}
	for _, tc := range lengths {
		name, length := tc.name, tc.length
		for root := range size {
			parts, err := w.Gather(pattern(w.Rank(), length(w.Rank())), root)
			switch {
			case err != nil:
				c.failf("%s: Gather(%s, root %d): %v", label, name, root, err)
			case w.Rank() != root && parts != nil:
				c.failf("%s: Gather(%s, root %d): non-root got %d parts", label, name, root, len(parts))
			case w.Rank() == root && len(parts) != size:
				c.failf("%s: Gather(%s, root %d): %d parts", label, name, root, len(parts))
			case w.Rank() == root:
				for r, p := range parts {
					if p == nil || !bytes.Equal(p, pattern(r, length(r))) {
						c.failf("%s: Gather(%s, root %d): part of rank %d wrong (%d bytes)", label, name, root, r, len(p))
					}
				}
			}
		}
	}
	if err := w.Barrier(); err != nil {
		c.failf("%s: Barrier: %v", label, err)
	}
}

// checkLarge moves buffers past MPI's 2^31-1 int count.
func (c *checker) checkLarge() {
	w := c.w
	const big = 1<<31 + 3
	buf := make([]byte, big)
	if w.Rank() == 0 {
		for i := range buf {
			buf[i] = byte(i % 251)
		}
	}
	if err := w.Bcast(buf, 0); err != nil {
		c.failf("large Bcast: %v", err)
	}
	for _, i := range []int{0, 1 << 30, 1<<31 - 1, 1 << 31, big - 1} {
		if buf[i] != byte(i%251) {
			c.failf("large Bcast: byte %d = %d, want %d", i, buf[i], byte(i%251))
		}
	}

	// Each rank's part is under 2 GiB but the total is over.
	per := (1<<31)/w.Size() + 5
	out, err := w.Allgather(buf[w.Rank() : w.Rank()+per])
	if err != nil {
		c.failf("large Allgather: %v", err)
	}
	for r := range w.Size() {
		for _, i := range []int{0, per / 2, per - 1} {
			if got, want := out[r*per+i], byte((r+i)%251); got != want {
				c.failf("large Allgather: rank %d byte %d = %d, want %d", r, i, got, want)
			}
		}
	}
	out = nil

	// The last rank sends over 2 GiB, the others little.
	send := buf[:w.Size()]
	if w.Rank() == w.Size()-1 {
		send = buf
	}
	parts, err := w.Gather(send, 0)
	if err != nil {
		c.failf("large Gather: %v", err)
	}
	if w.Rank() == 0 {
		last := parts[w.Size()-1]
		if len(last) != big || last[big-1] != byte((big-1)%251) || last[1<<31] != byte((1<<31)%251) {
			c.failf("large Gather: last rank's part wrong (%d bytes)", len(last))
		}
	}
}

// checkGuards checks that mismatched collectives fail on every rank instead
// of hanging, and that the world stays usable after them.
func (c *checker) checkGuards() {
	w := c.w
	if w.Size() > 1 {
		_, err := w.Allgather(make([]byte, 4+w.Rank()%2))
		if !errors.Is(err, comm.ErrMismatch) {
			c.failf("Allgather with unequal lengths: got %v, want ErrMismatch", err)
		}
		if w.Rank() == 0 {
			err = w.Bcast(make([]byte, 8), 0)
		} else {
			err = w.Barrier()
		}
		if !errors.Is(err, comm.ErrMismatch) {
			c.failf("Bcast against Barrier: got %v, want ErrMismatch", err)
		}
	}
	if err := w.Bcast(make([]byte, 8), w.Size()); err == nil || !strings.Contains(err.Error(), "outside world") {
		c.failf("Bcast with root %d: got %v, want root outside world", w.Size(), err)
	}
	// Every rank does this, so no rank waits for another: the check fails
	// before any MPI call.
	errc := make(chan error)
	go func() { errc <- w.Barrier() }()
	if err := <-errc; !errors.Is(err, mpi.ErrWrongThread) {
		c.failf("Barrier from another goroutine: got %v, want ErrWrongThread", err)
	}
	if err := w.Barrier(); err != nil {
		c.failf("Barrier after the guard checks: %v", err)
	}
}

// checkGoSignals checks that MPI_Init left Go's signal handlers alone: Open
// MPI installs its own SIGSEGV handler unless one exists, and with it a nil
// dereference would kill the rank instead of panicking.
func (c *checker) checkGoSignals() {
	var p *int
	recovered := func() (r any) {
		defer func() { r = recover() }()
		return *p
	}()
	if recovered == nil {
		c.failf("nil dereference did not panic")
	}
}

package comm

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// errNoReturn marks a rank whose function never returned (it called Abort).
var errNoReturn = errors.New("rank function did not return")

// runRanks runs f on every rank of w, each in its own goroutine, and returns
// what each returned. A world that does not finish in time fails the test
// rather than hanging it.
func runRanks(t *testing.T, w *LocalWorld, f func(c *Local) error) []error {
	t.Helper()
	errs := make([]error, w.Size())
	var wg sync.WaitGroup
	for r := range w.Size() {
		wg.Go(func() {
			errs[r] = errNoReturn
			errs[r] = f(w.Rank(r))
		})
	}
	waitOrFail(t, &wg)
	return errs
}

func waitOrFail(t *testing.T, wg *sync.WaitGroup) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("ranks still running after 10s: a collective hangs")
	}
}

// waitArrived waits until k ranks sit in the current step. It reports
// rather than fails, since it runs on rank goroutines.
func waitArrived(t *testing.T, w *LocalWorld, k int) {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		w.mu.Lock()
		n := 0
		if w.step != nil {
			n = w.step.arrived
		}
		w.mu.Unlock()
		if n == k {
			return
		}
	}
	t.Errorf("%d ranks never arrived in one step", k)
}

// pattern is rank-specific data of length n, so that a byte in the wrong
// place or from the wrong rank shows up.
func pattern(rank, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rank*37 + i*11 + 1)
	}
	return b
}

func TestNewLocal(t *testing.T) {
	comms := NewLocal(3)
	require.Len(t, comms, 3)
	world := comms[0].(*Local).World()
	for r, c := range comms {
		require.Same(t, world, c.(*Local).World())
		require.Equal(t, r, c.Rank())
		require.Equal(t, 3, c.Size())
		require.Equal(t, r, c.LocalRank())
		require.Equal(t, 3, c.LocalSize())
		require.Equal(t, "localhost", c.Hostname())
	}
	require.Panics(t, func() { NewLocalWorld(0) })
}

func TestLocalAllgather(t *testing.T) {
	for _, n := range []int{1, 2, 3, 8} {
		for _, length := range []int{0, 1, 13, 4096} {
			t.Run(fmt.Sprintf("np%d/len%d", n, length), func(t *testing.T) {
				want := []byte{}
				for r := range n {
					want = append(want, pattern(r, length)...)
				}
				w := NewLocalWorld(n)
				got := make([][]byte, n)
				errs := runRanks(t, w, func(c *Local) error {
					send := pattern(c.Rank(), length)
					out, err := c.Allgather(send)
					clear(send) // the result must not alias any rank's send buffer
					got[c.Rank()] = out
					return err
				})
				for r := range n {
					require.NoError(t, errs[r])
					require.Equal(t, want, got[r], "rank %d", r)
				}
				if n > 1 && length > 0 {
					got[0][0] ^= 0xff
					require.Equal(t, want, got[1], "ranks share one result slice")
				}
			})
		}
	}
}

func TestLocalBcast(t *testing.T) {
	for _, n := range []int{1, 2, 5} {
		for _, length := range []int{0, 7, 1000} {
			for root := range n {
				t.Run(fmt.Sprintf("np%d/len%d/root%d", n, length, root), func(t *testing.T) {
					want := pattern(root, length)
					w := NewLocalWorld(n)
					bufs := make([][]byte, n)
					errs := runRanks(t, w, func(c *Local) error {
						buf := bytes.Repeat([]byte{0xee}, length)
						if c.Rank() == root {
							buf = pattern(root, length)
						}
						bufs[c.Rank()] = buf
						return c.Bcast(buf, root)
					})
					for r := range n {
						require.NoError(t, errs[r])
						require.Equal(t, want, bufs[r], "rank %d", r)
					}
				})
			}
		}
	}
}

func TestLocalGather(t *testing.T) {
	lengths := []struct {
		name   string
		length func(rank int) int
	}{
		{"equal", func(int) int { return 5 }},
		{"varied", func(r int) int { return r*3 + 1 }},
		{"some-zero", func(r int) int { return (r % 2) * 9 }},
		{"all-zero", func(int) int { return 0 }},
	}
	for _, tc := range lengths {
		name, length := tc.name, tc.length
		for _, n := range []int{1, 3, 4} {
			for root := range n {
				t.Run(fmt.Sprintf("%s/np%d/root%d", name, n, root), func(t *testing.T) {
					w := NewLocalWorld(n)
					got := make([][][]byte, n)
					errs := runRanks(t, w, func(c *Local) error {
						out, err := c.Gather(pattern(c.Rank(), length(c.Rank())), root)
						got[c.Rank()] = out
						return err
					})
					for r := range n {
						require.NoError(t, errs[r])
						if r != root {
							require.Nil(t, got[r], "non-root rank %d gets nothing", r)
						}
					}
					require.Len(t, got[root], n)
					for r := range n {
						require.NotNil(t, got[root][r], "rank %d's part is nil, not empty", r)
						require.Equal(t, pattern(r, length(r)), got[root][r], "rank %d's part", r)
					}
				})
			}
		}
	}
}

func TestLocalBarrierWaitsForAll(t *testing.T) {
	const n, steps = 4, 50
	var entered [steps]atomic.Int32
	w := NewLocalWorld(n)
	errs := runRanks(t, w, func(c *Local) error {
		for s := range steps {
			if (s+c.Rank())%n == 0 {
				time.Sleep(100 * time.Microsecond) // someone is always late
			}
			entered[s].Add(1)
			if err := c.Barrier(); err != nil {
				return err
			}
			if got := entered[s].Load(); got != n {
				return fmt.Errorf("step %d: rank %d left the barrier when %d of %d had entered", s, c.Rank(), got, n)
			}
		}
		return nil
	})
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
}

func TestLocalMismatch(t *testing.T) {
	const n = 3
	tests := []struct {
		name string
		call func(c *Local) error // rank-dependent calls
		want error                // nil: any error
		msg  string
	}{
		{
			name: "different collectives",
			call: func(c *Local) error {
				if c.Rank() == 1 {
					return c.Bcast(make([]byte, 4), 0)
				}
				return c.Barrier()
			},
			want: ErrMismatch,
			msg:  "rank 1 called Bcast(4 bytes, root 0)",
		},
		{
			name: "allgather lengths differ",
			call: func(c *Local) error {
				_, err := c.Allgather(make([]byte, 8+c.Rank()/2))
				return err
			},
			want: ErrMismatch,
			msg:  "rank 2 called Allgather(9 bytes)",
		},
		{
			name: "bcast roots differ",
			call: func(c *Local) error { return c.Bcast(make([]byte, 4), c.Rank()) },
			want: ErrMismatch,
			msg:  "rank 0 called Bcast(4 bytes, root 0)",
		},
		{
			name: "bcast lengths differ",
			call: func(c *Local) error { return c.Bcast(make([]byte, 4*c.Rank()), 0) },
			want: ErrMismatch,
			msg:  "rank 2 called Bcast(8 bytes, root 0)",
		},
		{
			name: "gather roots differ",
			call: func(c *Local) error {
				_, err := c.Gather(nil, c.Rank()%2)
				return err
			},
			want: ErrMismatch,
			msg:  "rank 1 called Gather(0 bytes, root 1)",
		},
		{
			name: "root outside world",
			call: func(c *Local) error { return c.Bcast(make([]byte, 4), n) },
			msg:  "root 3 outside world of 3 ranks",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewLocalWorld(n)
			errs := runRanks(t, w, func(c *Local) error {
				err := tt.call(c)
				if err == nil {
					return errors.New("mismatched collective returned no error")
				}
				// The world must stay usable after the failed step.
				if err2 := c.Barrier(); err2 != nil {
					return fmt.Errorf("barrier after mismatch: %w", err2)
				}
				return err
			})
			for r, err := range errs {
				require.Error(t, err, "rank %d", r)
				if tt.want != nil {
					require.ErrorIs(t, err, tt.want, "rank %d", r)
				}
				require.ErrorContains(t, err, tt.msg, "rank %d", r)
			}
		})
	}
}

func TestLocalAbort(t *testing.T) {
	const n = 4
	tests := []struct {
		name    string
		aborter int // rank that aborts; -1: a watchdog goroutine, while rank n-1 hangs
	}{
		{"rank aborts", 2},
		{"watchdog aborts", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewLocalWorld(n)
			var pastAbort atomic.Bool
			var wg sync.WaitGroup
			errs := make([]error, n)
			for r := range n {
				wg.Go(func() {
					c := w.Rank(r)
					errs[r] = errNoReturn
					switch {
					case r == tt.aborter:
						waitArrived(t, w, n-1)
						c.Abort(3)
						pastAbort.Store(true)
						return
					case tt.aborter < 0 && r == n-1:
						<-w.Aborted() // hung outside any collective
						errs[r] = c.Barrier()
						return
					}
					_, err := c.Gather(pattern(r, r), 0)
					if err != nil && c.Barrier() == nil {
						err = errors.New("collective after abort succeeded")
					}
					errs[r] = err
				})
			}
			if tt.aborter < 0 {
				wg.Go(func() {
					waitArrived(t, w, n-1)
					w.Rank(0).Abort(3)
					pastAbort.Store(true)
				})
			}
			waitOrFail(t, &wg)

			require.False(t, pastAbort.Load(), "Abort returned")
			code, aborted := w.AbortCode()
			require.True(t, aborted)
			require.Equal(t, 3, code)
			for r := range n {
				if r == tt.aborter {
					require.ErrorIs(t, errs[r], errNoReturn, "aborting rank %d", r)
					continue
				}
				require.ErrorIs(t, errs[r], ErrAborted, "rank %d", r)
			}
			select {
			case <-w.Aborted():
			default:
				t.Fatal("Aborted channel still open")
			}

			// The first code stays; later aborts still end their goroutine.
			var wg2 sync.WaitGroup
			wg2.Go(func() { w.Rank(1).Abort(7); pastAbort.Store(true) })
			waitOrFail(t, &wg2)
			require.False(t, pastAbort.Load(), "second Abort returned")
			code, _ = w.AbortCode()
			require.Equal(t, 3, code)
			require.ErrorIs(t, w.Rank(0).Finalize(), ErrAborted)
		})
	}
}

// A rank woken by the step's completion and the abort at once must see the
// completed step, as its peers already returned from it. The two wake-ups
// race in a real world, so this sets up both at once and waits many times
// (select picks at random among ready cases).
func TestLocalStepCompletedBeforeAbortKeepsResult(t *testing.T) {
	w := NewLocalWorld(2)
	s := &step{calls: []Call{{Op: OpBarrier}, {Op: OpBarrier}}, done: make(chan struct{})}
	close(s.done)
	close(w.aborted)
	for range 100 {
		got, err := w.wait(0, Call{Op: OpBarrier}, s)
		require.NoError(t, err)
		require.Same(t, s, got)
	}
	pending := &step{done: make(chan struct{})}
	_, err := w.wait(0, Call{Op: OpBarrier}, pending)
	require.ErrorIs(t, err, ErrAborted, "an unfinished step fails once the world aborted")
}

func TestLocalFinalize(t *testing.T) {
	t.Run("collective after finalize", func(t *testing.T) {
		w := NewLocalWorld(1)
		c := w.Rank(0)
		require.NoError(t, c.Barrier())
		require.NoError(t, c.Finalize())
		require.ErrorIs(t, c.Barrier(), ErrFinalized)
		_, err := c.Allgather([]byte{1})
		require.ErrorIs(t, err, ErrFinalized)
		require.ErrorIs(t, c.Finalize(), ErrFinalized)
	})
	t.Run("all ranks finalize", func(t *testing.T) {
		w := NewLocalWorld(3)
		errs := runRanks(t, w, func(c *Local) error {
			if err := c.Barrier(); err != nil {
				return err
			}
			return c.Finalize()
		})
		for r, err := range errs {
			require.NoError(t, err, "rank %d", r)
		}
	})
	for _, early := range []bool{true, false} {
		name := "finalize while peers wait"
		if early {
			name = "peers enter after finalize"
		}
		t.Run(name, func(t *testing.T) {
			const n = 3
			w := NewLocalWorld(n)
			var finalized sync.WaitGroup
			finalized.Add(1)
			errs := runRanks(t, w, func(c *Local) error {
				if c.Rank() == 0 {
					if !early {
						waitArrived(t, w, n-1)
					}
					defer finalized.Done()
					return c.Finalize()
				}
				if early {
					finalized.Wait()
				}
				return c.Barrier()
			})
			require.NoError(t, errs[0])
			for r := 1; r < n; r++ {
				require.ErrorIs(t, errs[r], ErrMismatch, "rank %d", r)
				require.ErrorContains(t, errs[r], "rank 0", "rank %d", r)
			}
		})
	}
}

// TestLocalManySteps runs long mixed sequences so that the race detector
// sees steps handed from one to the next while ranks still read results.
func TestLocalManySteps(t *testing.T) {
	const n, steps = 4, 300
	w := NewLocalWorld(n)
	errs := runRanks(t, w, func(c *Local) error {
		for s := range steps {
			root := s % n
			switch s % 3 {
			case 0:
				out, err := c.Allgather(pattern(c.Rank()+s, s%17))
				if err != nil {
					return err
				}
				for r := range n {
					part := out[r*(s%17) : (r+1)*(s%17)]
					if !bytes.Equal(part, pattern(r+s, s%17)) {
						return fmt.Errorf("step %d: allgather part %d wrong", s, r)
					}
				}
			case 1:
				buf := make([]byte, s%29)
				if c.Rank() == root {
					copy(buf, pattern(s, len(buf)))
				}
				if err := c.Bcast(buf, root); err != nil {
					return err
				}
				if !bytes.Equal(buf, pattern(s, len(buf))) {
					return fmt.Errorf("step %d: bcast wrong", s)
				}
			case 2:
				parts, err := c.Gather(pattern(c.Rank()+s, c.Rank()+s%5), root)
				if err != nil {
					return err
				}
				for r, p := range parts {
					if !bytes.Equal(p, pattern(r+s, r+s%5)) {
						return fmt.Errorf("step %d: gather part %d wrong", s, r)
					}
				}
			}
		}
		return c.Finalize()
	})
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
}

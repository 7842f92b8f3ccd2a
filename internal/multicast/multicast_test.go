package multicast

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/comm"
	cu "github.com/artest/artest/internal/cudadrv"
	"github.com/artest/artest/internal/multicast/gate"
)

func permit(t *testing.T) gate.Permit {
	t.Helper()
	p, err := gate.Decide(gate.Inputs{Flag: true, LookupEnv: func(string) (string, bool) { return "", false },
		Supported: func() (bool, error) { return true, nil }}).Permit()
	require.NoError(t, err)
	return p
}

func openFDs(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(es)
}

// runSetup runs Setup on n in-process ranks, each with its own fake driver
// on the shared system.
func runSetup(t *testing.T, s *fakeSystem, n int, cfg func(rank int) Config) ([]*Segment, []error) {
	t.Helper()
	cs := comm.NewLocal(n)
	segs, errs := make([]*Segment, n), make([]error, n)
	var wg sync.WaitGroup
	for r := 0; r < n; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			segs[r], errs[r] = Setup(newFakeDriver(s, r), cs[r], cfg(r))
		}(r)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("setup did not finish on every rank: a rank waits for ever")
	}
	return segs, errs
}

func plainConfig(t *testing.T, bytes uint64) func(int) Config {
	p := permit(t)
	return func(r int) Config { return Config{Permit: p, Device: cu.Device(r), Bytes: bytes} }
}

func closeAll(t *testing.T, segs []*Segment) {
	t.Helper()
	for r, s := range segs {
		require.NoError(t, s.Close(), "rank %d", r)
	}
}

func TestSetupSequence(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4} {
		t.Run(fmt.Sprintf("np%d", n), func(t *testing.T) {
			fds := openFDs(t)
			s := newFakeSystem(t.TempDir())
			const want = 5<<20 + 12
			segs, errs := runSetup(t, s, n, plainConfig(t, want))
			for r, err := range errs {
				require.NoError(t, err, "rank %d", r)
			}
			for r, seg := range segs {
				require.Equal(t, uint64(8<<20), seg.Bytes, "rounded up to the multicast granularity (4 MiB)")
				require.Len(t, seg.Peers, n)
				require.Equal(t, seg.Local, seg.Peers[r])
				require.NotZero(t, seg.Multicast)
				require.Equal(t, uint64(seg.Multicast)-uint64(seg.Local), seg.Delta())
				for p, ptr := range seg.Peers {
					require.NotZero(t, ptr, "rank %d maps rank %d", r, p)
				}

				calls := s.calls(r)
				require.Equal(t, "EnableMulticast", calls[0], "rank %d: the entry points come first", r)
				require.Equal(t, r == 0, contains(calls, "MulticastCreate"), "only rank 0 creates the object")
				require.Equal(t, 1, count(calls, "MulticastAddDevice"))
				require.Equal(t, 1, count(calls, "MulticastBindMem"))
				require.Equal(t, n-1+b2i(r != 0), count(calls, "MemImportFD"), "every peer's memory, and rank 0's object")
			}
			// Every device joined before any rank bound (the fake would
			// have failed the bind otherwise; this checks the log too).
			var lastAdd, firstBind int
			firstBind = 1 << 30
			for r := 0; r < n; r++ {
				lastAdd = max(lastAdd, s.indexOf(fmt.Sprintf("rank %d MulticastAddDevice", r)))
				firstBind = min(firstBind, s.indexOf(fmt.Sprintf("rank %d MulticastBindMem", r)))
			}
			require.Less(t, lastAdd, firstBind)
			require.Equal(t, fds, openFDs(t), "every exported and received descriptor is closed once setup is done")

			closeAll(t, segs)
			require.Empty(t, s.leaks())
			require.Equal(t, fds, openFDs(t))
		})
	}
}

func contains(xs []string, x string) bool { return count(xs, x) > 0 }

func count(xs []string, x string) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// One rank without a permit stops every rank before any driver call.
func TestSetupWithoutPermitCallsNothing(t *testing.T) {
	p := permit(t)
	for _, closed := range []int{0, 2} {
		s := newFakeSystem(t.TempDir())
		_, errs := runSetup(t, s, 3, func(r int) Config {
			if r == closed {
				return Config{Device: cu.Device(r), Bytes: 1 << 20}
			}
			return Config{Permit: p, Device: cu.Device(r), Bytes: 1 << 20}
		})
		for r, err := range errs {
			require.ErrorContains(t, err, "safety gate", "rank %d", r)
			if r != closed {
				require.ErrorContains(t, err, fmt.Sprintf("rank %d", closed))
			}
		}
		s.mu.Lock()
		require.Empty(t, s.log, "no rank called the driver")
		s.mu.Unlock()
	}
}

// Every driver call of every rank is made to fail once: every rank must
// return an error naming the failing step, nobody may wait for ever, and
// everything any rank built must be released again, descriptors included.
func TestSetupTearsDownOnEveryFailure(t *testing.T) {
	const n = 3
	base := newFakeSystem(t.TempDir())
	segs, errs := runSetup(t, base, n, plainConfig(t, 3<<20))
	for _, err := range errs {
		require.NoError(t, err)
	}
	closeAll(t, segs)

	fds := openFDs(t)
	tried := 0
	for r := 0; r < n; r++ {
		seen := map[string]int{}
		for _, name := range base.calls(r) {
			seen[name]++
			// Teardown calls are not part of setup's sequence.
			if name == "MemRelease" || name == "MemUnmap" || name == "MemAddressFree" || name == "MulticastUnbind" {
				continue
			}
			nth := seen[name]
			t.Run(fmt.Sprintf("rank%d/%s#%d", r, name, nth), func(t *testing.T) {
				s := newFakeSystem(t.TempDir())
				s.failRank, s.failName, s.failNth = r, name, nth
				segs, errs := runSetup(t, s, n, plainConfig(t, 3<<20))
				for q, err := range errs {
					require.Error(t, err, "rank %d", q)
					require.Nil(t, segs[q])
					require.ErrorContains(t, err, "multicast setup: ")
					if q == r {
						require.ErrorIs(t, err, errInjected)
					} else {
						require.ErrorContains(t, err, fmt.Sprintf("rank %d: ", r), "rank %d names the failing rank", q)
					}
				}
				require.Empty(t, s.leaks())
				require.Equal(t, fds, openFDs(t), "no descriptor leaked")
			})
			tried++
		}
	}
	require.Greater(t, tried, 3*n, "every step of every rank was tried")
}

// Close keeps tearing down after a step fails and reports the failure.
func TestCloseKeepsGoing(t *testing.T) {
	s := newFakeSystem(t.TempDir())
	segs, errs := runSetup(t, s, 2, plainConfig(t, 2<<20))
	for _, err := range errs {
		require.NoError(t, err)
	}
	s.failRank, s.failName, s.failNth = 0, "MemUnmap", 1 // the multicast mapping, unmapped first
	err := segs[0].Close()
	require.ErrorIs(t, err, errInjected)
	require.ErrorContains(t, err, "unmap the multicast object")
	require.ErrorContains(t, err, "still mapped", "its address range cannot be freed")
	calls := s.calls(0)
	require.Contains(t, calls, "MulticastUnbind", "the steps after the failed one still ran")
	require.Equal(t, "MemRelease", calls[len(calls)-1], "down to the rank's own memory")
	require.NoError(t, segs[1].Close())
	require.NoError(t, segs[0].Close(), "a second Close does nothing")
}

func TestSetupRejectsDifferentSizes(t *testing.T) {
	s := newFakeSystem(t.TempDir())
	p := permit(t)
	_, errs := runSetup(t, s, 2, func(r int) Config {
		return Config{Permit: p, Device: cu.Device(r), Bytes: uint64(1+4*r) << 20}
	})
	for _, err := range errs {
		require.ErrorContains(t, err, "sized its segment")
	}
	require.Empty(t, s.leaks())
}

// fileWith returns a descriptor of an unlinked file holding text.
func fileWith(t *testing.T, text string) int {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "fd")
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteString(text)
	require.NoError(t, err)
	fd, err := syscall.Dup(int(f.Fd()))
	require.NoError(t, err)
	return fd
}

func readAt(t *testing.T, fd int) string {
	t.Helper()
	buf := make([]byte, 64)
	n, err := syscall.Pread(fd, buf, 0)
	require.NoError(t, err)
	return string(buf[:n])
}

func runExchange(t *testing.T, n int, offer func(r int) map[string]int, want func(r int) []FDRequest) ([]map[FDRequest]int, []error) {
	t.Helper()
	cs := comm.NewLocal(n)
	got, errs := make([]map[FDRequest]int, n), make([]error, n)
	var wg sync.WaitGroup
	for r := 0; r < n; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			got[r], errs[r] = SocketExchange{Timeout: 5 * time.Second}.Exchange(cs[r], offer(r), want(r))
		}(r)
	}
	wg.Wait()
	return got, errs
}

func TestSocketExchangeMovesDescriptors(t *testing.T) {
	const n = 3
	fds := openFDs(t)
	mine := make([]int, n)
	for r := range mine {
		mine[r] = fileWith(t, fmt.Sprintf("memory of rank %d", r))
	}
	got, errs := runExchange(t, n,
		func(r int) map[string]int { return map[string]int{"memory": mine[r]} },
		func(r int) []FDRequest {
			var w []FDRequest
			for p := 0; p < n; p++ {
				if p != r {
					w = append(w, FDRequest{Rank: p, Name: "memory"})
				}
			}
			return w
		})
	for r := 0; r < n; r++ {
		require.NoError(t, errs[r])
		require.Len(t, got[r], n-1)
		for req, fd := range got[r] {
			require.NotEqual(t, mine[req.Rank], fd, "a new descriptor")
			require.Equal(t, fmt.Sprintf("memory of rank %d", req.Rank), readAt(t, fd))
			require.NoError(t, syscall.Close(fd))
		}
	}
	for _, fd := range mine {
		require.NoError(t, syscall.Close(fd))
	}
	require.Equal(t, fds, openFDs(t))
}

func TestSocketExchangeFailsEverywhere(t *testing.T) {
	fds := openFDs(t)
	mine := fileWith(t, "x")
	got, errs := runExchange(t, 2,
		func(r int) map[string]int { return map[string]int{"memory": mine} },
		func(r int) []FDRequest {
			if r == 1 {
				return []FDRequest{{Rank: 0, Name: "memory"}, {Rank: 0, Name: "nothing"}}
			}
			return nil
		})
	require.ErrorContains(t, errs[1], "fetch nothing from rank 0: no such descriptor")
	require.ErrorContains(t, errs[0], "rank 1: fetch nothing", "the rank that served learns of the failure too")
	require.Len(t, got[1], 1, "what did arrive is handed back, to be closed")
	for _, fd := range got[1] {
		require.NoError(t, syscall.Close(fd))
	}
	require.NoError(t, syscall.Close(mine))
	require.Equal(t, fds, openFDs(t))
}

func TestServerRefusesStrangers(t *testing.T) {
	s := &fdServer{pids: map[int]bool{100: true, 101: true}, uid: 1000}
	require.Empty(t, s.refuse(&syscall.Ucred{Pid: 101, Uid: 1000}))
	require.Contains(t, s.refuse(&syscall.Ucred{Pid: 102, Uid: 1000}), "pid 102 is not a rank of this job")
	require.Contains(t, s.refuse(&syscall.Ucred{Pid: 100, Uid: 0}), "uid 0 is not 1000")
}

func TestUndoRunsInReverseAndKeepsGoing(t *testing.T) {
	var u undoStack
	var order []string
	for _, name := range []string{"a", "b", "c"} {
		name := name
		u.push(name, func() error {
			order = append(order, name)
			if name == "b" {
				return errors.New("boom")
			}
			return nil
		})
	}
	err := u.run()
	require.Equal(t, []string{"c", "b", "a"}, order)
	require.EqualError(t, err, "b: boom")
	require.NoError(t, u.run(), "the stack is empty afterwards")
	require.True(t, strings.HasPrefix(fmt.Sprint(roundUp(5, 4)), "8"))
}

// badExchange asks, on one rank, for a descriptor nobody offers: the real
// exchange then fails on every rank, after some descriptors arrived.
type badExchange struct{ rank int }

func (x badExchange) Exchange(c Comm, offer map[string]int, want []FDRequest) (map[FDRequest]int, error) {
	if c.Rank() == x.rank {
		want = append(want, FDRequest{Rank: 0, Name: "nothing"})
	}
	return SocketExchange{}.Exchange(c, offer, want)
}

func TestSetupTearsDownWhenTheExchangeFails(t *testing.T) {
	fds := openFDs(t)
	s := newFakeSystem(t.TempDir())
	p := permit(t)
	segs, errs := runSetup(t, s, 3, func(r int) Config {
		return Config{Permit: p, Device: cu.Device(r), Bytes: 2 << 20, Exchange: badExchange{rank: 2}}
	})
	for r, err := range errs {
		require.ErrorContains(t, err, "exchange file descriptors", "rank %d", r)
		require.ErrorContains(t, err, "fetch nothing from rank 0")
		require.Nil(t, segs[r])
		require.NotContains(t, s.calls(r), "MulticastAddDevice", "nobody went on")
	}
	require.Empty(t, s.leaks())
	require.Equal(t, fds, openFDs(t), "the descriptors that did arrive were closed")
}

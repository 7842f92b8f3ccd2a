package liveness

import (
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/comm"
)

// openAll opens one board per rank of an in-process world of n.
func openAll(t *testing.T, n int, dir string) []*Board {
	t.Helper()
	cs := comm.NewLocal(n)
	bs := make([]*Board, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range cs {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			bs[r], errs[r] = Open(cs[r], dir)
		}(r)
	}
	wg.Wait()
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
	return bs
}

// Every rank sees every rank's beats and states through its own mapping,
// and no file is left behind.
func TestBoardIsShared(t *testing.T) {
	dir := t.TempDir()
	bs := openAll(t, 3, dir)
	defer func() {
		for _, b := range bs {
			require.NoError(t, b.Close())
		}
	}()
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, left, "the board's file is removed once every rank mapped it")

	for i := 0; i < 5; i++ {
		bs[1].Beat()
	}
	bs[2].Say(Hung, "rank 2: inside example's allreduce")
	for r, b := range bs {
		require.True(t, b.Shared())
		require.Equal(t, uint64(0), b.Beats(0), "rank %d's view", r)
		require.Equal(t, uint64(5), b.Beats(1), "rank %d's view", r)
		s, text := b.State(2)
		require.Equal(t, Hung, s)
		require.Equal(t, "rank 2: inside example's allreduce", text)
		s, text = b.State(0)
		require.Equal(t, Running, s)
		require.Empty(t, text)
	}
	bs[0].Say(Hung, strings.Repeat("x", MaxText+100))
	bs[0].SetState(Reported)
	s, text := bs[1].State(0)
	require.Equal(t, Reported, s)
	require.Len(t, text, MaxText, "a long text is cut to the slot")
}

// A folder the board cannot be made in fails every rank with rank 0's
// reason, instead of leaving the others waiting.
func TestBoardOpenFailsOnEveryRank(t *testing.T) {
	cs := comm.NewLocal(2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range cs {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			_, errs[r] = Open(cs[r], "/nonexistent/folder")
		}(r)
	}
	wg.Wait()
	for r, err := range errs {
		require.Error(t, err, "rank %d", r)
		require.Contains(t, err.Error(), "create the liveness board in /nonexistent/folder", "rank %d", r)
	}
}

// A private board counts this rank's beats; the other slots stay still.
func TestPrivateBoard(t *testing.T) {
	b := Private(4, 2)
	require.False(t, b.Shared())
	b.Beat()
	require.Equal(t, uint64(1), b.Beats(2))
	require.Equal(t, uint64(0), b.Beats(0))
	b.Say(Hung, "stuck")
	s, text := b.State(2)
	require.Equal(t, Hung, s)
	require.Equal(t, "stuck", text)
	require.NoError(t, b.Close())
}

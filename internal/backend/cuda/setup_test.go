package cuda

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/exitcode"
)

// A setup step that fails on one rank only must fail on every rank at the
// same collective, or the others wait in the next one for ever.
func TestAgreeSetupFailsEveryRank(t *testing.T) {
	for name, failing := range map[string]int{"none": -1, "rank 0": 0, "rank 2": 2} {
		t.Run(name, func(t *testing.T) {
			world := comm.NewLocalWorld(3)
			errs := make([]error, 3)
			var wg sync.WaitGroup
			for r := 0; r < 3; r++ {
				wg.Add(1)
				go func(r int) {
					defer wg.Done()
					var mine error
					if r == failing {
						mine = errors.New("open rank 1 IPC handle 2: CUDA_ERROR_INVALID_VALUE")
					}
					errs[r] = agreeSetup(world.Rank(r), mine)
				}(r)
			}
			wg.Wait()
			for r, err := range errs {
				if failing < 0 {
					require.NoError(t, err, "rank %d", r)
					continue
				}
				require.Error(t, err, "rank %d", r)
				require.Contains(t, err.Error(), "open rank 1 IPC handle 2")
				if r != failing {
					require.Contains(t, err.Error(), fmt.Sprintf("rank %d: ", failing))
					require.Equal(t, exitcode.Env, exitcode.Of(err))
				}
			}
		})
	}
}

func TestFirstSetupError(t *testing.T) {
	rec := func(msg string) []byte {
		b := make([]byte, 8+setupErrBytes)
		copy(b[8:], msg)
		return b
	}
	all := append(append(rec(""), rec("")...), rec("no memory")...)
	err := firstSetupError(all, 8+setupErrBytes, 8)
	require.EqualError(t, err, "rank 2: no memory")
	require.NoError(t, firstSetupError(append(rec(""), rec("")...), 8+setupErrBytes, 8))
}

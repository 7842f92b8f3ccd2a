package twoshot

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// The gather values are written on both sides of the launch ABI.
func TestTwoshotGatherMatchesCUDA(t *testing.T) {
	src, err := os.ReadFile("twoshot.cuh")
	require.NoError(t, err)
	for name, want := range map[string]uint32{"TWOSHOT_GATHER_PULL": GatherPull, "TWOSHOT_GATHER_PUSH": GatherPush} {
		m := regexp.MustCompile(`constexpr uint32_t ` + name + ` = (\d+)u;`).FindSubmatch(src)
		require.NotNil(t, m, "%s not found in twoshot.cuh", name)
		got, err := strconv.ParseUint(string(m[1]), 10, 32)
		require.NoError(t, err)
		require.Equal(t, want, uint32(got), name)
	}
}

package kernels

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// The gather values are written on both sides of the launch ABI.
func TestTwoshotGatherMatchesCUDA(t *testing.T) {
	src, err := os.ReadFile("common.cuh")
	require.NoError(t, err)
	for name, want := range map[string]uint32{"TWOSHOT_GATHER_PULL": TwoshotGatherPull, "TWOSHOT_GATHER_PUSH": TwoshotGatherPush} {
		m := regexp.MustCompile(`constexpr uint32_t ` + name + ` = (\d+)u;`).FindSubmatch(src)
		require.NotNil(t, m, "%s not found in common.cuh", name)
		got, err := strconv.ParseUint(string(m[1]), 10, 32)
		require.NoError(t, err)
		require.Equal(t, want, uint32(got), name)
	}
}

func TestTwoshotResolve(t *testing.T) {
	v, err := Lookup("twoshot")
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		set   map[string]uint32
		count uint64
		want  uint32
	}{
		{"auto, small: pull", nil, TwoshotPushMinBytes/2 - 1, TwoshotGatherPull},
		{"auto, at the threshold: push", nil, TwoshotPushMinBytes / 2, TwoshotGatherPush},
		{"pull asked for at a large size", map[string]uint32{"gather": 1}, 1 << 24, TwoshotGatherPull},
		{"push asked for at a small size", map[string]uint32{"gather": 2}, 8, TwoshotGatherPush},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := Args{Count: tc.count}
			v.SetParams(&a, tc.set, 2)
			require.Equal(t, tc.want, a.Param0)
		})
	}
}

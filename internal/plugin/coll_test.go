package plugin

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/reference"
)

// artest_collectives_v1 declares each variant's collectives; without it
// every variant is an allreduce, as plugins built before it are.
func TestLoadDescribesCollectives(t *testing.T) {
	for _, tc := range []struct {
		name      string
		defines   []string
		pull, all []reference.Coll
	}{
		{"declared", nil, []reference.Coll{reference.ReduceScatter, reference.AllGather}, []reference.Coll{reference.AllReduce, reference.ReduceScatter, reference.AllGather}},
		{"no artest_collectives_v1", []string{"-DNO_COLLS"}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Load(build(t, "testdata/coll.c", tc.defines...))
			require.NoError(t, err)
			require.Len(t, p.Variants, 2)
			require.Equal(t, tc.pull, p.Variants[0].Colls)
			require.Equal(t, tc.all, p.Variants[1].Colls)
			if tc.pull == nil {
				require.Equal(t, []reference.Coll{reference.AllReduce}, p.Variants[0].Collectives())
			}
		})
	}
}

func TestLoadRefusesBadCollectives(t *testing.T) {
	for _, tc := range []struct {
		name   string
		define string
		want   string
	}{
		{"NULL", "-DNULL_COLLS", "artest_collectives_v1 returned NULL"},
		{"version", "-DCOLLS_VERSION=2", "collectives version 2, this artest speaks version 1"},
		{"variant count", "-DCOLLS_VARIANTS=1", "artest_collectives_v1 describes 1 variants, the plugin has 2"},
		{"empty mask", "-DPULL_MASK=0", "coll:pull: collectives mask 0"},
		{"unknown collective", "-DPULL_MASK=128", "coll:pull: collectives mask 0x80"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := build(t, "testdata/coll.c", tc.define)
			_, err := Load(path)
			require.Error(t, err)
			require.Contains(t, err.Error(), "--plugin "+path)
			require.Contains(t, err.Error(), tc.want)
			require.Equal(t, exitcode.Usage, exitcode.Of(err))
		})
	}
}

// artest_early_return_v1 declares the variants that return before their
// peers finish by design; the stress witness reports their leads without a
// warning.
func TestLoadDescribesEarlyReturns(t *testing.T) {
	p, err := Load(build(t, "testdata/coll.c", "-DEARLY"))
	require.NoError(t, err)
	require.Empty(t, p.Variants[0].EarlyReturn)
	require.Equal(t, "it copies its input into memory of its own: peers never read the caller's buffers", p.Variants[1].EarlyReturn)

	p, err = Load(build(t, "testdata/coll.c"))
	require.NoError(t, err)
	require.Empty(t, p.Variants[1].EarlyReturn, "no artest_early_return_v1: none returns early")

	for _, tc := range []struct {
		name   string
		define string
		want   string
	}{
		{"NULL", "-DNULL_EARLY", "artest_early_return_v1 returned NULL"},
		{"version", "-DEARLY_VERSION=2", "artest_early_return_v1: version 2, this artest speaks version 1"},
		{"variant count", "-DEARLY_VARIANTS=3", "artest_early_return_v1 describes 3 variants, the plugin has 2"},
		{"two lines", "-DEARLY_TWO_LINES", "coll:all: the reason must be one line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := build(t, "testdata/coll.c", "-DEARLY", tc.define)
			_, err := Load(path)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.Equal(t, exitcode.Usage, exitcode.Of(err))
		})
	}
}

// artest_faults_v1 names a plugin's fault switches: every variant of the
// plugin gets them, as PLUGIN:NAME, bit i for the i-th.
func TestLoadDescribesFaults(t *testing.T) {
	p, err := Load(build(t, "testdata/coll.c", "-DFAULTS"))
	require.NoError(t, err)
	want := []kernels.Fault{
		{Name: "coll:no-end-barrier", Bit: 1, Help: "a reduce-scatter or all-gather returns without its end barrier"},
		{Name: "coll:slow", Bit: 2, Help: "does nothing"},
	}
	for _, v := range p.Variants {
		require.Equal(t, want, v.Faults, v.Name)
	}
	p, err = Load(build(t, "testdata/coll.c"))
	require.NoError(t, err)
	require.Empty(t, p.Variants[0].Faults, "no artest_faults_v1: no switches")
}

func TestLoadRefusesBadFaults(t *testing.T) {
	for _, tc := range []struct {
		name, define, want string
	}{
		{"NULL", "-DNULL_FAULTS", "artest_faults_v1 returned NULL"},
		{"version", "-DFAULTS_VERSION=2", "artest_faults_v1: version 2, this artest speaks version 1"},
		{"none", "-DNFAULTS=0", "artest_faults_v1 declares 0 faults, want 1 to 16"},
		{"too many", "-DNFAULTS=17", "artest_faults_v1 declares 17 faults, want 1 to 16"},
		{"one name twice", "-DFAULT_DUP", "fault no-end-barrier declared twice"},
		{"two-line help", "-DFAULT_TWO_LINES", "fault slow: its help must be one line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := build(t, "testdata/coll.c", "-DFAULTS", tc.define)
			_, err := Load(path)
			require.Error(t, err)
			require.Contains(t, err.Error(), "--plugin "+path)
			require.Contains(t, err.Error(), tc.want)
			require.Equal(t, exitcode.Usage, exitcode.Of(err))
		})
	}
}

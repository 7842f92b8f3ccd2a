package cuda

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/multicast/gate"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/registry"
)

func noEnv(string) (string, bool) { return "", false }

func envNVLS(v string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		if k == gate.EnvNVLS {
			return v, true
		}
		return "", false
	}
}

// These backends have no driver (b.d is nil): any driver call would panic,
// so passing tests also prove that a closed gate calls nothing.
func gpuBackend(d gate.Decision) *Backend {
	return &Backend{cc: 90, mc: mcState{decision: d}}
}

func multimem(t *testing.T) *kernels.Variant {
	t.Helper()
	v, err := registry.Builtins().Lookup("multimem")
	require.NoError(t, err)
	return v
}

func TestGateReadsTheDeviceLast(t *testing.T) {
	for _, tc := range []struct {
		name    string
		allow   bool
		env     func(string) (string, bool)
		reason  string
		queried bool
	}{
		{"flag absent", false, noEnv, "--allow-multicast not given", false},
		{"NCCL_NVLS_ENABLE=0", true, envNVLS("0"), "NCCL_NVLS_ENABLE=\"0\" turns NVLS off", false},
		{"device says no", true, noEnv, "does not support multicast", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			queried := false
			d := decideMulticast(tc.allow, tc.env, func() (bool, error) { queried = true; return false, nil })
			require.False(t, d.Open)
			require.Contains(t, d.Reason, tc.reason)
			require.Equal(t, tc.queried, queried)
		})
	}
}

// Without the flag (or with NCCL_NVLS_ENABLE=0, or a GPU without multicast)
// every multimem case of the default matrix is skipped with the gate's
// reason, and a launch is refused before the driver.
func TestMulticastCasesSkippedWhenGateClosed(t *testing.T) {
	v := multimem(t)
	cs, err := cases.Build(registry.Builtins(), cases.Selection{Variants: []string{"multimem"}}, 4)
	require.NoError(t, err)
	require.NotEmpty(t, cs)
	for _, d := range []gate.Decision{
		decideMulticast(false, noEnv, nil),
		decideMulticast(true, envNVLS("0"), nil),
		decideMulticast(true, noEnv, func() (bool, error) { return false, nil }),
	} {
		b := gpuBackend(d)
		for _, c := range cs {
			reason := cases.SkipReason(v, c)
			if reason == "" {
				reason = b.SkipReason(v, c.Mode.Graph)
			}
			require.NotEmpty(t, reason, c.ID())
			if c.Op.String() == "sum" {
				require.Equal(t, "multimem needs NVLS multicast, which is off: "+d.Reason, reason, c.ID())
			}
		}
		a := kernels.Args{NRanks: 4}
		err := b.multicastArgs(v, &a)
		require.ErrorContains(t, err, "refusing to launch multimem")
		require.ErrorContains(t, err, d.Reason)
		require.Zero(t, kernels.MulticastDelta(&a))
		require.True(t, strings.HasPrefix(b.multicastInfo(), "off: "), b.multicastInfo())
	}
	// Other variants are not affected.
	for _, o := range registry.Builtins().All() {
		if o.Needs&kernels.NeedMulticast == 0 {
			require.Empty(t, gpuBackend(gate.Closed("x")).multicastSkip(o), o.Name)
		}
	}
}

// Setup's part: ranks agree, and one rank's closed gate closes every
// rank's, before any multicast call (the backends have no driver).
func TestSetupAgreesOnTheGate(t *testing.T) {
	open := decideMulticast(true, noEnv, func() (bool, error) { return true, nil })
	require.True(t, open.Open)
	for _, tc := range []struct {
		name      string
		decisions []gate.Decision
		ordinals  []int
		want      []string
	}{
		{"one rank without the flag", []gate.Decision{decideMulticast(false, noEnv, nil), open, open}, []int{0, 1, 2},
			[]string{"--allow-multicast not given", "rank 0: --allow-multicast not given", "rank 0: --allow-multicast not given"}},
		{"two ranks on one GPU", []gate.Decision{open, open}, []int{0, 0},
			[]string{"ranks 0 and 1 share GPU 0", "ranks 0 and 1 share GPU 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := len(tc.decisions)
			cs := comm.NewLocal(n)
			bs := make([]*Backend, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for r := 0; r < n; r++ {
				bs[r] = gpuBackend(tc.decisions[r])
				w := &backend.World{Input: make([]backend.Ptr, n), Staging: make([]backend.Ptr, n)}
				wg.Add(1)
				go func(r int) {
					defer wg.Done()
					errs[r] = bs[r].setupMulticast(cs[r], 1<<20, w, tc.ordinals)
				}(r)
			}
			wg.Wait()
			for r := 0; r < n; r++ {
				require.NoError(t, errs[r])
				require.False(t, bs[r].mc.decision.Open)
				require.Contains(t, bs[r].mc.decision.Reason, tc.want[r])
				require.Nil(t, bs[r].mc.seg)
				require.Contains(t, bs[r].SkipReason(multimem(t), false), tc.want[r])
			}
		})
	}
}

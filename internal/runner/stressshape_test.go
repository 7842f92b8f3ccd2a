package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/kernels/ring"
)

// A stress run launches a variant that declares a stress shape (the ring)
// in it, says so in its plan line and reports it; a --param that names the
// variant's parameters wins over it, and a run that is not a stress run
// keeps the defaults.
func TestStressLaunchesAVariantInItsStressShape(t *testing.T) {
	ids := []string{"ring/bf16/sum/4100B/oop-reg-plain/np2"}
	for _, tc := range []struct {
		name      string
		stress    int
		params    map[string]uint32
		from      string
		slotBytes uint32
		slots     uint32
		planSays  string
		planOmits string
	}{
		{"stress", 20, nil, LaunchFromStress, 1024, 4, "launched in their stress shape: ring slot-bytes=1024", ""},
		{"stress with --param", 20, map[string]uint32{"slots": 2}, LaunchFromFlags, 2048, 2, "", "stress shape"},
		{"no stress", 0, nil, LaunchFromDefault, 2048, 2, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := filepath.Join(t.TempDir(), "r.json")
			res := runWorld(t, 2, ids, func(rank int, c *Config) {
				c.Stress, c.Params = tc.stress, tc.params
				if rank == 0 {
					c.JSONPath = js
				}
			})
			require.Equal(t, []int{0, 0}, res.codes, res.stderr)
			if tc.planSays != "" {
				require.Contains(t, res.stderr, tc.planSays)
			}
			if tc.planOmits != "" {
				require.NotContains(t, res.stderr, tc.planOmits)
			}
			f, err := os.Open(js)
			require.NoError(t, err)
			defer f.Close()
			rep, err := report.ReadJSON(f)
			require.NoError(t, err)
			require.Len(t, rep.Cases, 1)
			c := rep.Cases[0]
			require.Equal(t, tc.from, c.LaunchFrom)
			require.Equal(t, tc.slotBytes, c.Params["slot-bytes"])
			require.Equal(t, tc.slots, c.Params["slots"])
		})
	}
}

// The ring's credit check is needed at 2 ranks only in its stress shape:
// with the credit wait switched off, the defaults' 2 slots pass every
// iteration (the data wait covers the slot), the stress shape fails.
func TestRingCreditFaultNeedsTheStressShapeAtTwoRanks(t *testing.T) {
	ids := []string{"ring/bf16/sum/4100B/oop-reg-plain/np2"}
	for _, tc := range []struct {
		name   string
		params map[string]uint32
		codes  []int
	}{
		{"stress shape", nil, []int{1, 1}},
		{"defaults", map[string]uint32{"slot-bytes": ring.DefaultSlotBytes}, []int{0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runWorld(t, 2, ids, func(rank int, c *Config) {
				c.Stress, c.Params = 300, tc.params
				c.Inject = Inject{Bits: ring.InjectNoCreditWait}
			})
			require.Equal(t, tc.codes, res.codes, res.stderr)
		})
	}
}

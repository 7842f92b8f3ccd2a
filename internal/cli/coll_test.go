package cli

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/exitcode"
)

// --coll is a selection flag: checked as one, refused beside --case, and
// not for tune, which tunes the allreduce alone.
func TestCollUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown collective", []string{"--coll", "gossip"}, "--coll: unknown collective \"gossip\""},
		{"beside --case", []string{"--coll", "all-gather", "--case", "all-gather:pull/f32/-/12B/oop-reg-plain/np3"}, "drop --coll"},
		{"tune of another collective", []string{"tune", "--coll", "reduce-scatter"}, "tune tunes the allreduce, not reduce-scatter"},
		{"tune of a variant without an allreduce", []string{"tune", "--variant", "pull"}, "tune tunes the allreduce, which pull does not implement"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(append([]string{"--backend", "host"}, tc.args...))
			require.Error(t, err)
			require.Equal(t, exitcode.Usage, exitcode.Of(err))
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

// A host run of pull's collectives at 3 ranks passes, names each case's
// collective in the report, and gives an all-gather no op.
func TestCollHostRunPasses(t *testing.T) {
	js := filepath.Join(t.TempDir(), "r.json")
	res := runWorld(t, 3, same("--backend", "host", "--coll", "reduce-scatter,all-gather", "--variant", "pull",
		"--dtype", "bf16", "--size", "12,4100", "--mode", "oop,reg", "--json", js))
	require.Equal(t, []int{0, 0, 0}, res.codes, "%v\n%s", res.stderr, res.stdout[0])
	rep := readReport(t, js)
	var ids []string
	for _, c := range rep.Cases {
		ids = append(ids, c.ID)
		require.NotEmpty(t, c.Coll, c.ID)
		require.Equal(t, c.Coll+":pull", c.Variant, c.ID)
		if c.Coll == "all-gather" {
			require.Equal(t, "-", c.Op, c.ID)
		}
	}
	require.Contains(t, ids, "reduce-scatter:pull/bf16/sum/12B/oop-reg-plain/np3")
	require.Contains(t, ids, "all-gather:pull/bf16/-/4098B/oop-reg-graph/np3", "4100 B rounded down to 683 elements a rank")
	require.Equal(t, len(ids), rep.Summary.Pass)
}

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/report"
)

// A stress run says up front what it will do, prints every case as it ends
// without --progress, and records the witness of every case.
func TestStressSaysWhatItDoes(t *testing.T) {
	js := filepath.Join(t.TempDir(), "r.json")
	res := runWorld(t, 2, same("--backend", "host", "--stress", "20", "--variant", "oneshot,twoshot", "--json", js))
	require.Equal(t, []int{0, 0}, res.codes, res.stderr[0])
	require.Regexp(t, regexp.MustCompile(`(?m)^# stress plan: 16 cases of 2 variants \(oneshot, twoshot\), 20 iterations each, schedules poison-after-return,skew,straggler \(link off: the host backend.s load cannot read its peers; memory off: the host backend.s load cannot stream device memory\), checked on the host; about \S+`), res.stderr[0])
	// A case's line may carry the witness's warning: on the host, a rank
	// held off a core for 50 ms by other processes leads its peer by that
	// much (docs/checks.md, the end-barrier witness).
	const warned = `(?:; WARNING end-barrier witness: .*?)?`
	require.Regexp(t, regexp.MustCompile(`(?m)^# \[1/16\] oneshot/bf16/sum/4100B/oop-reg-plain/np2 pass \S+s`+warned+` \(\S+ elapsed, about \S+ left\)$`), res.stderr[0])
	require.Regexp(t, regexp.MustCompile(`(?m)^# \[16/16\] \S+ pass \S+s`+warned+` \(\S+ elapsed\)$`), res.stderr[0])
	require.Empty(t, res.stderr[1], "only rank 0 prints")

	b, err := os.ReadFile(js)
	require.NoError(t, err)
	var rep report.Report
	require.NoError(t, json.Unmarshal(b, &rep))
	for _, c := range rep.Cases {
		require.NotNil(t, c.Witness, c.ID)
		require.Equal(t, 20, c.Witness.Iterations, c.ID)
		require.True(t, c.Witness.SameClock, "host ranks share the wall clock")
	}

	// --stress-set full is the 27-case set; the default is 9 per variant
	// (8 on the host, which leaves out the 1 MiB slow path).
	res = runWorld(t, 2, same("--backend", "host", "--stress", "20", "--variant", "oneshot", "--stress-set", "full", "--list"))
	require.Equal(t, 24, len(regexp.MustCompile(`(?m)^oneshot/`).FindAllString(res.stdout[0], -1)), res.stdout[0])
	_, err = Parse([]string{"--stress-set", "full"})
	require.ErrorContains(t, err, "--stress-set full needs --stress N")
	_, err = Parse([]string{"--stress", "5", "--stress-set", "most"})
	require.ErrorContains(t, err, `unknown --stress-set "most"`)
}

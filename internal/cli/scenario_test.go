package cli

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/backend/host"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/report"
)

// coreOnlyHost is the host backend with only backend.Backend's methods:
// neither backend.Reregisterer nor backend.ConcurrentLauncher.
type coreOnlyHost struct{ backend.Backend }

func (coreOnlyHost) Name() string { return "cuda" }

// A hang scenario whose hook the backend lacks skips the cases it would
// touch, with the reason, and fails nothing (test/integration's
// hangscenario_test runs the scenarios on the host backend, which has
// both hooks).
func TestHangScenarioNeedsItsBackendHook(t *testing.T) {
	var _ backend.Reregisterer = host.New("")
	var _ backend.ConcurrentLauncher = host.New("")
	tests := []struct {
		name   string
		inject string
		id     string
		reason string
	}{
		{"two-streams", "two-streams", "oneshot/f32/sum/4100B/oop-reg-plain/np2", "--inject two-streams: the cuda backend has no second stream"},
		{"reregister", "reregister:rank=1", "oneshot/f32/sum/4100B/oop-reg-graph/np2", "--inject reregister: the cuda backend cannot re-register an input buffer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			js := filepath.Join(t.TempDir(), "r.json")
			dir := t.TempDir()
			open := func(o *Options, c comm.Comm) (backend.Backend, error) { return coreOnlyHost{host.New(dir)}, nil }
			res := runWorldWith(t, 2, same("--backend", "cuda", "--case", tt.id, "--inject", tt.inject, "--json", js), open)
			require.Equal(t, []int{0, 0}, res.codes, "%v", res.stderr)
			rep := readReport(t, js)
			require.Len(t, rep.Cases, 1)
			require.Equal(t, report.Skipped, rep.Cases[0].Verdict)
			require.Equal(t, tt.reason, rep.Cases[0].Reason)
		})
	}
}

package runner

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/reference"
)

// defectBackend is ownRegionsBackend knowing one defect: oneshot's f16
// cases at an offset of 2 bytes.
type defectBackend struct{ *ownRegionsBackend }

func (defectBackend) KnownDefect(v *kernels.Variant, dt reference.DType, offsetBytes int64) string {
	if v.Name == "oneshot" && dt == reference.F16 && offsetBytes == 2 {
		return "a known defect of the test"
	}
	return ""
}

// A known defect is skipped, naming it, unless RunKnownDefects runs it;
// the other cases run either way.
func TestKnownDefectsAreSkippedUnlessAskedFor(t *testing.T) {
	ids := []string{"oneshot/f16/sum/4100B/oop-reg-plain-off1/np1", "oneshot/f16/sum/4100B/oop-reg-plain-off2/np1", "oneshot/f32/sum/4100B/oop-reg-plain-off1/np1"}
	for _, run := range []bool{false, true} {
		rep := runWith(t, ids, func(b *ownRegionsBackend) any { return defectBackend{b} }, func(c *Config) { c.RunKnownDefects = run })
		require.Len(t, rep.Cases, 3)
		if run {
			require.Equal(t, report.Pass, rep.Cases[0].Verdict, rep.Cases[0].Reason)
		} else {
			require.Equal(t, report.Skipped, rep.Cases[0].Verdict)
			require.Equal(t, "a known defect of the test", rep.Cases[0].Reason)
		}
		require.Equal(t, report.Pass, rep.Cases[1].Verdict, rep.Cases[1].Reason)
		require.Equal(t, report.Pass, rep.Cases[2].Verdict, rep.Cases[2].Reason)
	}
}

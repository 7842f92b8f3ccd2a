package hostcxx

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// recorder is a testing.TB that records how Find ended instead of ending.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper()           {}
func (r *recorder) Fatal(args ...any) { r.fatal = args[0].(string) }
func (r *recorder) Skip(args ...any)  { r.skip = args[0].(string) }

func TestFind(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no compiler anywhere
	t.Setenv("ARTEST_REQUIRE_CXX", "")
	r := &recorder{TB: t}
	require.Empty(t, Find(r))
	require.Contains(t, r.skip, "no host C++ compiler")
	require.Empty(t, r.fatal)

	t.Setenv("ARTEST_REQUIRE_CXX", "1")
	r = &recorder{TB: t}
	Find(r)
	require.Contains(t, r.fatal, "ARTEST_REQUIRE_CXX is set")
}

package dl

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// libc is on every machine that can build this package with cgo, so it is the
// one real library these tests can rely on.
const libc = "libc.so.6"

func TestOpenAndSym(t *testing.T) {
	lib, err := Open(libc)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, lib.Close()) })

	require.Equal(t, libc, lib.Name())
	require.True(t, filepath.IsAbs(lib.Resolved()), "resolved path %q", lib.Resolved())

	p, err := lib.Sym("getpid")
	require.NoError(t, err)
	require.NotNil(t, p)
}

func TestOpenFailures(t *testing.T) {
	dir := t.TempDir()
	notELF := filepath.Join(dir, "libfake.so.2")
	require.NoError(t, os.WriteFile(notELF, []byte("this is not an ELF file\n"), 0o644))

	for _, tc := range []struct {
		name, path, want string
	}{
		{"missing soname", "libartest-does-not-exist.so.1", "libartest-does-not-exist.so.1"},
		{"missing file", filepath.Join(dir, "nothing.so"), "nothing.so"},
		{"not a library", notELF, "libfake.so.2"},
		{"directory", dir, dir},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lib, err := Open(tc.path)
			require.Error(t, err)
			require.Nil(t, lib)
			require.Contains(t, err.Error(), tc.want)
			require.Contains(t, err.Error(), "dlopen")
		})
	}
}

func TestSymMissingNamesSymbol(t *testing.T) {
	lib, err := Open(libc)
	require.NoError(t, err)
	defer lib.Close()

	_, err = lib.Sym("artestNoSuchSymbol")
	require.Error(t, err)
	require.Contains(t, err.Error(), "artestNoSuchSymbol")

	// A failed lookup leaves no stale dlerror behind for the next one.
	p, err := lib.Sym("getpid")
	require.NoError(t, err)
	require.NotNil(t, p)
}

func TestClose(t *testing.T) {
	lib, err := Open(libc)
	require.NoError(t, err)
	require.NoError(t, lib.Close())
	require.NoError(t, lib.Close(), "second Close")
	require.Empty(t, lib.Resolved())

	_, err = lib.Sym("getpid")
	require.ErrorIs(t, err, ErrClosed)
}

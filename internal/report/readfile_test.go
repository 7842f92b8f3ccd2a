package report

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReadInputFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.json")
	require.NoError(t, os.WriteFile(small, []byte(`{"a":1}`), 0o644))
	big := filepath.Join(dir, "big.json")
	require.NoError(t, os.WriteFile(big, make([]byte, 2048), 0o644))
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	link := filepath.Join(dir, "link.json")
	require.NoError(t, os.Symlink(small, link))

	for _, tc := range []struct {
		name, path string
		want       error
	}{
		{"regular", small, nil},
		{"symlink to regular", link, nil},
		{"too large", big, ErrTooLarge},
		{"dev zero", "/dev/zero", ErrNotRegular},
		{"fifo without writer", fifo, ErrNotRegular},
		{"directory", dir, ErrNotRegular},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ReadInputFile(tc.path, 1024)
			if tc.want == nil {
				require.NoError(t, err)
				require.Equal(t, `{"a":1}`, string(b))
				return
			}
			require.ErrorIs(t, err, tc.want)
		})
	}
}

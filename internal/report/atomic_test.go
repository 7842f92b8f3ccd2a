package report

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriteFileAtomic(t *testing.T) {
	errWrite := errors.New("gather failed")
	tests := []struct {
		name     string
		old      *string // content before, nil: no file
		write    func(io.Writer) error
		wantErr  error
		wantFile *string // content after, nil: no file
	}{
		{
			name:     "new file",
			write:    func(w io.Writer) error { _, err := io.WriteString(w, "new\n"); return err },
			wantFile: ptr("new\n"),
		},
		{
			name:     "replaces",
			old:      ptr("old\n"),
			write:    func(w io.Writer) error { _, err := io.WriteString(w, "new\n"); return err },
			wantFile: ptr("new\n"),
		},
		{
			name: "failed write keeps the old content",
			old:  ptr("old\n"),
			write: func(w io.Writer) error {
				if _, err := io.WriteString(w, "half a rep"); err != nil {
					return err
				}
				return errWrite
			},
			wantErr:  errWrite,
			wantFile: ptr("old\n"),
		},
		{
			name:    "failed write creates nothing",
			write:   func(io.Writer) error { return errWrite },
			wantErr: errWrite,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "report.json")
			if tt.old != nil {
				require.NoError(t, os.WriteFile(path, []byte(*tt.old), 0o640))
			}

			err := WriteFileAtomic(path, tt.write)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				require.ErrorContains(t, err, path)
			} else {
				require.NoError(t, err)
			}

			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if tt.wantFile == nil {
				require.Empty(t, names, "no temporary files left")
				return
			}
			require.Equal(t, []string{"report.json"}, names, "no temporary files left")
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, *tt.wantFile, string(got))
		})
	}
}

func TestWriteFileAtomicMode(t *testing.T) {
	dir := t.TempDir()
	fresh := filepath.Join(dir, "fresh.xml")
	kept := filepath.Join(dir, "kept.xml")
	require.NoError(t, os.WriteFile(kept, []byte("old"), 0o600))
	require.NoError(t, os.Chmod(kept, 0o600)) // whatever the umask did

	for _, path := range []string{fresh, kept} {
		require.NoError(t, WriteFileAtomic(path, func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err }))
	}
	info, err := os.Stat(fresh)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), info.Mode().Perm(), "readable by the CI user, unlike CreateTemp's 0600")
	info, err = os.Stat(kept)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "a replaced file keeps its mode")
}

func TestWriteFileAtomicMissingDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "such", "dir", "report.json")
	called := false
	err := WriteFileAtomic(path, func(io.Writer) error { called = true; return nil })
	require.ErrorIs(t, err, os.ErrNotExist)
	require.False(t, called, "nothing to write into")
}

func TestWriteFileAtomicWithAWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "table.txt")
	require.NoError(t, WriteFileAtomic(path, func(w io.Writer) error { return WriteTable(w, fixtureReport()) }))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	want, err := os.ReadFile(filepath.Join("testdata", "table.golden"))
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
}

func ptr(s string) *string { return &s }

package report

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

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

func writeString(s string) func(io.Writer) error {
	return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
}

func TestWriteFileAtomicFollowsASymlink(t *testing.T) {
	tests := []struct {
		name   string
		target string // relative to the directory of the link
		old    *string
	}{
		{name: "to an existing file", target: "real.json", old: ptr("old\n")},
		{name: "to a file not yet there", target: "real.json"},
		{name: "to a file in another directory", target: filepath.Join("sub", "real.json"), old: ptr("old\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
			target := filepath.Join(dir, tt.target)
			if tt.old != nil {
				require.NoError(t, os.WriteFile(target, []byte(*tt.old), 0o600))
			}
			link := filepath.Join(dir, "report.json")
			require.NoError(t, os.Symlink(tt.target, link))

			require.NoError(t, WriteFileAtomic(link, writeString("new\n")))

			info, err := os.Lstat(link)
			require.NoError(t, err)
			require.Equal(t, os.ModeSymlink, info.Mode().Type(), "the link stays a link")
			got, err := os.ReadFile(target)
			require.NoError(t, err)
			require.Equal(t, "new\n", string(got), "the link's target is written")
			if tt.old != nil {
				info, err = os.Stat(target)
				require.NoError(t, err)
				require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the target keeps its mode")
			}
		})
	}
}

func TestWriteFileAtomicWritesAFIFOInPlace(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "report.fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	read := make(chan string, 1)
	go func() {
		b, err := os.ReadFile(fifo)
		if err != nil {
			read <- "error: " + err.Error()
			return
		}
		read <- string(b)
	}()

	require.NoError(t, WriteFileAtomic(fifo, writeString("streamed\n")))
	select {
	case got := <-read:
		require.Equal(t, "streamed\n", got)
	case <-time.After(10 * time.Second):
		t.Fatal("nothing read from the FIFO")
	}
	info, err := os.Lstat(fifo)
	require.NoError(t, err)
	require.Equal(t, os.ModeNamedPipe, info.Mode().Type(), "the FIFO is still a FIFO")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file next to it")
}

// A character device made with mknod (the null device's numbers, 1:3) in a
// temporary directory stands in for /dev/null and /dev/full, so a broken
// writer replaces only a node of the test's own.
func TestWriteFileAtomicWritesACharacterDeviceInPlace(t *testing.T) {
	dev := filepath.Join(t.TempDir(), "null")
	if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		t.Skipf("mknod needs CAP_MKNOD: %v", err)
	}
	require.NoError(t, WriteFileAtomic(dev, writeString("discarded\n")))
	info, err := os.Lstat(dev)
	require.NoError(t, err)
	require.Equal(t, os.ModeDevice|os.ModeCharDevice, info.Mode().Type(), "the device is still a character device")
	entries, err := os.ReadDir(filepath.Dir(dev))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file next to it")
}

func TestWriteFileAtomicRefusesADirectory(t *testing.T) {
	dir := t.TempDir()
	called := false
	err := WriteFileAtomic(dir, func(io.Writer) error { called = true; return nil })
	require.ErrorContains(t, err, "is a directory")
	require.False(t, called)
	info, err := os.Stat(dir)
	require.NoError(t, err)
	require.True(t, info.IsDir())
}

package report

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// WriteFileAtomic replaces path with what write produces, or leaves it as it
// was: write goes to a temporary file in the same directory (so the rename
// cannot cross file systems), which is flushed, fsynced and renamed over
// path, and the directory is fsynced so the rename survives a crash. A CI job
// killed mid-write, or a write that fails, never leaves a half-written report
// for the next step to parse. The new file keeps the mode of the file it
// replaces, or gets 0644.
//
// A symlink is followed: its target is written (atomically, next to the
// target) and the link stays. A character device, a FIFO or another node
// that is not a regular file (/dev/null, /dev/stdout's pipe) is written in
// place: renaming a temporary file over it would replace the node itself.
// A directory is refused.
func WriteFileAtomic(path string, write func(io.Writer) error) (err error) {
	target, info, err := resolveTarget(path)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if info != nil && info.IsDir() {
		return fmt.Errorf("write %s: is a directory", path)
	}
	if info != nil && !info.Mode().IsRegular() {
		return writeInPlace(path, target, write)
	}
	dir, base := filepath.Split(target)
	if dir == "" {
		dir = "."
	}
	mode := fs.FileMode(0o644)
	if info != nil {
		mode = info.Mode().Perm()
	}

	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmpName := tmp.Name()
	defer func() {
		if err != nil {
			tmp.Close() // may already be closed; the error that matters is err
			os.Remove(tmpName)
		}
	}()

	buf := bufio.NewWriter(tmp)
	if err := write(buf); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := buf.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: sync: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmpName, target); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := syncDir(dir); err != nil {
		// The file is in place and complete; only its durability across a
		// power loss is in doubt.
		return fmt.Errorf("write %s: sync directory: %w", path, err)
	}
	return nil
}

// maxSymlinks bounds a chain of links, as the kernel's ELOOP does.
const maxSymlinks = 40

// resolveTarget follows path's symlinks to the name that is to be written.
// info describes what is there, nil when nothing is (a new file, or a link
// whose target does not exist yet).
func resolveTarget(path string) (string, fs.FileInfo, error) {
	target := path
	for range maxSymlinks {
		info, err := os.Lstat(target)
		if errors.Is(err, fs.ErrNotExist) {
			return target, nil, nil
		}
		if err != nil {
			return "", nil, err
		}
		if info.Mode().Type() != fs.ModeSymlink {
			return target, info, nil
		}
		link, err := os.Readlink(target)
		if err != nil {
			return "", nil, err
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(target), link)
		}
		target = link
	}
	return "", nil, fmt.Errorf("more than %d symlinks: %w", maxSymlinks, syscall.ELOOP)
}

// writeInPlace writes a node that is not a regular file (a device, a FIFO)
// through an ordinary open: there is nothing to replace atomically, and the
// node must stay what it is. O_TRUNC is not asked for: devices and FIFOs
// have no length to cut.
func writeInPlace(path, target string, write func(io.Writer) error) error {
	f := takeHeld(target)
	if f == nil {
		var err error
		if f, err = os.OpenFile(target, os.O_WRONLY, 0); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	buf := bufio.NewWriter(f)
	err := write(buf)
	if err == nil {
		err = buf.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// CheckWritable says, before a run, whether WriteFileAtomic could write path
// once the run ends: a directory is refused (ErrIsDirectory), and for a
// regular file, new or not, a temporary file must be creatable beside its
// target (the parent exists, is a directory and takes new files) and the
// target must be replaceable (ErrNotReplaceable: chattr +i or +a on it or
// its directory). A device or a FIFO must be writable by this process; it
// is not opened, since opening a FIFO for writing waits for a reader
// (HoldFIFO does that, with a bounded wait).
func CheckWritable(path string) error {
	target, info, err := resolveTarget(path)
	if err != nil {
		return err
	}
	if info != nil && info.IsDir() {
		return fmt.Errorf("%s: %w", path, ErrIsDirectory)
	}
	if info != nil && !info.Mode().IsRegular() {
		if err := syscall.Access(target, 2 /* W_OK */); err != nil {
			return fmt.Errorf("%s: not writable: %w", path, err)
		}
		return nil
	}
	dir := filepath.Dir(target)
	// Before the trial file: in an append-only directory it could be
	// created but never removed.
	if err := checkReplaceable(target, dir); err != nil {
		return err
	}
	return checkCreate(path, dir, target)
}

// checkCreate creates and removes a trial file in dir, as the atomic write
// will create its temporary file there.
func checkCreate(path, dir, target string) error {
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(target)+".check-*")
	if err != nil {
		return fmt.Errorf("%s: cannot create a file in %s: %w", path, dir, err)
	}
	name := tmp.Name()
	tmp.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("%s: cannot remove the trial file %s from %s: %w", path, name, dir, err)
	}
	return nil
}

// CheckDir says, before a run, whether files can be written into dir as
// repro bundles are: it exists, is a directory, and takes a new file that
// can be removed again.
func CheckDir(dir string) error {
	info, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return fmt.Errorf("%s: %w", dir, ErrNotDirectory)
	}
	if fl, ok := inodeFlags(dir); ok && fl&(fsImmutableFl|fsAppendFl) != 0 {
		return fmt.Errorf("%s: %w: the directory is immutable or append-only (lsattr -d shows i or a)", dir, ErrNotReplaceable)
	}
	return checkCreate(dir, dir, "artest-repro")
}

// ErrNotDirectory: a path that must be a directory is something else.
var ErrNotDirectory = errors.New("not a directory")

// ErrIsDirectory: a report path names a directory.
var ErrIsDirectory = errors.New("is a directory, not a file")

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	// Some file systems cannot fsync a directory; the rename stands anyway.
	if errors.Is(err, errors.ErrUnsupported) || errors.Is(err, syscall.EINVAL) {
		return nil
	}
	return err
}

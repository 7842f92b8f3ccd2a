package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// Identity names the file a path writes to, after its symlinks: two
// report paths with one Identity would write one file. An existing file is
// named by device and inode (so hard links and relative paths match), a new
// one by the absolute path of its target with the directory's links
// resolved.
func Identity(path string) (string, error) {
	target, info, err := resolveTarget(path)
	if err != nil {
		return "", err
	}
	if info != nil {
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			return fmt.Sprintf("inode %d:%d", st.Dev, st.Ino), nil
		}
	}
	dir, base := filepath.Split(target)
	if dir == "" {
		dir = "."
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	abs, err := filepath.Abs(filepath.Join(dir, base))
	if err != nil {
		return "", err
	}
	return "path " + abs, nil
}

// IsSpecial reports whether path names (through its links) an existing
// node that is not a regular file or a directory: a device such as
// /dev/null, or a FIFO. Such a node is written in place.
func IsSpecial(path string) bool {
	_, info, err := resolveTarget(path)
	return err == nil && info != nil && !info.IsDir() && !info.Mode().IsRegular()
}

// IsFIFO reports whether path names (through its links) a FIFO.
func IsFIFO(path string) bool {
	_, info, err := resolveTarget(path)
	return err == nil && info != nil && info.Mode()&fs.ModeNamedPipe != 0
}

// Linux inode flags (FS_IOC_GETFLAGS, linux/fs.h): an immutable file
// cannot be replaced, renamed over or written; in an append-only directory
// files can be created but not removed or renamed.
const (
	fsIocGetflags = 0x80086601
	fsImmutableFl = 0x00000010
	fsAppendFl    = 0x00000020
)

// inodeFlags reads path's inode flags; ok is false where they cannot be
// read (a file system without them, no permission to open).
func inodeFlags(path string) (flags uint32, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	var v uint32
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), fsIocGetflags, uintptr(unsafe.Pointer(&v)))
	if errno != 0 {
		return 0, false
	}
	return v, true
}

// ErrNotReplaceable: the report's file or its directory has an inode flag
// (chattr +i or +a) that stops the atomic replacement at its last step.
var ErrNotReplaceable = errors.New("cannot be replaced")

// checkReplaceable refuses a target that is immutable or append-only, or
// that lies in an immutable or append-only directory: the temporary file
// could be written, but the rename over the target would fail after the
// whole run.
func checkReplaceable(target, dir string) error {
	if fl, ok := inodeFlags(target); ok && fl&(fsImmutableFl|fsAppendFl) != 0 {
		return fmt.Errorf("%s: %w: it is immutable or append-only (lsattr shows i or a)", target, ErrNotReplaceable)
	}
	if fl, ok := inodeFlags(dir); ok && fl&(fsImmutableFl|fsAppendFl) != 0 {
		return fmt.Errorf("%s: %w: its directory %s is immutable or append-only (lsattr -d shows i or a)", target, ErrNotReplaceable, dir)
	}
	return nil
}

// heldFIFOs are FIFOs opened for writing before the run (HoldFIFO), by
// their target's path, until a writer takes them.
var (
	heldMu    sync.Mutex
	heldFIFOs = map[string]*os.File{}
)

// ErrNoReader: a FIFO report target had no reader within the wait.
var ErrNoReader = errors.New("a FIFO with no reader")

// HoldFIFO opens the FIFO at path for writing, waiting at most wait for a
// reader (opening a FIFO for writing otherwise blocks until one comes), and
// keeps it open for the report writer that later writes path: closing it in
// between would give the reader an end of file. A FIFO with no reader
// within wait is ErrNoReader.
func HoldFIFO(path string, wait time.Duration) error {
	target, _, err := resolveTarget(path)
	if err != nil {
		return err
	}
	heldMu.Lock()
	defer heldMu.Unlock()
	if heldFIFOs[target] != nil {
		return nil
	}
	deadline := time.Now().Add(wait)
	for {
		f, err := os.OpenFile(target, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			heldFIFOs[target] = f
			return nil
		}
		if !errors.Is(err, syscall.ENXIO) {
			return fmt.Errorf("%s: %w", path, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %w (waited %s for one to open it)", path, ErrNoReader, wait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// takeHeld returns the held FIFO of target, if any, and forgets it.
func takeHeld(target string) *os.File {
	heldMu.Lock()
	defer heldMu.Unlock()
	f := heldFIFOs[target]
	delete(heldFIFOs, target)
	return f
}

// ReleaseFIFOs closes every FIFO HoldFIFO opened that no writer took (a
// run that stopped before writing its reports).
func ReleaseFIFOs() {
	heldMu.Lock()
	defer heldMu.Unlock()
	for k, f := range heldFIFOs {
		f.Close()
		delete(heldFIFOs, k)
	}
}

// openAppend opens a JSON Lines stream for appending, creating it if
// needed; a FIFO held by HoldFIFO is taken as it is.
func openAppend(path string) (*os.File, error) {
	if target, _, err := resolveTarget(path); err == nil {
		if f := takeHeld(target); f != nil {
			return f, nil
		}
	}
	return os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

// maxHeaderLine bounds what CheckJSONL reads of a stream's first line.
const maxHeaderLine = 4 << 20

// ErrNotJSONL: a --jsonl target holds something other than artest's JSON
// Lines, and appending to it would spoil it.
var ErrNotJSONL = errors.New("holds something other than an artest JSON Lines stream")

// CheckJSONL says, before a run, whether path can take this run's JSON
// Lines: a new file in a directory that takes one, an empty file, or a
// file whose first line is an artest stream's header line, that is not
// immutable; a FIFO or a device is left to HoldFIFO and the write.
func CheckJSONL(path string) error {
	target, info, err := resolveTarget(path)
	if err != nil {
		return err
	}
	switch {
	case info == nil:
		dir := filepath.Dir(target)
		if fl, ok := inodeFlags(dir); ok && fl&fsImmutableFl != 0 {
			return fmt.Errorf("%s: %w: its directory %s is immutable", path, ErrNotReplaceable, dir)
		}
		// Append-only directories take new files, as the stream needs,
		// but keep the trial file: try only where one can be removed.
		if fl, ok := inodeFlags(dir); ok && fl&fsAppendFl != 0 {
			return nil
		}
		return checkCreate(path, dir, target)
	case info.IsDir():
		return fmt.Errorf("%s: %w", path, ErrIsDirectory)
	case !info.Mode().IsRegular():
		if err := syscall.Access(target, 2 /* W_OK */); err != nil {
			return fmt.Errorf("%s: not writable: %w", path, err)
		}
		return nil
	}
	if fl, ok := inodeFlags(target); ok && fl&fsImmutableFl != 0 {
		return fmt.Errorf("%s: %w: it is immutable (lsattr shows i)", path, ErrNotReplaceable)
	}
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("%s: not writable: %w", path, err)
	}
	f.Close()
	if info.Size() == 0 {
		return nil
	}
	r, err := os.Open(target)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer r.Close()
	first, err := bufio.NewReader(io.LimitReader(r, maxHeaderLine)).ReadBytes('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: %w", path, err)
	}
	if !isHeaderLine(first) {
		return fmt.Errorf("%s: %w (its first line is no header line; give a new file, or the file of an earlier --jsonl run)", path, ErrNotJSONL)
	}
	return nil
}

// isHeaderLine reports whether line is a JSON Lines stream's first line:
// an object with a "header" member holding an artest header.
func isHeaderLine(line []byte) bool {
	var l struct {
		Header *struct {
			Tool string `json:"tool"`
		} `json:"header"`
	}
	if json.Unmarshal(bytes.TrimSpace(line), &l) != nil || l.Header == nil {
		return false
	}
	return l.Header.Tool == "artest"
}

package report

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Size limits of the files artest reads as inputs. A report of the largest
// matrix with every case failing is a few MiB; a bundle keeps 8 mismatches
// per rank and is a few KiB. Anything far larger is not what it claims to
// be, and reading it whole would only exhaust memory.
const (
	MaxReportBytes = 512 << 20
	MaxBundleBytes = 16 << 20
)

// ErrNotRegular: an input path names a device, a FIFO, a socket or a
// directory, not a file that can be read to its end.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge: an input file is larger than its kind can be.
var ErrTooLarge = errors.New("larger than such a file can be")

// ReadInputFile reads a file artest takes as input (a report, a bundle): it
// must be a regular file (symlinks are followed) of at most limit bytes.
// /dev/zero, a FIFO or a directory is refused at once, without reading, and
// a file that grows past limit while it is read is refused too.
func ReadInputFile(path string, limit int64) ([]byte, error) {
	// Stat before opening: opening a FIFO for reading waits for a writer.
	if info, err := os.Stat(path); err != nil {
		return nil, err
	} else if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, describeMode(info))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, describeMode(info))
	}
	if info.Size() > limit {
		return nil, fmt.Errorf("%s: %d bytes, %w (at most %d)", path, info.Size(), ErrTooLarge, limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: grew while read, %w (at most %d)", path, ErrTooLarge, limit)
	}
	return b, nil
}

func describeMode(info os.FileInfo) string {
	m := info.Mode()
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	}
	return m.Type().String()
}

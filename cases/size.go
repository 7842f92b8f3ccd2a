package cases

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// MaxBytes bounds any message size: far above what a GPU holds, low enough
// that byte arithmetic never overflows.
const MaxBytes = int64(1) << 40

// FormatSize writes a byte count the way case IDs spell it: the largest
// binary unit that divides it exactly ("4B", "4100B", "64KiB", "256MiB").
func FormatSize(b int64) string {
	switch {
	case b >= 1<<30 && b%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", b>>30)
	case b >= 1<<20 && b%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", b>>20)
	case b >= 1<<10 && b%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", b>>10)
	}
	return fmt.Sprintf("%dB", b)
}

// ParseSize reads one size: a number with an optional binary unit, as
// FormatSize writes it or as nccl-tests takes it: "4", "4B", "1K", "1KB",
// "1KiB", "256M", "1G". Units are powers of 1024.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	upper := strings.ToUpper(t)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{
		{"GIB", 1 << 30}, {"MIB", 1 << 20}, {"KIB", 1 << 10},
		{"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10},
		{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1},
	} {
		if strings.HasSuffix(upper, u.suffix) {
			mult = u.mult
			t = t[:len(t)-len(u.suffix)]
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || t == "" || strings.HasPrefix(t, "+") {
		return 0, fmt.Errorf("bad size %q: want a number of bytes with an optional unit (4, 12B, 1K, 64KiB, 256M, 1G)", s)
	}
	if n <= 0 {
		return 0, fmt.Errorf("bad size %q: must be at least 1 byte", s)
	}
	if n > MaxBytes/mult {
		return 0, fmt.Errorf("bad size %q: larger than %s", s, FormatSize(MaxBytes))
	}
	return n * mult, nil
}

// ParseSizes reads a comma-separated list of sizes and ranges. A range is
// "MIN:MAX:xF" (multiply by F each step, like nccl-tests' -f) or
// "MIN:MAX:+S" (add S bytes each step); "MIN:MAX" means x2. The result is
// sorted and without duplicates.
func ParseSizes(spec string) ([]int64, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, fmt.Errorf("empty size list")
	}
	seen := map[int64]bool{}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		parts := strings.Split(item, ":")
		switch len(parts) {
		case 1:
			b, err := ParseSize(parts[0])
			if err != nil {
				return nil, err
			}
			seen[b] = true
		case 2, 3:
			lo, err := ParseSize(parts[0])
			if err != nil {
				return nil, err
			}
			hi, err := ParseSize(parts[1])
			if err != nil {
				return nil, err
			}
			if hi < lo {
				return nil, fmt.Errorf("bad size range %q: %s is below %s", item, parts[1], parts[0])
			}
			step := "x2"
			if len(parts) == 3 {
				step = parts[2]
			}
			sizes, err := expandRange(item, lo, hi, step)
			if err != nil {
				return nil, err
			}
			for _, b := range sizes {
				seen[b] = true
			}
		default:
			return nil, fmt.Errorf("bad size range %q: want MIN:MAX:xF or MIN:MAX:+STEP", item)
		}
	}
	out := make([]int64, 0, len(seen))
	for b := range seen {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// maxRangeSizes keeps a typo like 1:1G:+1 from producing a billion cases.
const maxRangeSizes = 4096

func expandRange(item string, lo, hi int64, step string) ([]int64, error) {
	if len(step) < 2 {
		return nil, fmt.Errorf("bad size range %q: step %q wants xF or +S", item, step)
	}
	var out []int64
	switch step[0] {
	case 'x', 'X', '*':
		f, err := strconv.ParseFloat(step[1:], 64)
		if err != nil || f <= 1 || math.IsInf(f, 0) {
			return nil, fmt.Errorf("bad size range %q: factor %q must be a number above 1", item, step[1:])
		}
		for b := float64(lo); b <= float64(hi); b *= f {
			out = append(out, int64(b))
			if len(out) > maxRangeSizes {
				return nil, fmt.Errorf("bad size range %q: more than %d sizes", item, maxRangeSizes)
			}
		}
	case '+':
		s, err := ParseSize(step[1:])
		if err != nil {
			return nil, fmt.Errorf("bad size range %q: %w", item, err)
		}
		if (hi-lo)/s >= maxRangeSizes {
			return nil, fmt.Errorf("bad size range %q: more than %d sizes", item, maxRangeSizes)
		}
		for b := lo; b <= hi; b += s {
			out = append(out, b)
		}
	default:
		return nil, fmt.Errorf("bad size range %q: step %q wants xF or +S", item, step)
	}
	return out, nil
}

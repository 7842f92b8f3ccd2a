package cli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/kernels/registry"
)

// Inputs that used to run something other than what was asked for,
// silently: each is a usage error now.
func TestSilentSurprisesAreUsageErrors(t *testing.T) {
	const id = "oneshot/f32/sum/4KiB/oop-reg-plain/np2"
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"--case with --variant", []string{"--case", id, "--variant", "twoshot"}, "--case selects exact cases: drop --variant"},
		{"--case with --dtype", []string{"--case", id, "--dtype", "f16"}, "drop --dtype"},
		{"--case with --quick", []string{"--case", id, "--quick"}, "drop --quick"},
		{"--param no selected variant has", []string{"--variant", "oneshot", "--param", "lanes=4"}, "--param lanes: oneshot has no such parameter (its parameters: none)"},
		{"--param not of the case's variant", []string{"--case", id, "--param", "gather=1"}, "--param gather: oneshot has no such parameter"},
		{"--param of one of two variants is fine, of none is not", []string{"--variant", "oneshot,twoshot", "--param", "lanes=2"}, "twoshot: gather"},
		{"empty --size", []string{"--size", ""}, "--size: empty"},
		{"empty --dtype", []string{"--dtype", ""}, "flag -dtype: empty list"},
		{"empty --variant", []string{"--variant", " , "}, "flag -variant: empty list"},
		{"empty --op", []string{"--op", ""}, "flag -op: empty list"},
		{"empty --mode", []string{"--mode", ""}, "flag -mode: empty list"},
		{"empty --case", []string{"--case", ""}, "flag -case: empty list"},
		{"empty -b", []string{"bench", "-b", ""}, "-b: empty"},
		{"empty --host-max-size", []string{"--host-max-size", ""}, "--host-max-size: empty"},
		{"absurd --stress", []string{"--stress", "9223372036854775807"}, "--stress 9223372036854775807: at most 10000000"},
		{"--list-variants with --variant", []string{"--list-variants", "--variant", "bogus"}, "--list-variants prints the variant names and runs nothing: --variant would do nothing"},
		{"--list-variants with --size", []string{"--list-variants", "--size", "abc"}, "--size would do nothing"},
		{"empty --plugin", []string{"--plugin", ""}, "--plugin: empty path"},
		{"--plugin with a line break", []string{"--plugin", "a\nb.so"}, "a path with a line break"},
		{"two --repro", []string{"--repro", "a.json", "--repro", "b.json"}, "--repro given 2 times (a.json, b.json)"},
		{"bench --repro", []string{"bench", "--repro", "a.json"}, "bench --repro: a bundle reruns as a test run"},
		{"tune --repro", []string{"tune", "--repro", "a.json"}, "tune --repro: a bundle reruns as a test run"},
		{"absurd --iters", []string{"--iters", "100000000"}, "--iters 100000000: at most 100000"},
		{"absurd --warmup", []string{"--warmup", "2147483648"}, "--warmup 2147483648: at most 100000"},
		{"absurd --reps", []string{"--reps", "9223372036854775807"}, "--reps 9223372036854775807: at most 10000"},
		{"--timeout below the minimum", []string{"--timeout", "1ns"}, "--timeout 1ns: at least 100ms"},
		{"--schedule without --stress", []string{"--schedule", "skew"}, "--schedule skew needs --stress N"},
		{"unknown --schedule", []string{"--stress", "5", "--schedule", "skew,lazy"}, `unknown --schedule "lazy" (valid: all, none, poison-after-return, skew, straggler, link, memory)`},
		{"empty --schedule", []string{"--stress", "5", "--schedule", ""}, "empty --schedule"},
		{"--schedule none with another", []string{"--stress", "5", "--schedule", "none,skew"}, "none combines with no other schedule"},
		{"--device-timeout below the minimum", []string{"--device-timeout", "1us"}, "--device-timeout 1us: 0 or at least 100ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.args)
			require.ErrorContains(t, err, tt.want)
			require.Equal(t, exitcode.Usage, exitcode.Of(err))
		})
	}
}

func TestSelectionThatIsFine(t *testing.T) {
	o, err := Parse([]string{"--variant", "oneshot,ring", "--param", "lanes=4"})
	require.NoError(t, err, "ring has lanes")
	require.Equal(t, uint32(4), o.params["lanes"])

	o, err = Parse([]string{"--case", "a/f32/sum/4B/oop-reg-plain/np2", "--case", "b/f32/sum/4B/oop-reg-plain/np2,a/f32/sum/4B/oop-reg-plain/np2"})
	require.NoError(t, err)
	require.Equal(t, []string{"a/f32/sum/4B/oop-reg-plain/np2", "b/f32/sum/4B/oop-reg-plain/np2"}, o.sel.IDs, "a case named twice runs once")

	_, err = Parse([]string{"--timeout", "100ms", "--device-timeout", "0", "--stress", "10000000"})
	require.NoError(t, err, "the limits themselves are allowed")
}

// --list shows what the run would run: on the host backend the default
// matrix stops at --host-max-size, and --list says the same.
func TestListOnHostDropsWhatTheRunDrops(t *testing.T) {
	limit, err := cases.ParseSize("2M")
	require.NoError(t, err)
	res := runWorld(t, 2, same("--backend", "host", "--list", "--variant", "oneshot", "--dtype", "f32", "--op", "sum"))
	require.Equal(t, []int{0, 0}, res.codes, res.stderr)
	ids := strings.Fields(res.stdout[0])
	require.NotEmpty(t, ids)
	for _, id := range ids {
		c, err := cases.ParseID(id, registry.Builtins())
		require.NoError(t, err)
		require.LessOrEqual(t, c.Bytes, limit, id)
	}

	res = runWorld(t, 2, same("--backend", "host", "--list", "--variant", "oneshot", "--dtype", "f32", "--op", "sum", "--size", "4M", "--mode", "oop,reg,plain,aligned"))
	require.Equal(t, []int{0, 0}, res.codes, res.stderr)
	require.Equal(t, "oneshot/f32/sum/4MiB/oop-reg-plain/np2\n", res.stdout[0], "an explicit --size is not capped")

	// Stress on the host leaves out the slow path unless --host-max-size
	// asks for it.
	stress := []string{"--backend", "host", "--list", "--variant", "oneshot", "--dtype", "f32", "--stress", "10"}
	res = runWorld(t, 2, same(stress...))
	require.Equal(t, []int{0, 0}, res.codes, res.stderr)
	require.NotContains(t, res.stdout[0], "1048588B")
	require.Contains(t, res.stdout[0], "64KiB")
	res = runWorld(t, 2, same(append(stress, "--host-max-size", "2M")...))
	require.Equal(t, []int{0, 0}, res.codes, res.stderr)
	require.Contains(t, res.stdout[0], "oneshot/f32/sum/1048588B/oop-reg-plain-off1/np2")
}

// --list prints the case IDs alone on stdout and, on stderr, once per
// selected variant known to be slower than another at every size, what was
// measured.
func TestListSaysWhichVariantsAreSlower(t *testing.T) {
	res := runWorld(t, 2, same("--backend", "host", "--list", "--variant", "oneshot,ring,oneshot-cpasync", "--dtype", "f32",
		"--op", "sum", "--size", "4K", "--mode", "oop,reg,plain,aligned"))
	require.Equal(t, []int{0, 0}, res.codes, res.stderr)
	require.Equal(t, "oneshot/f32/sum/4KiB/oop-reg-plain/np2\noneshot-cpasync/f32/sum/4KiB/oop-reg-plain/np2\nring/f32/sum/4KiB/oop-reg-plain/np2\n", res.stdout[0])
	var notes []string
	for _, l := range strings.Split(res.stderr[0], "\n") {
		if strings.HasPrefix(l, "# ") {
			notes = append(notes, l)
		}
	}
	require.Len(t, notes, 2, res.stderr[0])
	require.Contains(t, notes[0], "# oneshot-cpasync: slower than oneshot at every size measured")
	require.Contains(t, notes[1], "# ring: slower than oneshot and twoshot at every size measured")

	res = runWorld(t, 2, same("--backend", "host", "--list", "--variant", "twoshot-bulk", "--dtype", "f32", "--op", "sum", "--size", "4K",
		"--mode", "oop,reg,plain,aligned"))
	require.Equal(t, []int{0, 0}, res.codes, res.stderr)
	require.Contains(t, res.stderr[0], "# twoshot-bulk: slower than twoshot at every size measured")

	res = runWorld(t, 2, same("--backend", "host", "--list", "--variant", "oneshot", "--dtype", "f32", "--op", "sum", "--size", "4K"))
	require.NotContains(t, res.stderr[0], "slower than", "no note for a variant without one")
}

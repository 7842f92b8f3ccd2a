package cli

import (
	"flag"
	"github.com/artest/artest/internal/runner"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every flag is either carried into a rerun line when it is set, written
// with its effective value always, or left out as output-only or as part of
// the case selection (which --case ID replaces). A new flag fails this test
// until it is put in one of the three groups below.
func TestRerunArgsCarryEveryFlagSet(t *testing.T) {
	// carried: a command line setting the flag, and what the rerun line
	// must then hold.
	so := buildExamplePlugin(t)
	carried := map[string]struct{ args, want []string }{
		"plugin":              {[]string{"--plugin", so}, []string{"--plugin", so}},
		"inject":              {[]string{"--inject", "skip-last", "--inject", "delay:rank=1,us=5"}, []string{"--inject", "skip-last", "--inject", "delay:rank=1,us=5"}},
		"param":               {[]string{"--param", "lanes=4", "--param", "stages=4"}, []string{"--param", "lanes=4", "--param", "stages=4"}},
		"pdl":                 {[]string{"--pdl"}, []string{"--pdl"}},
		"blocks":              {[]string{"--blocks", "8"}, []string{"--blocks", "8"}},
		"threads":             {[]string{"--threads", "256"}, []string{"--threads", "256"}},
		"share-gpus":          {[]string{"--share-gpus"}, []string{"--share-gpus"}},
		"time-slicing":        {[]string{"--share-gpus", "--time-slicing"}, []string{"--share-gpus", "--time-slicing"}},
		"allow-shared-timing": {[]string{"--allow-shared-timing"}, []string{"--allow-shared-timing"}},
		"run-known-defects":   {[]string{"--run-known-defects"}, []string{"--run-known-defects"}},
		"shm-dir":             {[]string{"--shm-dir", "/tmp/x y"}, []string{"--shm-dir", "/tmp/x y"}},
		"fatbin":              {[]string{"--fatbin", "/opt/a.fatbin"}, []string{"--fatbin", "/opt/a.fatbin"}},
		"nccl":                {[]string{"--nccl", "/opt/libnccl.so.2"}, []string{"--nccl", "/opt/libnccl.so.2"}},
		"allow-multicast":     {[]string{"--allow-multicast"}, []string{"--allow-multicast"}},
		"agg":                 {[]string{"--agg", "avg"}, []string{"--agg", "avg"}},
		"tuned":               {[]string{"--tuned", "none"}, []string{"--tuned", "none"}},
		"bench":               {[]string{"--bench"}, []string{"--bench"}},
		"overlap":             {[]string{"--bench", "--overlap", "4"}, []string{"--overlap", "4"}},
		"pdl-chain":           {[]string{"--bench", "--pdl-chain"}, []string{"--pdl-chain"}},
		"sm-budget":           {[]string{"--bench", "--sm-budget", "8"}, []string{"--sm-budget", "8"}},
		"check":               {[]string{"--stress", "3", "--check", "host"}, []string{"--check", "host"}},
	}
	for name, tc := range carried {
		t.Run(name, func(t *testing.T) {
			o, err := Parse(tc.args)
			require.NoError(t, err)
			got := strings.Join(o.rerunArgs("oneshot/f32/sum/4KiB/oop-reg-plain/np2", "host"), "\x00")
			require.Contains(t, got, strings.Join(tc.want, "\x00"))
		})
	}

	// A timing mode's flags are the mode's: TestModeFlagsOnTheCommandLine
	// checks that a rerun line carries each.
	modeFlag := map[string]bool{}
	for _, f := range runner.ModeFlags() {
		modeFlag[f.Name] = true
	}
	fs := newFlagSet(&Options{})
	fs.VisitAll(func(f *flag.Flag) {
		if modeFlag[f.Name] {
			return
		}
		_, isCarried := carried[f.Name]
		_, isEffective := rerunEffective[f.Name]
		if !isCarried && !isEffective && !rerunLeftOut[f.Name] {
			t.Errorf("flag --%s: say whether a rerun line carries it (this test's carried), always writes its value (rerunEffective) or leaves it out (rerunLeftOut)", f.Name)
		}
	})
}

func TestRerunArgsReplaceTheSelectionAndFixTheEffectiveValues(t *testing.T) {
	o, err := Parse([]string{"--variant", "oneshot", "--dtype", "f32", "--size", "4K", "--json", "r.json", "--junit", "r.xml",
		"--progress", "--seed", "9", "--stress", "40", "--allow-multicast"})
	require.NoError(t, err)
	o.Warmup, o.Iters, o.Reps = 1, 3, 1 // what the host backend sets
	got := o.rerunArgs("oneshot/f32/sum/4KiB/oop-reg-plain/np2", "host")
	require.Equal(t, []string{"--backend", "host", "--case", "oneshot/f32/sum/4KiB/oop-reg-plain/np2",
		"--seed", "9", "--input", "random", "--warmup", "1", "--iters", "3", "--reps", "1",
		"--timeout", "60s", "--device-timeout", "10s", "--stress", "40", "--schedule", "poison-after-return,skew,straggler,link,memory", "--allow-multicast"}, got)

	// The schedules are written as the run used them, defaulted or not,
	// and not at all without --stress.
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--stress", "40", "--schedule", "none"}, []string{"--stress", "40", "--schedule", "none"}},
		{[]string{"--stress", "40", "--schedule", "skew,poison-after-return"}, []string{"--stress", "40", "--schedule", "poison-after-return,skew"}},
		{[]string{"--stress", "40", "--schedule", "all"}, []string{"--stress", "40", "--schedule", "poison-after-return,skew,straggler,link,memory"}},
		{[]string{"--quick"}, nil},
	} {
		o, err := Parse(tc.args)
		require.NoError(t, err)
		got := strings.Join(o.rerunArgs("oneshot/f32/sum/4KiB/oop-reg-plain/np2", "host"), " ")
		if tc.want == nil {
			require.NotContains(t, got, "--schedule", tc.args)
			continue
		}
		require.Contains(t, got, strings.Join(tc.want, " "), tc.args)
	}
}

// A special case's rerun line says --input special, the inputs it ran
// with, whatever --input the run had; the other cases keep the run's.
func TestRerunArgsNameASpecialCasesInput(t *testing.T) {
	for _, input := range []string{"random", "exact"} {
		o, err := Parse([]string{"--input", input})
		require.NoError(t, err)
		got := strings.Join(o.rerunArgs("oneshot/f32/sum/4100B/oop-reg-plain/special/np2", "host"), " ")
		require.Contains(t, got, "--case oneshot/f32/sum/4100B/oop-reg-plain/special/np2 --seed 1 --input special ")
		got = strings.Join(o.rerunArgs("oneshot/f32/sum/4100B/oop-reg-plain/np2", "host"), " ")
		require.Contains(t, got, "--input "+input+" ")
	}
}

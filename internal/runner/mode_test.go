package runner

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/report"
)

func TestModesFor(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   Config
		modes []string
		calls string // the mode that makes the calls
	}{
		{"a test run", Config{}, []string{"plain"}, "plain"},
		{"a bench run", Config{Bench: true}, []string{"plain"}, "plain"},
		{"--pdl outside bench: its calls, no second timing", Config{PDL: true}, []string{"plain", "pdl"}, "pdl"},
		{"bench --pdl", Config{Bench: true, PDL: true}, []string{"plain", "pdl"}, "pdl"},
		{"--pdl-chain outside bench", Config{PDLChain: true}, []string{"plain"}, "plain"},
		{"bench --pdl-chain", Config{Bench: true, PDLChain: true}, []string{"plain", "pdl-chain"}, "plain"},
		{"--overlap outside bench", Config{Overlap: 4}, []string{"plain"}, "plain"},
		{"bench --overlap", Config{Bench: true, Overlap: 4}, []string{"plain", "overlap"}, "plain"},
		{"bench --pdl --overlap: in timing order", Config{Bench: true, PDL: true, Overlap: 4}, []string{"plain", "pdl", "overlap"}, "pdl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			modes := modesFor(&tc.cfg)
			var names []string
			for _, m := range modes {
				names = append(names, m.name())
			}
			require.Equal(t, tc.modes, names)
			require.Equal(t, tc.calls, callShaperOf(modes).(timingMode).name())
		})
	}
}

func TestChainMerge(t *testing.T) {
	chained := func(note string, xs ...float64) rankResult {
		var res rankResult
		res.addSeries(chainName, chainSeries, xs...)
		if note != "" {
			res.noteMode(chainName, note)
		}
		return res
	}
	cfg := Config{Bench: true, PDLChain: true}
	for _, tc := range []struct {
		name string
		time float64
		rs   []rankResult
		want report.Case
	}{
		{"chained: max over ranks, median over repetitions", 10, []rankResult{chained("", 8, 9, 7), chained("", 9, 6, 8)},
			report.Case{TimeUS: 10, ChainTimeUS: 9, ChainGainUS: 1}}, // maxima 9, 9, 8
		{"not chained: rank 0's note", 10, []rankResult{chained("staged"), chained("staged")},
			report.Case{TimeUS: 10, ChainNote: "staged"}},
		{"an untimed case", 0, []rankResult{chained("", 8), chained("", 9)}, report.Case{}},
		{"a rank without chained times", 10, []rankResult{chained("", 8), {}}, report.Case{TimeUS: 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := report.Case{TimeUS: tc.time}
			newChainMode(&cfg).merge(&out, tc.rs, &cfg)
			require.Equal(t, tc.want, out)
		})
	}
}

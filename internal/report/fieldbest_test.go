package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fieldCase is a case of 2 ranks at 4 KiB, bf16 sum, out of place on a
// registered input with plain launches unless changed; us 0 means not
// timed.
func fieldCase(variant string, us float64, v Verdict) Case {
	return Case{ID: variant + "/x", Variant: variant, DType: "bf16", Op: "sum", Mode: "oop-reg-plain", Bytes: 4096, Ranks: 2, Verdict: v, TimeUS: us}
}

// pluginHeader loads two plugins: ex (ex:a) and tr (tr:one, tr:two).
func pluginHeader() Header {
	return Header{Tool: "artest", Ranks: 2, Plugins: []Plugin{
		{Name: "ex", Variants: []string{"ex:a"}},
		{Name: "tr", Variants: []string{"tr:one", "tr:two"}},
	}}
}

func TestKindOf(t *testing.T) {
	h := pluginHeader()
	for _, tc := range []struct {
		variant string
		want    Kind
	}{
		{"oneshot", Own},
		{"nccl", NCCLMode},
		{"nccl-reg", NCCLMode},
		{"nccl-win", NCCLMode},
		{"ex:a", PluginVariant},
		{"tr:two", PluginVariant},
		// A plugin's variants are those the header lists: a name of the
		// same form from no loaded plugin is not one.
		{"zz:a", Own},
	} {
		require.Equal(t, tc.want, KindOf(&h, tc.variant), tc.variant)
	}
}

func TestFieldBests(t *testing.T) {
	key := FieldKey{"bf16", "sum", "oop-reg", "plain", 4096}
	at := func(c Case, mut func(*Case)) Case { mut(&c); return c }
	for _, tc := range []struct {
		name  string
		cases []Case
		want  map[FieldKey]FieldEntry
	}{
		{"no field entry ran", []Case{fieldCase("oneshot", 3, Pass)}, map[FieldKey]FieldEntry{}},
		{"nccl alone", []Case{fieldCase("oneshot", 3, Pass), fieldCase("nccl", 9, Pass)},
			map[FieldKey]FieldEntry{key: {"nccl", 9}}},
		{"the fastest NCCL mode", []Case{fieldCase("nccl", 9, Pass), fieldCase("nccl-reg", 7, Pass), fieldCase("nccl-win", 8, Pass)},
			map[FieldKey]FieldEntry{key: {"nccl-reg", 7}}},
		{"a plugin faster than NCCL", []Case{fieldCase("nccl", 9, Pass), fieldCase("tr:two", 4, Pass), fieldCase("ex:a", 5, Pass)},
			map[FieldKey]FieldEntry{key: {"tr:two", 4}}},
		{"NCCL faster than the plugins", []Case{fieldCase("ex:a", 5, Pass), fieldCase("nccl-win", 2, Pass)},
			map[FieldKey]FieldEntry{key: {"nccl-win", 2}}},
		{"failed and skipped entries are out", []Case{
			fieldCase("nccl", 9, Pass), fieldCase("nccl-reg", 1, Fail), fieldCase("ex:a", 0, Skipped),
			fieldCase("tr:one", 2, Hung)}, map[FieldKey]FieldEntry{key: {"nccl", 9}}},
		{"a passing entry without a time is out", []Case{fieldCase("nccl", 0, Pass)}, map[FieldKey]FieldEntry{}},
		{"no field entry passed", []Case{fieldCase("oneshot", 3, Pass), fieldCase("nccl", 9, Fail), fieldCase("ex:a", 0, Skipped)},
			map[FieldKey]FieldEntry{}},
		{"own variants are never the fieldbest", []Case{fieldCase("oneshot", 1, Pass), fieldCase("zz:a", 1, Pass), fieldCase("nccl", 9, Pass)},
			map[FieldKey]FieldEntry{key: {"nccl", 9}}},
		{"a tie goes to the earlier NCCL mode", []Case{fieldCase("nccl-win", 5, Pass), fieldCase("nccl-reg", 5, Pass)},
			map[FieldKey]FieldEntry{key: {"nccl-reg", 5}}},
		{"a tie goes to NCCL before a plugin", []Case{fieldCase("tr:one", 5, Pass), fieldCase("nccl-win", 5, Pass)},
			map[FieldKey]FieldEntry{key: {"nccl-win", 5}}},
		{"a tie between plugins goes to the header's order", []Case{fieldCase("tr:one", 5, Pass), fieldCase("ex:a", 5, Pass)},
			map[FieldKey]FieldEntry{key: {"ex:a", 5}}},
		{"each dtype, op, mode, launch kind and size on its own", []Case{
			fieldCase("nccl", 9, Pass),
			at(fieldCase("ex:a", 1, Pass), func(c *Case) { c.DType = "f32" }),
			at(fieldCase("ex:a", 2, Pass), func(c *Case) { c.Op = "max" }),
			at(fieldCase("ex:a", 3, Pass), func(c *Case) { c.Mode = "oop-reg-graph" }),
			at(fieldCase("ex:a", 4, Pass), func(c *Case) { c.Mode = "ip-stg-plain" }),
			at(fieldCase("ex:a", 5, Pass), func(c *Case) { c.Bytes = 8192 }),
		}, map[FieldKey]FieldEntry{
			key:                                      {"nccl", 9},
			{"f32", "sum", "oop-reg", "plain", 4096}: {"ex:a", 1},
			{"bf16", "max", "oop-reg", "plain", 4096}: {"ex:a", 2},
			{"bf16", "sum", "oop-reg", "graph", 4096}: {"ex:a", 3},
			{"bf16", "sum", "ip-stg", "plain", 4096}:  {"ex:a", 4},
			{"bf16", "sum", "oop-reg", "plain", 8192}: {"ex:a", 5},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Report{Header: pluginHeader(), Cases: tc.cases}
			require.Equal(t, tc.want, FieldBests(r))
		})
	}
}

func TestAttachFieldBest(t *testing.T) {
	stale := fieldCase("nccl-reg", 6, Pass)
	stale.FieldBestVariant, stale.FieldBestTimeUS, stale.FieldBestGain = "nccl", 9, 1.5
	r := &Report{Header: pluginHeader(), Cases: []Case{
		fieldCase("oneshot", 4, Pass),
		fieldCase("twoshot", 12, Pass),
		fieldCase("ring", 2, Fail), // failed: no gain
		fieldCase("nccl", 9, Pass),
		stale, // a field entry carries no fieldbest of its own
		fieldCase("ex:a", 8, Pass),
	}}
	small := fieldCase("oneshot", 3, Pass) // no field entry at 2 KiB
	small.Bytes = 2048
	r.Cases = append(r.Cases, small)
	AttachFieldBest(r)
	for _, tc := range []struct {
		i        int
		variant  string
		us, gain float64
	}{
		{0, "nccl-reg", 6, 1.5},
		{1, "nccl-reg", 6, 0.5},
		{2, "", 0, 0},
		{3, "", 0, 0},
		{4, "", 0, 0},
		{5, "", 0, 0},
		{6, "", 0, 0},
	} {
		c := r.Cases[tc.i]
		require.Equal(t, tc.variant, c.FieldBestVariant, "case %d %s", tc.i, c.Variant)
		require.Equal(t, tc.us, c.FieldBestTimeUS, "case %d %s", tc.i, c.Variant)
		require.Equal(t, tc.gain, c.FieldBestGain, "case %d %s", tc.i, c.Variant)
	}
}

// The fieldbest fields survive the JSON report, rounded as the other
// timings; a report without them reads with them empty.
func TestFieldBestJSONRoundTrip(t *testing.T) {
	r := &Report{Header: pluginHeader(), Cases: []Case{fieldCase("oneshot", 3, Pass), fieldCase("ex:a", 7.00049, Pass)}}
	AttachFieldBest(r)
	var b bytes.Buffer
	require.NoError(t, WriteJSON(&b, r))
	require.Contains(t, b.String(), `"fieldbest_variant": "ex:a"`)
	require.Contains(t, b.String(), `"fieldbest_time_us": 7`)
	require.Contains(t, b.String(), `"fieldbest_gain": 2.3335`)
	back, err := ReadJSON(&b)
	require.NoError(t, err)
	require.Equal(t, "ex:a", back.Cases[0].FieldBestVariant)
	require.Equal(t, 7.0, back.Cases[0].FieldBestTimeUS)
	require.Equal(t, 2.3335, back.Cases[0].FieldBestGain)
	require.Empty(t, back.Cases[1].FieldBestVariant, "a field entry has none")

	old := `{"header": {"tool": "artest"}, "cases": [{"id": "a", "variant": "oneshot", "verdict": "pass", "time_us": 3}], "summary": {}}`
	back, err = ReadJSON(strings.NewReader(old))
	require.NoError(t, err)
	require.Zero(t, back.Cases[0].FieldBestGain)
}

// The fieldbest blocks of the bench table: a plugin beats NCCL and every
// own variant at one size, no field entry passed at another ("-" and no
// gain), and a failed own case has no gain. The comparison's best is an
// own variant even where the plugin is faster.
func TestWriteBenchTableFieldBest(t *testing.T) {
	h := pluginHeader()
	h.Bench, h.Agg = true, "max"
	at := func(variant string, bytes int64, us float64, v Verdict) Case {
		c := fieldCase(variant, us, v)
		c.Bytes, c.Count = bytes, bytes/2
		return c
	}
	r := &Report{Header: h, Cases: []Case{
		at("oneshot", 1024, 4, Pass), at("twoshot", 1024, 6, Pass), at("nccl", 1024, 8, Pass), at("ex:a", 1024, 3, Pass),
		at("oneshot", 2048, 4, Pass), at("twoshot", 2048, 6, Fail), at("nccl", 2048, 6, Pass), at("ex:a", 2048, 12, Pass),
		at("oneshot", 4096, 4, Pass), at("twoshot", 4096, 8, Pass), at("nccl", 4096, 0, Skipped), at("ex:a", 4096, 3, Fail),
	}}
	out := string(render(t, func(b *bytes.Buffer) error { return WriteBenchTable(b, r) }))
	_, blk, ok := strings.Cut(out, "# fieldbest bf16 sum oop-reg, plain launches:")
	require.True(t, ok, out)
	rows := map[string][]string{}
	var titles []string
	for _, l := range strings.Split(blk, "\n")[1:] {
		f := strings.Fields(l)
		switch {
		case len(f) > 1 && f[0] == "#" && f[1] == "size":
			titles = f
		case len(f) > 0 && !strings.HasPrefix(l, "#"):
			rows[f[0]] = f
		}
	}
	require.Equal(t, []string{"#", "size", "fieldbest", "time", "oneshot", "twoshot"}, titles, "a gain column per own variant, none for a plugin")
	// size, fieldbest, its time, oneshot's gain, twoshot's gain
	require.Equal(t, []string{"1024", "ex:a", "3.00", "0.75", "0.50"}, rows["1024"])
	require.Equal(t, []string{"2048", "nccl", "6.00", "1.50", "-"}, rows["2048"])
	require.Equal(t, []string{"4096", "-", "-", "-", "-"}, rows["4096"])
	require.Len(t, rows, 3)

	_, cmp, ok := strings.Cut(out, "# comparison bf16 sum oop-reg, plain launches:")
	require.True(t, ok)
	cmp, _, _ = strings.Cut(cmp, "# fieldbest")
	var first []string
	for _, l := range strings.Split(cmp, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "1024" {
			first = f
		}
	}
	// size, oneshot, twoshot, ex:a, nccl, best, speedup
	require.Equal(t, []string{"1024", "4.00", "6.00", "3.00", "8.00", "oneshot", "2.00"}, first, "a plugin's variant is never the best artest variant")

	// Without any field variant in the run there is no fieldbest block.
	var own []Case
	for _, c := range r.Cases {
		if KindOf(&r.Header, c.Variant) == Own {
			own = append(own, c)
		}
	}
	r.Cases = own
	out = string(render(t, func(b *bytes.Buffer) error { return WriteBenchTable(b, r) }))
	require.NotContains(t, out, "# fieldbest")
}

package report

// The field is what artest's own variants are measured against: every mode
// of NCCL (NCCLBaselines) and every variant of a loaded plugin
// (Header.Plugins). At each dtype, op, mode, launch kind and size, the
// fieldbest is the fastest passing field entry; an own variant's gain over
// it is the fieldbest's time / the variant's time (>1: the variant is
// faster).

// Kind says whose a variant is.
type Kind int

const (
	// Own: one of artest's own kernels.
	Own Kind = iota
	// NCCLMode: one of NCCLBaselines, ncclAllReduce with one way of
	// passing the buffers.
	NCCLMode
	// PluginVariant: a variant of a --plugin library, named
	// PLUGIN:VARIANT.
	PluginVariant
)

// KindOf says whose variant is in the run of h: a plugin's when the header
// lists it under plugins.
func KindOf(h *Header, variant string) Kind {
	if IsNCCLBaseline(variant) {
		return NCCLMode
	}
	for _, p := range h.Plugins {
		for _, v := range p.Variants {
			if v == variant {
				return PluginVariant
			}
		}
	}
	return Own
}

// fieldOrder is the field of h in tie-break order: NCCLBaselines, then the
// plugins' variants as the header lists them.
func fieldOrder(h *Header) []string {
	order := append([]string{}, NCCLBaselines...)
	for _, p := range h.Plugins {
		order = append(order, p.Variants...)
	}
	return order
}

// FieldKey is where field entries compete: the cases of one dtype, op, mode
// (Mode without its launch word), launch kind and size.
type FieldKey struct {
	DType, Op, Mode, Launch string
	Bytes                   int64
}

// FieldKeyOf is c's key.
func FieldKeyOf(c *Case) FieldKey {
	rest, launch := splitMode(c.Mode)
	return FieldKey{c.DType, c.Op, rest, launch, c.Bytes}
}

// FieldEntry is a fieldbest: the field variant and its time per call.
type FieldEntry struct {
	Variant string
	TimeUS  float64
}

// FieldBests is every key's fieldbest in r: the fastest passing, timed case
// of a field variant. Ties go to the earlier in the field's order
// (NCCLBaselines' order, then the plugins' variants in the header's order).
// A key where no field entry passed has none.
func FieldBests(r *Report) map[FieldKey]FieldEntry {
	times := map[FieldKey]map[string]float64{}
	for i := range r.Cases {
		c := &r.Cases[i]
		if KindOf(&r.Header, c.Variant) == Own || verdictOf(c) != Pass || c.TimeUS <= 0 {
			continue
		}
		k := FieldKeyOf(c)
		if times[k] == nil {
			times[k] = map[string]float64{}
		}
		if t, seen := times[k][c.Variant]; !seen || c.TimeUS < t {
			times[k][c.Variant] = c.TimeUS
		}
	}
	order := fieldOrder(&r.Header)
	out := map[FieldKey]FieldEntry{}
	for k, ts := range times {
		var best FieldEntry
		for _, v := range order {
			if t := ts[v]; t > 0 && (best.Variant == "" || t < best.TimeUS) {
				best = FieldEntry{v, t}
			}
		}
		out[k] = best
	}
	return out
}

// FieldGain is the gain of a variant that takes us per call over the
// fieldbest e: e's time / us; 0 when either is missing.
func FieldGain(e FieldEntry, us float64) float64 {
	if e.TimeUS <= 0 || us <= 0 {
		return 0
	}
	return e.TimeUS / us
}

// AttachFieldBest sets FieldBestVariant, FieldBestTimeUS and FieldBestGain
// on every passing, timed case of an own variant whose key has a fieldbest,
// and clears them on every other case.
func AttachFieldBest(r *Report) {
	bests := FieldBests(r)
	for i := range r.Cases {
		c := &r.Cases[i]
		c.FieldBestVariant, c.FieldBestTimeUS, c.FieldBestGain = "", 0, 0
		if KindOf(&r.Header, c.Variant) != Own || verdictOf(c) != Pass || c.TimeUS <= 0 {
			continue
		}
		if e, ok := bests[FieldKeyOf(c)]; ok {
			c.FieldBestVariant, c.FieldBestTimeUS, c.FieldBestGain = e.Variant, e.TimeUS, FieldGain(e, c.TimeUS)
		}
	}
}

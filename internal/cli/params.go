package cli

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/registry"
)

// paramHelp lists the launch parameters of every variant of vs, for --help
// and for a --param no variant has.
func paramHelp(vs *registry.Set) string {
	var parts []string
	for _, v := range vs.All() {
		for _, p := range v.Params {
			parts = append(parts, fmt.Sprintf("%s (%s: %s; default %d)", p.Name, v.Name, p.Help, p.Default))
		}
	}
	if len(parts) == 0 {
		return "none defined"
	}
	return strings.Join(parts, "; ")
}

// parseParams reads --param NAME=VALUE flags. A name applies to every
// variant of vs that has a parameter of that name; each such variant's
// range is checked.
func parseParams(vs *registry.Set, specs []string) (map[string]uint32, error) {
	out := map[string]uint32{}
	for _, spec := range specs {
		name, val, ok := strings.Cut(spec, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, exitcode.Usagef("--param %q: want NAME=VALUE", spec)
		}
		n, err := strconv.ParseUint(strings.TrimSpace(val), 0, 32)
		if err != nil {
			return nil, exitcode.Usagef("--param %s: value %q is not a whole number", name, val)
		}
		found := false
		for _, v := range vs.All() {
			p, has := v.Param(name)
			if !has {
				continue
			}
			found = true
			auto := n == 0 && p.Default == 0
			if !auto && (uint32(n) < p.Min || uint32(n) > p.Max) {
				return nil, exitcode.Usagef("--param %s=%d: %s allows %d to %d", name, n, v.Name, p.Min, p.Max)
			}
		}
		if !found {
			return nil, exitcode.Usagef("--param %s: no variant has this parameter (%s)", name, paramHelp(vs))
		}
		out[name] = uint32(n)
	}
	return out, nil
}

// selectedVariants names the variants the selection can reach: --variant's,
// or those of the --case IDs; nil when every variant can run.
func (o *Options) selectedVariants() []string {
	if len(o.Variants) > 0 {
		return dedup(o.Variants)
	}
	var names []string
	for _, id := range o.CaseIDs {
		names = append(names, cases.VariantOfID(id))
	}
	return dedup(names)
}

// checkParamsApply makes a --param that none of the selected variants (of
// set) has a usage error: it would be ignored, and the run would not be
// what was asked for. Unknown variant names are left to the matrix's own
// error.
func checkParamsApply(set *registry.Set, params map[string]uint32, variants []string) error {
	if len(variants) == 0 {
		return nil
	}
	var vs []*kernels.Variant
	for _, name := range variants {
		v, err := set.Lookup(name)
		if err != nil {
			return nil
		}
		vs = append(vs, v)
	}
	names := make([]string, 0, len(params))
	for name := range params {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		applies := false
		var theirs []string
		for _, v := range vs {
			_, has := v.Param(name)
			applies = applies || has
			theirs = append(theirs, v.Name+": "+paramNames(v))
		}
		switch {
		case applies:
		case len(vs) == 1:
			return exitcode.Usagef("--param %s: %s has no such parameter (its parameters: %s)", name, vs[0].Name, paramNames(vs[0]))
		default:
			return exitcode.Usagef("--param %s: none of the selected variants has it (their parameters: %s)", name, strings.Join(theirs, "; "))
		}
	}
	return nil
}

// paramNames lists a variant's --param names, or "none".
func paramNames(v *kernels.Variant) string {
	var ps []string
	for _, p := range v.Params {
		ps = append(ps, p.Name)
	}
	if len(ps) == 0 {
		return "none"
	}
	return strings.Join(ps, ", ")
}

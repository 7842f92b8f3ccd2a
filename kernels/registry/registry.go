// Package registry is the list of every variant artest ships, one line per
// variant folder (kernels/<variant>/), and the running set of variants:
// that list plus the plugins' (AddExternal). It is data, not init-time
// self-registration, so what exists is visible in Builtin.
package registry

import (
	"fmt"
	"strings"

	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/multimem"
	"github.com/artest/artest/kernels/ncclbaseline"
	"github.com/artest/artest/kernels/oneshot"
	"github.com/artest/artest/kernels/oneshotcpasync"
	"github.com/artest/artest/kernels/oneshotll"
	"github.com/artest/artest/kernels/ring"
	"github.com/artest/artest/kernels/twoshot"
	"github.com/artest/artest/kernels/twoshotbulk"
)

// Builtin is every variant artest ships, in the order reports list them.
// A new variant is a folder below kernels/ and one line here.
var Builtin = []func() kernels.Variant{
	oneshot.Variant,
	twoshot.Variant,
	twoshotbulk.Variant,
	oneshotcpasync.Variant,
	oneshotll.Variant,
	ring.Variant,
	multimem.Variant,
	ncclbaseline.Plain,
	ncclbaseline.Registered,
	ncclbaseline.Window,
}

// Variants is every variant this run knows: Builtin's, then the plugins'
// (AddExternal).
var Variants = builtin()

func builtin() []kernels.Variant {
	vs := make([]kernels.Variant, len(Builtin))
	for i, f := range Builtin {
		vs[i] = f()
	}
	return vs
}

// Names lists the variant names.
func Names() []string {
	names := make([]string, len(Variants))
	for i := range Variants {
		names[i] = Variants[i].Name
	}
	return names
}

// Lookup finds a variant by name; an unknown name lists the valid ones.
func Lookup(name string) (*kernels.Variant, error) {
	for i := range Variants {
		if Variants[i].Name == name {
			return &Variants[i], nil
		}
	}
	return nil, fmt.Errorf("unknown variant %q (valid: %s)", name, strings.Join(Names(), ", "))
}

// ByID finds the variant that writes trace id id.
func ByID(id uint32) *kernels.Variant {
	for i := range Variants {
		if Variants[i].ID == id && id != 0 {
			return &Variants[i]
		}
	}
	return nil
}

// Faults are the fault switches of the built-in variants' own protocols
// (kernels.Variant.Faults), in Builtin order.
func Faults() []kernels.Fault {
	var fs []kernels.Fault
	for _, f := range Builtin {
		fs = append(fs, f().Faults...)
	}
	return fs
}

// AddExternal appends variants implemented outside artest to the running set (Variants),
// so --variant, the matrix and the reports see them as any other. Each must
// have External set and a name no built-in variant has; adding a variant of
// the same name and owner again (a second load of the same plugin) replaces
// it.
func AddExternal(vs []kernels.Variant) error {
	for i := range vs {
		v := vs[i]
		if v.External == nil {
			return fmt.Errorf("external variant %s has no implementation", v.Name)
		}
		replaced := false
		for j := range Variants {
			o := &Variants[j]
			if o.Name != v.Name {
				if v.ID != 0 && o.ID == v.ID {
					return fmt.Errorf("variant %s of %s: its trace id %#x is %s's: rename one of them", v.Name, v.External.Owner(), v.ID, o.Name)
				}
				continue
			}
			if o.External == nil || o.External.Owner() != v.External.Owner() {
				owner := "artest"
				if o.External != nil {
					owner = o.External.Owner()
				}
				return fmt.Errorf("variant %s of %s: %s already has a variant of that name", v.Name, v.External.Owner(), owner)
			}
			Variants[j] = v
			replaced = true
		}
		if !replaced {
			Variants = append(Variants, v)
		}
	}
	return nil
}

// controlAlign separates the control regions of two owners: a page, so no
// two plugins' flags share a cache line (or a host page).
const controlAlign = 4096

// externalControlLayout gives each External owner of the running set (Variants) (a
// plugin) its own control region, in Variants order: owner -> offset, and
// the bytes all of them need per rank. Two plugins in one job never share
// barrier flags or call counters: one's state left in the other's region
// would make the other's barriers wait for values that never come.
func externalControlLayout() (map[string][2]int64, int64) {
	regions := map[string][2]int64{}
	var total int64
	for i := range Variants {
		e := Variants[i].External
		c, ok := e.(interface{ ControlBytes() int64 })
		if !ok || c.ControlBytes() == 0 {
			continue
		}
		if _, seen := regions[e.Owner()]; seen {
			continue
		}
		regions[e.Owner()] = [2]int64{total, c.ControlBytes()}
		total += (c.ControlBytes() + controlAlign - 1) / controlAlign * controlAlign
	}
	return regions, total
}

// ExternalControlBytes is the control memory per rank that the External
// variants of the running set (Variants) need together (0 when there is none): the
// backends give every rank one block of that size, zeroed once.
func ExternalControlBytes() int64 {
	_, total := externalControlLayout()
	return total
}

// ExternalControlRegion is owner's own control region within that block:
// its offset and the bytes it declared (0, 0 for an owner that declared
// none).
func ExternalControlRegion(owner string) (offset, size int64) {
	regions, _ := externalControlLayout()
	r := regions[owner]
	return r[0], r[1]
}

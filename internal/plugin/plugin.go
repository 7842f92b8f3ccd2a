// Package plugin loads allreduce implementations artest did not write:
// shared libraries that implement plugin/artest_plugin.h. Each plugin
// variant becomes a kernels.Variant with an External implementation, so the
// matrix, --variant, --param, the checks and the reports treat it like a
// built-in. cgo here is only the dlopen'd library's trampolines (calls.h).
package plugin

/*
#cgo CFLAGS: -I${SRCDIR}/../../plugin
#include "calls.h"
*/
import "C"

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/artest/artest/internal/dl"
	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/reference"
	"github.com/artest/artest/sigblock"
)

// ABIVersion is the artest_plugin.h version this artest speaks.
const ABIVersion = C.ARTEST_PLUGIN_ABI_VERSION

// EntrySymbol is the one function a plugin exports.
const EntrySymbol = C.ARTEST_PLUGIN_ENTRY

// MaxStagingBytes bounds a plugin's own staging per rank: more than any
// GPU holds.
const MaxStagingBytes = 1 << 40

// MaxControlBytes bounds a plugin's control region per rank.
const MaxControlBytes = C.ARTEST_MAX_CONTROL_BYTES

// The call flags of artest_plugin.h, for tests.
const (
	callRegistered = C.ARTEST_CALL_REGISTERED
	callDevice     = C.ARTEST_CALL_DEVICE
)

// CollsEntrySymbol is the optional function of a plugin whose variants
// declare their collectives (artest_collectives_v1).
const CollsEntrySymbol = C.ARTEST_COLLECTIVES_ENTRY

// CollsVersion is the artest_collectives version this artest speaks.
const CollsVersion = C.ARTEST_COLLECTIVES_VERSION

// EarlyEntrySymbol is the optional function of a plugin whose variants
// return before their peers finish by design (artest_early_return_v1).
const EarlyEntrySymbol = C.ARTEST_EARLY_RETURN_ENTRY

// EarlyVersion is the artest_early_return version this artest speaks.
const EarlyVersion = C.ARTEST_EARLY_RETURN_VERSION

// FaultsEntrySymbol is the optional function of a plugin that declares
// fault switches (artest_faults_v1).
const FaultsEntrySymbol = C.ARTEST_FAULTS_ENTRY

// FaultsVersion is the artest_faults version this artest speaks.
const FaultsVersion = C.ARTEST_FAULTS_VERSION

// MaxFaults is the most fault switches a plugin declares.
const MaxFaults = C.ARTEST_MAX_FAULTS

// DeviceEntrySymbol is the optional function of a plugin whose kernels use
// the device helpers (plugin/artest_device.h).
const DeviceEntrySymbol = C.ARTEST_DEVICE_ENTRY

// DeviceVersion is the artest_device_info version this artest speaks.
const DeviceVersion = C.ARTEST_DEVICE_VERSION

// What the report header says artest checks of a plugin variant, beyond
// values, guards and the graph and stress modes (Checks).
const (
	ChecksWithHelpers    = "trace check, device deadlines"
	ChecksWithoutHelpers = "no trace check, host watchdog only"
)

// Checks says what artest checks of plugin variant v: the trace word and
// the device-side deadline need the kernel's help (the device helpers),
// which gave it a trace id.
func Checks(v *kernels.Variant) string {
	if v.ID != 0 {
		return ChecksWithHelpers
	}
	return ChecksWithoutHelpers
}

// Plugin is one loaded library.
type Plugin struct {
	Name   string // the plugin's own name, the prefix of its variants
	Path   string // absolute
	SHA256 string // of the file at load
	// Variants are the plugin's variants, for the run's set (registry.New).
	Variants []kernels.Variant

	lib  *dl.Lib
	desc *C.artest_plugin

	setupOnce sync.Once
	setupErr  error
	world     *C.artest_world // C memory, kept for the process: a plugin may keep the pointer

	cSetup    *C.char   // "plugin NAME (PATH): setup"
	cTeardown *C.char   // "plugin NAME (PATH): teardown"
	cCalls    []*C.char // per variant: "plugin NAME (PATH): allreduce of NAME:VARIANT"
	busy      atomic.Pointer[string]
}

var loaded struct {
	mu     sync.Mutex
	byPath map[string]*Plugin
}

// nameRE is what the header allows in plugin, variant and parameter names.
var nameRE = regexp.MustCompile(`^[a-z0-9_-]{1,32}$`)

// Load opens the plugin at path, checks its ABI version and description,
// and returns it; a second Load of the same file returns the same Plugin.
// Every error names the path and is a usage error (exit 2): --plugin named
// something that is not a usable plugin.
func Load(path string) (*Plugin, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, exitcode.Usagef("--plugin %s: %v", path, err)
	}
	loaded.mu.Lock()
	defer loaded.mu.Unlock()
	if p := loaded.byPath[abs]; p != nil {
		return p, nil
	}
	sum, err := fileSHA256(abs)
	if err != nil {
		return nil, exitcode.Usagef("--plugin %s: %v", path, err)
	}
	if C.art_guard_install(C.int(exitcode.Wrong)) != 0 {
		return nil, exitcode.Envf("--plugin %s: cannot install the crash guard", path)
	}
	lib, err := dl.Open(abs)
	if err != nil {
		return nil, exitcode.Usagef("--plugin %s: %v", path, err)
	}
	entry, err := lib.Sym(EntrySymbol)
	if err != nil {
		lib.Close()
		return nil, exitcode.Usagef("--plugin %s: no %s: not an artest plugin (see plugin/artest_plugin.h)", path, EntrySymbol)
	}
	p := &Plugin{Path: abs, SHA256: sum, lib: lib}
	// The entry point is the plugin's code too: a crash in it is named.
	where := C.CString(fmt.Sprintf("plugin %s: %s()", abs, EntrySymbol))
	defer C.free(unsafe.Pointer(where))
	p.desc = callEntry(entry, where)
	if err := p.describe(); err != nil {
		// The library stays open: its code may have started threads.
		return nil, exitcode.Usagef("--plugin %s: %v", path, err)
	}
	if loaded.byPath == nil {
		loaded.byPath = map[string]*Plugin{}
	}
	loaded.byPath[abs] = p
	return p, nil
}

func callEntry(entry unsafe.Pointer, where *C.char) *C.artest_plugin {
	return (*C.artest_plugin)(unsafe.Pointer(C.art_entry(entry, where)))
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// describe checks the plugin's description and builds its variants.
func (p *Plugin) describe() error {
	d := p.desc
	if d == nil {
		return fmt.Errorf("%s returned NULL", EntrySymbol)
	}
	if d.abi_version != ABIVersion {
		return fmt.Errorf("ABI version %d, this artest speaks version %d (rebuild the plugin against its plugin/artest_plugin.h)", uint32(d.abi_version), ABIVersion)
	}
	if d.name == nil || !nameRE.MatchString(C.GoString(d.name)) {
		return errors.New("the plugin's name must be 1 to 32 of [a-z0-9_-]")
	}
	p.Name = C.GoString(d.name)
	if _, err := reference.ParseColl(p.Name); err == nil {
		// A case ID names a collective at its head the way a plugin's
		// variant names its plugin (reduce-scatter:VARIANT).
		return fmt.Errorf("the plugin's name %s is a collective's: choose another", p.Name)
	}
	if d.nvariants < 1 || d.nvariants > 64 || d.variants == nil {
		return fmt.Errorf("plugin %s declares %d variants, want 1 to 64", p.Name, uint32(d.nvariants))
	}
	if C.art_has_setup(d) == 0 || C.art_has_allreduce(d) == 0 {
		return fmt.Errorf("plugin %s: setup and allreduce must not be NULL", p.Name)
	}
	// A staging size is allocated on every rank; past MaxStagingBytes it is
	// a wrong declaration (a -1 or a size in bits), and past 2^63 it would
	// read as negative and silently become the shared scratch.
	if d.staging_bytes > MaxStagingBytes {
		return fmt.Errorf("plugin %s declares staging_bytes %d, at most %d (1 TiB) per rank", p.Name, uint64(d.staging_bytes), uint64(MaxStagingBytes))
	}
	if d.control_bytes > MaxControlBytes {
		return fmt.Errorf("plugin %s needs %d control bytes, at most %d", p.Name, uint64(d.control_bytes), MaxControlBytes)
	}
	owner := p.Owner()
	p.cSetup = C.CString(owner + ": setup")
	p.cTeardown = C.CString(owner + ": teardown")
	for i := 0; i < int(d.nvariants); i++ {
		v, err := p.variant(i)
		if err != nil {
			return fmt.Errorf("plugin %s variant %d: %w", p.Name, i, err)
		}
		for j := range p.Variants {
			if p.Variants[j].Name == v.Name {
				return fmt.Errorf("plugin %s declares the variant name %s twice (variants %d and %d): a name selects one variant, so each must be unique", p.Name, v.Name, j, i)
			}
		}
		p.Variants = append(p.Variants, v)
		p.cCalls = append(p.cCalls, C.CString(fmt.Sprintf("%s: allreduce of %s", owner, v.Name)))
	}
	if err := p.describeColls(); err != nil {
		return err
	}
	if err := p.describeEarly(); err != nil {
		return err
	}
	if err := p.describeFaults(); err != nil {
		return err
	}
	return p.describeDevice()
}

// describeEarly reads the optional artest_early_return_v1: why a variant
// may return before its peers finish (kernels.Variant.EarlyReturn).
func (p *Plugin) describeEarly() error {
	fn, err := p.lib.Sym(EarlyEntrySymbol)
	if err != nil {
		return nil // optional
	}
	where := C.CString(fmt.Sprintf("plugin %s: %s()", p.Path, EarlyEntrySymbol))
	defer C.free(unsafe.Pointer(where))
	d := C.art_early_entry(fn, where)
	switch {
	case d == nil:
		return fmt.Errorf("plugin %s: %s returned NULL", p.Name, EarlyEntrySymbol)
	case d.version != EarlyVersion:
		return fmt.Errorf("plugin %s: %s: version %d, this artest speaks version %d (rebuild the plugin against its plugin/artest_plugin.h)",
			p.Name, EarlyEntrySymbol, uint32(d.version), EarlyVersion)
	case int(d.nvariants) != len(p.Variants) || d.reasons == nil:
		return fmt.Errorf("plugin %s: %s describes %d variants, the plugin has %d", p.Name, EarlyEntrySymbol, uint32(d.nvariants), len(p.Variants))
	}
	for i := range p.Variants {
		r := C.art_early_reason(d, C.uint32_t(i))
		if r == nil {
			continue
		}
		reason := C.GoString(r)
		if reason == "" || strings.ContainsAny(reason, "\n\r") || len(reason) > 300 {
			return fmt.Errorf("plugin %s: %s: %s: the reason must be one line of 1 to 300 characters", p.Name, EarlyEntrySymbol, p.Variants[i].Name)
		}
		p.Variants[i].EarlyReturn = reason
	}
	return nil
}

// describeFaults reads the optional artest_faults_v1: the plugin's fault
// switches, which every variant of it gets (kernels.Variant.Faults, named
// PLUGIN:NAME; Bit is the switch's bit in artest_call.faults).
func (p *Plugin) describeFaults() error {
	fn, err := p.lib.Sym(FaultsEntrySymbol)
	if err != nil {
		return nil // optional
	}
	where := C.CString(fmt.Sprintf("plugin %s: %s()", p.Path, FaultsEntrySymbol))
	defer C.free(unsafe.Pointer(where))
	d := C.art_faults_entry(fn, where)
	switch {
	case d == nil:
		return fmt.Errorf("plugin %s: %s returned NULL", p.Name, FaultsEntrySymbol)
	case d.version != FaultsVersion:
		return fmt.Errorf("plugin %s: %s: version %d, this artest speaks version %d (rebuild the plugin against its plugin/artest_plugin.h)",
			p.Name, FaultsEntrySymbol, uint32(d.version), FaultsVersion)
	case d.nfaults < 1 || d.nfaults > MaxFaults || d.faults == nil:
		return fmt.Errorf("plugin %s: %s declares %d faults, want 1 to %d", p.Name, FaultsEntrySymbol, uint32(d.nfaults), MaxFaults)
	}
	var faults []kernels.Fault
	seen := map[string]bool{}
	for i := 0; i < int(d.nfaults); i++ {
		f := C.art_fault(d, C.uint32_t(i))
		if f.name == nil || !nameRE.MatchString(C.GoString(f.name)) {
			return fmt.Errorf("plugin %s: %s: fault %d: its name must be 1 to 32 of [a-z0-9_-]", p.Name, FaultsEntrySymbol, i)
		}
		name := C.GoString(f.name)
		if seen[name] {
			return fmt.Errorf("plugin %s: %s: fault %s declared twice", p.Name, FaultsEntrySymbol, name)
		}
		seen[name] = true
		help := ""
		if f.help != nil {
			help = C.GoString(f.help)
		}
		if help == "" || strings.ContainsAny(help, "\n\r") || len(help) > 300 {
			return fmt.Errorf("plugin %s: %s: fault %s: its help must be one line of 1 to 300 characters", p.Name, FaultsEntrySymbol, name)
		}
		faults = append(faults, kernels.Fault{Name: p.Name + ":" + name, Bit: 1 << uint(i), Help: help})
	}
	for i := range p.Variants {
		p.Variants[i].Faults = faults
	}
	return nil
}

// describeColls reads the optional artest_collectives_v1: the collectives
// of each variant (kernels.Variant.Colls). A plugin without the symbol
// implements the allreduce alone.
func (p *Plugin) describeColls() error {
	fn, err := p.lib.Sym(CollsEntrySymbol)
	if err != nil {
		return nil // optional
	}
	where := C.CString(fmt.Sprintf("plugin %s: %s()", p.Path, CollsEntrySymbol))
	defer C.free(unsafe.Pointer(where))
	d := C.art_colls_entry(fn, where)
	switch {
	case d == nil:
		return fmt.Errorf("plugin %s: %s returned NULL", p.Name, CollsEntrySymbol)
	case d.version != CollsVersion:
		return fmt.Errorf("plugin %s: %s: collectives version %d, this artest speaks version %d (rebuild the plugin against its plugin/artest_plugin.h)",
			p.Name, CollsEntrySymbol, uint32(d.version), CollsVersion)
	case int(d.nvariants) != len(p.Variants) || d.colls == nil:
		return fmt.Errorf("plugin %s: %s describes %d variants, the plugin has %d", p.Name, CollsEntrySymbol, uint32(d.nvariants), len(p.Variants))
	}
	var known uint32
	for _, c := range reference.Colls {
		known |= 1 << c
	}
	for i := range p.Variants {
		v := &p.Variants[i]
		mask := uint32(C.art_colls_mask(d, C.uint32_t(i)))
		if mask == 0 || mask&^known != 0 {
			return fmt.Errorf("plugin %s: %s: %s: collectives mask %#x, want a non-empty set of ARTEST_BIT(ARTEST_ALLREDUCE), ARTEST_BIT(ARTEST_REDUCE_SCATTER), ARTEST_BIT(ARTEST_ALL_GATHER)",
				p.Name, CollsEntrySymbol, v.Name, mask)
		}
		v.Colls = nil
		for _, c := range reference.Colls {
			if mask&(1<<c) != 0 {
				v.Colls = append(v.Colls, c)
			}
		}
	}
	return nil
}

// describeDevice reads the optional artest_device_info_v1: each variant
// that uses the device helpers gets a trace id (kernels.ExternalTraceID)
// and its wait points' names. A plugin without the symbol has none.
func (p *Plugin) describeDevice() error {
	fn, err := p.lib.Sym(DeviceEntrySymbol)
	if err != nil {
		return nil // optional
	}
	where := C.CString(fmt.Sprintf("plugin %s: %s()", p.Path, DeviceEntrySymbol))
	defer C.free(unsafe.Pointer(where))
	d := C.art_device_entry(fn, where)
	switch {
	case d == nil:
		return fmt.Errorf("plugin %s: %s returned NULL", p.Name, DeviceEntrySymbol)
	case d.version != DeviceVersion:
		return fmt.Errorf("plugin %s: %s: device helpers version %d, this artest speaks version %d (rebuild the plugin against its plugin/artest_device.h)",
			p.Name, DeviceEntrySymbol, uint32(d.version), DeviceVersion)
	case int(d.nvariants) != len(p.Variants) || d.variants == nil:
		return fmt.Errorf("plugin %s: %s describes %d variants, the plugin has %d", p.Name, DeviceEntrySymbol, uint32(d.nvariants), len(p.Variants))
	}
	for i := range p.Variants {
		v := &p.Variants[i]
		dv := C.art_device_variant(d, C.uint32_t(i))
		switch {
		case dv.uses_helpers > 1:
			return fmt.Errorf("plugin %s: %s: %s: uses_helpers is %d, want 0 or 1", p.Name, DeviceEntrySymbol, v.Name, uint32(dv.uses_helpers))
		case dv.npoints > C.ARTEST_MAX_POINTS:
			return fmt.Errorf("plugin %s: %s: %s: %d wait points, at most %d", p.Name, DeviceEntrySymbol, v.Name, uint32(dv.npoints), C.ARTEST_MAX_POINTS)
		}
		if dv.uses_helpers == 0 {
			continue
		}
		for j := 0; j < int(dv.npoints); j++ {
			cp := C.art_device_point(dv, C.uint32_t(j))
			if cp == nil || !pointRE.MatchString(C.GoString(cp)) {
				return fmt.Errorf("plugin %s: %s: %s: wait point %d: its name must be 1 to 32 printable ASCII characters", p.Name, DeviceEntrySymbol, v.Name, j)
			}
			v.WaitPoints = append(v.WaitPoints, C.GoString(cp))
		}
		v.ID = kernels.ExternalTraceID(v.Name)
	}
	return nil
}

// pointRE is what the header allows in a wait point's name.
var pointRE = regexp.MustCompile(`^[ -~]{1,32}$`)

// headerDiagWords are artest_device.h's diag word indices and values, for
// the test that keeps them equal to signal's.
func headerDiagWords() map[string]int {
	return map[string]int{
		"state": C.ARTEST_DIAG_STATE, "variant": C.ARTEST_DIAG_VARIANT, "block": C.ARTEST_DIAG_BLOCK,
		"kind": C.ARTEST_DIAG_KIND, "where": C.ARTEST_DIAG_WHERE, "peer": C.ARTEST_DIAG_PEER,
		"want": C.ARTEST_DIAG_WANT, "seen": C.ARTEST_DIAG_SEEN, "waited_ms": C.ARTEST_DIAG_WAITED_MS,
		"lane": C.ARTEST_DIAG_LANE, "rank": C.ARTEST_DIAG_RANK, "timeout_ms": C.ARTEST_DIAG_TIMEOUT_MS,
		"words": C.ARTEST_DIAG_WORDS, "claimed": C.ARTEST_DIAG_CLAIMED, "gave_up": C.ARTEST_DIAG_GAVE_UP,
		"kind_plugin_wait": C.ARTEST_DIAG_KIND_PLUGIN_WAIT,
	}
}

// ext is one variant's kernels.External: the plugin and the index.
type ext struct {
	p   *Plugin
	idx int
}

func (p *Plugin) variant(i int) (kernels.Variant, error) {
	cv := C.art_variant(p.desc, C.uint32_t(i))
	if cv.name == nil || !nameRE.MatchString(C.GoString(cv.name)) {
		return kernels.Variant{}, errors.New("its name must be 1 to 32 of [a-z0-9_-]")
	}
	name := C.GoString(cv.name)
	v := kernels.Variant{
		Name:     p.Name + ":" + name,
		Summary:  fmt.Sprintf("%s (%s)", C.GoString(cv.summary), p.Owner()),
		MinRanks: int(cv.min_ranks), MaxRanks: int(cv.max_ranks),
		Kind:           kernels.KindPlugin,
		HostBlocks:     1,
		Align:          int64(cv.align_bytes),
		StagesOwnInput: cv.needs_registered_input == 0,
		External:       ext{p, i},
	}
	if cv.summary == nil {
		v.Summary = p.Owner()
	}
	for _, d := range reference.DTypes {
		if cv.dtypes&(1<<uint(d)) != 0 {
			v.DTypes = append(v.DTypes, d)
		}
	}
	for _, o := range reference.Ops {
		if cv.ops&(1<<uint(o)) != 0 {
			v.Ops = append(v.Ops, o)
		}
	}
	switch {
	case len(v.DTypes) == 0 || cv.dtypes&^7 != 0:
		return v, fmt.Errorf("%s: dtypes mask %#x: want a non-empty subset of f32, f16, bf16 (%#x)", name, uint32(cv.dtypes), 7)
	case len(v.Ops) == 0 || cv.ops&^7 != 0:
		return v, fmt.Errorf("%s: ops mask %#x: want a non-empty subset of sum, max, min (%#x)", name, uint32(cv.ops), 7)
	case v.MinRanks < 1 || v.MaxRanks < v.MinRanks:
		return v, fmt.Errorf("%s: ranks %d to %d", name, v.MinRanks, v.MaxRanks)
	case cv.order > C.ARTEST_ORDER_RANKS_ASCENDING_F32:
		return v, fmt.Errorf("%s: unknown reduction order %d", name, uint32(cv.order))
	case cv.nparams > C.ARTEST_MAX_PARAMS:
		return v, fmt.Errorf("%s: %d parameters, at most %d", name, uint32(cv.nparams), C.ARTEST_MAX_PARAMS)
	}
	v.MaxRanks = min(v.MaxRanks, sigblock.MaxRanks)
	v.Order = reference.OrderUnknown
	if cv.order == C.ARTEST_ORDER_RANKS_ASCENDING_F32 {
		v.Order = reference.OrderRankAscendingF32
	}
	if maxBytes := int64(cv.max_bytes); maxBytes > 0 {
		v.TooBig = func(msg int64) string {
			if msg > maxBytes {
				return fmt.Sprintf("%s takes messages up to %d bytes", v.Name, maxBytes)
			}
			return ""
		}
	}
	for j := 0; j < int(cv.nparams); j++ {
		cp := cv.params[j]
		if cp.name == nil || !nameRE.MatchString(C.GoString(cp.name)) {
			return v, fmt.Errorf("%s: parameter %d: its name must be 1 to 32 of [a-z0-9_-]", name, j)
		}
		prm := kernels.Param{Name: C.GoString(cp.name), Slot: j, Default: uint32(cp.def),
			Min: uint32(cp.min), Max: uint32(cp.max), Help: C.GoString(cp.help)}
		if prm.Min > prm.Max || prm.Default < prm.Min || prm.Default > prm.Max {
			return v, fmt.Errorf("%s: parameter %s: default %d outside %d to %d", name, prm.Name, prm.Default, prm.Min, prm.Max)
		}
		v.Params = append(v.Params, prm)
	}
	return v, nil
}

// Owner names the plugin in messages: "plugin NAME (PATH)".
func (p *Plugin) Owner() string {
	if p.Name == "" {
		return "plugin " + p.Path
	}
	return fmt.Sprintf("plugin %s (%s)", p.Name, p.Path)
}

// lastError is the plugin's message for the status it just returned.
func (p *Plugin) lastError() string {
	if m := C.art_last_error(p.desc); m != nil {
		if s := C.GoString(m); s != "" {
			return s
		}
	}
	return "no message (last_error gave none)"
}

// setup calls the plugin's setup once for the process.
func (p *Plugin) setup(w *kernels.ExternalWorld) error {
	p.setupOnce.Do(func() {
		if w.Size > C.ARTEST_MAX_RANKS {
			p.setupErr = fmt.Errorf("%s: setup: %d ranks, the ABI carries at most %d", p.Owner(), w.Size, C.ARTEST_MAX_RANKS)
			return
		}
		cw := (*C.artest_world)(C.calloc(1, C.sizeof_artest_world))
		cw.rank, cw.world_size, cw.local_rank = C.uint32_t(w.Rank), C.uint32_t(w.Size), C.uint32_t(w.LocalRank)
		cw.device = C.int32_t(w.Device)
		cw.backend = C.ARTEST_BACKEND_CUDA
		if w.Backend == "host" {
			cw.backend = C.ARTEST_BACKEND_HOST
		}
		cw.input_bytes, cw.staging_bytes, cw.control_bytes = C.uint64_t(w.InputBytes), C.uint64_t(w.StagingBytes), C.uint64_t(w.ControlBytes)
		for r := 0; r < w.Size; r++ {
			C.art_world_set(cw, C.int(r), C.uintptr_t(w.Input[r]), C.uintptr_t(w.Staging[r]), C.uintptr_t(w.Control[r]))
		}
		p.world = cw
		C.art_set_rank(C.int(w.Rank))
		msg := p.Owner() + ": setup"
		p.busy.Store(&msg)
		rc := C.art_setup(p.desc, cw, p.cSetup)
		p.busy.Store(nil)
		if rc != C.ARTEST_OK {
			p.setupErr = fmt.Errorf("%s: setup returned status %d: %s", p.Owner(), int(rc), p.lastError())
		}
	})
	return p.setupErr
}

// allreduce makes one call of variant idx.
func (p *Plugin) allreduce(idx int, c *kernels.ExternalCall) error {
	var cc C.artest_call
	cc.variant = C.uint32_t(idx)
	cc.dtype, cc.op = C.uint32_t(c.DType), C.uint32_t(c.Op)
	if c.InPlace {
		cc.flags |= C.ARTEST_CALL_IN_PLACE
	}
	if c.Registered {
		cc.flags |= C.ARTEST_CALL_REGISTERED
	}
	cc.count, cc.offset = C.uint64_t(c.Count), C.uint64_t(c.Offset)
	C.art_call_set(&cc, C.uintptr_t(c.In), C.uintptr_t(c.Out))
	cc.stream = C.uint64_t(c.Stream)
	for i, v := range c.Params {
		cc.params[i] = C.uint32_t(v)
	}
	if c.Faults != 0 {
		C.art_call_faults(&cc, C.uint32_t(c.Faults))
	}
	if d := c.Device; d != nil {
		C.art_call_device(&cc, C.uintptr_t(d.Trace), C.uintptr_t(d.Diag), C.uint64_t(d.TimeoutNs), C.uint32_t(d.TraceID), C.uint32_t(d.Rank))
	}
	what := fmt.Sprintf("%s %s", c.DType, c.Op)
	if c.Coll != reference.AllReduce {
		// Only a variant that declared it (artest_collectives_v1) gets it.
		C.art_call_coll(&cc, C.uint32_t(c.Coll))
		what = fmt.Sprintf("%s %s", c.Coll, c.DType)
		if c.Coll.Reduces() {
			what += " " + c.Op.String()
		}
	}
	msg := fmt.Sprintf("%s: allreduce of %s (%s, %d elements) has not returned", p.Owner(), c.Variant.Name, what, c.Count)
	p.busy.Store(&msg)
	rc := C.art_allreduce(p.desc, &cc, p.cCalls[idx])
	p.busy.Store(nil)
	if rc != C.ARTEST_OK {
		return fmt.Errorf("%s: allreduce of %s returned status %d: %s", p.Owner(), c.Variant.Name, int(rc), p.lastError())
	}
	return nil
}

// Teardown calls the plugin's teardown, once set up.
func (p *Plugin) Teardown() {
	if p.world != nil {
		C.art_teardown(p.desc, p.cTeardown)
	}
}

func (e ext) Owner() string                           { return e.p.Owner() }
func (e ext) Setup(w *kernels.ExternalWorld) error    { return e.p.setup(w) }
func (e ext) Allreduce(c *kernels.ExternalCall) error { return e.p.allreduce(e.idx, c) }
func (e ext) ControlBytes() int64                     { return int64(e.p.desc.control_bytes) }
func (e ext) StagingBytes() int64                     { return int64(e.p.desc.staging_bytes) }
func (e ext) Busy() string {
	if s := e.p.busy.Load(); s != nil {
		return *s
	}
	return ""
}

package cli

import (
	"strings"

	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/internal/plugin"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/registry"
)

// loadPlugins loads every --plugin library and builds the run's variant
// set from the built-ins and their variants, before anything reads it
// (--variant, --param, the matrix). An unusable plugin, or one whose
// variants clash with another's, is a usage error naming it (exit 2).
func (o *Options) loadPlugins() error {
	o.plugins, o.PluginSHA256 = nil, nil
	var external []kernels.Variant
	set := registry.Builtins()
	for _, path := range dedup(o.Plugins) {
		switch {
		case strings.TrimSpace(path) == "":
			return exitcode.Usagef("--plugin: empty path (want the path of a shared library)")
		case strings.ContainsAny(path, "\n\r"):
			return exitcode.Usagef("--plugin %q: a path with a line break would break the report's header and the one-line repro messages; rename the file", path)
		}
		p, err := plugin.Load(path)
		if err != nil {
			return err
		}
		external = append(external, p.Variants...)
		// Built again with each plugin, so a clash names the plugin
		// that brought it.
		if set, err = registry.New(external); err != nil {
			return exitcode.Usagef("--plugin %s: %v", p.Path, err)
		}
		o.plugins = append(o.plugins, p)
		o.PluginSHA256 = append(o.PluginSHA256, p.SHA256)
	}
	o.variantSet = set
	return nil
}

// variantNames is every variant this run knows: the built-in ones in
// registry.Builtin's order, then each --plugin's (the run's set).
func (o *Options) variantNames() []string {
	return o.variantSet.Names()
}

// pluginInfo is the report header's account of the plugins.
func (o *Options) pluginInfo() []report.Plugin {
	var out []report.Plugin
	for _, p := range o.plugins {
		rp := report.Plugin{Name: p.Name, Path: p.Path, SHA256: p.SHA256}
		for i := range p.Variants {
			v := &p.Variants[i]
			rp.Variants = append(rp.Variants, v.Name)
			rp.VariantChecks = append(rp.VariantChecks, plugin.Checks(v))
			switch {
			case i == 0:
				rp.Checks = plugin.Checks(v)
			case rp.Checks != plugin.Checks(v):
				rp.Checks = "per variant"
			}
		}
		out = append(out, rp)
	}
	return out
}

// teardownPlugins ends every plugin that was set up, before the backend
// releases the memory it was given.
func (o *Options) teardownPlugins() {
	for _, p := range o.plugins {
		p.Teardown()
	}
}

package cli

import (
	"github.com/artest/artest/internal/plugin"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/kernels/registry"
)

// loadPlugins loads every --plugin library and adds its variants to the
// registry, before anything reads the registry (--variant, --param, the
// matrix). An unusable plugin is a usage error naming it (exit 2).
func (o *Options) loadPlugins() error {
	o.plugins, o.PluginSHA256 = nil, nil
	for _, path := range dedup(o.Plugins) {
		p, err := plugin.Load(path)
		if err != nil {
			return err
		}
		if err := p.Register(); err != nil {
			return err
		}
		o.plugins = append(o.plugins, p)
		o.PluginSHA256 = append(o.PluginSHA256, p.SHA256)
	}
	return nil
}

// variantNames is every variant this run knows: the built-in ones in
// registry.Builtin's order, then each --plugin's.
func (o *Options) variantNames() []string {
	var names []string
	for _, f := range registry.Builtin {
		names = append(names, f().Name)
	}
	for _, p := range o.plugins {
		for i := range p.Variants {
			names = append(names, p.Variants[i].Name)
		}
	}
	return names
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

package cli

import (
	"github.com/artest/artest/internal/plugin"
	"github.com/artest/artest/internal/report"
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

// pluginInfo is the report header's account of the plugins.
func (o *Options) pluginInfo() []report.Plugin {
	var out []report.Plugin
	for _, p := range o.plugins {
		rp := report.Plugin{Name: p.Name, Path: p.Path, SHA256: p.SHA256, Checks: plugin.Checks}
		for _, v := range p.Variants {
			rp.Variants = append(rp.Variants, v.Name)
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

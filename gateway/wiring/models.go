package wiring

import (
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/regions"
	"github.com/carbongate/carbongate/gateway"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/artifact"
	"github.com/carbongate/carbongate/models/workflow"
)

func (g *Gateway) known(z forecast.Zone) bool {
	if _, ok := g.tables[z]; ok {
		return true
	}
	_, ok := g.regions.Climatology(z)
	return ok
}

// catalog lists every known zone: those with data and those with a
// climatology.
func (g *Gateway) catalog() []gateway.ZoneInfo {
	locs := make(map[forecast.Zone][]gateway.Location)
	for _, r := range g.regions.All() {
		if r.Zone != "" {
			locs[r.Zone] = append(locs[r.Zone], gateway.Location{Provider: r.Provider, Region: r.Region})
		}
	}
	zones := make(map[forecast.Zone]bool)
	for z := range g.tables {
		zones[z] = true
	}
	for z := range locs {
		if _, ok := g.regions.Climatology(z); ok {
			zones[z] = true
		}
	}
	out := make([]gateway.ZoneInfo, 0, len(zones))
	for _, z := range slices.Sorted(maps.Keys(zones)) {
		_, hasData := g.tables[z]
		clim, _ := g.regions.Climatology(z)
		zi := gateway.ZoneInfo{Zone: z, History: hasData, Climatology: clim, Locations: locs[z],
			Forecasters: make(map[forecast.Signal]forecast.Source, len(forecast.Signals))}
		for _, sig := range g.Signals() {
			if src, ok := g.Chain.FirstSource(z, sig); ok {
				zi.Forecasters[sig] = src
			}
		}
		out = append(out, zi)
	}
	return out
}

// load reads DIR/<signal>/<ZONE>/ and DIR/<signal>/generic/.
func (g *Gateway) load(dir string, hist forecast.History, log *slog.Logger) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		log.Warn("models directory not found; serving with the baseline and climatology only", "models", dir)
		return
	}
	entries, err := workflow.Entries(dir, "")
	if err != nil {
		log.Warn("cannot read models", "dir", dir, "error", err)
	}
	for _, e := range entries {
		m, err := artifact.Load(e.Dir)
		if err != nil {
			log.Warn("model not loaded; its zone falls back", "dir", e.Dir, "error", err)
			continue
		}
		meta := m.Meta()
		if meta.Signal != e.Signal {
			log.Warn("model not loaded: it forecasts another signal", "dir", e.Dir, "signal", meta.Signal)
			continue
		}
		version, _ := artifact.Version(e.Dir) // Load read the MLmodel just now
		if e.Name == workflow.GenericDir {
			if meta.Zone != "" {
				log.Warn("model not loaded: the generic directory holds a zone model", "dir", e.Dir, "zone", meta.Zone)
				continue
			}
			g.generic[e.Signal] = models.NewForecaster(m, hist, version, forecast.SourceGeneric)
			continue
		}
		z, err := forecast.ParseZone(e.Name)
		if err != nil || meta.Zone != z {
			log.Warn("model not loaded: its zone does not match its directory", "dir", e.Dir, "zone", meta.Zone)
			continue
		}
		g.zone[modelKey{z, e.Signal}] = models.NewForecaster(m, hist, version, forecast.SourceZone)
	}
	log.Info("models loaded", "zone_models", len(g.zone), "generic_models", len(g.generic))
}

// locator adapts the region table to gateway.Locator.
type locator struct{ t *regions.Table }

func (l locator) Locate(provider, region string) (forecast.Zone, error) {
	r, err := l.t.Lookup(provider, region)
	if err != nil {
		return "", err
	}
	return r.Zone, nil
}

// climatology is the climatology step's value: the zone's annual figure of
// the signal asked, its provenance version naming the source, column and
// year ("gsf-real-time-cloud:grid-carbon-intensity-average-consumption-annual:2024");
// for a signal without a figure (direct: no bundled source publishes one),
// ENOTFOUND saying so rather than the figure of another signal.
func climatology(t *regions.Table) func(forecast.Zone, forecast.Signal) (float64, string, error) {
	return func(z forecast.Zone, s forecast.Signal) (float64, string, error) {
		f, ok := t.ClimatologyOf(z, s)
		if !ok {
			return 0, "", forecast.Errorf(forecast.ENOTFOUND, "no %s climatology for %s: the bundled annual figures (%s; codecarbon's global_energy_mix.json) are of the lifecycle signal", s, z, regions.ClimatologySource)
		}
		return f.Value, fmt.Sprintf("%s:%d", f.Source, f.Year), nil
	}
}

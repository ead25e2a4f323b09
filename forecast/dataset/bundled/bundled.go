// Package bundled embeds carbongate's default dataset: hourly grid carbon
// intensity (direct and life-cycle, gCO2eq/kWh) and generation per source
// (MWh) for 12 Electricity Maps zones — US-CAL-CISO, US-MIDA-PJM,
// US-TEX-ERCO, US-NE-ISNE, US-NY-NYIS, US-FLA-FPL, US-NW-BPAT, DE, NL, ES,
// SE, PL — from 2020-01-01T00:00Z to 2021-06-30T23:00Z, one gzip-compressed
// layout A file per zone (see package dataset).
//
// The data comes from the hourly series published with the CarbonCast and
// DACF studies (University of Massachusetts Amherst, Apache-2.0), derived
// from EIA-930 (US, public domain) and the ENTSO-E Transparency Platform
// (Europe). See ATTRIBUTION.md, which must ship wherever this data is
// shipped.
package bundled

import (
	"embed"
	"io/fs"
	"maps"
	"sync"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/dataset"
)

//go:embed data/*.csv.gz
var data embed.FS

// FS returns the data directory: one <zone>.csv.gz file per zone, loadable
// with dataset.LoadFS(FS(), ".").
func FS() fs.FS {
	sub, err := fs.Sub(data, "data")
	if err != nil {
		panic("bundled: " + err.Error()) // "data" is a valid constant path
	}
	return sub
}

// load parses the embedded files once per process. The data is immutable,
// so the only state this keeps is the parsed result of constant input.
var load = sync.OnceValues(func() (map[forecast.Zone]*dataset.Table, error) {
	tables, _, err := dataset.LoadFS(FS(), ".")
	return tables, err
})

// Load returns the tables of the 12 bundled zones. The files are parsed on
// the first call only; every call returns a new map, but the Tables are
// shared between callers and must not be modified. The bundled data loads
// without issues (a test checks it), so none are returned.
func Load() (map[forecast.Zone]*dataset.Table, error) {
	tables, err := load()
	if err != nil {
		return nil, err
	}
	return maps.Clone(tables), nil
}

package regions

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/carbongate/carbongate/forecast"
)

// Climatology is the annual grid intensity of a zone.
//
// Its first source is the GSF Real Time Cloud metadata's
// grid-carbon-intensity-average-consumption-annual column: Electricity
// Maps' consumption-based annual average for the row's em-zone-id.
// Electricity Maps publishes that average on a life-cycle basis, so it
// is a figure of the lifecycle signal only. Per zone, the mean over the rows
// of the latest year in which any row of the zone has a value. For zones
// it lacks, data/climatology.csv (figures.go) adds figures of other pinned
// sources, each row naming its signal; no bundled source gives an annual
// direct (combustion-only) figure.

//go:embed data/cloud_region_metadata.csv.gz
var embeddedMetadataGz []byte

func embeddedMetadata() (io.Reader, error) {
	zr, err := gzip.NewReader(bytes.NewReader(embeddedMetadataGz))
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	return bytes.NewReader(b), nil
}

// Figure is one zone's climatology and where it comes from.
type Figure struct {
	Value  float64 // gCO2eq/kWh
	Year   int     // the year of the rows averaged
	Source string  // the source and column
}

// ClimatologySource names the column of the metadata that climatology
// reads, for provenance.
const ClimatologySource = "gsf-real-time-cloud:grid-carbon-intensity-average-consumption-annual"

type climatology map[forecast.Zone]Figure

// Columns of the metadata read for climatology; the others are ignored.
const (
	colYear  = "year"
	colZone  = "em-zone-id"
	colGrid  = "grid-carbon-intensity-average-consumption-annual"
	metaName = "cloud region metadata"
)

// ParseClimatology reads region metadata in the Real Time Cloud CSV layout
// (a header naming at least year, em-zone-id and
// grid-carbon-intensity-average-consumption-annual) and returns each
// zone's climatology. Malformed input (missing column, bad year, zone id or
// intensity) is EINVALID naming the line.
func ParseClimatology(r io.Reader) (climatology, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return nil, metaError(0, "cannot read the header: %v", err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))] = i
	}
	for _, n := range []string{colYear, colZone, colGrid} {
		if _, ok := col[n]; !ok {
			return nil, metaError(1, "no %s column", n)
		}
	}
	type acc struct {
		year, n int
		sum     float64
	}
	accs := map[forecast.Zone]*acc{}
	for {
		rec, line, err := next(cr, metaError)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		get := func(name string) string {
			if i := col[name]; i < len(rec) {
				return strings.TrimSpace(rec[i])
			}
			return ""
		}
		year, err := strconv.Atoi(get(colYear))
		if err != nil {
			return nil, metaError(line, "year %q is not a number", get(colYear))
		}
		z, g := get(colZone), get(colGrid)
		if z == "" || g == "" {
			continue
		}
		zone, err := forecast.ParseZone(z)
		if err != nil {
			return nil, metaError(line, "em-zone-id: %s", forecast.ErrorMessage(err))
		}
		v, err := strconv.ParseFloat(g, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return nil, metaError(line, "%s %q is not a non-negative number", colGrid, g)
		}
		switch a := accs[zone]; {
		case a == nil || year > a.year:
			accs[zone] = &acc{year: year, n: 1, sum: v}
		case year == a.year:
			a.n++
			a.sum += v
		}
	}
	c := climatology{}
	for z, a := range accs {
		c[z] = Figure{Value: a.sum / float64(a.n), Year: a.year, Source: ClimatologySource}
	}
	return c, nil
}

func metaError(line int, format string, args ...any) error {
	return metaErrorNamed(metaName, line, format, args...)
}

// metaErrorNamed is EINVALID naming the input and the line (0: none).
func metaErrorNamed(name string, line int, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if line > 0 {
		msg = fmt.Sprintf("%s line %d: %s", name, line, msg)
	} else {
		msg = name + ": " + msg
	}
	return forecast.Errorf(forecast.EINVALID, "%s", msg)
}

// Climatology returns the zone's annual lifecycle grid intensity in
// gCO2eq/kWh (see ClimatologyOf), and false when no source has one.
func (t *Table) Climatology(zone forecast.Zone) (float64, bool) {
	f, ok := t.ClimatologyOf(zone, forecast.SignalLifecycle)
	return f.Value, ok
}

// ClimatologyOf returns the zone's climatology for signal with its source:
// for lifecycle the GSF metadata's figure, else one of data/climatology.csv
// of that signal; false when there is none.
func (t *Table) ClimatologyOf(zone forecast.Zone, signal forecast.Signal) (Figure, bool) {
	if signal == forecast.SignalLifecycle {
		if f, ok := t.clim[zone]; ok {
			return f, true
		}
	}
	f, ok := t.more[signal][zone]
	return f, ok
}

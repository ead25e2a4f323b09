package regions

import (
	_ "embed"
	"encoding/csv"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/carbongate/carbongate/forecast"
)

// embeddedFigures is data/climatology.csv, written by gen: annual figures
// of other pinned sources for zones the GSF metadata has none for, each
// row naming its signal, year and source (package, file and column).
//
//go:embed data/climatology.csv
var embeddedFigures string

var figureColumns = []string{"zone", "signal", "value", "year", "source", "scope"}

const figuresName = "climatology figures"

// addFigures reads figures in the layout of data/climatology.csv and adds
// each one whose zone has no figure of its signal yet: the GSF metadata's
// stays first. Malformed input is EINVALID naming the line.
func (t *Table) addFigures(r io.Reader) error {
	fail := func(line int, format string, args ...any) error {
		return metaErrorNamed(figuresName, line, format, args...)
	}
	cr := csv.NewReader(r)
	header, err := cr.Read()
	if err != nil {
		return fail(0, "cannot read the header: %v", err)
	}
	if !slices.Equal(header, figureColumns) {
		return fail(1, "header %q, want %q", strings.Join(header, ","), strings.Join(figureColumns, ","))
	}
	for {
		rec, line, err := next(cr, fail)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		zone, err := forecast.ParseZone(rec[0])
		if err != nil {
			return fail(line, "zone: %s", forecast.ErrorMessage(err))
		}
		sig, err := forecast.ParseSignal(rec[1])
		if err != nil {
			return fail(line, "signal: %s", forecast.ErrorMessage(err))
		}
		v, err := strconv.ParseFloat(rec[2], 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return fail(line, "value %q is not a non-negative number", rec[2])
		}
		year, err := strconv.Atoi(rec[3])
		if err != nil {
			return fail(line, "year %q is not a number", rec[3])
		}
		if _, ok := t.ClimatologyOf(zone, sig); ok {
			continue
		}
		if t.more == nil {
			t.more = map[forecast.Signal]climatology{}
		}
		if t.more[sig] == nil {
			t.more[sig] = climatology{}
		}
		t.more[sig][zone] = Figure{Value: v, Year: year, Source: rec[4]}
	}
}

package regions

import (
	"strings"
	"testing"

	"github.com/carbongate/carbongate/forecast"
)

// TestAddFiguresErrors: malformed climatology.csv is EINVALID naming the
// line; a zone the GSF metadata has a figure for keeps that figure.
func TestAddFiguresErrors(t *testing.T) {
	t.Parallel()
	const h = "zone,signal,value,year,source,scope\n"
	for _, in := range []string{
		"",
		"zone,value\n",
		h + "mx!,lifecycle,1,2023,s,country\n",
		h + "MX,sunshine,1,2023,s,country\n",
		h + "MX,lifecycle,-1,2023,s,country\n",
		h + "MX,lifecycle,NaN,2023,s,country\n",
		h + "MX,lifecycle,1,year,s,country\n",
	} {
		tb := &Table{clim: climatology{}}
		if err := tb.addFigures(strings.NewReader(in)); forecast.ErrorCode(err) != forecast.EINVALID || !strings.Contains(err.Error(), figuresName) {
			t.Errorf("%q: %v, want EINVALID naming %s", in, err, figuresName)
		}
	}
	tb := &Table{clim: climatology{"MX": {Value: 400, Year: 2024, Source: ClimatologySource}}}
	if err := tb.addFigures(strings.NewReader(h + "MX,lifecycle,507,2023,s,country\nMX,direct,300,2023,d,country\n")); err != nil {
		t.Fatal(err)
	}
	if f, _ := tb.ClimatologyOf("MX", forecast.SignalLifecycle); f.Value != 400 || f.Source != ClimatologySource {
		t.Errorf("MX lifecycle %+v, want the GSF figure", f)
	}
	if f, ok := tb.ClimatologyOf("MX", forecast.SignalDirect); !ok || f.Value != 300 || f.Source != "d" {
		t.Errorf("MX direct %+v, %v", f, ok)
	}
}

package sqlstore

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
)

// rows is a pgwire.Rows over values, one []any per row.
type rows struct {
	vals   [][]any
	i      int
	closed bool
}

func (r *rows) Next() bool { r.i++; return r.i <= len(r.vals) }
func (r *rows) Err() error { return nil }
func (r *rows) Close()     { r.closed = true }
func (r *rows) Scan(dest ...any) error {
	for j, v := range r.vals[r.i-1] {
		switch d := dest[j].(type) {
		case *string:
			*d = v.(string)
		case *time.Time:
			*d = v.(time.Time)
		case *float64:
			*d = v.(float64)
		case **float64:
			*d, _ = v.(*float64)
		}
	}
	return nil
}

func TestEachForecast(t *testing.T) {
	t.Parallel()
	cet := time.FixedZone("CET", 3600)
	at := time.Date(2024, 1, 1, 1, 0, 0, 0, cet)
	lo, hi := 1.0, 3.0
	r := &rows{vals: [][]any{
		{"DE", "direct", "m", "1", at, at, 2.0, &lo, &hi},
		{"DE", "direct", "m", "1", at, at.Add(time.Hour), 2.5, &lo, nil},
	}}
	var got []store.ForecastRow
	classified := errors.New("classified")
	err := EachForecast(r, func(err error) error {
		if err != nil {
			return classified
		}
		return nil
	}, func(row store.ForecastRow) error { got = append(got, row); return nil })
	if err != nil || len(got) != 2 || !r.closed {
		t.Fatalf("err %v, %d rows, closed %v", err, len(got), r.closed)
	}
	if got[0].Lower != 1 || got[0].Upper != 3 || got[0].IssuedAt.Location() != time.UTC || got[0].Zone != "DE" {
		t.Fatalf("row 0: %+v", got[0])
	}
	if !math.IsNaN(got[1].Lower) || !math.IsNaN(got[1].Upper) {
		t.Fatalf("row 1 with one NULL bound: %+v, want a NaN interval", got[1])
	}
	stop := errors.New("stop")
	r = &rows{vals: [][]any{{"DE", "direct", "m", "1", at, at, 2.0, nil, nil}}}
	if err := EachForecast(r, func(error) error { return classified }, func(store.ForecastRow) error { return stop }); err != stop {
		t.Fatalf("fn's error came back as %v, want it unclassified", err)
	}
}

func TestQueries(t *testing.T) {
	t.Parallel()
	crate := Dialect{Quote: true}
	if got, want := crate.DoneQuery(), `SELECT "zone", "issued_at" FROM "backfill_checkpoints" WHERE "job" = $1 ORDER BY "zone", "issued_at"`; got != want {
		t.Fatalf("DoneQuery:\n%s\nwant\n%s", got, want)
	}
	pg := Dialect{Collate: ` COLLATE "C"`, TextArray: "::text[]"}
	if got, want := pg.DoneQuery(), `SELECT zone, issued_at FROM backfill_checkpoints WHERE job = $1 ORDER BY zone COLLATE "C", issued_at`; got != want {
		t.Fatalf("DoneQuery:\n%s\nwant\n%s", got, want)
	}
	sql, _ := crate.ForecastQuery(store.ForecastQuery{Zones: []forecast.Zone{"DE"}})
	if want := `SELECT "zone", "signal", "model_name", "model_version", "issued_at", "target_time", "value", "lower", "upper" FROM "forecasts" WHERE "zone" = ANY($1) ORDER BY "zone", "model_name", "model_version", "issued_at", "target_time", "signal"`; sql != want {
		t.Fatalf("ForecastQuery:\n%s\nwant\n%s", sql, want)
	}
}

package forecast

import (
	"context"
	"time"
)

// Provenance tells where a forecast came from.
type Provenance struct {
	Model    string    // model name, e.g. carbon-forecaster-DE
	Version  string    // model version, "" when not versioned
	Source   Source    // which step of the fallback chain answered
	IssuedAt time.Time // first forecast hour; history ends just before it
	Reason   string    // why this step answered, when an earlier one did not
	// Skipped names the earlier steps of the fallback chain that did not
	// answer, in order (Reason says why, for people): what code decides
	// on, never the text.
	Skipped []string
	// Vendor names the vendor whose forecast this is (electricitymaps,
	// watttime) when Source is SourceVendor; "" otherwise.
	Vendor string
}

// Forecast is an hourly forecast of one zone's intensity. Lower and Upper,
// when present, bound a prediction interval hour by hour and have the same
// length as Series.Values.
type Forecast struct {
	Zone       Zone
	Signal     Signal
	Series     Series
	Lower      []float64
	Upper      []float64
	Provenance Provenance
}

// Request asks for a forecast of Horizon hours starting at Start (UTC,
// hour-aligned), using only history before Start.
type Request struct {
	Zone    Zone
	Signal  Signal
	Start   time.Time
	Horizon int
}

// Forecaster produces forecasts. Implementations return EINVALID for a bad
// request, ENOTFOUND for a zone they cannot forecast and EUNAVAILABLE when
// an upstream fails; callers fall back to the next Forecaster on any error.
type Forecaster interface {
	Forecast(ctx context.Context, req Request) (Forecast, error)
}

// History gives observed hourly intensity.
type History interface {
	// Last returns the n hours of zone's signal that end at end (exclusive),
	// oldest first. ENOTFOUND when the zone is unknown, EUNAVAILABLE when
	// the history does not reach that far.
	Last(ctx context.Context, zone Zone, signal Signal, end time.Time, n int) ([]float64, error)
}

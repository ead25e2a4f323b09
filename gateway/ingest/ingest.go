// Package ingest keeps the observed carbon intensity of a set of zones up to
// date from live upstream APIs (Electricity Maps, WattTime). A Poller asks
// each Source for the hours after the latest one its Sink holds, turns the
// answers into hourly points and upserts them, so that it resumes where it
// stopped after a restart or an outage.
//
// The clients live in the subpackages electricitymaps and watttime; both
// implement Source. The observed-signals store implements Sink; MemorySink
// is an in-memory Sink for tests and the embedded mode.
//
// Every value is a carbon intensity in gCO2(eq)/kWh: the clients convert
// the upstream units (WattTime answers in lbs/MWh).
package ingest

import (
	"context"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// SignalMarginal is forecast.SignalMarginal, WattTime's co2_moer.
// forecast.Signals lists only the average signals (lifecycle, direct); the
// Poller and MemorySink accept this one too.
const SignalMarginal = forecast.SignalMarginal

// Point is one observation of a zone's signal: the mean intensity in
// gCO2(eq)/kWh over the interval that starts at Time (UTC). Points a Sink
// receives are hourly: Time is on the hour and the value is the mean over
// that hour.
type Point struct {
	Time      time.Time
	Value     float64
	Estimated bool      // the upstream estimated or imputed the value
	UpdatedAt time.Time // when the upstream last revised the value; zero when it does not say
}

// Batch is one answer of a Source: points sorted by Time, each Time once.
type Batch struct {
	Points []Point
	// Period is the length each point covers: time.Hour, or less for
	// finer data (WattTime: 5 minutes), which the Poller averages into
	// hours. It divides an hour.
	Period time.Duration
	// What the client dropped while normalising the answer (see Normalize):
	Duplicates int // repeats of a time with the same value
	Conflicts  int // repeats of a time with another value (the latest revision was kept)
	Missing    int // points without a usable value (null or negative)
}

// Limits tells how a Source can be asked.
type Limits struct {
	// History is how far back the source serves data: the earliest hour
	// it can answer for is the current hour minus History. 0: no limit.
	History time.Duration
	// MaxSpan is the longest [from, to) one Fetch may ask for. 0: no limit.
	MaxSpan time.Duration
}

// Source is an upstream of observed intensity. Implementations are safe for
// concurrent use.
type Source interface {
	// Name labels the source in metrics and logs; the Poller keeps one
	// rate limit per name.
	Name() string
	// Limits tells how far back and how much one Fetch can ask for.
	Limits() Limits
	// Fetch returns the observed points of zone's signal with
	// from ≤ Time < to, normalised (see Normalize), making one upstream
	// request (plus a login when the source needs one). Errors are
	// *forecast.Error values: EUNAUTHORIZED (credentials refused),
	// ENOTFOUND (zone or signal unknown to the source), EINVALID (an answer
	// that cannot be read, or a request the source cannot serve),
	// EUNAVAILABLE (rate limited, down, timed out: worth retrying; see
	// RetryAfter). The caller's own context error is returned as it is.
	Fetch(ctx context.Context, zone forecast.Zone, signal forecast.Signal, from, to time.Time) (Batch, error)
}

// Sink stores observed hourly points; the observed-signals store implements
// it. Implementations are safe for concurrent use.
type Sink interface {
	// Upsert stores hourly points of zone's signal (UTC, on the hour,
	// sorted, each Time once). A point whose (zone, signal, Time) is
	// already stored replaces it, so upserting the same points again is
	// harmless.
	Upsert(ctx context.Context, zone forecast.Zone, signal forecast.Signal, points []Point) error
	// Latest returns the start of the latest stored hour of zone's
	// signal, and false when none is stored.
	Latest(ctx context.Context, zone forecast.Zone, signal forecast.Signal) (time.Time, bool, error)
}

// Feed is one series the Poller keeps up to date: zone's signal from Source.
type Feed struct {
	Source Source
	Zone   forecast.Zone
	Signal forecast.Signal
}

// ParseSignal parses a signal name: lifecycle, direct or marginal; ""
// yields lifecycle.
func ParseSignal(s string) (forecast.Signal, error) { return forecast.ParseAnySignal(s) }

func validSignal(s forecast.Signal) bool {
	return s == forecast.SignalLifecycle || s == forecast.SignalDirect || s == SignalMarginal
}

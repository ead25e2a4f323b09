// Package vendors is the one list of the carbon-intensity vendors
// carbongate polls observed signals from (into the forecast store) and
// takes forecasts of (a step of the chain, gateway/vendorfc). A vendor is a
// type here holding its settings, with its feeds and its forecast client;
// adding one is a type here, a field of runtime.Ingest and a line of its
// list, and its flags in cmd/carbongate.
package vendors

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/ingest"
	"github.com/carbongate/carbongate/gateway/vendorfc"
	"github.com/carbongate/carbongate/oip"
)

// Vendor is one vendor with its settings.
type Vendor interface {
	// Name is the vendor's name in --vendor-forecast and provenance.
	Name() string
	// Polls reports whether the settings ask for observed feeds.
	Polls() bool
	// FeedsForecast reports whether the settings of its feeds are also
	// what its forecasts need (WattTime's regions): given for its
	// forecasts alone, they need no store.
	FeedsForecast() bool
	// Feeds returns the observed feeds of the settings; answers is the
	// process's one budget of vendor answers being read.
	Feeds(answers *oip.BodyBudget, log *slog.Logger) ([]ingest.Feed, error)
	// Forecasts returns the client of its forecasts, horizon hours asked
	// (0: its default), each call bounded by timeout.
	Forecasts(horizon int, timeout time.Duration, answers *oip.BodyBudget, log *slog.Logger) (vendorfc.Client, error)
}

// Find returns the vendor of list named name, or an error listing the
// names.
func Find(list []Vendor, name string) (Vendor, error) {
	names := make([]string, len(list))
	for i, v := range list {
		if v.Name() == name {
			return v, nil
		}
		names[i] = v.Name()
	}
	return nil, fmt.Errorf("--vendor-forecast %q is not one of %s", name, strings.Join(names, ", "))
}

// ParseZones parses a comma-separated zone list.
func ParseZones(s string) ([]forecast.Zone, error) {
	var out []forecast.Zone
	for _, part := range strings.Split(s, ",") {
		z, err := forecast.ParseZone(part)
		if err != nil {
			return nil, fmt.Errorf("%s", forecast.ErrorMessage(err))
		}
		out = append(out, z)
	}
	return out, nil
}

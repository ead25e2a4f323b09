package electricitymaps

import (
	"fmt"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/ingest"
)

// point is one carbon-intensity entry of an answer. CarbonIntensity is nil
// when the API has no value for the hour.
type point struct {
	Zone               string   `json:"zone"`
	CarbonIntensity    *float64 `json:"carbonIntensity"`
	Datetime           string   `json:"datetime"`
	UpdatedAt          string   `json:"updatedAt"`
	EmissionFactorType string   `json:"emissionFactorType"`
	IsEstimated        bool     `json:"isEstimated"`
}

// checkZone makes sure the API answered for the zone asked: it falls back
// to the caller's location for a zone it does not know.
func checkZone(path string, want forecast.Zone, got string) error {
	if got == "" {
		return forecast.Errorf(forecast.EINVALID, "electricitymaps: answer to %s has no zone", path)
	}
	if forecast.Zone(got) != want {
		return forecast.FieldErrorf(forecast.ENOTFOUND, "zone", "electricitymaps answered for zone %s when asked for %s: it does not know %s", got, want, want)
	}
	return nil
}

// batch checks and converts the entries of an answer; field names its
// array.
func batch(path, field string, zone forecast.Zone, signal forecast.Signal, gotZone string, entries *[]point) (ingest.Batch, error) {
	if err := checkZone(path, zone, gotZone); err != nil {
		return ingest.Batch{}, err
	}
	if entries == nil {
		return ingest.Batch{}, forecast.Errorf(forecast.EINVALID, "electricitymaps: answer to %s has no %s array", path, field)
	}
	pts, missing, err := convert(path, field, zone, signal, *entries)
	if err != nil {
		return ingest.Batch{}, err
	}
	out, dups, conflicts := ingest.Normalize(pts)
	return ingest.Batch{Points: out, Period: time.Hour, Duplicates: dups, Conflicts: conflicts, Missing: missing}, nil
}

// convert reads the entries: times in UTC, null or negative values left
// out and counted as missing. An entry of another zone or signal, or a
// time that is missing, unreadable or not on the hour, is EINVALID.
func convert(path, field string, zone forecast.Zone, signal forecast.Signal, entries []point) ([]ingest.Point, int, error) {
	out := make([]ingest.Point, 0, len(entries))
	missing := 0
	for i, e := range entries {
		where := path
		if field != "" {
			where = fmt.Sprintf("%s %s[%d]", path, field, i)
		}
		if e.Zone != "" && forecast.Zone(e.Zone) != zone {
			return nil, 0, forecast.Errorf(forecast.EINVALID, "electricitymaps: %s is for zone %s, not %s", where, e.Zone, zone)
		}
		if e.EmissionFactorType != "" && forecast.Signal(e.EmissionFactorType) != signal {
			return nil, 0, forecast.Errorf(forecast.EINVALID, "electricitymaps: %s has emissionFactorType %q, not %q", where, e.EmissionFactorType, signal)
		}
		if e.Datetime == "" {
			return nil, 0, forecast.Errorf(forecast.EINVALID, "electricitymaps: %s has no datetime", where)
		}
		t, err := ingest.ParseTime(Name, where+" datetime", e.Datetime)
		if err != nil {
			return nil, 0, err
		}
		if !t.Equal(t.Truncate(time.Hour)) {
			return nil, 0, forecast.Errorf(forecast.EINVALID, "electricitymaps: %s datetime %s is not on the hour", where, e.Datetime)
		}
		var updated time.Time
		if e.UpdatedAt != "" {
			if updated, err = ingest.ParseTime(Name, where+" updatedAt", e.UpdatedAt); err != nil {
				return nil, 0, err
			}
		}
		if e.CarbonIntensity == nil || *e.CarbonIntensity < 0 {
			missing++
			continue
		}
		out = append(out, ingest.Point{Time: t, Value: *e.CarbonIntensity, Estimated: e.IsEstimated, UpdatedAt: updated})
	}
	return out, missing, nil
}

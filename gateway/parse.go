package gateway

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// RequestText is a scheduling request as a client writes it, before any
// parsing: what the HTTP API decodes from JSON, and what the admission
// webhook reads from a workload's spec. Nil pointers are absent fields.
type RequestText struct {
	Zones         []string   // Electricity Maps zone ids
	Locations     []Location // cloud regions (provider and region trimmed here)
	Duration      *string    // required: ISO 8601 (PT3H) or Go (3h)
	EarliestStart *string    // RFC 3339
	Deadline      *string    // RFC 3339: the job must finish by then
	Signal        *string    // lifecycle or direct
	Origin        *string    // zone of the run-now baseline
	Step          *string    // spacing of candidate start times

	// The job's power, for the energy and emissions of each window (see
	// Power): one of PowerWatts, InstanceType, or VCPUs with MemoryGiB.
	PowerWatts      *float64 // average watts, PUE included
	InstanceType    *string  // an instance type of the CCF catalogs (forecast/instances)
	Provider        *string  // whose catalog: aws or azure (aliases accepted)
	VCPUs           *float64 // vCPUs of a job on no particular instance type
	MemoryGiB       *float64 // its memory; absent: 0
	Utilization     *float64 // CPU utilisation 0..1 with InstanceType or VCPUs; absent: the catalog's (CCF's 50 %)
	IncludeEmbodied *bool    // also the instance type's embodied emissions
}

// maxListed bounds the zones or locations a request may list before the
// parser stops reading them one by one (the service caps candidates at
// MaxCandidates; this only bounds the work of rejecting more).
const maxListed = 4 * MaxCandidates

// ParseRequest parses and checks t, once for every transport: durations
// (ISO 8601 or Go syntax), RFC 3339 times, zone ids, signal, step,
// deadline ≥ earliest_start + duration when both times are given, and the
// job's power (one source, bounded figures, a known instance type and
// provider). Whether zones and regions exist is Schedule's business.
//
// Every error is a *forecast.Error with code EINVALID (EINFEASIBLE for the
// deadline) and Field naming the offending field.
func ParseRequest(t RequestText) (Request, error) {
	var req Request
	if len(t.Zones) > maxListed {
		return req, forecast.FieldErrorf(forecast.EINVALID, "zones", "%d zones; at most %d candidates", len(t.Zones), MaxCandidates)
	}
	if len(t.Locations) > maxListed {
		return req, forecast.FieldErrorf(forecast.EINVALID, "locations", "%d locations; at most %d candidates", len(t.Locations), MaxCandidates)
	}
	if len(t.Zones) > 0 {
		req.Zones = make([]forecast.Zone, 0, len(t.Zones))
	}
	for i, s := range t.Zones {
		z, err := forecast.ParseZone(s)
		if err != nil {
			return req, forecast.FieldErrorf(forecast.EINVALID, "zones", "zones[%d]: %s", i, forecast.ErrorMessage(err))
		}
		req.Zones = append(req.Zones, z)
	}
	for i, l := range t.Locations {
		p, r := strings.TrimSpace(l.Provider), strings.TrimSpace(l.Region)
		if p == "" || r == "" || len(p) > 64 || len(r) > 128 {
			return req, forecast.FieldErrorf(forecast.EINVALID, "locations", "locations[%d]: provider (≤ 64 characters) and region (≤ 128 characters) are required", i)
		}
		req.Locations = append(req.Locations, Location{Provider: p, Region: r})
	}
	if t.Duration == nil {
		return req, forecast.FieldErrorf(forecast.EINVALID, "duration", "duration is required (ISO 8601 like PT3H, or Go like 3h)")
	}
	d, err := ParseDuration(*t.Duration)
	if err != nil {
		return req, forecast.FieldErrorf(forecast.EINVALID, "duration", "%s", forecast.ErrorMessage(err))
	}
	if d <= 0 {
		return req, forecast.FieldErrorf(forecast.EINVALID, "duration", "duration must be positive, got %q", *t.Duration)
	}
	req.Duration = d
	if t.Step != nil {
		st, err := ParseDuration(*t.Step)
		if err != nil {
			return req, forecast.FieldErrorf(forecast.EINVALID, "step", "%s", forecast.ErrorMessage(err))
		}
		if st < MinStep {
			return req, forecast.FieldErrorf(forecast.EINVALID, "step", "step must be at least %v, got %q", MinStep, *t.Step)
		}
		req.Step = st
	}
	if req.EarliestStart, err = parseTime("earliest_start", t.EarliestStart); err != nil {
		return req, err
	}
	if req.Deadline, err = parseTime("deadline", t.Deadline); err != nil {
		return req, err
	}
	if !req.EarliestStart.IsZero() && !req.Deadline.IsZero() && req.Deadline.Before(req.EarliestStart.Add(req.Duration)) {
		return req, forecast.FieldErrorf(forecast.EINFEASIBLE, "deadline", "deadline %s is before earliest_start %s + duration %v",
			req.Deadline.Format(time.RFC3339Nano), req.EarliestStart.Format(time.RFC3339Nano), req.Duration)
	}
	if t.Signal != nil {
		sig, err := forecast.ParseAnySignal(*t.Signal)
		if err != nil {
			return req, forecast.FieldErrorf(forecast.EINVALID, "signal", "%s", forecast.ErrorMessage(err))
		}
		req.Signal = sig
	}
	if t.Origin != nil && *t.Origin != "" {
		z, err := forecast.ParseZone(*t.Origin)
		if err != nil {
			return req, forecast.FieldErrorf(forecast.EINVALID, "origin", "%s", forecast.ErrorMessage(err))
		}
		req.Origin = z
	}
	if req.Power, err = parsePower(t, req.Locations); err != nil {
		return req, err
	}
	return req, nil
}

// parseTime parses an optional RFC 3339 time; absent or null is zero.
func parseTime(field string, s *string) (time.Time, error) {
	if s == nil {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		return time.Time{}, forecast.FieldErrorf(forecast.EINVALID, field, "%s %q is not an RFC 3339 time like 2021-06-01T00:00:00Z", field, clip(*s))
	}
	return t.UTC(), nil
}

// maxDuration bounds any parsed duration (it exceeds every horizon, and
// keeps arithmetic on times far from overflow).
const maxDuration = 100 * 365 * 24 * time.Hour

// ParseDuration parses an ISO 8601 duration (PT3H, PT90M, P1DT2H, PT0.5H,
// P1W; fractions on any component; years and months are rejected because
// they have no fixed length) or a Go duration (3h, 90m, 1h30m). Durations
// longer than 100 years are rejected. Errors are EINVALID.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, forecast.Errorf(forecast.EINVALID, "empty duration: want ISO 8601 like PT3H or Go like 3h")
	}
	if s[0] == 'P' || s[0] == 'p' {
		return parseISO(s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, forecast.Errorf(forecast.EINVALID, "duration %q is neither ISO 8601 (PT3H) nor Go (3h) syntax", clip(s))
	}
	if d > maxDuration || d < -maxDuration {
		return 0, forecast.Errorf(forecast.EINVALID, "duration %q is longer than 100 years", clip(s))
	}
	return d, nil
}

func parseISO(orig string) (time.Duration, error) {
	bad := func(why string) (time.Duration, error) {
		return 0, forecast.Errorf(forecast.EINVALID, "duration %q is not ISO 8601 (like PT3H, PT90M, P1DT2H): %s", clip(orig), why)
	}
	s := strings.ToUpper(orig[1:])
	const order = "WDHMS" // allowed designators, in order; H, M, S only after T
	units := map[byte]time.Duration{'W': 7 * 24 * time.Hour, 'D': 24 * time.Hour, 'H': time.Hour, 'M': time.Minute, 'S': time.Second}
	var total float64
	var exact time.Duration
	inTime, last, parts := false, -1, 0
	for len(s) > 0 {
		if s[0] == 'T' {
			if inTime {
				return bad("T appears twice")
			}
			inTime, last = true, 1 // after T only H, M, S
			s = s[1:]
			if len(s) == 0 {
				return bad("nothing after T")
			}
			continue
		}
		i := 0
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.' || s[i] == ',') {
			i++
		}
		if i == 0 || i == len(s) {
			return bad("want a number followed by a designator")
		}
		num, des := strings.ReplaceAll(s[:i], ",", "."), s[i]
		s = s[i+1:]
		if des == 'Y' || des == 'M' && !inTime {
			return bad("years and months have no fixed length; use days or hours")
		}
		k := strings.IndexByte(order, des)
		if k < 0 {
			return bad(fmt.Sprintf("unknown designator %q", des))
		}
		if (k >= 2) != inTime {
			return bad("hours, minutes and seconds go after T, weeks and days before it")
		}
		if k <= last {
			return bad("designators out of order or repeated")
		}
		last = k
		v, err := parseDecimal(num)
		if err != nil {
			return bad(err.Error())
		}
		total += v * float64(units[des])
		if total > float64(maxDuration) {
			return 0, forecast.Errorf(forecast.EINVALID, "duration %q is longer than 100 years", clip(orig))
		}
		exact += time.Duration(math.Round(v * float64(units[des])))
		parts++
	}
	if parts == 0 {
		return bad("no components")
	}
	return exact, nil
}

// parseDecimal parses digits with at most one decimal point and at most 9
// fraction digits.
func parseDecimal(s string) (float64, error) {
	intPart, frac, hasDot := strings.Cut(s, ".")
	if strings.Contains(frac, ".") || intPart == "" && frac == "" || hasDot && frac == "" {
		return 0, errors.New("malformed number")
	}
	if len(intPart) > 12 || len(frac) > 9 {
		return 0, errors.New("number too long")
	}
	var v float64
	for _, c := range intPart {
		v = v*10 + float64(c-'0')
	}
	scale := 0.1
	for _, c := range frac {
		v += float64(c-'0') * scale
		scale /= 10
	}
	return v, nil
}

// clip shortens s for an error message.
func clip(s string) string { return forecast.Clip(s, 64) }

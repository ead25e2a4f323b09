package api_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/carbongate/carbongate/gateway/api"
	"github.com/carbongate/carbongate/test/apitest"
)

// client returns a client of carbongate's HTTP API served over the
// embedded gateway (bundled data, replay clock from 2021-06-01).
func client(t *testing.T) *api.Client {
	t.Helper()
	return &api.Client{BaseURL: apitest.ServeBundled(t) + "/"}
}

func ptr[T any](v T) *T { return &v }

// TestClientAgainstServer: the types the client reads are what the
// server writes — every member of a schedule with a power figure is
// filled, the forecast and zone list too — and an error answer is an
// *api.Error naming the field.
func TestClientAgainstServer(t *testing.T) {
	t.Parallel()
	c := client(t)
	ctx := context.Background()
	s, raw, err := c.Schedule(ctx, api.ScheduleRequest{Zones: []string{"DE", "SE"}, Locations: []api.Location{{Provider: "aws", Region: "eu-west-1"}},
		Duration: ptr("3h"), Deadline: ptr("2021-06-03T00:00:00Z"), PowerWatts: ptr(250.0)})
	if err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	d := s.Decision
	switch {
	case d.Zone == "" || d.End.Sub(d.Start) != 3*time.Hour:
		t.Errorf("decision %+v, want a 3 h window", d)
	case s.Baseline == nil || s.SavingsPct == nil || s.SavingsG == nil || d.EmissionsG == nil || d.EnergyKWh == nil:
		t.Errorf("baseline %v, savings %v %v, decision grams %v: want all with a power figure", s.Baseline, s.SavingsPct, s.SavingsG, d.EmissionsG)
	case s.Power == nil || s.Power.Watts != 250 || s.Power.Source != "power_watts":
		t.Errorf("power %+v, want the 250 W given", s.Power)
	case len(s.Alternatives) < 3 || s.Provenance["DE"].Source == "" || s.Unit == "" || s.Signal != "lifecycle" || s.RequestID == "" || s.Clock.Mode != "replay":
		t.Errorf("alternatives %d, provenance %v, unit %q, signal %q, request id %q, clock %+v", len(s.Alternatives), s.Provenance, s.Unit, s.Signal, s.RequestID, s.Clock)
	}

	f, raw, err := c.Forecast(ctx, "DE", "")
	if err != nil || f.Zone != "DE" || len(f.Values) == 0 || f.Provenance.Source == "" || f.Step != "PT1H" {
		t.Errorf("forecast %+v, %v: %s", f, err, raw)
	}
	z, raw, err := c.Zones(ctx)
	if err != nil || len(z.Zones) < 12 || z.Zones[0].Zone == "" {
		t.Errorf("zones %+v, %v: %s", z, err, raw)
	}

	_, _, err = c.Schedule(ctx, api.ScheduleRequest{Zones: []string{"DE"}, Duration: ptr("soon")})
	var e *api.Error
	if !errors.As(err, &e) || e.Status != http.StatusBadRequest || e.Field != "duration" || e.Code != "invalid" {
		t.Errorf("bad duration: %v (%+v), want a 400 naming duration", err, e)
	}
}

// TestClientDoesNotFollowRedirects: a redirect is an answer other than 200,
// not a request sent elsewhere.
func TestClientDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.RedirectHandler("http://example.invalid/v1/zones", http.StatusFound))
	t.Cleanup(ts.Close)
	_, _, err := (&api.Client{BaseURL: ts.URL, Timeout: 5 * time.Second}).Zones(context.Background())
	var e *api.Error
	if !errors.As(err, &e) || e.Status != http.StatusFound {
		t.Fatalf("redirect: %v, want *api.Error with 302", err)
	}
}

package gateway

import (
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

func TestParseDuration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "PT3H", want: 3 * time.Hour},
		{in: "PT90M", want: 90 * time.Minute},
		{in: "P1DT2H", want: 26 * time.Hour},
		{in: "PT0.5H", want: 30 * time.Minute},
		{in: "PT0,25H", want: 15 * time.Minute},
		{in: "P1W", want: 7 * 24 * time.Hour},
		{in: "PT1H30M15S", want: time.Hour + 30*time.Minute + 15*time.Second},
		{in: "pt2h", want: 2 * time.Hour},
		{in: "P2D", want: 48 * time.Hour},
		{in: "3h", want: 3 * time.Hour},
		{in: "90m", want: 90 * time.Minute},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "-3h", want: -3 * time.Hour},
		{in: "", bad: true},
		{in: "P", bad: true},
		{in: "PT", bad: true},
		{in: "P1Y", bad: true},
		{in: "P1M", bad: true},
		{in: "PT1D", bad: true},
		{in: "P1H", bad: true},
		{in: "PT1M1H", bad: true},
		{in: "PT1H1H", bad: true},
		{in: "PT.H", bad: true},
		{in: "PT1.H", bad: true},
		{in: "PT1.2.3H", bad: true},
		{in: "PTH", bad: true},
		{in: "PT3", bad: true},
		{in: "P1DT", bad: true},
		{in: "PT99999999999H", bad: true},
		{in: "3 hours", bad: true},
		{in: "9999999999h", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseDuration(tt.in)
			if tt.bad {
				if forecast.ErrorCode(err) != forecast.EINVALID {
					t.Fatalf("ParseDuration(%q)=%v, %v; want EINVALID", tt.in, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseDuration(%q)=%v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

// TestParseRequest: the webhook and the HTTP API parse through
// ParseRequest; its checks name the field whatever the transport.
func TestParseRequest(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	tests := []struct {
		name        string
		in          RequestText
		code, field string
	}{
		{"ok", RequestText{Zones: []string{"de", " SE "}, Duration: str("PT3H"), Deadline: str("2021-06-03T00:00:00Z"), Step: str("15m")}, "", ""},
		{"missing duration", RequestText{Zones: []string{"DE"}}, forecast.EINVALID, "duration"},
		{"bad zone", RequestText{Zones: []string{"D E"}, Duration: str("1h")}, forecast.EINVALID, "zones"},
		{"bad location", RequestText{Locations: []Location{{Provider: "aws"}}, Duration: str("1h")}, forecast.EINVALID, "locations"},
		{"deadline too early", RequestText{Zones: []string{"DE"}, Duration: str("3h"), EarliestStart: str("2021-06-01T00:00:00Z"), Deadline: str("2021-06-01T02:00:00Z")}, forecast.EINFEASIBLE, "deadline"},
		{"small step", RequestText{Zones: []string{"DE"}, Duration: str("1h"), Step: str("30s")}, forecast.EINVALID, "step"},
	}
	for _, tt := range tests {
		_, err := ParseRequest(tt.in)
		if got := forecast.ErrorCode(err); got != tt.code {
			t.Errorf("%s: code=%q (%v), want %q", tt.name, got, err, tt.code)
		}
		if got := forecast.ErrorField(err); got != tt.field {
			t.Errorf("%s: field=%q (%v), want %q", tt.name, got, err, tt.field)
		}
	}
}

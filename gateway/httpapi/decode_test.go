package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/api"
)

func TestDecodeScheduleRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body  string
		code, field string
	}{
		{"ok", `{"zones":["de","SE"],"duration":"PT3H","deadline":"2021-06-03T00:00:00Z","signal":"direct","origin":"pl","step":"15m"}`, "", ""},
		{"ok locations", `{"locations":[{"provider":"aws","region":"eu-central-1"}],"duration":"3h"}`, "", ""},
		{"empty", ``, forecast.EINVALID, "body"},
		{"not an object", `[1,2]`, forecast.EINVALID, "body"},
		{"null", `null`, forecast.EINVALID, "body"},
		{"malformed", `{"zones":["DE"],`, forecast.EINVALID, "body"},
		{"trailing data", `{"zones":["DE"],"duration":"1h"} {}`, forecast.EINVALID, "body"},
		{"unknown field", `{"zones":["DE"],"duration":"1h","priority":3}`, forecast.EINVALID, "priority"},
		{"member given twice", `{"zones":["DE"],"duration":"1h","zones":["SE"]}`, forecast.EINVALID, "zones"},
		{"member given twice, escaped", `{"zones":["DE"],"power_watts":100,"duration":"1h","power_w\u0061tts":5}`, forecast.EINVALID, "power_watts"},
		{"nested member given twice", `{"locations":[{"provider":"aws","region":"eu-west-1","region":"us-east-1"}],"duration":"1h"}`, forecast.EINVALID, "locations[0].region"},
		{"unknown nested field", `{"locations":[{"provider":"aws","region":"x","az":"a"}],"duration":"1h"}`, forecast.EINVALID, "az"},
		{"names are case-sensitive", `{"ZONES":["DE"],"duration":"1h"}`, forecast.EINVALID, "ZONES"},
		{"names are case-sensitive, escaped", `{"zones":["DE"],"Duration":"1h","signal":"dir\u0065ct"}`, forecast.EINVALID, "Duration"},
		{"nested names are case-sensitive", `{"locations":[{"Provider":"aws","region":"x"}],"duration":"1h"}`, forecast.EINVALID, "Provider"},
		{"wrong type", `{"zones":"DE","duration":"1h"}`, forecast.EINVALID, "zones"},
		{"wrong type duration", `{"zones":["DE"],"duration":3}`, forecast.EINVALID, "duration"},
		{"bad zone id", `{"zones":["D E"],"duration":"1h"}`, forecast.EINVALID, "zones"},
		{"missing duration", `{"zones":["DE"]}`, forecast.EINVALID, "duration"},
		{"malformed duration", `{"zones":["DE"],"duration":"three hours"}`, forecast.EINVALID, "duration"},
		{"zero duration", `{"zones":["DE"],"duration":"PT0H"}`, forecast.EINVALID, "duration"},
		{"negative duration", `{"zones":["DE"],"duration":"-1h"}`, forecast.EINVALID, "duration"},
		{"malformed time", `{"zones":["DE"],"duration":"1h","earliest_start":"2021-06-01 10:00"}`, forecast.EINVALID, "earliest_start"},
		{"malformed deadline", `{"zones":["DE"],"duration":"1h","deadline":"tomorrow"}`, forecast.EINVALID, "deadline"},
		{"deadline too early", `{"zones":["DE"],"duration":"3h","earliest_start":"2021-06-01T00:00:00Z","deadline":"2021-06-01T02:00:00Z"}`, forecast.EINFEASIBLE, "deadline"},
		{"unknown signal", `{"zones":["DE"],"duration":"1h","signal":"nuclear"}`, forecast.EINVALID, "signal"},
		{"bad origin", `{"zones":["DE"],"duration":"1h","origin":"?"}`, forecast.EINVALID, "origin"},
		{"small step", `{"zones":["DE"],"duration":"1h","step":"30s"}`, forecast.EINVALID, "step"},
		{"bad location", `{"locations":[{"provider":"aws"}],"duration":"1h"}`, forecast.EINVALID, "locations"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := DecodeScheduleRequest([]byte(tt.body))
			if got := forecast.ErrorCode(err); got != tt.code {
				t.Fatalf("code=%q (%v), want %q", got, err, tt.code)
			}
			if got := forecast.ErrorField(err); got != tt.field {
				t.Fatalf("field=%q (%v), want %q", got, err, tt.field)
			}
		})
	}
}

// fuzz budget: 2000x (make fuzz; about 4 s on a quiet 2-core machine)
func FuzzDecodeScheduleRequest(f *testing.F) {
	for _, s := range []string{
		`{"zones":["DE","SE","PL","ES"],"duration":"PT3H","deadline":"2021-06-03T00:00:00Z"}`,
		`{"locations":[{"provider":"aws","region":"eu-central-1"}],"duration":"P1DT2H","earliest_start":"2021-06-01T00:00:00+02:00","step":"1m"}`,
		`{"zones":["de"],"duration":"PT0.5H","signal":"direct","origin":"FR"}`,
		`{"zones":[],"duration":"-PT1H"}`,
		`{"zones":["DE"],"duration":"9999999999999h"}`,
		`{"zones":["DE"],"duration":"PT1.H"}`,
		`{"a":1}`, `[]`, `null`, `{`, ``, `"x"`, `{"zones":[1]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeScheduleRequest(body)
		if err != nil {
			var fe *forecast.Error
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T) is not a *forecast.Error", err, err)
			}
			if fe.Code != forecast.EINVALID && fe.Code != forecast.EINFEASIBLE {
				t.Fatalf("code %q, want invalid or infeasible", fe.Code)
			}
			if fe.Field == "" {
				t.Fatalf("error %v names no field", err)
			}
			return
		}
		if req.Duration <= 0 || req.Step != 0 && req.Step < time.Minute {
			t.Fatalf("accepted duration %v step %v", req.Duration, req.Step)
		}
	})
}

// scanCases are bodies for checking scanSchedule against encoding/json:
// ones it takes and ones it must leave to encoding/json.
var scanCases = []string{
	benchBody,
	`{"zones":["DE","SE","PL","ES"],"duration":"PT3H","deadline":"2021-06-03T00:00:00Z"}`,
	" \t\r\n{ \"zones\" : [ \"de\" , \"SE\" ] , \"duration\" : \"3h\" , \"earliest_start\" : \"2021-06-01T00:00:00+02:00\" , \"deadline\" : \"2021-06-03T00:00:00Z\" , \"signal\" : \"direct\" , \"origin\" : \"pl\" , \"step\" : \"15m\" } \n",
	`{}`, `{"zones":[]}`, `{"zones":[],"duration":""}`, `{"duration":"\u0050T3H"}`, `{"duration":"P\u00e9"}`,
	`{"Zones":["DE"],"duration":"1h"}`, `{"zones":["DE"],"zones":["SE"],"duration":"1h"}`,
	`{"zones":null,"duration":"1h"}`, `{"zones":["DE"],"duration":null}`, `{"zones":["DE",1],"duration":"1h"}`,
	`{"zones":["DE"],"duration":"1h",}`, `{"zones":["DE",],"duration":"1h"}`, `{"zones":["DE"] "duration":"1h"}`,
	`{"zones":["DE"],"duration":"1h"} x`, `{"zones":["DE"],"duration":"1h"}{}`, `{"zones":["DE"],"duration":"1h"`,
	`{"locations":[{"provider":"aws","region":"eu-central-1"}],"duration":"3h"}`, `{"priority":1}`,
	"{\"zones\":[\"D\tE\"]}", "{\"zones\":[\"D\x7fE\"]}", "{\"zones\":[\"D\xffE\"]}", `{"zones":["a\"b"]}`,
	`[]`, `null`, `"x"`, `{`, `}`, `{"zones"}`, `{"zones":}`, `{"zones":[}`, `{"zones":"DE"}`,
}

// TestScanScheduleMatchesEncodingJSON checks that scanSchedule, when it
// takes a body, decodes it as encoding/json does without error.
func TestScanScheduleMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	took := 0
	for _, body := range scanCases {
		if checkScan(t, []byte(body)) {
			took++
		}
	}
	if took < 5 {
		t.Fatalf("scanSchedule took %d of the bodies, want at least 5", took)
	}
}

// fuzz budget: 4000x (make fuzz; about 4 s on a quiet 2-core machine)
func FuzzScanSchedule(f *testing.F) {
	for _, s := range scanCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkScan(t, body) })
}

// checkScan fails t when scanSchedule takes body but encoding/json (as
// DecodeScheduleRequest uses it) rejects it or decodes it differently, and
// reports whether scanSchedule took it.
func checkScan(t *testing.T, body []byte) bool {
	t.Helper()
	got, ok := scanSchedule(body)
	if !ok {
		return false
	}
	var want api.ScheduleRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&want); err != nil {
		t.Fatalf("scanSchedule took %q, encoding/json: %v", body, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		t.Fatalf("scanSchedule took %q, encoding/json finds more after the object", body)
	}
	if body[firstNonSpace(body)] != '{' {
		t.Fatalf("scanSchedule took %q, not an object", body)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("scanSchedule(%q) = %+v, encoding/json %+v", body, got, want)
	}
	return true
}

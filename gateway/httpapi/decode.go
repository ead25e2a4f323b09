package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway"
	"github.com/carbongate/carbongate/gateway/api"
	"github.com/carbongate/carbongate/internal/strictjson"
)

// DecodeScheduleRequest parses the JSON body of POST /v1/schedule: the JSON
// shape here (no unknown fields, member names spelled exactly, nothing
// after the object), the fields by gateway.ParseRequest, as every
// transport parses them.
//
// Every error is a *forecast.Error with code EINVALID (EINFEASIBLE for the
// deadline) and Field naming the offending field ("body" for malformed JSON).
func DecodeScheduleRequest(body []byte) (gateway.Request, error) {
	var w api.ScheduleRequest
	if len(bytes.TrimSpace(body)) == 0 {
		return gateway.Request{}, forecast.FieldErrorf(forecast.EINVALID, "body", "empty request body: want a JSON object")
	}
	if sw, ok := scanSchedule(body); ok {
		w = sw
	} else {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&w); err != nil {
			return gateway.Request{}, jsonError(err)
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return gateway.Request{}, forecast.FieldErrorf(forecast.EINVALID, "body", "unexpected data after the JSON object")
		}
		if body[firstNonSpace(body)] != '{' {
			return gateway.Request{}, forecast.FieldErrorf(forecast.EINVALID, "body", "request body must be a JSON object")
		}
		if err := exactNames(body); err != nil {
			return gateway.Request{}, err
		}
		if err := strictjson.Check(body); err != nil {
			return gateway.Request{}, err
		}
	}

	return gateway.ParseRequest(requestText(&w))
}

// requestText is w as the gateway parses it.
func requestText(w *api.ScheduleRequest) gateway.RequestText {
	t := gateway.RequestText{Zones: w.Zones, Duration: w.Duration, EarliestStart: w.EarliestStart,
		Deadline: w.Deadline, Signal: w.Signal, Origin: w.Origin, Step: w.Step,
		PowerWatts: w.PowerWatts, InstanceType: w.InstanceType, Provider: w.Provider, VCPUs: w.VCPUs, MemoryGiB: w.MemoryGiB,
		Utilization: w.Utilization, IncludeEmbodied: w.IncludeEmbodied}
	if len(w.Locations) > 0 {
		t.Locations = make([]gateway.Location, len(w.Locations))
		for i, l := range w.Locations {
			t.Locations[i] = gateway.Location{Provider: l.Provider, Region: l.Region}
		}
	}
	return t
}

// Member names of a scheduling request, as the OpenAPI document spells
// them.
var (
	scheduleNames = []string{"zones", "locations", "duration", "earliest_start", "deadline", "signal", "origin", "step",
		"power_watts", "instance_type", "provider", "vcpus", "memory_gib", "utilization", "include_embodied"}
	locationNames = []string{"provider", "region"}
)

// exactNames rejects member names that encoding/json matched to a field
// only case-insensitively ("ZONES"): names are case-sensitive, as the
// OpenAPI document says. body has decoded into api.ScheduleRequest already.
func exactNames(body []byte) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return jsonError(err)
	}
	for name, v := range top {
		if !slices.Contains(scheduleNames, name) {
			return unknownName(name)
		}
		var locs []map[string]json.RawMessage
		if name != "locations" || json.Unmarshal(v, &locs) != nil {
			continue
		}
		for _, l := range locs {
			for n := range l {
				if !slices.Contains(locationNames, n) {
					return unknownName(n)
				}
			}
		}
	}
	return nil
}

func unknownName(name string) error {
	name = forecast.Clip(name, 64)
	return forecast.FieldErrorf(forecast.EINVALID, name, "unknown field %q (member names are case-sensitive)", name)
}

func firstNonSpace(b []byte) int {
	for i, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return i
		}
	}
	return 0
}

// jsonError turns an encoding/json error into an EINVALID naming the field.
func jsonError(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return &forecast.Error{Code: forecast.EINVALID, Field: "body", Message: fmt.Sprintf("malformed JSON at byte %d: %s", se.Offset, se.Error()), Err: err}
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "body"
		}
		return &forecast.Error{Code: forecast.EINVALID, Field: field, Message: fmt.Sprintf("%s must be %s, not JSON %s", field, jsonType(te), te.Value), Err: err}
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return &forecast.Error{Code: forecast.EINVALID, Field: "body", Message: "truncated JSON", Err: err}
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		field := name
		if field == "" {
			field = "body"
		}
		return &forecast.Error{Code: forecast.EINVALID, Field: field, Message: fmt.Sprintf("unknown field %q", name), Err: err}
	}
	return &forecast.Error{Code: forecast.EINVALID, Field: "body", Message: "malformed JSON request", Err: err}
}

func jsonType(te *json.UnmarshalTypeError) string {
	switch te.Type.Kind().String() {
	case "slice":
		return "an array"
	case "struct", "map":
		return "an object"
	case "ptr", "string":
		return "a string"
	}
	return te.Type.String()
}

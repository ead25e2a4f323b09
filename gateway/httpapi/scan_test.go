package httpapi

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/gateway/api"
)

// slowFields are the members of a scheduling request that scanSchedule
// leaves to encoding/json on purpose: numbers, booleans and arrays of
// objects, which the scanner does not read. Every other member of
// api.ScheduleRequest must be one the scanner takes.
var slowFields = []string{
	"locations", "power_watts", "instance_type", "provider", "vcpus", "memory_gib", "utilization", "include_embodied",
}

// sampleJSON returns a JSON value of type t as a client would send it,
// false for a type it does not know.
func sampleJSON(t reflect.Type) (string, bool) {
	switch {
	case t.Kind() == reflect.Pointer:
		return sampleJSON(t.Elem())
	case t.Kind() == reflect.String:
		return `"DE"`, true
	case t.Kind() == reflect.Float64:
		return `2.5`, true
	case t.Kind() == reflect.Bool:
		return `true`, true
	case t.Kind() == reflect.Slice:
		v, ok := sampleJSON(t.Elem())
		return "[" + v + "]", ok
	case t.Kind() == reflect.Struct:
		var members []string
		for f := range t.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			v, ok := sampleJSON(f.Type)
			if !ok {
				return "", false
			}
			members = append(members, `"`+name+`":`+v)
		}
		return "{" + strings.Join(members, ",") + "}", true
	}
	return "", false
}

// TestScanCoversRequestFields fails when api.ScheduleRequest gains a member that
// scanSchedule neither takes nor is listed in slowFields: such requests
// would silently take the slow path. Each member is sent alone; the fast
// path must take exactly the members not in slowFields, and decode them as
// encoding/json does.
func TestScanCoversRequestFields(t *testing.T) {
	t.Parallel()
	var names []string
	for f := range reflect.TypeFor[api.ScheduleRequest]().Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			t.Errorf("api.ScheduleRequest.%s has no JSON name", f.Name)
			continue
		}
		names = append(names, name)
		v, ok := sampleJSON(f.Type)
		if !ok {
			t.Errorf("api.ScheduleRequest.%s: no sample value for type %s; teach sampleJSON it", f.Name, f.Type)
			continue
		}
		body := []byte(`{"` + name + `":` + v + `}`)
		took := checkScan(t, body)
		switch slow := slices.Contains(slowFields, name); {
		case !took && !slow:
			t.Errorf("scanSchedule does not take %s: add the member %q to the scanner (scan.go), or to slowFields if it is to go through encoding/json", body, name)
		case took && slow:
			t.Errorf("scanSchedule takes %s, which slowFields lists as left to encoding/json: drop it from slowFields", body)
		}
	}
	for _, name := range slowFields {
		if !slices.Contains(names, name) {
			t.Errorf("slowFields lists %q, which api.ScheduleRequest does not have", name)
		}
	}
}

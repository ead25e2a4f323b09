package admission

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/carbongate/carbongate/forecast/regions"
	"github.com/carbongate/carbongate/gateway"
)

// object is the part of a VmTemplate the decision reads.
type object struct {
	hasAnnotations bool // metadata.annotations is present and not null
	hasSpec        bool // spec is present and an object
	spec           map[string]json.RawMessage
	annotations    map[string]json.RawMessage // nil when not an object
}

// spec is a validated VmTemplate spec.
type spec struct {
	Duration      string // as given: carbongate parses it again
	Deadline      string // "" when absent
	EarliestStart string // "" when absent (now)
	MaxLatencyMs  float64
	OriginRegion  string
	Provider      string // one of regions.Providers(); DefaultProvider when absent
	ProviderGiven bool   // spec.provider was present
	ResidencyEU   bool
	Origin        string // zone of the run-now baseline; "": the first candidate
	// MinCPU and MinRAMGiB are the template's size when it gives both
	// (MinCPU 0 otherwise); MinRAMGiB may be 0 or less ("0", "-1Gi").
	MinCPU    int
	MinRAMGiB float64
	// InstanceTypeGiven: spec.instanceType is present and not null.
	InstanceTypeGiven bool
}

// parseObject reads the metadata and spec of a raw object. It fails only
// when raw is not a JSON object.
func parseObject(raw []byte) (object, error) {
	var top map[string]json.RawMessage
	if len(bytes.TrimSpace(raw)) == 0 {
		return object{}, fmt.Errorf("the object is empty")
	}
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		return object{}, fmt.Errorf("the object is not a JSON object")
	}
	var o object
	var meta map[string]json.RawMessage
	if m, ok := top["metadata"]; ok && json.Unmarshal(m, &meta) == nil {
		a, ok := meta["annotations"]
		o.hasAnnotations = ok && !isNull(a)
		_ = json.Unmarshal(a, &o.annotations)
	}
	if s, ok := top["spec"]; ok && json.Unmarshal(s, &o.spec) == nil && o.spec != nil {
		o.hasSpec = true
	}
	return o, nil
}

// scheduled reports whether the object already has spec.schedulingRegion.
func (o object) scheduled() bool {
	v, ok := o.spec["schedulingRegion"]
	if !ok || isNull(v) {
		return false
	}
	var s string
	return json.Unmarshal(v, &s) != nil || s != ""
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

// field returns spec[name] unless it is absent or null.
func (o object) field(name string) (json.RawMessage, bool) {
	v, ok := o.spec[name]
	if !ok || isNull(v) {
		return nil, false
	}
	return v, true
}

// validate checks the spec (step 1 of the decision procedure) and returns
// every problem, each naming its field, in a fixed order.
func (o object) validate() (spec, []string) {
	if !o.hasSpec {
		return spec{}, []string{"spec: required: a VmTemplate needs a spec object"}
	}
	s := spec{Provider: DefaultProvider}
	var bad []string
	check := func(field, problem string) {
		if problem != "" {
			bad = append(bad, "spec."+field+": "+problem)
		}
	}
	cpu, hasCPU := o.field("minCPU")
	if hasCPU && !integerAtLeast(cpu, 1) {
		check("minCPU", "must be an integer ≥ 1, got "+clip(cpu))
	}
	ram, hasRAM := o.field("minRAM")
	gib, ok := quantityGiB(ram)
	if hasRAM && !ok {
		check("minRAM", `must be a Kubernetes quantity string like "16Gi", got `+clip(ram))
	}
	if hasCPU && hasRAM && len(bad) == 0 {
		n, _ := number(cpu)
		s.MinCPU, s.MinRAMGiB = int(min(n, math.MaxInt32)), gib
	}
	_, s.InstanceTypeGiven = o.field("instanceType")
	if v, ok := o.field("duration"); !ok {
		check("duration", `required: an ISO 8601 duration like "PT3H"`)
	} else if p := durationProblem(v); p != "" {
		check("duration", p)
	} else {
		s.Duration, _ = text(v)
	}
	if v, ok := o.field("deadline"); ok {
		if str, ok := text(v); ok && (str == "" || rfc3339(str)) {
			s.Deadline = str // "" is absent
		} else {
			check("deadline", `must be an RFC 3339 time like "2021-06-03T00:00:00Z", got `+clip(v))
		}
	}
	if v, ok := o.field("maxLatencyMs"); !ok {
		check("maxLatencyMs", "required: the largest P95 round-trip time from spec.originRegion, in ms")
	} else if !integerAtLeast(v, 0) {
		check("maxLatencyMs", "must be an integer ≥ 0, got "+clip(v))
	} else {
		s.MaxLatencyMs, _ = number(v)
	}
	if v, ok := o.field("provider"); ok {
		s.ProviderGiven = true
		if str, ok := text(v); ok && slices.Contains(regions.Providers(), str) {
			s.Provider = str
		} else {
			check("provider", fmt.Sprintf("unknown provider %s: want one of %s (absent: %s)", clip(v), strings.Join(regions.Providers(), ", "), DefaultProvider))
		}
	}
	if v, ok := o.field("originRegion"); !ok {
		check("originRegion", "required: the region of spec.provider where the users or data are")
	} else if str, ok := text(v); !ok || str == "" {
		check("originRegion", "must be a region name of spec.provider, got "+clip(v))
	} else {
		s.OriginRegion = str
	}
	if v, ok := o.field("residency"); ok {
		if str, ok := text(v); ok && (str == "EU" || str == "") {
			s.ResidencyEU = str == "EU"
		} else {
			check("residency", `must be "EU" or empty, got `+clip(v))
		}
	}
	return s, bad
}

// durationProblem says what is wrong with a spec.duration value, or ""
// for a positive duration in the syntax /v1/schedule takes (ISO 8601 like
// PT3H, or Go like 3h).
func durationProblem(v json.RawMessage) string {
	str, ok := text(v)
	switch {
	case !ok:
		return `must be a string like "PT3H", got ` + clip(v)
	case strings.TrimSpace(str) == "":
		return "empty duration: want ISO 8601 like PT3H or Go like 3h"
	}
	d, err := gateway.ParseDuration(str)
	switch {
	case err != nil:
		return clip(v) + " is neither ISO 8601 (like PT3H, PT90M, P1DT2H) nor Go (like 3h) syntax"
	case d <= 0:
		return "must be positive, got " + clip(v)
	}
	return ""
}

func integerAtLeast(v json.RawMessage, min float64) bool {
	n, ok := number(v)
	return ok && n == math.Trunc(n) && n >= min
}

// quantityGiB returns the GiB of a Kubernetes resource quantity string,
// and false when v is not one.
func quantityGiB(v json.RawMessage) (float64, bool) {
	str, ok := text(v)
	if !ok {
		return 0, false
	}
	q, err := resource.ParseQuantity(str)
	if err != nil {
		return 0, false
	}
	return q.AsApproximateFloat64() / (1 << 30), true
}

func rfc3339(s string) bool {
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}

// number returns a JSON number's value.
func number(v json.RawMessage) (float64, bool) {
	var n float64
	if err := json.Unmarshal(v, &n); err != nil {
		return 0, false
	}
	return n, true
}

// text returns a JSON string's value.
func text(v json.RawMessage) (string, bool) {
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", false
	}
	return s, true
}

// clip returns v's JSON text, shortened for messages.
func clip(v json.RawMessage) string {
	s := string(bytes.TrimSpace(v))
	if len(s) > 64 {
		s = s[:61] + "..."
	}
	return s
}

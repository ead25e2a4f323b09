package admission

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/carbongate/carbongate/forecast/instances"
	"github.com/carbongate/carbongate/gateway"
	"github.com/carbongate/carbongate/gateway/hold"
	"github.com/carbongate/carbongate/gateway/hold/v1alpha1"
)

// op is one RFC 6902 operation: the webhook adds, and removes only the
// carbongate.io outputs a user wrote (strip.go).
type op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// MarshalJSON writes a remove without a value.
func (o op) MarshalJSON() ([]byte, error) {
	if o.Op == "remove" {
		return json.Marshal(struct {
			Op   string `json:"op"`
			Path string `json:"path"`
		}{o.Op, o.Path})
	}
	type plain op
	return json.Marshal(plain(o))
}

func add(path string, value any) op { return op{Op: "add", Path: path, Value: value} }

// pointerEscape escapes a JSON Pointer token (RFC 6901): ~ as ~0, / as ~1.
func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// annotate appends the ops that set annotation key to value, adding
// metadata.annotations first when obj has none.
func annotate(ops []op, obj object, key, value string) []op {
	if !obj.hasAnnotations {
		ops = append(ops, add("/metadata/annotations", map[string]string{}))
	}
	return append(ops, add("/metadata/annotations/"+pointerEscape(key), value))
}

// stamp formats t as the HTTP API does (time.Time's JSON form).
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// scheduledPatch returns the patch of a scheduled template, in order:
// spec.provider (when absent), spec.schedulingRegion, spec.schedulingTime,
// spec.instanceType (see instanceType), then the provenance annotation
// (after metadata.annotations when absent).
func scheduledPatch(obj object, s spec, region string, d gateway.Decision, requestID string) ([]op, error) {
	var ops []op
	if !s.ProviderGiven {
		ops = append(ops, add("/spec/provider", s.Provider))
	}
	ops = append(ops, add("/spec/schedulingRegion", region), add("/spec/schedulingTime", stamp(d.Decision.Start)))
	if t, ok := instanceType(s); ok {
		ops = append(ops, add("/spec/instanceType", t))
	}
	p, err := provenanceJSON(region, d, requestID)
	if err != nil {
		return nil, err
	}
	return annotate(ops, obj, AnnotationProvenance, p), nil
}

// provenanceJSON is the provenance annotation of decision d in region:
// v1alpha1.Provenance as compact JSON, its keys in sorted order (as OPA's
// json.marshal writes them). Times and numbers are written as POST
// /v1/schedule writes them.
func provenanceJSON(region string, d gateway.Decision, requestID string) (string, error) {
	p := v1alpha1.Provenance{
		Zone: string(d.Decision.Zone), Region: region, Start: stamp(d.Decision.Start), End: stamp(d.Decision.End),
		MeanIntensity: d.Decision.Mean, SavingsPct: d.SavingsPct, RequestID: requestID,
		Sources: make(map[string]string, len(d.Provenance)),
	}
	for z, pv := range d.Provenance {
		p.Sources[string(z)] = string(pv.Source)
	}
	b, err := json.Marshal(p)
	return string(b), err
}

// promise writes d's promise on the annotations a: the saving against
// running at once (hold.AnnotationSavingsPct), the zone that runs in
// (hold.AnnotationBaselineZone) and, for a declared power of watts over
// dur, the grams avoided (hold.AnnotationAvoidedGrams); nothing when d has
// no baseline.
func promise(a map[string]string, d gateway.Decision, watts float64, dur time.Duration) {
	if d.Baseline == nil || d.SavingsPct == nil {
		return
	}
	a[hold.AnnotationSavingsPct] = strconv.FormatFloat(*d.SavingsPct, 'f', 1, 64)
	a[hold.AnnotationBaselineZone] = string(d.Baseline.Zone)
	if watts > 0 {
		g := hold.Grams(watts, dur, d.Baseline.Mean-d.Decision.Mean)
		a[hold.AnnotationAvoidedGrams] = strconv.FormatFloat(g, 'f', 1, 64)
	}
}

// instanceType returns the instance type spec.instanceType gets: for a
// template with minCPU and minRAM and no instanceType, on a provider with
// an instance catalog, the type forecast/instances' Fit chooses (least
// estimated power at the default utilisation; no burstable, GPU or
// unknown-processor types). ok is false when there is none to add,
// including when no type fits (the template is scheduled without one).
func instanceType(s spec) (name string, ok bool) {
	if s.MinCPU == 0 || s.InstanceTypeGiven {
		return "", false
	}
	cat, err := instances.Load(s.Provider)
	if err != nil {
		return "", false
	}
	// Any memory fits a request of none ("0", "-1Gi").
	res, err := cat.Fit(instances.Request{MinCPU: s.MinCPU, MinRAMGiB: max(s.MinRAMGiB, math.SmallestNonzeroFloat64)})
	if err != nil {
		return "", false
	}
	return res.Choice.Type.Name, true
}

// restore returns the patch of an UPDATE to the scheduled template old:
// the scheduling fields the new object dropped, with their old values.
func restore(old, obj object) []op {
	var ops []op
	for _, f := range []string{"schedulingRegion", "schedulingTime"} {
		v, ok := old.field(f)
		if _, has := obj.field(f); !ok || has {
			continue
		}
		if !obj.hasSpec && len(ops) == 0 {
			ops = append(ops, add("/spec", map[string]any{}))
		}
		ops = append(ops, add("/spec/"+f, v))
	}
	return ops
}

// marshalPatch encodes ops as the JSON the AdmissionResponse carries
// (encoding/json base64-encodes it on the wire).
func marshalPatch(ops []op) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ops); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// rawPatch builds add-only operations against an object's JSON as the
// API server sent it, which is never re-encoded: fields this version of
// k8s.io/api does not know, quantities as written and absent fields stay
// as they are.
type rawPatch struct {
	doc map[string]any // the decoded object, kept in step with ops
	ops []op
	err error // the first path that could not be followed
}

func newRawPatch(raw []byte) (*rawPatch, error) {
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	if doc == nil {
		return nil, errors.New("the object is null")
	}
	return &rawPatch{doc: doc}, nil
}

// set adds value at path, first adding as {} each object member on the
// way that is absent or null.
func (p *rawPatch) set(value any, path ...string) {
	if parent := p.object(path[:len(path)-1]); parent != nil {
		p.ops = append(p.ops, add(pointer(path), value))
		parent[path[len(path)-1]] = value
	}
}

// appendTo adds value at the end of the array at path, adding the array
// when absent or null.
func (p *rawPatch) appendTo(value any, path ...string) {
	parent := p.object(path[:len(path)-1])
	if parent == nil {
		return
	}
	key := path[len(path)-1]
	arr, ok := parent[key].([]any)
	if !ok {
		p.set([]any{value}, path...)
		return
	}
	p.ops = append(p.ops, add(pointer(path)+"/-", value))
	parent[key] = append(arr, value)
}

// object returns the object at path, adding the object members on the way
// that are absent or null; a step into an array is an index. It returns
// nil, and records p.err, when path cannot be followed.
func (p *rawPatch) object(path []string) map[string]any {
	var cur any = p.doc
	for i, tok := range path {
		switch c := cur.(type) {
		case map[string]any:
			if c[tok] == nil {
				c[tok] = map[string]any{}
				p.ops = append(p.ops, add(pointer(path[:i+1]), map[string]any{}))
			}
			cur = c[tok]
		case []any:
			n, err := strconv.Atoi(tok)
			if err != nil || n < 0 || n >= len(c) {
				return p.fail(path[:i+1])
			}
			cur = c[n]
		default:
			return p.fail(path[:i])
		}
	}
	m, ok := cur.(map[string]any)
	if !ok {
		return p.fail(path)
	}
	return m
}

func (p *rawPatch) fail(path []string) map[string]any {
	if p.err == nil {
		p.err = fmt.Errorf("%s is not an object or array the patch can extend", pointer(path))
	}
	return nil
}

// outcome admits the object with p's operations, or denies it with 400
// when a path could not be followed (an object the API server would not
// have sent).
func (p *rawPatch) outcome() outcome {
	if p.err != nil {
		return deny(400, "request.object: %v", p.err)
	}
	return outcome{allowed: true, patch: p.ops}
}

// pointer is the JSON Pointer of path.
func pointer(path []string) string {
	var b strings.Builder
	for _, tok := range path {
		b.WriteString("/" + pointerEscape(tok))
	}
	return b.String()
}

package admission

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"
)

// A VmTemplate's decision is the webhook's: spec.schedulingRegion,
// spec.schedulingTime and the annotations below. A template being
// scheduled loses any it carries before the decision (a user's value would
// otherwise survive a fail-open admission, and the controller would create
// the provider's object where the user said); a scheduled template keeps
// its own: a change of the decision fields is denied, and the annotations
// are put back as they were. The OPA bundle does the same (object.rego).

// decisionFields are the spec fields of the decision, in patch order.
var decisionFields = []string{"schedulingRegion", "schedulingTime"}

// decisionAnnotations are the annotations of the decision, in patch order.
var decisionAnnotations = []string{AnnotationProvenance, AnnotationUnscheduled}

// stripTemplate returns the ops removing the decision fields and
// annotations obj carries, and obj without them.
func stripTemplate(obj object) ([]op, object) {
	var ops []op
	spec, annotations := maps.Clone(obj.spec), maps.Clone(obj.annotations)
	for _, f := range decisionFields {
		if _, ok := spec[f]; ok {
			delete(spec, f)
			ops = append(ops, op{Op: "remove", Path: "/spec/" + f})
		}
	}
	for _, k := range decisionAnnotations {
		if _, ok := annotations[k]; ok {
			delete(annotations, k)
			ops = append(ops, op{Op: "remove", Path: "/metadata/annotations/" + pointerEscape(k)})
		}
	}
	obj.spec, obj.annotations = spec, annotations
	return ops, obj
}

// keepTemplateDecision decides an UPDATE of the scheduled template old:
// denied (400) when it changes a decision field; otherwise admitted with
// the decision fields it dropped and the decision annotations it dropped,
// changed or added put back as old has them.
func keepTemplateDecision(old, obj object) outcome {
	var bad []string
	for _, f := range decisionFields {
		v, ok := obj.field(f)
		if !ok {
			continue
		}
		if was, had := old.field(f); !had || !sameJSON(v, was) {
			prev := "absent"
			if had {
				prev = string(was)
			}
			bad = append(bad, fmt.Sprintf("spec.%s: is carbongate's decision and cannot be changed (it is %s); delete and re-create the VmTemplate to schedule it again", f, prev))
		}
	}
	if len(bad) > 0 {
		return deny(400, "%s", strings.Join(bad, "; "))
	}
	ops := restore(old, obj)
	for _, k := range decisionAnnotations {
		was, had := old.annotations[k]
		v, has := obj.annotations[k]
		switch {
		case had && (!has || !sameJSON(v, was)):
			var s string
			if json.Unmarshal(was, &s) != nil {
				continue
			}
			ops = annotate(ops, obj, k, s)
			obj.hasAnnotations = true
		case !had && has:
			ops = append(ops, op{Op: "remove", Path: "/metadata/annotations/" + pointerEscape(k)})
		}
	}
	return outcome{allowed: true, patch: ops}
}

// sameJSON reports whether two JSON values are equal.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

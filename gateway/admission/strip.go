package admission

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carbongate/carbongate/gateway/hold"
)

// This file keeps the carbongate.io outputs of Jobs and Pods (the label
// hold.Label and the annotations hold.Outputs and hold.ReleaseStamp) what
// carbongate wrote, before the decision reads the object: a created object
// loses any it carries; an updated one gets the old object's back, except
// that a release (the label going from held to released on an object no
// longer suspended or gated: the controller's patch, or someone letting
// the workload run) keeps its new label and stamp, and an update whose
// ledger record (hold.Record) verifies as the controller's keeps it, as
// does one whose held decision, moved by the controller, verifies. A user
// therefore cannot forge a credit or a realized saving, move a held
// workload's time, or relabel it released while it stays suspended. The controller does not rely on this alone:
// it verifies each decision's signature (hold.Signer), for the objects
// this webhook never sees.

// sanitized runs next on req with its object's outputs made trustworthy,
// and puts the ops that did it before next's patch.
func (w *Webhook) sanitized(req *admissionv1.AdmissionRequest, next func(*admissionv1.AdmissionRequest) outcome) outcome {
	if w.cfg.Workloads.Cluster == nil || (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) {
		return next(req)
	}
	ops, raw, bad := sanitizeWorkload(req, w.cfg.Workloads.Signer)
	if bad != "" {
		return deny(400, "%s", bad)
	}
	if len(ops) == 0 {
		return next(req)
	}
	clean := *req
	clean.Object.Raw = raw
	o := next(&clean)
	if o.allowed {
		o.patch = append(ops, o.patch...)
	}
	return o
}

// sanitizeWorkload returns the ops that set the outputs of req's object
// and the object with them applied, or a message naming what is malformed.
func sanitizeWorkload(req *admissionv1.AdmissionRequest, signer *hold.Signer) ([]op, []byte, string) {
	old, bad := oldMetadata(req)
	if bad != "" {
		return nil, nil, bad
	}
	// Most objects carry the outputs they should (none, on CREATE): their
	// metadata says so without decoding the whole object.
	var meta metav1.PartialObjectMetadata
	if err := json.Unmarshal(req.Object.Raw, &meta); err != nil {
		return nil, nil, fmt.Sprintf("request.object: %v", err)
	}
	recorded := recordVerified(req, meta.ObjectMeta, signer)
	// The controller moved a hold to a newer forecast's start, re-signed.
	redecided := req.Operation == admissionv1.Update && signer != nil && old.Labels[hold.Label] == hold.Held && meta.Labels[hold.Label] == hold.Held &&
		signer.Verify(hold.Subject{Kind: req.Kind.Kind, Namespace: req.Namespace, Name: meta.Name, GenerateName: meta.GenerateName}, meta.Annotations) == nil
	if same(meta.Labels, old.Labels, []string{hold.Label}) && same(meta.Annotations, old.Annotations, hold.Outputs) &&
		same(meta.Annotations, old.Annotations, hold.ReleaseStamp) && (recorded || same(meta.Annotations, old.Annotations, hold.Record)) {
		return nil, req.Object.Raw, ""
	}
	s, bad := newOutputs(req.Object.Raw)
	if bad != "" {
		return nil, nil, bad
	}
	doc := s.doc
	release := req.Operation == admissionv1.Update && old.Labels[hold.Label] == hold.Held &&
		s.get("labels", hold.Label) == hold.Released && !stillHeld(req.Kind.Kind, doc)
	if !release {
		s.set("labels", hold.Label, old.Labels)
		s.restore(hold.ReleaseStamp, old.Annotations)
	}
	keep := hold.SignedKeys(meta.Annotations)
	for _, k := range hold.Outputs {
		if !redecided || !slices.Contains(keep, k) {
			s.set("annotations", k, old.Annotations)
		}
	}
	if !recorded {
		s.restore(hold.Record, old.Annotations)
	}
	return s.applied(req.Object.Raw)
}

// recordVerified reports whether req updates an object (metadata meta)
// whose ledger record (hold.Record) the controller signed for it: the
// only record the webhook lets an update write.
func recordVerified(req *admissionv1.AdmissionRequest, meta metav1.ObjectMeta, signer *hold.Signer) bool {
	return req.Operation == admissionv1.Update && signer != nil &&
		signer.VerifyRecord(hold.Subject{Kind: req.Kind.Kind, Namespace: req.Namespace, Name: meta.Name}, meta.Annotations) == nil
}

// oldMetadata returns the metadata of an UPDATE's old object (empty for
// other operations), or a message saying it is malformed.
func oldMetadata(req *admissionv1.AdmissionRequest) (metav1.PartialObjectMetadata, string) {
	var old metav1.PartialObjectMetadata
	if req.Operation == admissionv1.Update {
		if err := json.Unmarshal(req.OldObject.Raw, &old); err != nil {
			return old, fmt.Sprintf("request.oldObject: %v", err)
		}
	}
	return old, ""
}

// newOutputs decodes an object to edit its outputs, or says it is not an
// object.
func newOutputs(raw []byte) (*outputs, string) {
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // numbers pass through as written
	if err := dec.Decode(&doc); err != nil || doc == nil {
		return nil, "request.object: not a JSON object"
	}
	return &outputs{doc: doc}, ""
}

// applied returns s's ops and the object with them applied (raw, the
// object as sent, when there are none).
func (s *outputs) applied(raw []byte) ([]op, []byte, string) {
	if len(s.ops) == 0 {
		return nil, raw, ""
	}
	out, err := json.Marshal(s.doc)
	if err != nil { // decoded JSON: cannot happen
		return nil, nil, "request.object: " + err.Error()
	}
	return s.ops, out, ""
}

// same reports whether a and b agree on keys (value and presence).
func same(a, b map[string]string, keys []string) bool {
	for _, k := range keys {
		v, ok := a[k]
		w, had := b[k]
		if ok != had || v != w {
			return false
		}
	}
	return true
}

// outputs edits an object's metadata.labels and metadata.annotations,
// recording the ops.
type outputs struct {
	doc map[string]any
	ops []op
}

func (s *outputs) field(name string) (map[string]any, bool) {
	meta, _ := s.doc["metadata"].(map[string]any)
	m, ok := meta[name].(map[string]any)
	return m, ok
}

// get returns metadata[field][key] when it is a string.
func (s *outputs) get(field, key string) string {
	m, _ := s.field(field)
	v, _ := m[key].(string)
	return v
}

// restore sets the annotations keys to their values in want (removing
// those want lacks).
func (s *outputs) restore(keys []string, want map[string]string) {
	for _, k := range keys {
		s.set("annotations", k, want)
	}
}

// set makes metadata[field][key] want[key], or absent when want has none.
func (s *outputs) set(field, key string, want map[string]string) {
	m, has := s.field(field)
	cur, present := m[key]
	w, ok := want[key]
	path := "/metadata/" + field + "/" + pointerEscape(key)
	switch {
	case !ok && present:
		delete(m, key)
		s.ops = append(s.ops, op{Op: "remove", Path: path})
	case ok && cur != w:
		meta, _ := s.doc["metadata"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
			s.doc["metadata"] = meta
			s.ops = append(s.ops, add("/metadata", map[string]any{}))
		}
		if !has {
			m = map[string]any{}
			meta[field] = m
			s.ops = append(s.ops, add("/metadata/"+field, map[string]any{}))
		}
		m[key] = w
		s.ops = append(s.ops, add(path, w))
	}
}

// stillHeld reports whether a Job is suspended or a Pod carries the gate.
func stillHeld(kind string, doc map[string]any) bool {
	spec, _ := doc["spec"].(map[string]any)
	if kind == "Job" {
		return spec["suspend"] == true
	}
	gates, _ := spec["schedulingGates"].([]any)
	for _, g := range gates {
		if m, _ := g.(map[string]any); m["name"] == hold.Gate {
			return true
		}
	}
	return false
}

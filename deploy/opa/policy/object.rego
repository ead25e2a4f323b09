package carbongate.admission

# The object under review and the one it replaces (UPDATE).

object_problem := "the object is empty" if {
	not new_object
	not "object" in object.keys(request)
}

object_problem := "the object is not a JSON object" if {
	not new_object
	"object" in object.keys(request)
}

new_object := request.object if is_object(request.object)

old_object := request.oldObject if is_object(request.oldObject)

# spec is the new object's spec when it is a JSON object.
spec := new_object.spec if is_object(new_object.spec)

# present(name) holds when spec has the field and it is not null.
present(name) if spec[name] != null

# scheduled(o) holds when o has spec.schedulingRegion (not null, not "").
scheduled(o) if {
	v := o.spec.schedulingRegion
	v != null
	v != ""
}

# restore_patch adds back, with their old values, the scheduling fields an
# UPDATE of a scheduled template dropped; a template is never rescheduled.
restore_patch := array.concat(restore_spec, [add_op(concat("", ["/spec/", f]), old_object.spec[f]) | some f in restore_fields])

restore_fields := [f |
	some f in ["schedulingRegion", "schedulingTime"]
	old_object.spec[f] != null
	not present(f)
]

default restore_spec := []

restore_spec := [add_op("/spec", {})] if {
	count(restore_fields) > 0
	not spec
}

add_op(path, value) := {"op": "add", "path": path, "value": value}

# A template's decision is the webhook's (as in gateway/admission's
# template.go): one being scheduled loses the decision fields and
# annotations it carries (strip_ops, before the decision's own ops); a
# scheduled one keeps its own: changing a decision field is denied
# (repin_errors), decision annotations dropped, changed or added are put
# back as they were (restore_annotations).
decision_fields := ["schedulingRegion", "schedulingTime"]

decision_annotations := [annotation_provenance, annotation_unscheduled]

strip_ops := array.concat(
	[{"op": "remove", "path": concat("", ["/spec/", f])} |
		some f in decision_fields
		f in object.keys(spec)
	],
	[{"op": "remove", "path": annotation_path(k)} |
		some k in decision_annotations
		k in object.keys(new_annotations)
	],
)

default new_annotations := {}

new_annotations := new_object.metadata.annotations if is_object(new_object.metadata.annotations)

default old_annotations := {}

old_annotations := old_object.metadata.annotations if is_object(old_object.metadata.annotations)

has_annotations if is_object(new_object.metadata.annotations)

annotation_path(k) := concat("", ["/metadata/annotations/", pointer_escape(k)])

repin_errors := [sprintf("spec.%s: is carbongate's decision and cannot be changed (it is %s); delete and re-create the VmTemplate to schedule it again", [f, previous(f)]) |
	some f in decision_fields
	present(f)
	not old_object.spec[f] == spec[f]
]

previous(f) := json.marshal(old_object.spec[f]) if old_object.spec[f] != null

else := "absent"

restore_annotations := array.concat(restore_annotations_prefix, restore_annotation_ops)

restore_annotation_ops := [o |
	some k in decision_annotations
	some o in annotation_fix(k)
]

annotation_fix(k) := [add_op(annotation_path(k), old_annotations[k])] if {
	is_string(old_annotations[k])
	not new_annotations[k] == old_annotations[k]
} else := [{"op": "remove", "path": annotation_path(k)}] if {
	not old_annotations[k]
	k in object.keys(new_annotations)
} else := []

restore_annotations_prefix := [{"op": "add", "path": "/metadata/annotations", "value": {}}] if {
	not has_annotations
	some o in restore_annotation_ops
	o.op == "add"
} else := []

# annotate returns the ops that set annotation key to value, adding
# metadata.annotations first when the object has none.
annotate(key, value) := array.concat(annotations_prefix, [add_op(concat("", ["/metadata/annotations/", pointer_escape(key)]), value)])

annotations_prefix := [] if {
	new_object.metadata.annotations != null
} else := [{"op": "add", "path": "/metadata/annotations", "value": {}}]

# pointer_escape escapes a JSON Pointer token (RFC 6901).
pointer_escape(s) := replace(replace(s, "~", "~0"), "/", "~1")

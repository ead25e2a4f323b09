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

# annotate returns the ops that set annotation key to value, adding
# metadata.annotations first when the object has none.
annotate(key, value) := array.concat(annotations_prefix, [add_op(concat("", ["/metadata/annotations/", pointer_escape(key)]), value)])

annotations_prefix := [] if {
	new_object.metadata.annotations != null
} else := [{"op": "add", "path": "/metadata/annotations", "value": {}}]

# pointer_escape escapes a JSON Pointer token (RFC 6901).
pointer_escape(s) := replace(replace(s, "~", "~0"), "/", "~1")

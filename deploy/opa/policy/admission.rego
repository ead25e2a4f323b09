# METADATA
# title: carbongate VmTemplate admission
# description: |
#   Mutating admission of VmTemplates (carbongate.io/v1alpha1). On CREATE, and
#   on UPDATE of a template not yet scheduled, the policy filters the
#   provider's regions by latency from spec.originRegion, residency and grid
#   zone, asks carbongate (POST /v1/schedule) where and when to run, and
#   patches spec.schedulingRegion, spec.schedulingTime and the
#   carbongate.io/provenance annotation into the object. The semantics are
#   shared with carbongate's own webhook (gateway/admission) and pinned by
#   test/fixtures/admission.
package carbongate.admission

# response is the webhook's answer to input, an AdmissionReview v1
# request: the complete AdmissionReview the API server expects back. It is
# defined for every input. Serve it at /v0/data/carbongate/admission/response
# (the body is the review, the answer is the document itself).
response := {
	"apiVersion": "admission.k8s.io/v1",
	"kind": "AdmissionReview",
	"response": admission_response,
}

# main is response under the name of OPA's default decision: with
# default_decision: /carbongate/admission/main, POST / answers it.
main := response

default request := {}

request := input.request if is_object(input.request)

default uid := ""

uid := request.uid

# admission_response renders outcome as an AdmissionResponse: denials carry
# status {code, reason, message}; a fail-open admission carries its message
# as a success status and a warning; a non-empty patch is base64 JSONPatch.
# The first case is the general rendering written out for a scheduled
# review (allowed, no message, a patch), the case every scheduled review
# takes: it skips evaluating status_part and patch_part.
admission_response := {"uid": uid, "allowed": true, "patchType": "JSONPatch", "patch": base64.encode(json.marshal(outcome.patch))} if {
	outcome.allowed
	outcome.message == ""
	outcome.patch != []
} else := object.union_n([{"uid": uid, "allowed": outcome.allowed}, status_part, patch_part])

default status_part := {}

status_part := {"status": {
	"status": "Failure",
	"code": outcome.code,
	"reason": reason_of(outcome.code),
	"message": outcome.message,
}} if {
	not outcome.allowed
}

status_part := {
	"status": {"status": "Success", "message": outcome.message},
	"warnings": [clip(outcome.message, max_warning)],
} if {
	outcome.allowed
	outcome.message != ""
}

default patch_part := {}

patch_part := {"patchType": "JSONPatch", "patch": base64.encode(json.marshal(outcome.patch))} if {
	count(outcome.patch) > 0
}

# max_warning bounds the warning of a fail-open admission, in characters.
max_warning := 256

reason_of(400) := "BadRequest"

reason_of(403) := "Forbidden"

reason_of(503) := "ServiceUnavailable"

reason_of(code) := "InternalError" if not code in {400, 403, 503}

# outcome is the decision before rendering: {allowed, code, message, patch}.
# The first matching case wins, in the order of the decision procedure.
# The first case is a shortcut to the last for the common review, a CREATE
# of a valid template with eligible zones: it tests positively what the
# cases in between rule out (each `not` costs an evaluation of its own);
# any other review goes through the cases in order.
default outcome := {
	"allowed": false, "code": 500, "patch": [],
	"message": "carbongate admission policy: no decision (is the bundle's data complete?)",
}

outcome := schedule_outcome if {
	vmtemplate
	request.operation == "CREATE"
	spec_errors == []
	data.carbongate.candidates[provider].origins[origin]
	eligible_zones != []
} else := unchanged if {
	not vmtemplate
} else := unchanged if {
	not request.operation in {"CREATE", "UPDATE"}
} else := deny(400, concat("", ["request.object: ", object_problem])) if {
	not new_object
} else := deny(400, concat("; ", repin_errors)) if {
	request.operation == "UPDATE"
	scheduled(old_object)
	count(repin_errors) > 0
} else := admit(array.concat(restore_patch, restore_annotations)) if {
	request.operation == "UPDATE"
	scheduled(old_object)
} else := deny(400, concat("; ", spec_errors)) if {
	count(spec_errors) > 0
} else := deny(400, origin_error) if {
	not data.carbongate.candidates[provider].origins[origin]
} else := deny(403, empty_message) if {
	count(eligible_zones) == 0
} else := schedule_outcome

vmtemplate if {
	request.kind.group == "carbongate.io"
	request.kind.kind == "VmTemplate"
}

unchanged := admit([])

admit(patch) := {"allowed": true, "code": 0, "message": "", "patch": patch}

deny(code, message) := {"allowed": false, "code": code, "message": message, "patch": []}

# clip shortens s to at most n characters, ending it with "..." when cut.
clip(s, n) := s if count(s) <= n

clip(s, n) := concat("", [substring(s, 0, n - 3), "..."]) if count(s) > n

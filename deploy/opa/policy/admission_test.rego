package carbongate.admission_test

import data.carbongate.admission

# Fixtures and mocks.

vm_kind := {"group": "carbongate.io", "version": "v1alpha1", "kind": "VmTemplate"}

eu_spec := {
	"minCPU": 4, "minRAM": "16Gi", "duration": "PT3H", "deadline": "2021-06-03T00:00:00Z",
	"maxLatencyMs": 40, "originRegion": "westeurope", "residency": "EU",
}

eu_zones := ["AT", "DE", "DK-DK2", "ES", "FR", "IE", "IT-NO", "NL", "PL", "SE"]

template(spec) := {
	"apiVersion": "carbongate.io/v1alpha1", "kind": "VmTemplate",
	"metadata": {"name": "batch-1", "namespace": "jobs"}, "spec": spec,
}

review(op, obj) := {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
	"uid": "u-1", "kind": vm_kind, "operation": op, "object": obj,
}}

create(spec) := review("CREATE", template(spec))

update(obj, old) := object.union(review("UPDATE", obj), {"request": {"oldObject": old}})

with_spec(changes) := object.union(eu_spec, changes)

without(field) := object.remove(eu_spec, [field])

# answer is what carbongate answers for zones, choosing zone.
answer(zone, zones) := {
	"decision": {"zone": zone, "start": "2021-06-02T00:00:00Z", "end": "2021-06-02T03:00:00Z", "mean_intensity": 36.5},
	"savings_pct": 77.25,
	"provenance": {z: {"model": "m", "version": "", "source": "baseline", "issued_at": "2021-06-01T00:00:00Z"} | some z in zones},
	"request_id": "REQ1",
}

# send_last answers 200 choosing the last zone, and only for the request
# the policy must send.
send_last(req) := {"status_code": 200, "body": answer(zones[count(zones) - 1], zones)} if {
	req.method == "POST"
	req.url == "http://carbongate.carbongate.svc:8080/v1/schedule"
	req.raise_error == false
	req.timeout == "2s"
	req.force_cache == true
	req.force_cache_duration_seconds == 10
	zones := req.body.zones
}

send_status(code, body) := {"status_code": code, "body": body}

send_refused(_) := {"status_code": 0, "error": {"code": "eval_http_send_network_error", "message": "Post \"http://x/v1/schedule\": dial tcp 127.0.0.1:1: connect: connection refused"}}

send_timeout(_) := {"status_code": 0, "error": {"code": "eval_http_send_network_error", "message": "Post \"http://x/v1/schedule\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)"}}

send_500(_) := send_status(500, {"error": {"code": "internal", "message": "internal error"}, "request_id": "R"})

send_502_raw(_) := {"status_code": 502, "body": null, "raw_body": "bad gateway\n"}

send_503_empty(_) := {"status_code": 503, "body": null, "raw_body": ""}

send_422(_) := send_status(422, {"error": {"code": "infeasible", "field": "deadline", "message": "deadline 2021-06-01T01:00:00Z is before the earliest start"}})

send_400_bare(_) := send_status(400, null)

send_429(_) := send_status(429, {"error": {"code": "unavailable", "message": "slow down"}})

send_no_decision(_) := send_status(200, {"request_id": "R"})

send_foreign_zone(req) := send_status(200, answer("GB", req.body.zones))

send_no_baseline(req) := send_status(200, object.remove(answer("SE", req.body.zones), ["savings_pct"]))

# no_env keeps the tests independent of the environment opa test runs in.
no_env := {"env": {}}

decide(rev) := r if {
	r := admission.response.response with input as rev with http.send as send_last with opa.runtime as no_env
}

repeat(s, n) := concat("", [s | some _ in numbers.range(1, n)])

patch_of(resp) := json.unmarshal(base64.decode(resp.patch))

denied(resp, code, fragment) if {
	resp.allowed == false
	resp.status.code == code
	resp.status.status == "Failure"
	contains(resp.status.message, fragment)
	not resp.patch
}

unpatched(resp) if {
	resp.allowed == true
	not resp.patch
	not resp.patchType
}

# Entry points.

test_response_is_an_admission_review if {
	r := admission.response with input as create(eu_spec) with http.send as send_last with opa.runtime as no_env
	r.apiVersion == "admission.k8s.io/v1"
	r.kind == "AdmissionReview"
	r.response.uid == "u-1"
}

test_main_is_response if {
	m := admission.main with input as create(eu_spec) with http.send as send_last with opa.runtime as no_env
	r := admission.response with input as create(eu_spec) with http.send as send_last with opa.runtime as no_env
	m == r
}

test_no_request_is_allowed if {
	r := admission.response.response with input as {"kind": "AdmissionReview"} with opa.runtime as no_env
	unpatched(r)
	r.uid == ""
}

# Step 8: the scheduled patch.

test_create_scheduled if {
	r := decide(create(eu_spec))
	r.allowed == true
	r.patchType == "JSONPatch"
	not r.status
	ops := patch_of(r)
	count(ops) == 6
	ops[0] == {"op": "add", "path": "/spec/provider", "value": "azure"}
	ops[1] == {"op": "add", "path": "/spec/schedulingRegion", "value": "swedencentral"}
	ops[2] == {"op": "add", "path": "/spec/schedulingTime", "value": "2021-06-02T00:00:00Z"}
	ops[3] == {"op": "add", "path": "/spec/instanceType", "value": "D4a v4"}
	ops[4] == {"op": "add", "path": "/metadata/annotations", "value": {}}
	ops[5].path == "/metadata/annotations/carbongate.io~1provenance"
	json.unmarshal(ops[5].value) == {
		"zone": "SE", "region": "swedencentral", "start": "2021-06-02T00:00:00Z", "end": "2021-06-02T03:00:00Z",
		"mean_intensity": 36.5, "savings_pct": 77.25, "request_id": "REQ1",
		"sources": {z: "baseline" | some z in eu_zones},
	}
}

test_schedule_request_body if {
	body := admission.schedule_request.body with input as create(eu_spec) with opa.runtime as no_env
	body == {"zones": eu_zones, "duration": "PT3H", "deadline": "2021-06-03T00:00:00Z"}
}

test_schedule_request_without_deadline if {
	body := admission.schedule_request.body with input as create(with_spec({"deadline": ""})) with opa.runtime as no_env
	body == {"zones": eu_zones, "duration": "PT3H"}
	body2 := admission.schedule_request.body with input as create(without("deadline")) with opa.runtime as no_env
	body2 == body
}

test_given_provider_and_annotations_are_kept if {
	obj := object.union(template(with_spec({"provider": "azure"})), {"metadata": {"annotations": {"a": "b"}}})
	ops := patch_of(decide(review("CREATE", obj)))
	[op.path | some op in ops] == [
		"/spec/schedulingRegion", "/spec/schedulingTime", "/spec/instanceType",
		"/metadata/annotations/carbongate.io~1provenance",
	]
}

test_null_annotations_are_replaced if {
	obj := object.union(template(eu_spec), {"metadata": {"annotations": null}})
	ops := patch_of(decide(review("CREATE", obj)))
	ops[4] == {"op": "add", "path": "/metadata/annotations", "value": {}}
}

test_without_residency_non_eu_zones_join if {
	zones := admission.eligible_zones with input as create(without("residency")) with opa.runtime as no_env
	{z | some z in zones} - {z | some z in eu_zones} == {"CH", "GB", "NO-NO1", "NO-NO2"}
	{z | some z in eu_zones} - {z | some z in zones} == set()
}

test_savings_null_without_baseline if {
	r := admission.response.response with input as create(eu_spec) with http.send as send_no_baseline with opa.runtime as no_env
	p := json.unmarshal(patch_of(r)[5].value)
	p.savings_pct == null
}

# Steps 3 and 5: latency and representatives.

test_latency_zero_keeps_only_origin if {
	zones := admission.eligible_zones with input as create(with_spec({"maxLatencyMs": 0})) with opa.runtime as no_env
	zones == ["NL"]
	ops := patch_of(decide(create(with_spec({"maxLatencyMs": 0}))))
	ops[1].value == "westeurope"
}

test_latency_bound_is_inclusive if {
	# westeurope -> swedencentral is 31 ms.
	zones := admission.eligible_zones with input as create(with_spec({"maxLatencyMs": 31})) with opa.runtime as no_env
	"SE" in zones
	zones2 := admission.eligible_zones with input as create(with_spec({"maxLatencyMs": 30})) with opa.runtime as no_env
	not "SE" in zones2
}

test_representative_lowest_rtt if {
	# centralus and northcentralus are both US-MIDW-MISO; from eastus
	# northcentralus is closer.
	reps := admission.representative with input as create({"duration": "PT3H", "maxLatencyMs": 30, "originRegion": "eastus"}) with opa.runtime as no_env
	reps == {"CA-ON": "canadacentral", "CA-QC": "canadaeast", "US-MIDA-PJM": "eastus", "US-MIDW-MISO": "northcentralus"}
}

# eastus2_ties is the index entry gen derives for origin eastus2 from the
# matrix {"eastus2": {"eastus": 7, "centralus": 7, "northcentralus": 7}}
# (TestCandidates in deploy/opa/gen checks that derivation): equal times
# are ordered by name, so centralus represents US-MIDW-MISO.
eastus2_ties := {
	"unmeasured": 97,
	"candidates": [
		{"region": "eastus2", "zone": "US-MIDA-PJM", "rtt_ms": 0, "eu": false},
		{"region": "centralus", "zone": "US-MIDW-MISO", "rtt_ms": 7, "eu": false},
		{"region": "eastus", "zone": "US-MIDA-PJM", "rtt_ms": 7, "eu": false},
		{"region": "northcentralus", "zone": "US-MIDW-MISO", "rtt_ms": 7, "eu": false},
	],
	"representatives": [
		{"zone": "US-MIDA-PJM", "region": "eastus2", "rtt_ms": 0},
		{"zone": "US-MIDW-MISO", "region": "centralus", "rtt_ms": 7},
	],
	"representatives_eu": [],
}

test_representative_ties_by_name if {
	reps := admission.representative with input as create({"duration": "PT3H", "maxLatencyMs": 7, "originRegion": "eastus2"})
		with data.carbongate.candidates.azure.origins.eastus2 as eastus2_ties with opa.runtime as no_env
	reps == {"US-MIDA-PJM": "eastus2", "US-MIDW-MISO": "centralus"}
	reps6 := admission.representative with input as create({"duration": "PT3H", "maxLatencyMs": 6, "originRegion": "eastus2"})
		with data.carbongate.candidates.azure.origins.eastus2 as eastus2_ties with opa.runtime as no_env
	reps6 == {"US-MIDA-PJM": "eastus2"}
}

test_latency_is_directional if {
	# australiasoutheast -> australiacentral2 (AU-NSW) is 14 ms, the way
	# back 16 ms.
	there := admission.eligible_zones with input as create({"duration": "PT3H", "maxLatencyMs": 14, "originRegion": "australiasoutheast"}) with opa.runtime as no_env
	there == ["AU-NSW", "AU-VIC"]
	back := admission.eligible_zones with input as create({"duration": "PT3H", "maxLatencyMs": 14, "originRegion": "australiacentral2"}) with opa.runtime as no_env
	back == ["AU-NSW"]
	back16 := admission.eligible_zones with input as create({"duration": "PT3H", "maxLatencyMs": 16, "originRegion": "australiacentral2"}) with opa.runtime as no_env
	back16 == ["AU-NSW", "AU-VIC"]
}

test_provider_without_latency_only_origin if {
	spec := {"provider": "aws", "duration": "PT3H", "maxLatencyMs": 1000, "originRegion": "eu-central-1"}
	zones := admission.eligible_zones with input as create(spec) with opa.runtime as no_env
	zones == ["DE"]
	ops := patch_of(decide(create(spec)))
	ops[0] == {"op": "add", "path": "/spec/schedulingRegion", "value": "eu-central-1"}
}

# Step 6: nothing eligible.

test_residency_excludes_all if {
	r := decide(create(with_spec({"originRegion": "centralus"})))
	denied(r, 403, "no eligible region: 47 regions beyond 40 ms of centralus, 48 without a latency measurement from centralus, 6 outside the EU")
	r.status.reason == "Forbidden"
	r.status.message == "no eligible region: 47 regions beyond 40 ms of centralus, 48 without a latency measurement from centralus, 6 outside the EU"
}

test_no_zone_one_region if {
	spec := {"provider": "azure", "duration": "PT3H", "maxLatencyMs": 10, "originRegion": "brazilus"}
	r := decide(create(spec))
	r.status.message == "no eligible region: 100 regions without a latency measurement from brazilus, 1 without a grid zone"
	denied(r, 403, "1 without a grid zone")
}

# solo_index is the index gen derives for a provider whose only region,
# solo, has no zone and which has no latency data (TestCandidates).
solo_index := {"provider": "oracle", "latency": false, "origins": {"solo": {
	"unmeasured": 0,
	"candidates": [{"region": "solo", "zone": "", "rtt_ms": 0, "eu": false}],
	"representatives": [],
	"representatives_eu": [],
}}}

test_single_region_provider_needs_no_remark if {
	r := decide(create({"provider": "oracle", "duration": "PT3H", "maxLatencyMs": 10, "originRegion": "solo"})) with data.carbongate.candidates.oracle as solo_index
	r.status.message == "no eligible region: 1 region without a grid zone"
}

test_empty_message_without_reasons if {
	msg := admission.empty_message with admission.reasons as []
	msg == "no eligible region"
}

# Step 9: updates.

scheduled_spec := with_spec({"provider": "azure", "schedulingRegion": "swedencentral", "schedulingTime": "2021-06-02T00:00:00Z"})

test_update_scheduled_no_patch if {
	r := decide(update(template(with_spec({"provider": "azure", "schedulingRegion": "swedencentral", "schedulingTime": "2021-06-02T00:00:00Z", "minCPU": 8})), template(scheduled_spec)))
	unpatched(r)
}

test_update_never_reschedules_even_if_invalid if {
	r := decide(update(template(object.union(scheduled_spec, {"duration": "bogus"})), template(scheduled_spec)))
	unpatched(r)
}

test_update_dropped_fields_patched_back if {
	r := decide(update(template(with_spec({"provider": "azure"})), template(scheduled_spec)))
	r.allowed == true
	patch_of(r) == [
		{"op": "add", "path": "/spec/schedulingRegion", "value": "swedencentral"},
		{"op": "add", "path": "/spec/schedulingTime", "value": "2021-06-02T00:00:00Z"},
	]
}

test_update_null_field_patched_back if {
	r := decide(update(template(object.union(scheduled_spec, {"schedulingTime": null})), template(scheduled_spec)))
	patch_of(r) == [{"op": "add", "path": "/spec/schedulingTime", "value": "2021-06-02T00:00:00Z"}]
}

test_update_dropped_spec_patched_back if {
	obj := object.remove(template(eu_spec), ["spec"])
	r := decide(update(obj, template(scheduled_spec)))
	patch_of(r) == [
		{"op": "add", "path": "/spec", "value": {}},
		{"op": "add", "path": "/spec/schedulingRegion", "value": "swedencentral"},
		{"op": "add", "path": "/spec/schedulingTime", "value": "2021-06-02T00:00:00Z"},
	]
}

test_update_repinned_denied if {
	r := decide(update(template(object.union(scheduled_spec, {"schedulingRegion": "eastus"})), template(scheduled_spec)))
	r.allowed == false
	r.status.code == 400
	r.status.message == `spec.schedulingRegion: is carbongate's decision and cannot be changed (it is "swedencentral"); delete and re-create the VmTemplate to schedule it again`
}

test_update_time_added_to_a_template_scheduled_without_denied if {
	old := template(object.remove(scheduled_spec, ["schedulingTime"]))
	r := decide(update(template(scheduled_spec), old))
	r.status.code == 400
	startswith(r.status.message, "spec.schedulingTime: is carbongate's decision and cannot be changed (it is absent)")
}

test_update_decision_annotations_put_back if {
	prov := {"carbongate.io/provenance": "{\"zone\":\"SE\"}"}
	old := object.union(template(scheduled_spec), {"metadata": {"annotations": prov}})
	edited := object.union(template(scheduled_spec), {"metadata": {"annotations": {"carbongate.io/provenance": "{\"zone\":\"US\"}", "carbongate.io/unscheduled": "x"}}})
	patch_of(decide(update(edited, old))) == [
		{"op": "add", "path": "/metadata/annotations/carbongate.io~1provenance", "value": "{\"zone\":\"SE\"}"},
		{"op": "remove", "path": "/metadata/annotations/carbongate.io~1unscheduled"},
	]
	patch_of(decide(update(template(scheduled_spec), old))) == [
		{"op": "add", "path": "/metadata/annotations", "value": {}},
		{"op": "add", "path": "/metadata/annotations/carbongate.io~1provenance", "value": "{\"zone\":\"SE\"}"},
	]
}

test_create_forged_decision_removed_first if {
	obj := object.union(template(object.union(eu_spec, {"schedulingRegion": "eastus", "schedulingTime": null})), {"metadata": {"annotations": {"carbongate.io/unscheduled": "x"}}})
	ops := patch_of(decide(review("CREATE", obj)))
	array.slice(ops, 0, 3) == [
		{"op": "remove", "path": "/spec/schedulingRegion"},
		{"op": "remove", "path": "/spec/schedulingTime"},
		{"op": "remove", "path": "/metadata/annotations/carbongate.io~1unscheduled"},
	]
	ops[4] == {"op": "add", "path": "/spec/schedulingRegion", "value": "swedencentral"}
}

test_update_unscheduled_is_scheduled if {
	r := decide(update(template(eu_spec), template(with_spec({"schedulingRegion": ""}))))
	patch_of(r)[1].value == "swedencentral"
}

# Step 10: other operations and kinds.

test_delete_allowed if {
	unpatched(decide(review("DELETE", null)))
	unpatched(decide(review("CONNECT", template(eu_spec))))
}

test_other_kind_allowed if {
	rev := object.union(create(eu_spec), {"request": {"kind": {"group": "", "version": "v1", "kind": "Pod"}}})
	unpatched(decide(rev))
}

test_object_missing_or_not_object if {
	rev := object.union(create(eu_spec), {"request": {"object": "text"}})
	denied(decide(rev), 400, "request.object: the object is not a JSON object")
	denied(decide(json.remove(create(eu_spec), ["request/object"])), 400, "request.object: the object is empty")
}

# Step 1: validation.

test_spec_required if {
	denied(decide(review("CREATE", object.remove(template(eu_spec), ["spec"]))), 400, "spec: required")
	denied(decide(create("not an object")), 400, "spec: required")
}

bad_specs := [
	[{"minCPU": 0}, "spec.minCPU: must be an integer ≥ 1, got 0"],
	[{"minCPU": 1.5}, "spec.minCPU"],
	[{"minCPU": "4"}, "spec.minCPU"],
	[{"minRAM": "16 GB"}, "spec.minRAM"],
	[{"minRAM": 16}, "spec.minRAM"],
	[{"duration": 3}, "spec.duration: must be a string like \"PT3H\", got 3"],
	[{"duration": " "}, "spec.duration: empty duration"],
	[{"duration": "three hours"}, "spec.duration: \"three hours\" is neither ISO 8601"],
	[{"duration": "P1Y"}, "spec.duration"],
	[{"duration": "P1M"}, "spec.duration"],
	[{"duration": "P"}, "spec.duration"],
	[{"duration": "PT"}, "spec.duration"],
	[{"duration": "P1DT"}, "spec.duration"],
	[{"duration": "PT1M1H"}, "spec.duration"],
	[{"duration": "PT1H1H"}, "spec.duration"],
	[{"duration": "PT1.H"}, "spec.duration"],
	[{"duration": "PT0H"}, "spec.duration: must be positive, got \"PT0H\""],
	[{"duration": "-3h"}, "spec.duration: must be positive"],
	[{"duration": "0"}, "spec.duration: must be positive"],
	[{"deadline": "tomorrow"}, "spec.deadline: must be an RFC 3339 time"],
	[{"deadline": "2021-02-30T00:00:00Z"}, "spec.deadline"],
	[{"deadline": 5}, "spec.deadline"],
	[{"maxLatencyMs": -1}, "spec.maxLatencyMs: must be an integer ≥ 0, got -1"],
	[{"maxLatencyMs": 2.5}, "spec.maxLatencyMs"],
	[{"maxLatencyMs": "40"}, "spec.maxLatencyMs"],
	[{"provider": "ibm"}, "spec.provider: unknown provider \"ibm\": want one of aws, gcp, azure, oracle (absent: azure)"],
	[{"provider": "Azure"}, "spec.provider"],
	[{"provider": 1}, "spec.provider"],
	[{"originRegion": ""}, "spec.originRegion: must be a region name"],
	[{"originRegion": 7}, "spec.originRegion"],
	[{"residency": "US"}, "spec.residency: must be \"EU\" or empty, got \"US\""],
	[{"residency": true}, "spec.residency"],
]

test_bad_specs if {
	every c in bad_specs {
		denied(decide(create(with_spec(c[0]))), 400, c[1])
	}
}

test_required_fields if {
	every f in ["duration", "maxLatencyMs", "originRegion"] {
		denied(decide(create(without(f))), 400, sprintf("spec.%s: required", [f]))
	}
}

test_every_problem_in_field_order if {
	r := decide(create({"minCPU": 0, "originRegion": 1}))
	r.status.message == concat("; ", [
		"spec.minCPU: must be an integer ≥ 1, got 0",
		"spec.duration: required: an ISO 8601 duration like \"PT3H\"",
		"spec.maxLatencyMs: required: the largest P95 round-trip time from spec.originRegion, in ms",
		"spec.originRegion: must be a region name of spec.provider, got 1",
	])
}

test_long_values_are_clipped if {
	r := decide(create(with_spec({"duration": concat("", [repeat("x", 100)])})))
	contains(r.status.message, "xxx... is neither")
	not contains(r.status.message, repeat("x", 70))
}

good_durations := ["PT3H", "pt90m", "P1DT2H", "PT0.5H", "PT0,5H", "PT.5H", "P1W", "PT03H", "P1DT0.000000001S", "3h", "90m", "1h30m", "1.5h", " PT3H "]

test_good_durations if {
	every d in good_durations {
		not admission.field_error.duration with input as create(with_spec({"duration": d})) with opa.runtime as no_env
	}
}

test_duration_values if {
	admission.duration_ns("PT1H30M") == 5400000000000
	admission.duration_ns("P1W") == 604800000000000
	admission.duration_ns("PT0,5S") == 500000000
	admission.duration_ns("P2D") == 172800000000000
	admission.duration_ns("90m") == 5400000000000
}

# duration_positive, what validation uses, agrees with duration_ns's sign:
# defined for the same strings, true exactly when the length is above 0.
test_duration_positive_is_the_sign_of_the_length if {
	durations := array.concat(good_durations, [
		"PT0H", "P0D", "PT0.0S", "P0W0DT0H0M0,000000000S", "PT0.000000001S", "P0DT.1S", "0s", "0", "-3h", "+0h", "-0.5m",
		"P", "PT", "P1Y", "P1DT", "3 h", "h", "", "PT-1H",
	])
	every d in durations {
		[p | p := admission.duration_positive(d)] == [p | l := admission.duration_ns(d); p := l > 0]
	}
}

test_good_quantities_and_deadlines if {
	every q in ["16Gi", "500m", "1e3", "0.5", "+1k", "1.5Ti", ".5M"] {
		admission.quantity(q)
	}
	every d in ["2021-06-03T00:00:00Z", "2021-06-03T02:00:00+02:00", "2021-06-03T00:00:00.5Z"] {
		not admission.field_error.deadline with input as create(with_spec({"deadline": d})) with opa.runtime as no_env
	}
}

test_null_fields_are_absent if {
	r := decide(create(with_spec({"minCPU": null, "residency": null, "deadline": null, "provider": null})))
	r.allowed == true
	patch_of(r)[0] == {"op": "add", "path": "/spec/provider", "value": "azure"}
}

# Step 1: the origin region.

test_unknown_origin if {
	denied(decide(create(with_spec({"originRegion": "atlantis"}))), 400, "spec.originRegion: \"atlantis\" is not a region of azure")
}

test_origin_case_hint if {
	r := decide(create(with_spec({"originRegion": "WestEurope"})))
	denied(r, 400, "did you mean \"westeurope\"?")
}

test_origin_of_another_provider if {
	denied(decide(create(with_spec({"provider": "gcp"}))), 400, "\"westeurope\" is not a region of gcp")
}

test_provider_without_regions if {
	# The bundle has oracle regions now: a bundle without them.
	r := decide(create(with_spec({"provider": "oracle"}))) with data.carbongate.candidates as {"azure": data.carbongate.candidates.azure}
	denied(r, 400, "spec.originRegion: provider oracle has no regions in the region table")
}

# Step 11: carbongate failures.

failures := [
	"carbongate unavailable: Post \"http://x/v1/schedule\": dial tcp 127.0.0.1:1: connect: connection refused",
	"carbongate unavailable: no answer within 2s",
	"carbongate unavailable: carbongate answered 500: internal error",
	"carbongate unavailable: carbongate answered 502: bad gateway",
	"carbongate unavailable: carbongate answered 503: no body",
	"carbongate unavailable: carbongate answered 429: slow down",
	"carbongate unavailable: carbongate answered 200 without a decision",
	"carbongate unavailable: carbongate chose zone GB, which is not a candidate",
]

test_fail_closed if {
	r1 := admission.response.response with input as create(eu_spec) with http.send as send_refused with opa.runtime as no_env
	r1.status.message == failures[0]
	r1.status.reason == "ServiceUnavailable"
	denied(r1, 503, failures[0])
	r2 := admission.response.response with input as create(eu_spec) with http.send as send_timeout with opa.runtime as no_env
	r2.status.message == failures[1]
	r3 := admission.response.response with input as create(eu_spec) with http.send as send_500 with opa.runtime as no_env
	r3.status.message == failures[2]
	r4 := admission.response.response with input as create(eu_spec) with http.send as send_502_raw with opa.runtime as no_env
	r4.status.message == failures[3]
	r5 := admission.response.response with input as create(eu_spec) with http.send as send_503_empty with opa.runtime as no_env
	r5.status.message == failures[4]
	r6 := admission.response.response with input as create(eu_spec) with http.send as send_429 with opa.runtime as no_env
	r6.status.message == failures[5]
	r7 := admission.response.response with input as create(eu_spec) with http.send as send_no_decision with opa.runtime as no_env
	r7.status.message == failures[6]
	r8 := admission.response.response with input as create(eu_spec) with http.send as send_foreign_zone with opa.runtime as no_env
	r8.status.message == failures[7]
}

test_fail_open if {
	r := admission.response.response with input as create(eu_spec) with http.send as send_refused
		with opa.runtime as {"env": {"CARBONGATE_FAIL_OPEN": "true"}}
	r.allowed == true
	r.status == {"status": "Success", "message": failures[0]}
	r.warnings == [failures[0]]
	patch_of(r) == [
		{"op": "add", "path": "/metadata/annotations", "value": {}},
		{"op": "add", "path": "/metadata/annotations/carbongate.io~1unscheduled", "value": trim_prefix(failures[0], "carbongate unavailable: ")},
	]
}

test_fail_open_from_bundle_data if {
	r := admission.response.response with input as create(eu_spec) with http.send as send_timeout
		with data.carbongate.config.fail_open as true with opa.runtime as no_env
	r.allowed == true
	patch_of(r)[1].value == "no answer within 2s"
}

test_fail_open_warning_is_clipped if {
	long := {"status_code": 0, "error": {"message": repeat("y", 400)}}
	r := admission.response.response with input as create(eu_spec) with http.send as long
		with data.carbongate.config.fail_open as true with opa.runtime as no_env
	count(r.warnings[0]) == 256
	endswith(r.warnings[0], "...")
	count(r.status.message) > 256
}

test_user_fault_denied_in_both_modes if {
	r1 := admission.response.response with input as create(eu_spec) with http.send as send_422 with opa.runtime as no_env
	denied(r1, 400, "deadline 2021-06-01T01:00:00Z is before the earliest start")
	r1.status.reason == "BadRequest"
	r2 := admission.response.response with input as create(eu_spec) with http.send as send_422
		with data.carbongate.config.fail_open as true with opa.runtime as no_env
	denied(r2, 400, "deadline 2021-06-01T01:00:00Z is before the earliest start")
	r3 := admission.response.response with input as create(eu_spec) with http.send as send_400_bare with opa.runtime as no_env
	denied(r3, 400, "carbongate rejected the request with status 400")
}

# Configuration.

test_config_defaults if {
	c0 := admission.config with opa.runtime as {}
	c := admission.config with opa.runtime as {"env": {}}
	c0 == c
	c == {"carbongate_url": "http://carbongate.carbongate.svc:8080", "timeout": "2s", "fail_open": false, "cache_seconds": 10}
}

test_config_from_env if {
	env := {
		"CARBONGATE_URL": "http://127.0.0.1:9/", "CARBONGATE_TIMEOUT": "1500ms",
		"CARBONGATE_FAIL_OPEN": "TRUE", "CARBONGATE_CACHE_SECONDS": "0",
	}
	c := admission.config with opa.runtime as {"env": env}
	c == {"carbongate_url": "http://127.0.0.1:9/", "timeout": "1500ms", "fail_open": true, "cache_seconds": 0}
	req := admission.schedule_request with input as create(eu_spec) with opa.runtime as {"env": env}
	req.url == "http://127.0.0.1:9/v1/schedule"
	req.timeout == "1500ms"
	not req.force_cache
	not req.force_cache_duration_seconds
}

test_config_bad_env_keeps_bundle_values if {
	env := {"CARBONGATE_URL": "", "CARBONGATE_TIMEOUT": "soon", "CARBONGATE_FAIL_OPEN": "maybe", "CARBONGATE_CACHE_SECONDS": "-1"}
	c := admission.config with opa.runtime as {"env": env}
	c == {"carbongate_url": "http://carbongate.carbongate.svc:8080", "timeout": "2s", "fail_open": false, "cache_seconds": 10}
	c2 := admission.config with opa.runtime as {"env": {"CARBONGATE_FAIL_OPEN": "0", "CARBONGATE_TIMEOUT": "0s"}}
		with data.carbongate.config.fail_open as true
	c2.fail_open == false
	c2.timeout == "2s"
	c3 := admission.config with opa.runtime as {"env": {"CARBONGATE_CACHE_SECONDS": "010"}}
	c3.cache_seconds == 10
}

test_missing_data_is_an_internal_error if {
	r := admission.response.response with input as create(eu_spec) with data.carbongate.config as {} with opa.runtime as no_env
	r.allowed == false
	r.status.code == 500
	r.status.reason == "InternalError"
}

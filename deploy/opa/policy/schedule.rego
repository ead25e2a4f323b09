package carbongate.admission

# Steps 7 and 8 of the decision procedure, and step 11: ask carbongate,
# then patch, deny or fail open/closed.

annotation_provenance := "carbongate.io/provenance"

annotation_unscheduled := "carbongate.io/unscheduled"

# schedule_body is what POST /v1/schedule gets: the distinct zones, sorted,
# and the spec's duration and deadline as given.
schedule_body := {"zones": eligible_zones, "duration": spec.duration, "deadline": spec.deadline} if {
	spec.deadline != null
	spec.deadline != ""
} else := {"zones": eligible_zones, "duration": spec.duration}

# schedule_request never raises: failures come back as status_code 0 with
# error.message. A 200 answer is reused for config.cache_seconds (short:
# identical templates created together, API server retries and webhook
# reinvocations share one answer; the window's start ages by that much).
# The cache keeps the answer deserialized: a hit then skips decoding OPA's
# serialized cache entry (it still decodes the JSON body, on every hit).
# Prefer: return=minimal asks carbongate for only the members the policy
# reads (decision, savings_pct, each zone's provenance source,
# request_id): a sixth of the full answer, and as much less to decode. A
# carbongate that predates it ignores the header and sends the full answer,
# of which the minimal one is a part: the policy reads the same members.
schedule_request := object.union(
	{
		"method": "POST",
		"url": concat("", [trim_right(setting_url, "/"), "/v1/schedule"]),
		"headers": {"Content-Type": "application/json", "Accept": "application/json", "Prefer": "return=minimal"},
		"body": schedule_body,
		"timeout": setting_timeout,
		"raise_error": false,
	},
	cache_part,
)

default cache_part := {}

cache_part := {
	"force_cache": true, "force_cache_duration_seconds": setting_cache_seconds,
	"caching_mode": "deserialized",
} if {
	setting_cache_seconds > 0
}

answer := http.send(schedule_request)

decision := answer.body.decision if {
	answer.status_code == 200
	d := answer.body.decision
	is_string(d.zone)
	is_string(d.start)
	is_string(d.end)
	is_number(d.mean_intensity)
}

schedule_outcome := admit(array.concat(strip_ops, scheduled_patch)) if {
	representative[decision.zone]
} else := deny(400, rejection_message) if {
	user_fault
} else := unavailable(unavailable_why)

# A 4xx from carbongate (422: no window meets the deadline; 400: a duration
# beyond the horizon) is the template's fault; 408 and 429 are not.
user_fault if {
	answer.status_code >= 400
	answer.status_code < 500
	not answer.status_code in {408, 429}
}

rejection_message := answer.body.error.message if {
	is_string(answer.body.error.message)
	answer.body.error.message != ""
} else := sprintf("carbongate rejected the request with status %d", [answer.status_code])

unavailable_why := sprintf("no answer within %s", [setting_timeout]) if {
	answer.status_code == 0
	timed_out(answer.error.message)
} else := answer.error.message if {
	answer.status_code == 0
} else := sprintf("carbongate chose zone %s, which is not a candidate", [decision.zone]) if {
	decision
} else := "carbongate answered 200 without a decision" if {
	answer.status_code == 200
} else := sprintf("carbongate answered %d: %s", [answer.status_code, answer_error_text])

timed_out(msg) if contains(msg, "Client.Timeout")

timed_out(msg) if contains(msg, "deadline exceeded")

answer_error_text := answer.body.error.message if {
	is_string(answer.body.error.message)
} else := clip(trim_space(answer.raw_body), 200) if {
	is_string(answer.raw_body)
	trim_space(answer.raw_body) != ""
} else := "no body"

# unavailable: fail-closed denies with 503; fail-open admits the template
# unscheduled, annotated with why.
unavailable(why) := {
	"allowed": true, "code": 0,
	"message": concat("", ["carbongate unavailable: ", why]),
	"patch": array.concat(strip_ops, annotate(annotation_unscheduled, why)),
} if {
	setting_fail_open
} else := deny(503, concat("", ["carbongate unavailable: ", why]))

# scheduled_patch adds, in order: spec.provider (when absent),
# spec.schedulingRegion, spec.schedulingTime, spec.instanceType (see
# instance_ops), then the provenance annotation. The ops are literals
# rather than add_op calls: this is the path every scheduled review takes,
# and a call costs more than the object it builds.
scheduled_patch := array.concat(
	provider_ops,
	array.concat(
		array.concat(
			[
				{"op": "add", "path": "/spec/schedulingRegion", "value": representative[decision.zone]},
				{"op": "add", "path": "/spec/schedulingTime", "value": decision.start},
			],
			instance_ops,
		),
		array.concat(annotations_prefix, [{"op": "add", "path": provenance_path, "value": json.marshal(provenance)}]),
	),
)

# provenance_path is the JSON Pointer of the provenance annotation:
# annotate's path for annotation_provenance, written out.
provenance_path := "/metadata/annotations/carbongate.io~1provenance"

provider_ops := [] if {
	spec.provider != null
} else := [{"op": "add", "path": "/spec/provider", "value": provider}]

# provenance is the annotation's value (compact JSON, keys sorted): the
# decision, its region, carbongate's saving against running now in the first
# zone (null without a baseline), the forecast source of each zone and
# carbongate's request id.
provenance := {
	"zone": decision.zone,
	"region": representative[decision.zone],
	"start": decision.start,
	"end": decision.end,
	"mean_intensity": decision.mean_intensity,
	"savings_pct": object.get(answer.body, "savings_pct", null),
	"sources": {z: p.source | some z, p in object.get(answer.body, "provenance", {})},
	"request_id": object.get(answer.body, "request_id", ""),
}

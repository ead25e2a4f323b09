package carbongate.admission

# Step 1 of the decision procedure: the VmTemplate spec.

providers := ["aws", "gcp", "azure", "oracle"]

# default_provider is the provider of a template without spec.provider:
# the one with latency data.
default_provider := "azure"

# field_order is the order in which problems are reported.
field_order := ["minCPU", "minRAM", "duration", "deadline", "maxLatencyMs", "provider", "originRegion", "residency"]

# spec_errors lists every problem of the spec, each naming its field. The
# rules test spec.<field> != null where present(field) would say the same:
# every review runs them, and a function call costs more than the test.
# (Not for absence: `not spec.f != null` is `spec.f == null`, undefined for
# an absent field.)
spec_errors := ["spec: required: a VmTemplate needs a spec object"] if {
	not spec
} else := [] if {
	spec_plainly_valid
} else := [sprintf("spec.%s: %s", [f, msg]) | some f in field_order; msg := field_error[f]]

# spec_plainly_valid holds for a spec no field_error applies to, in one
# body: each optional field absent (its default then passes) or valid,
# each required one valid. It is a shortcut, not a definition: it may fail
# for a valid spec (an optional field given as null), and then the
# field_error rules decide. Every review runs it, so it tests in line what
# the field_error rules test through integer_at_least and non_empty_string.
spec_plainly_valid if {
	cpu := object.get(spec, "minCPU", 1)
	is_number(cpu)
	cpu == floor(cpu)
	cpu >= 1
	quantity(object.get(spec, "minRAM", "1"))
	duration_positive(spec.duration)
	valid_deadline(object.get(spec, "deadline", ""))
	latency := spec.maxLatencyMs
	is_number(latency)
	latency == floor(latency)
	latency >= 0
	object.get(spec, "provider", default_provider) in providers
	is_string(spec.originRegion)
	spec.originRegion != ""
	object.get(spec, "residency", "") in {"EU", ""}
}

field_error["minCPU"] := sprintf("must be an integer ≥ 1, got %s", [clip_json(spec.minCPU)]) if {
	spec.minCPU != null
	not integer_at_least(spec.minCPU, 1)
}

field_error["minRAM"] := sprintf("must be a Kubernetes quantity string like \"16Gi\", got %s", [clip_json(spec.minRAM)]) if {
	spec.minRAM != null
	not quantity(spec.minRAM)
}

field_error["duration"] := "required: an ISO 8601 duration like \"PT3H\"" if not present("duration")

field_error["duration"] := duration_problem(spec.duration) if spec.duration != null

field_error["deadline"] := sprintf("must be an RFC 3339 time like \"2021-06-03T00:00:00Z\", got %s", [clip_json(spec.deadline)]) if {
	spec.deadline != null
	not valid_deadline(spec.deadline)
}

field_error["maxLatencyMs"] := "required: the largest P95 round-trip time from spec.originRegion, in ms" if {
	not present("maxLatencyMs")
}

field_error["maxLatencyMs"] := sprintf("must be an integer ≥ 0, got %s", [clip_json(spec.maxLatencyMs)]) if {
	spec.maxLatencyMs != null
	not integer_at_least(spec.maxLatencyMs, 0)
}

field_error["provider"] := sprintf("unknown provider %s: want one of %s (absent: %s)", [clip_json(spec.provider), concat(", ", providers), default_provider]) if {
	spec.provider != null
	not spec.provider in providers
}

field_error["originRegion"] := "required: the region of spec.provider where the users or data are" if {
	not present("originRegion")
}

field_error["originRegion"] := sprintf("must be a region name of spec.provider, got %s", [clip_json(spec.originRegion)]) if {
	spec.originRegion != null
	not non_empty_string(spec.originRegion)
}

field_error["residency"] := sprintf("must be \"EU\" or empty, got %s", [clip_json(spec.residency)]) if {
	spec.residency != null
	not spec.residency in {"EU", ""}
}

integer_at_least(v, n) if {
	is_number(v)
	v == floor(v)
	v >= n
}

non_empty_string(v) if {
	is_string(v)
	v != ""
}

# quantity holds for a Kubernetes resource quantity string ("16Gi", "500m",
# "1e3"): what k8s.io/apimachinery's resource.ParseQuantity accepts, which
# also takes an empty number ("Gi", "+", ".": zero).
quantity(v) if {
	is_string(v)
	v != ""
	regex.match(`^[+-]?[0-9]*(?:\.[0-9]*)?(?:[numkMGTPE]|[KMGTPE]i|[eE][+-]?[0-9]+)?$`, v)
}

valid_deadline(v) if v == ""

valid_deadline(v) if {
	is_string(v)
	regex.match(`^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:[Zz]|[+-][0-9]{2}:[0-9]{2})$`, v)
	time.parse_rfc3339_ns(v)
}

# duration_problem says what is wrong with a spec.duration value, and is
# undefined for a positive ISO 8601 (PT3H, P1DT2H, PT0.5H) or Go (3h)
# duration: the syntax carbongate's /v1/schedule accepts.
duration_problem(v) := sprintf("must be a string like \"PT3H\", got %s", [clip_json(v)]) if not is_string(v)

duration_problem(v) := "empty duration: want ISO 8601 like PT3H or Go like 3h" if {
	is_string(v)
	trim_space(v) == ""
}

duration_problem(v) := problem if {
	is_string(v)
	trim_space(v) != ""
	problem := duration_value_problem(v, [p | p := duration_positive(v)])
}

# duration_value_problem judges a non-blank string duration v given
# positive, [whether it is positive] ([] when it does not parse): it parses
# it once.
duration_value_problem(v, []) := sprintf("%s is neither ISO 8601 (like PT3H, PT90M, P1DT2H) nor Go (like 3h) syntax", [clip_json(v)])

duration_value_problem(v, [false]) := sprintf("must be positive, got %s", [clip_json(v)])

# duration_positive(s) is whether the ISO 8601 or Go duration s is longer
# than zero, undefined when s is neither. An ISO 8601 duration's numbers
# are unsigned, so it is positive exactly when one of its digits is not 0:
# no need to add up its parts (duration_ns does, for its length).
duration_positive(s) := regex.match(`[1-9]`, u) if {
	u := upper(trim_space(s))
	startswith(u, "P")
	u != "P"
	not endswith(u, "T")
	regex.match(iso_pattern, u)
} else := time.parse_duration_ns(t) > 0 if {
	t := trim_space(s)
	regex.match(go_pattern, t)
}

# duration_ns is the length of an ISO 8601 or Go duration in nanoseconds
# (validation needs only its sign: duration_positive; the tests check that
# they agree).
duration_ns(s) := iso_ns(u) if {
	u := upper(trim_space(s))
	startswith(u, "P")
} else := time.parse_duration_ns(t) if {
	t := trim_space(s)
	regex.match(go_pattern, t)
}

# go_pattern is the syntax of Go's time.ParseDuration.
go_pattern := `^[-+]?(?:0|(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|µs|μs|ms|s|m|h))+)$`

# iso_pattern matches weeks and days, then T and hours, minutes, seconds; no
# years or months (they have no fixed length). Each number has at most 12
# integer and 9 fraction digits, "," or "." as the decimal mark:
# (?:[0-9]{1,12}(?:[.,][0-9]{1,9})?|[.,][0-9]{1,9}). It is one literal, so
# that no evaluation builds it.
iso_pattern := `^P(?:((?:[0-9]{1,12}(?:[.,][0-9]{1,9})?|[.,][0-9]{1,9}))W)?(?:((?:[0-9]{1,12}(?:[.,][0-9]{1,9})?|[.,][0-9]{1,9}))D)?(?:T(?:((?:[0-9]{1,12}(?:[.,][0-9]{1,9})?|[.,][0-9]{1,9}))H)?(?:((?:[0-9]{1,12}(?:[.,][0-9]{1,9})?|[.,][0-9]{1,9}))M)?(?:((?:[0-9]{1,12}(?:[.,][0-9]{1,9})?|[.,][0-9]{1,9}))S)?)?$`

iso_units := [604800000000000, 86400000000000, 3600000000000, 60000000000, 1000000000]

iso_ns(s) := sum(parts) if {
	s != "P"
	not endswith(s, "T")
	m := regex.find_all_string_submatch_n(iso_pattern, s, 1)[0]
	parts := [(iso_value(m[i + 1]) * unit) | some i, unit in iso_units; m[i + 1] != ""]
}

iso_value(x) := to_number(json_number(trim_left(replace(x, ",", "."), "0"))) if x != ""

# json_number makes a decimal without leading zeros a JSON number.
json_number("") := "0"

json_number(t) := concat("", ["0", t]) if startswith(t, ".")

json_number(t) := t if {
	t != ""
	not startswith(t, ".")
}

# clip_json is v as JSON, shortened for messages.
clip_json(v) := clip(json.marshal(v), 64)

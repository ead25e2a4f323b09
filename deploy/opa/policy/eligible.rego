package carbongate.admission

# Steps 2 to 6 of the decision procedure: candidates, latency, residency,
# zones, and why none is left.

# The validated spec (only read once spec_errors is empty).

default provider := "azure"

provider := spec.provider if spec.provider != null

origin := spec.originRegion

max_latency := spec.maxLatencyMs

residency_eu if spec.residency == "EU"

# The steps below read data.carbongate.candidates.<provider>, the index
# `go run ./deploy/opa/gen` derives from the regions, latency and residency
# files: per origin region, its candidates sorted by round-trip time then
# name, and the first candidate of each zone. A decision reads only its
# origin's entry, always through a full reference (binding a larger part of
# data to a variable would copy it into every evaluation).

# origin_index is the origin's entry: {unmeasured, candidates,
# representatives, representatives_eu}; undefined for an unknown origin.
# Only the counts of step 6 read it whole.
origin_index := data.carbongate.candidates[provider].origins[origin]

# Step 2: candidates: every region of the provider is an origin of the
# index.
origin_error := sprintf("spec.originRegion: provider %s has no regions in the region table", [provider]) if {
	not data.carbongate.candidates[provider].origins[origin]
	count(object.get(data.carbongate.candidates, [provider, "origins"], {})) == 0
}

origin_error := concat("", [sprintf("spec.originRegion: %q is not a region of %s", [origin, provider]), case_hint]) if {
	not data.carbongate.candidates[provider].origins[origin]
	count(object.get(data.carbongate.candidates, [provider, "origins"], {})) > 0
}

default case_hint := ""

case_hint := sprintf(" (region names are case-sensitive: did you mean %q?)", [hints[0]]) if {
	hints := [r | some r, _ in data.carbongate.candidates[provider].origins; lower(r) == lower(origin)]
	count(hints) > 0
}

has_latency if data.carbongate.candidates[provider].latency

# Steps 3 to 5: within max_latency of the origin (the origin itself: 0,
# and max_latency is at least 0; without latency data, only the origin
# qualifies), in the EU if asked, with a grid zone; each zone is
# represented by its region with the lowest round-trip time from the
# origin, then the lowest name. The index lists that region first for each
# zone, and a zone is within the bound exactly when that region is.
representatives := data.carbongate.candidates[provider].origins[origin].representatives_eu if {
	residency_eu
} else := data.carbongate.candidates[provider].origins[origin].representatives

# representative maps each eligible zone to the region that stands for it.
representative := {c.zone: c.region | some c in representatives; c.rtt_ms <= max_latency}

eligible_zones := sort(object.keys(representative))

# The counts of step 6 (evaluated only when no zone is eligible).
latency_kept := [c | some c in origin_index.candidates; c.rtt_ms <= max_latency]

beyond := count(origin_index.candidates) - count(latency_kept)

unmeasured := origin_index.unmeasured

residency_kept := [c | some c in latency_kept; c.eu] if {
	residency_eu
} else := latency_kept

outside_eu := count(latency_kept) - count(residency_kept)

no_zone := count([c | some c in residency_kept; c.zone == ""])

# Step 6: why no region is eligible, e.g. "no eligible region: 12 regions
# beyond 40 ms of westeurope, 3 outside the EU, 1 without a grid zone" (the
# first count names its noun).
empty_message := "no eligible region" if count(reasons) == 0

empty_message := concat("", ["no eligible region: ", concat(", ", [reason_text(i, r) | some i, r in reasons])]) if {
	count(reasons) > 0
}

default no_latency_remark := false

no_latency_remark if {
	not has_latency
	count(data.carbongate.candidates[provider].origins) > 1
}

reasons := [r |
	some r in [
		{"n": 0, "on": no_latency_remark, "what": sprintf("no latency data for provider %s: only the origin region qualifies", [provider])},
		{"n": beyond, "on": beyond > 0, "what": sprintf("beyond %s ms of %s", [format_int(max_latency, 10), origin])},
		{"n": unmeasured, "on": unmeasured > 0, "what": sprintf("without a latency measurement from %s", [origin])},
		{"n": outside_eu, "on": outside_eu > 0, "what": "outside the EU"},
		{"n": no_zone, "on": no_zone > 0, "what": "without a grid zone"},
	]
	r.on
]

first_counted := min({i | some i, r in reasons; r.n > 0})

reason_text(_, r) := r.what if r.n == 0

reason_text(i, r) := sprintf("%d %s %s", [r.n, noun(r.n), r.what]) if {
	r.n > 0
	i == first_counted
}

reason_text(i, r) := sprintf("%d %s", [r.n, r.what]) if {
	r.n > 0
	i != first_counted
}

noun(1) := "region"

noun(n) := "regions" if n != 1

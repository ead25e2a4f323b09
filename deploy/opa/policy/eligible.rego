package carbongate.admission

# Steps 2 to 6 of the decision procedure: candidates, latency, residency,
# zones, and why none is left.

# The validated spec (only read once spec_errors is empty).

default provider := "azure"

provider := spec.provider if present("provider")

origin := spec.originRegion

max_latency := spec.maxLatencyMs

residency_eu if spec.residency == "EU"

# provider_regions maps each region of the provider in the region table to
# {zone, location, year}.
provider_regions := object.get(data.carbongate.regions, [provider, "regions"], {})

origin_error := sprintf("spec.originRegion: provider %s has no regions in the region table", [provider]) if {
	count(provider_regions) == 0
}

origin_error := concat("", [sprintf("spec.originRegion: %q is not a region of %s", [origin, provider]), case_hint]) if {
	count(provider_regions) > 0
	not provider_regions[origin]
}

default case_hint := ""

case_hint := sprintf(" (region names are case-sensitive: did you mean %q?)", [hints[0]]) if {
	hints := [r | some r, _ in provider_regions; lower(r) == lower(origin)]
	count(hints) > 0
}

# latency_matrix is rtt[src][dst] (ms, P95, directional) of the provider.
latency_matrix := data.carbongate.latency[provider].rtt

has_latency if is_object(latency_matrix)

# rtt_from_origin is the round-trip time from the origin to each region
# that has one; the origin itself is 0. It is built from the origin's row of
# the matrix in one pass (a complete rule: evaluated once per decision).
rtt_from_origin := object.union(
	{r: t | some r, t in latency_matrix[origin]; provider_regions[r]},
	{origin: 0 | provider_regions[origin]},
)

# rtt(r) is rtt_from_origin[r] without building all of rtt_from_origin.
rtt(r) := 0 if {
	r == origin
} else := latency_matrix[origin][r]

# Step 3: within max_latency of the origin (the origin itself: 0, and
# max_latency is at least 0); without latency data, only the origin
# qualifies. One pass over the origin's row of the matrix.
latency_kept := {r | some r, t in latency_matrix[origin]; t <= max_latency; provider_regions[r]} | origin_kept if {
	has_latency
} else := origin_kept

origin_kept := {origin | provider_regions[origin]}

beyond := count({r | some r, t in rtt_from_origin; t > max_latency})

unmeasured := count({r | has_latency; some r, _ in provider_regions; not rtt_from_origin[r]})

# Step 4: residency.
residency_kept := {r | some r in latency_kept; data.carbongate.residency.eu.regions[provider][r]} if {
	residency_eu
} else := latency_kept

outside_eu := count(latency_kept) - count(residency_kept)

# Step 5: a grid zone, and one representative region per zone: the lowest
# round-trip time from the origin, then the lowest name. zone_candidates
# holds [zone, rtt, region] of each region with a zone.
zone_candidates := sort([[z, rtt(r), r] | some r in residency_kept; z := provider_regions[r].zone; z != ""])

no_zone := count(residency_kept) - count(zone_candidates)

eligible_zones := sort({c[0] | some c in zone_candidates})

# representative maps each eligible zone to the first of its candidates in
# zone_candidates' order (zone, rtt, name): one pass.
representative := {c[0]: c[2] |
	some i, c in zone_candidates
	first_of_zone(i, c[0])
}

first_of_zone(0, _)

first_of_zone(i, z) if zone_candidates[i - 1][0] != z

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
	count(provider_regions) > 1
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

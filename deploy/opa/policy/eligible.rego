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
# that has one; the origin itself is 0.
rtt_from_origin[r] := 0 if {
	some r, _ in provider_regions
	r == origin
}

rtt_from_origin[r] := t if {
	some r, _ in provider_regions
	r != origin
	t := latency_matrix[origin][r]
}

# Step 3: within max_latency of the origin; without latency data, only the
# origin qualifies.
latency_kept contains r if {
	has_latency
	some r, t in rtt_from_origin
	t <= max_latency
}

latency_kept contains origin if {
	not has_latency
	provider_regions[origin]
}

beyond := count({r | some r, t in rtt_from_origin; t > max_latency})

unmeasured := count({r | has_latency; some r, _ in provider_regions; not rtt_from_origin[r]})

# Step 4: residency.
residency_kept contains r if {
	some r in latency_kept
	not residency_eu
}

residency_kept contains r if {
	some r in latency_kept
	residency_eu
	data.carbongate.residency.eu.regions[provider][r]
}

outside_eu := count(latency_kept) - count(residency_kept)

# Step 5: a grid zone, and one representative region per zone: the lowest
# round-trip time from the origin, then the lowest name.
zone_kept contains r if {
	some r in residency_kept
	provider_regions[r].zone != ""
}

no_zone := count(residency_kept) - count(zone_kept)

eligible_zones := sort({provider_regions[r].zone | some r in zone_kept})

representative[z] := best[1] if {
	some z in eligible_zones
	best := min({[rtt_from_origin[r], r] | some r in zone_kept; provider_regions[r].zone == z})
}

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

package carbongate.admission

# Step 9a of the decision procedure: spec.instanceType.

# instance_ops adds spec.instanceType to a scheduled template that has
# minCPU and minRAM and no instanceType, on a provider with an instance
# index (data.carbongate.instances: aws, azure); none when no type fits.
instance_ops := [{"op": "add", "path": "/spec/instanceType", "value": instance_type}] if {
	instance_type
} else := []

# instance_type is the first type of the provider's index with at least
# minCPU vCPUs and minRAM memory: the index lists the types in the order
# of forecast/instances' Fit (least estimated power, then fewest vCPUs,
# least memory, name) without those an earlier type dominates, so this is
# the type Fit chooses (deploy/opa/gen checks it).
instance_type := first_fit(data.carbongate.instances[provider], cpu, quantity_gib(spec.minRAM)) if {
	not present("instanceType")
	cpu := spec.minCPU
	is_number(cpu)
}

# first_fit is the first type of index with at least cpu vCPUs and ram
# GiB: from the short list by_vcpus has when a type has exactly cpu vCPUs
# (the usual request), else from the whole index.
first_fit(index, cpu, ram) := name if {
	name := [t.name | some t in index.by_vcpus[format_int(cpu, 10)]; t.memory_gib >= ram][0]
} else := [t.name |
	some t in index.types
	t.vcpus >= cpu
	t.memory_gib >= ram
][0]

# quantity_gib is a Kubernetes quantity string in GiB, as
# resource.ParseQuantity reads it: a signed decimal ("" and "." are 0),
# then a decimal suffix (n u m k M G T P E), a binary one (Ki … Ei) or an
# exponent (e3, E-2).
quantity_gib(q) := to_number(n) if {
	# The usual "16Gi", without a regular expression.
	is_string(q)
	n := trim_suffix(q, "Gi")
	n != q
	n != ""
	trim_left(n, "0123456789") == ""
	not startswith(n, "0")
} else := (((sign * decimal) * quantity_scale[m[3]]) * exponent) / 1073741824 if {
	is_string(q)
	m := regex.find_all_string_submatch_n(`^([+-]?)([0-9]*(?:\.[0-9]*)?)(?:([numkMGTPE]|[KMGTPE]i)|[eE]([+-]?[0-9]+))?$`, q, 1)[0]
	sign := {"": 1, "+": 1, "-": -1}[m[1]]
	decimal := to_number(json_number(trim_right(trim_left(m[2], "0"), ".")))
	exponent := quantity_exponent(m[4])
}

quantity_exponent("") := 1

quantity_exponent(e) := to_number(concat("", ["1e", e])) if e != ""

quantity_scale := {
	"": 1, "n": 0.000000001, "u": 0.000001, "m": 0.001,
	"k": 1000, "M": 1000000, "G": 1000000000, "T": 1000000000000, "P": 1000000000000000, "E": 1000000000000000000,
	"Ki": 1024, "Mi": 1048576, "Gi": 1073741824, "Ti": 1099511627776, "Pi": 1125899906842624, "Ei": 1152921504606846976,
}

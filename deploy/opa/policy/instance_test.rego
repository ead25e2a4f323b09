package carbongate.instance_test

import data.carbongate.admission

# quantity_gib reads what resource.ParseQuantity reads, in GiB.
test_quantity_gib if {
	admission.quantity_gib("16Gi") == 16
	admission.quantity_gib("16384Mi") == 16
	admission.quantity_gib("0.5Ti") == 512
	admission.quantity_gib(".5Gi") == 0.5
	admission.quantity_gib("1073741824") == 1
	admission.quantity_gib("17G") == 17000000000 / 1073741824
	admission.quantity_gib("2e9") == 2000000000 / 1073741824
	admission.quantity_gib("1E3") == 1000 / 1073741824
	admission.quantity_gib("1E") == 1000000000000000000 / 1073741824
	admission.quantity_gib("1024Ki") == 1 / 1024
	admission.quantity_gib("-1Gi") == -1
	admission.quantity_gib("+") == 0
	admission.quantity_gib(".") == 0
	admission.quantity_gib("007Gi") == 7
	admission.quantity_gib("8.Gi") == 8
	not admission.quantity_gib("16 Gi")
	not admission.quantity_gib(16)
}

# The instance type of a template: the first fitting type of the index.
instance_type(spec) := t if {
	t := admission.instance_type with input as {"request": {"object": {"spec": spec}}}
}

test_instance_type if {
	# The issue's example: 2 vCPUs, 16 GiB on azure (the default provider).
	instance_type({"minCPU": 2, "minRAM": "16Gi"}) == "E2d v5"
	instance_type({"minCPU": 4, "minRAM": "16Gi", "provider": "azure"}) == "D4a v4"
	instance_type({"minCPU": 2, "minRAM": "17G", "provider": "aws"}) == "z1d.large"

	# No azure type has exactly 3 vCPUs: the whole index is searched.
	instance_type({"minCPU": 3, "minRAM": "16Gi"}) == "D4a v4"
	instance_type({"minCPU": 4, "minRAM": "512Mi"}) == "D4a v4"
	instance_type({"minCPU": 1, "minRAM": "0", "provider": "aws"}) == data.carbongate.instances.aws.types[0].name
}

test_no_instance_type if {
	not instance_type({"minCPU": 2})
	not instance_type({"minRAM": "16Gi"})
	not instance_type({"minCPU": null, "minRAM": "16Gi"})
	not instance_type({"minCPU": 2, "minRAM": "16Gi", "instanceType": "E4as v4"})
	not instance_type({"minCPU": 2, "minRAM": "16Gi", "provider": "gcp"})
	not instance_type({"minCPU": 5000, "minRAM": "16Gi"})
	not instance_type({"minCPU": 2, "minRAM": "1000Ti"})
}

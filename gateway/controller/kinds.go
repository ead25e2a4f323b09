package controller

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// VMKinds are the kinds a provider's template (ConfigMap
// carbongate-vm-<provider>) may render, by provider: anything else is
// refused before it reaches the API server, so a namespace's template
// cannot make the controller create a RoleBinding, a Pod or a Secret with
// its own rights. The controller's RBAC grants create and get on these
// kinds' resources only (deploy/controller/rbac.yaml, the chart's
// controller.vmKinds).
type VMKinds map[string][]schema.GroupKind

// DefaultVMKinds are the cloud operators' VM kinds: Azure Service
// Operator's VirtualMachine, ACK's EC2 Instance and Config Connector's
// ComputeInstance. Oracle has none (its operator manages no VMs).
func DefaultVMKinds() VMKinds {
	return VMKinds{
		"azure": {{Group: "compute.azure.com", Kind: "VirtualMachine"}},
		"aws":   {{Group: "ec2.services.k8s.aws", Kind: "Instance"}},
		"gcp":   {{Group: "compute.cnrm.cloud.google.com", Kind: "ComputeInstance"}},
	}
}

// ParseVMKinds reads provider=group/Kind entries separated by commas
// (a provider may have several); "" is no kind at all.
func ParseVMKinds(s string) (VMKinds, error) {
	k := VMKinds{}
	for e := range strings.SplitSeq(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		provider, gk, ok := strings.Cut(e, "=")
		group, kind, ok2 := strings.Cut(gk, "/")
		if !ok || !ok2 || provider == "" || group == "" || kind == "" || strings.ContainsAny(kind, "/=") {
			return nil, fmt.Errorf("%q is not provider=group/Kind (e.g. azure=compute.azure.com/VirtualMachine)", e)
		}
		k[provider] = append(k[provider], schema.GroupKind{Group: group, Kind: kind})
	}
	return k, nil
}

// String writes k as ParseVMKinds reads it, providers sorted.
func (k VMKinds) String() string {
	var out []string
	for _, p := range slices.Sorted(maps.Keys(k)) {
		for _, gk := range k[p] {
			out = append(out, p+"="+gk.Group+"/"+gk.Kind)
		}
	}
	return strings.Join(out, ",")
}

// check returns an error unless provider's template may render gk. The
// core group ("") is never allowed: it holds Pods, Secrets, ServiceAccounts.
func (k VMKinds) check(provider string, gk schema.GroupKind) error {
	if gk.Group != "" && slices.Contains(k[provider], gk) {
		return nil
	}
	allowed := "none"
	if len(k[provider]) > 0 {
		var names []string
		for _, a := range k[provider] {
			names = append(names, a.Kind+"."+a.Group)
		}
		allowed = strings.Join(names, ", ")
	}
	return fmt.Errorf("renders a %s, which provider %s's templates may not create (allowed: %s; the controller's --vm-kinds)", kindName(gk), provider, allowed)
}

func kindName(gk schema.GroupKind) string {
	if gk.Group == "" {
		return gk.Kind + " (core group)"
	}
	return gk.Kind + "." + gk.Group
}

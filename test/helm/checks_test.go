//go:build interop

package helm

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// checkRendered runs every contract check on one render.
func checkRendered(t *testing.T, c chartCase, o *Objects) {
	t.Helper()
	checkMetadata(t, c, o)
	if c.apiServer {
		checkKarmadaAPIServer(t, c, o)
		return
	}
	for owner, tpl := range o.podTemplates() {
		checkPod(t, c, o, owner, tpl)
	}
	checkGateway(t, c, o)
	checkServices(t, o)
	checkDisruptionAndScaling(t, o)
	checkRBAC(t, o)
	checkWebhooks(t, o)
	checkOPA(t, o)
	checkServiceMonitors(t, o)
	checkPrometheusRules(t, c, o)
	checkDashboards(t, c, o)
	checkCronJobs(t, o)
	checkConfigMaps(t, o)
	checkKServeRefs(t, o)
	checkProduction(t, o)
	checkNoInlineCredentials(t, o)
}

var clusterScoped = map[string]bool{"MutatingWebhookConfiguration": true, "CustomResourceDefinition": true,
	"ClusterRole": true, "ClusterRoleBinding": true}

// checkMetadata validates names, namespaces, labels and annotations as the
// API server does, and the labels every templated object carries.
func checkMetadata(t *testing.T, c chartCase, o *Objects) {
	t.Helper()
	seen := map[string]bool{}
	for _, x := range o.All {
		kind := x.Doc.Kind
		nameFn := apivalidation.NameIsDNSSubdomain
		if kind == "Service" || kind == "InferenceService" {
			nameFn = apivalidation.NameIsDNS1035Label
		}
		if errs := apivalidation.ValidateObjectMeta(x.Meta, !clusterScoped[kind], nameFn, field.NewPath("metadata")); len(errs) > 0 {
			t.Errorf("%s: %v", x.Doc.ID(), errs.ToAggregate())
		}
		if clusterScoped[kind] && x.Meta.Namespace != "" {
			t.Errorf("%s: cluster-scoped object with namespace %q", x.Doc.ID(), x.Meta.Namespace)
		}
		key := kind + "/" + x.Meta.Namespace + "/" + x.Meta.Name
		if seen[key] {
			t.Errorf("%s rendered twice", key)
		}
		seen[key] = true
		if kind == "CustomResourceDefinition" {
			continue // crds/ is not templated
		}
		for k, want := range map[string]string{
			"app.kubernetes.io/instance":   c.release,
			"app.kubernetes.io/managed-by": "Helm",
			"app.kubernetes.io/part-of":    "carbongate",
		} {
			if got := x.Meta.Labels[k]; got != want {
				t.Errorf("%s: label %s = %q, want %q", x.Doc.ID(), k, got, want)
			}
		}
		if !clusterScoped[kind] && !strings.HasPrefix(x.Doc.Source, "carbongate/templates/kserve-models.yaml") &&
			kind != "Role" && kind != "RoleBinding" && x.Meta.Namespace != c.ns {
			t.Errorf("%s: namespace %q, want the release namespace %q", x.Doc.ID(), x.Meta.Namespace, c.ns)
		}
	}
}

// sensitiveEnv matches environment names that carry credentials: their
// value must come from a Secret.
var sensitiveEnv = regexp.MustCompile(`(?i)(TOKEN|SECRET|PASSWORD|PASSWD|USERNAME|ACCESS_KEY|CREDENTIAL|_URI$|_DSN$|DATABASE_URL|^CARBONGATE_STORE$|^CARBONGATE_REGISTRY$)`)

// credentialFlags are the flags of carbongate and carbonctl that take a
// credential or a URL that may hold one: when rendered, their value must be
// a $(VAR) reference to a Secret-backed env entry.
var credentialFlags = map[string]bool{
	"store": true, "registry": true, "registry-token": true, "electricitymaps-token": true, "watttime-user": true,
}

// userinfoURL matches a URL carrying user information (user:password@).
var userinfoURL = regexp.MustCompile(`[a-z][a-z0-9+.-]*://[^/\s@]+@`)

// envRef matches a $(VAR) reference the kubelet expands in args.
var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// checkPod checks a pod template: service account, volumes and mounts,
// security contexts, resources, ports, probes, and that no credential is
// written into env values or args.
func checkPod(t *testing.T, c chartCase, o *Objects, owner string, tpl *corev1.PodTemplateSpec) {
	t.Helper()
	spec := &tpl.Spec
	if errs := metav1validation.ValidateLabels(tpl.Labels, field.NewPath("metadata", "labels")); len(errs) > 0 {
		t.Errorf("%s: pod labels: %v", owner, errs.ToAggregate())
	}
	if len(o.ServiceAccounts) > 0 && spec.ServiceAccountName != "" && !slices.ContainsFunc(o.ServiceAccounts, func(sa *corev1.ServiceAccount) bool {
		return sa.Name == spec.ServiceAccountName
	}) {
		t.Errorf("%s: serviceAccountName %q is not rendered", owner, spec.ServiceAccountName)
	}
	psc := spec.SecurityContext
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: pod securityContext.seccompProfile is not RuntimeDefault", owner)
	}
	volumes := map[string]*corev1.Volume{}
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		if volumes[v.Name] != nil {
			t.Errorf("%s: volume %q twice", owner, v.Name)
		}
		volumes[v.Name] = v
		if cm := v.ConfigMap; cm != nil && o.configMap(tpl.Namespace, cm.Name) == nil && o.configMap(ownerNamespace(o, owner), cm.Name) == nil &&
			!slices.Contains(c.externalConfigMaps, cm.Name) {
			t.Errorf("%s: volume %q uses ConfigMap %q, which is neither rendered nor an expected external one", owner, v.Name, cm.Name)
		}
	}
	for _, ctr := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		id := owner + " container " + ctr.Name
		checkContainer(t, id, psc, ctr, strings.HasPrefix(owner, "Deployment "))
		for _, m := range ctr.VolumeMounts {
			v := volumes[m.Name]
			if v == nil {
				t.Errorf("%s: volumeMount %q names no volume", id, m.Name)
				continue
			}
			if m.SubPath != "" && v.ConfigMap != nil {
				if cm := o.configMap(ownerNamespace(o, owner), v.ConfigMap.Name); cm != nil {
					if _, ok := cm.Data[m.SubPath]; !ok {
						t.Errorf("%s: subPath %q is not a key of ConfigMap %s", id, m.SubPath, cm.Name)
					}
				}
			}
		}
	}
}

// ownerNamespace returns the namespace of the Deployment or CronJob owner
// names ("Deployment x").
func ownerNamespace(o *Objects, owner string) string {
	kind, name, _ := strings.Cut(owner, " ")
	for _, x := range o.All {
		if x.Doc.Kind == kind && x.Meta.Name == name {
			return x.Meta.Namespace
		}
	}
	return ""
}

// checkContainer checks one container; probes: a serving container, which
// needs liveness and readiness probes.
func checkContainer(t *testing.T, id string, psc *corev1.PodSecurityContext, ctr corev1.Container, probes bool) {
	t.Helper()
	if errs := validation.IsDNS1123Label(ctr.Name); len(errs) > 0 {
		t.Errorf("%s: name: %v", id, errs)
	}
	if !strings.Contains(ctr.Image, ":") || strings.HasSuffix(ctr.Image, ":latest") {
		t.Errorf("%s: image %q has no pinned tag", id, ctr.Image)
	}
	checkResources(t, id, ctr.Resources)
	sc := ctr.SecurityContext
	switch {
	case sc == nil:
		t.Errorf("%s: no securityContext", id)
	default:
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("%s: allowPrivilegeEscalation is not false", id)
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("%s: readOnlyRootFilesystem is not true", id)
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			t.Errorf("%s: capabilities do not drop ALL", id)
		}
		nonRoot := sc.RunAsNonRoot != nil && *sc.RunAsNonRoot || psc != nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot
		if !nonRoot {
			t.Errorf("%s: runAsNonRoot is not set", id)
		}
	}
	ports := map[string]bool{}
	for _, p := range ctr.Ports {
		if errs := validation.IsValidPortName(p.Name); len(errs) > 0 {
			t.Errorf("%s: port name %q: %v", id, p.Name, errs)
		}
		ports[p.Name] = true
	}
	for name, pr := range map[string]*corev1.Probe{"liveness": ctr.LivenessProbe, "readiness": ctr.ReadinessProbe} {
		if pr == nil {
			if probes {
				t.Errorf("%s: no %s probe", id, name)
			}
			continue
		}
		if g := pr.HTTPGet; g != nil && g.Port.StrVal != "" && !ports[g.Port.StrVal] {
			t.Errorf("%s: %s probe port %q is not a container port", id, name, g.Port.StrVal)
		}
	}
	checkEnvAndArgs(t, id, ctr)
}

// checkResources requires CPU and memory requests and limits, requests at
// most the limits.
func checkResources(t *testing.T, id string, r corev1.ResourceRequirements) {
	t.Helper()
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, okReq := r.Requests[name]
		lim, okLim := r.Limits[name]
		if !okReq || !okLim {
			t.Errorf("%s: resources %s: request set %v, limit set %v, want both", id, name, okReq, okLim)
			continue
		}
		if req.Cmp(lim) > 0 {
			t.Errorf("%s: %s request %s above limit %s", id, name, req.String(), lim.String())
		}
	}
}

// checkEnvAndArgs: credentials only through secretKeyRef; no URL with a
// password in a value or an argument; $(VAR) references resolve.
func checkEnvAndArgs(t *testing.T, id string, ctr corev1.Container) {
	t.Helper()
	env := map[string]bool{}
	for _, e := range ctr.Env {
		env[e.Name] = true
		if errs := validation.IsEnvVarName(e.Name); len(errs) > 0 {
			t.Errorf("%s: env %q: %v", id, e.Name, errs)
		}
		if userinfoURL.MatchString(e.Value) {
			t.Errorf("%s: env %s holds a URL with credentials in plain text", id, e.Name)
		}
		if sensitiveEnv.MatchString(e.Name) && (e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil) {
			t.Errorf("%s: env %s carries a credential but does not come from a secretKeyRef", id, e.Name)
		}
		if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil && (ref.SecretKeyRef.Name == "" || ref.SecretKeyRef.Key == "") {
			t.Errorf("%s: env %s: secretKeyRef without name or key", id, e.Name)
		}
	}
	for _, a := range append(slices.Clone(ctr.Command), ctr.Args...) {
		if userinfoURL.MatchString(a) {
			t.Errorf("%s: argument %q holds a URL with credentials", id, a)
		}
		if k, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "="); sensitiveEnv.MatchString(strings.ReplaceAll(k, "-", "_")) && strings.Contains(a, "=") && !envRef.MatchString(a) {
			t.Errorf("%s: argument %q passes a credential on the command line", id, a)
		}
		if k, v, ok := strings.Cut(strings.TrimLeft(a, "-"), "="); strings.HasPrefix(a, "-") && credentialFlags[k] && (!ok || !envRef.MatchString(v) || envRef.ReplaceAllString(v, "") != "") {
			t.Errorf("%s: argument %q: --%s must be exactly a $(VAR) reference to a Secret", id, a, k)
		}
		for _, m := range envRef.FindAllStringSubmatch(a, -1) {
			if !env[m[1]] {
				t.Errorf("%s: argument %q refers to $(%s), which is not in the container's env", id, a, m[1])
			}
		}
	}
}

// flagValues parses "--name=value" and "--name" arguments.
func flagValues(args []string) map[string]string {
	out := map[string]string{}
	for _, a := range args {
		if !strings.HasPrefix(a, "--") {
			continue
		}
		k, v, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !ok {
			v = "true"
		}
		out[k] = v
	}
	return out
}

// container returns the container named name, or fails.
func container(t *testing.T, spec *corev1.PodSpec, name string) *corev1.Container {
	t.Helper()
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return &spec.Containers[i]
		}
	}
	t.Fatalf("no container %q", name)
	return nil
}

// checkGateway checks the gateway Deployment: probes, the drain timing,
// replicas against the HPA, selectors, API access, and the flags each
// values toggle must produce.
func checkGateway(t *testing.T, c chartCase, o *Objects) {
	t.Helper()
	d := o.deployment("gateway")
	if d == nil {
		t.Fatal("no gateway Deployment")
	}
	ctr := container(t, &d.Spec.Template.Spec, "carbongate")
	flags := flagValues(ctr.Args)
	scheme := corev1.URISchemeHTTP
	if flags["admission"] == "true" {
		scheme = corev1.URISchemeHTTPS
	}
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"liveness", ctr.LivenessProbe, "/healthz"}, {"readiness", ctr.ReadinessProbe, "/readyz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("gateway: no HTTP %s probe", p.name)
			continue
		}
		g := p.probe.HTTPGet
		port := strings.ToLower(string(scheme)) // the port is named after its scheme
		if g.Path != p.path || g.Port.StrVal != port || g.Scheme != scheme {
			t.Errorf("gateway: %s probe %s %s port %s, want %s %s port %s", p.name, g.Scheme, g.Path, g.Port.String(), scheme, p.path, port)
		}
	}
	drain, err1 := time.ParseDuration(flags["drain-delay"])
	shutdown, err2 := time.ParseDuration(flags["shutdown-timeout"])
	if err1 != nil || err2 != nil {
		t.Fatalf("gateway: --drain-delay %q / --shutdown-timeout %q do not parse", flags["drain-delay"], flags["shutdown-timeout"])
	}
	grace := time.Duration(*d.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
	if grace <= drain+shutdown {
		t.Errorf("gateway: terminationGracePeriodSeconds %v is not above drain-delay %v + shutdown-timeout %v", grace, drain, shutdown)
	}
	if rp := ctr.ReadinessProbe; rp != nil && drain > 0 {
		if marked := time.Duration(rp.PeriodSeconds*rp.FailureThreshold) * time.Second; marked >= drain {
			t.Errorf("gateway: readiness notices a drain after up to %v, not within the drain delay %v", marked, drain)
		}
	}
	if ctr.Lifecycle != nil && ctr.Lifecycle.PreStop != nil {
		t.Errorf("gateway: a preStop hook; carbongate fails readiness on SIGTERM itself")
	}
	if hpa := len(o.HPAs) > 0; hpa != (d.Spec.Replicas == nil) {
		t.Errorf("gateway: HPA rendered %v but spec.replicas set %v: exactly one may own the count", hpa, d.Spec.Replicas != nil)
	}
	checkSelector(t, "gateway Deployment", d.Spec.Selector, d.Spec.Template.Labels)
	if want := len(o.Roles) > 0; d.Spec.Template.Spec.AutomountServiceAccountToken == nil || *d.Spec.Template.Spec.AutomountServiceAccountToken != want {
		t.Errorf("gateway: automountServiceAccountToken is not %v (KServe discovery %v)", want, want)
	}
	if v, ok := flags["registry"]; ok && v != "$(CARBONGATE_REGISTRY_URI)" {
		t.Errorf("gateway: --registry=%q, want the Secret-backed $(CARBONGATE_REGISTRY_URI)", v)
	}
	ns, discovery := flags["kserve-namespace"]
	if discovery != (len(o.Roles) > 0) {
		t.Errorf("gateway: --kserve-namespace set %v, discovery Role rendered %v", discovery, len(o.Roles) > 0)
	}
	for _, r := range o.Roles {
		if r.Namespace != ns {
			t.Errorf("gateway: --kserve-namespace=%s but the discovery Role is in %s", ns, r.Namespace)
		}
	}
	checkKarmadaHost(t, c, d, ctr)
	if flags["admission"] == "true" {
		for _, f := range []string{"tls-cert", "tls-key"} {
			if !mountedFile(d.Spec.Template.Spec, *ctr, flags[f]) {
				t.Errorf("gateway: --%s=%s is not on a mounted Secret volume", f, flags[f])
			}
		}
	}
}

// mountedFile reports whether path lies under a mount of a Secret volume.
func mountedFile(spec corev1.PodSpec, ctr corev1.Container, path string) bool {
	for _, m := range ctr.VolumeMounts {
		if !strings.HasPrefix(path, strings.TrimSuffix(m.MountPath, "/")+"/") {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name == m.Name && v.Secret != nil {
				return true
			}
		}
	}
	return false
}

// checkSelector validates sel and that it selects podLabels.
func checkSelector(t *testing.T, id string, sel *metav1.LabelSelector, podLabels map[string]string) {
	t.Helper()
	if sel == nil || len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		t.Errorf("%s: empty selector", id)
		return
	}
	if errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, field.NewPath("selector")); len(errs) > 0 {
		t.Errorf("%s: %v", id, errs.ToAggregate())
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Errorf("%s: %v", id, err)
		return
	}
	if !s.Matches(labels.Set(podLabels)) {
		t.Errorf("%s: selector %s does not match the pod labels %v", id, s, podLabels)
	}
}

// selectedDeployments returns the names of the Deployments in ns whose pods
// sel matches.
func selectedDeployments(o *Objects, ns string, sel labels.Selector) []string {
	var out []string
	for _, d := range o.Deployments {
		if d.Namespace == ns && sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			out = append(out, d.Name)
		}
	}
	return out
}

// checkServices: each Service selects the pods of exactly one Deployment and
// its target ports are ports of that Deployment's containers.
func checkServices(t *testing.T, o *Objects) {
	t.Helper()
	for _, s := range o.Services {
		if len(s.Spec.Selector) == 0 {
			t.Errorf("Service %s: no selector", s.Name)
			continue
		}
		got := selectedDeployments(o, s.Namespace, labels.SelectorFromSet(s.Spec.Selector))
		if len(got) != 1 {
			t.Errorf("Service %s selects the pods of %v, want exactly one Deployment", s.Name, got)
			continue
		}
		d := o.deploymentNamed(got[0])
		ports := map[string]bool{}
		for _, ctr := range d.Spec.Template.Spec.Containers {
			for _, p := range ctr.Ports {
				ports[p.Name] = true
			}
		}
		for _, p := range s.Spec.Ports {
			if errs := validation.IsValidPortName(p.Name); len(errs) > 0 {
				t.Errorf("Service %s: port name %q: %v", s.Name, p.Name, errs)
			}
			if p.TargetPort.StrVal == "" || !ports[p.TargetPort.StrVal] {
				t.Errorf("Service %s: targetPort %s is not a named port of Deployment %s", s.Name, p.TargetPort.String(), d.Name)
			}
		}
	}
}

// checkDisruptionAndScaling: each PDB selects exactly one Deployment and
// sets one bound; each HPA scales a rendered Deployment whose containers
// request CPU.
func checkDisruptionAndScaling(t *testing.T, o *Objects) {
	t.Helper()
	for _, p := range o.PDBs {
		s, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
		if err != nil {
			t.Errorf("PDB %s: %v", p.Name, err)
			continue
		}
		if got := selectedDeployments(o, p.Namespace, s); len(got) != 1 {
			t.Errorf("PDB %s selects the pods of %v, want exactly one Deployment", p.Name, got)
		} else if d := o.deploymentNamed(got[0]); d.Spec.Replicas != nil && p.Spec.MinAvailable != nil && p.Spec.MinAvailable.Type == 0 &&
			p.Spec.MinAvailable.IntVal >= *d.Spec.Replicas {
			t.Errorf("PDB %s: minAvailable %d with %d replicas blocks every voluntary eviction", p.Name, p.Spec.MinAvailable.IntVal, *d.Spec.Replicas)
		}
		if (p.Spec.MinAvailable == nil) == (p.Spec.MaxUnavailable == nil) {
			t.Errorf("PDB %s: set exactly one of minAvailable and maxUnavailable", p.Name)
		}
	}
	for _, h := range o.HPAs {
		ref := h.Spec.ScaleTargetRef
		d := o.deploymentNamed(ref.Name)
		if ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" || d == nil || d.Namespace != h.Namespace {
			t.Errorf("HPA %s scales %s %s, not a rendered Deployment", h.Name, ref.Kind, ref.Name)
			continue
		}
		if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 1 || *h.Spec.MinReplicas > h.Spec.MaxReplicas {
			t.Errorf("HPA %s: minReplicas %v, maxReplicas %d", h.Name, h.Spec.MinReplicas, h.Spec.MaxReplicas)
		}
		if len(h.Spec.Metrics) == 0 || h.Spec.Metrics[0].Resource == nil || h.Spec.Metrics[0].Resource.Name != corev1.ResourceCPU {
			t.Errorf("HPA %s: no CPU metric", h.Name)
		}
		for _, ctr := range d.Spec.Template.Spec.Containers {
			if _, ok := ctr.Resources.Requests[corev1.ResourceCPU]; !ok {
				t.Errorf("HPA %s: container %s requests no CPU, so utilisation is undefined", h.Name, ctr.Name)
			}
		}
	}
}

// checkURLHost checks that u names the Service svc in ns on port.
func checkURLHost(t *testing.T, id, u, svc, ns string, port int32) {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Errorf("%s: %q: %v", id, u, err)
		return
	}
	if want := fmt.Sprintf("%s.%s.svc:%d", svc, ns, port); p.Host != want {
		t.Errorf("%s: %q is not the Service %s (%s)", id, u, svc, want)
	}
}

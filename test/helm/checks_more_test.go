//go:build interop

package helm

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kserve/kserve/pkg/apis/serving/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// checkRBAC: the discovery Role grants list and watch on InferenceServices
// and nothing else; its binding names it and the gateway's service account.
func checkRBAC(t *testing.T, o *Objects) {
	t.Helper()
	for _, r := range o.Roles {
		if len(r.Rules) != 1 {
			t.Errorf("Role %s: %d rules, want the one for inferenceservices", r.Name, len(r.Rules))
			continue
		}
		rule := r.Rules[0]
		if !slices.Equal(rule.APIGroups, []string{"serving.kserve.io"}) || !slices.Equal(rule.Resources, []string{"inferenceservices"}) ||
			!slices.Equal(rule.Verbs, []string{"list", "watch"}) || len(rule.ResourceNames) > 0 {
			t.Errorf("Role %s: rule %+v, want list and watch on serving.kserve.io inferenceservices", r.Name, rule)
		}
	}
	gw := o.deployment("gateway")
	for _, b := range o.RoleBindings {
		if b.RoleRef.APIGroup != "rbac.authorization.k8s.io" || b.RoleRef.Kind != "Role" ||
			!slices.ContainsFunc(o.Roles, func(r *rbacv1.Role) bool { return r.Name == b.RoleRef.Name && r.Namespace == b.Namespace }) {
			t.Errorf("RoleBinding %s: roleRef %+v is not a rendered Role in %s", b.Name, b.RoleRef, b.Namespace)
		}
		if len(b.Subjects) != 1 {
			t.Errorf("RoleBinding %s: %d subjects, want the gateway's service account", b.Name, len(b.Subjects))
			continue
		}
		s := b.Subjects[0]
		if s.Kind != "ServiceAccount" || gw == nil || s.Name != gw.Spec.Template.Spec.ServiceAccountName || s.Namespace != gw.Namespace {
			t.Errorf("RoleBinding %s: subject %+v is not the gateway's service account", b.Name, s)
		}
	}
}

// checkWebhooks: the webhook is well formed for the API server, targets
// VmTemplates, stays within the time limits and calls a rendered Service
// whose pods serve the webhook over TLS.
func checkWebhooks(t *testing.T, o *Objects) {
	t.Helper()
	for _, cfg := range o.Webhooks {
		if len(cfg.Webhooks) != 1 {
			t.Errorf("MutatingWebhookConfiguration %s: %d webhooks, want 1", cfg.Name, len(cfg.Webhooks))
			continue
		}
		w := cfg.Webhooks[0]
		id := "webhook " + w.Name
		if errs := validation.IsDNS1123Subdomain(w.Name); len(errs) > 0 || strings.Count(w.Name, ".") < 2 {
			t.Errorf("%s: the name must be a fully qualified name of three labels or more (%v)", id, errs)
		}
		if !slices.Contains(w.AdmissionReviewVersions, "v1") {
			t.Errorf("%s: admissionReviewVersions %v lacks v1", id, w.AdmissionReviewVersions)
		}
		if w.SideEffects == nil || *w.SideEffects != admissionregistrationv1.SideEffectClassNone {
			t.Errorf("%s: sideEffects is not None", id)
		}
		if w.TimeoutSeconds == nil || *w.TimeoutSeconds < 1 || *w.TimeoutSeconds > 30 {
			t.Errorf("%s: timeoutSeconds %v outside 1..30", id, w.TimeoutSeconds)
		}
		if w.FailurePolicy == nil {
			t.Errorf("%s: no failurePolicy", id)
		}
		if karmadaWebhook(w) { // Karmada's API server's: checkKarmadaAPIServer
			continue
		}
		checkWebhookRules(t, id, o, w.Rules)
		for name, sel := range map[string]*metav1.LabelSelector{"namespaceSelector": w.NamespaceSelector, "objectSelector": w.ObjectSelector} {
			if sel == nil {
				continue
			}
			if errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, field.NewPath(name)); len(errs) > 0 {
				t.Errorf("%s: %v", id, errs.ToAggregate())
			}
		}
		checkWebhookBackend(t, id, o, w)
	}
}

// checkWebhookRules: CREATE and UPDATE of vmtemplates, matching the CRD.
func checkWebhookRules(t *testing.T, id string, o *Objects, rules []admissionregistrationv1.RuleWithOperations) {
	t.Helper()
	if len(rules) != 1 {
		t.Errorf("%s: %d rules, want 1", id, len(rules))
		return
	}
	r := rules[0]
	want := struct{ group, version, resource string }{"carbongate.io", "v1alpha1", "vmtemplates"}
	for _, crd := range o.CRDs {
		if crd.Spec.Names.Kind == "VmTemplate" {
			want.group, want.resource = crd.Spec.Group, crd.Spec.Names.Plural
		}
	}
	if !slices.Equal(r.APIGroups, []string{want.group}) || !slices.Equal(r.APIVersions, []string{want.version}) || !slices.Equal(r.Resources, []string{want.resource}) {
		t.Errorf("%s: rule %v/%v/%v, want %s/%s/%s", id, r.APIGroups, r.APIVersions, r.Resources, want.group, want.version, want.resource)
	}
	ops := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	if !slices.Equal(r.Operations, ops) {
		t.Errorf("%s: operations %v, want %v", id, r.Operations, ops)
	}
}

// checkWebhookBackend: the Service exists with the port, its pods serve the
// path over TLS from a mounted Secret.
func checkWebhookBackend(t *testing.T, id string, o *Objects, w admissionregistrationv1.MutatingWebhook) {
	t.Helper()
	ref := w.ClientConfig.Service
	if ref == nil || w.ClientConfig.URL != nil {
		t.Errorf("%s: clientConfig must name a Service", id)
		return
	}
	svc := o.service(ref.Namespace, ref.Name)
	if svc == nil {
		t.Errorf("%s: Service %s/%s is not rendered", id, ref.Namespace, ref.Name)
		return
	}
	port := int32(443)
	if ref.Port != nil {
		port = *ref.Port
	}
	if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == port }) {
		t.Errorf("%s: Service %s has no port %d", id, svc.Name, port)
	}
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	backends := selectedDeployments(o, svc.Namespace, sel)
	if len(backends) != 1 {
		t.Errorf("%s: Service %s selects %v", id, svc.Name, backends)
		return
	}
	d := o.deploymentNamed(backends[0])
	spec := d.Spec.Template.Spec
	switch component(d.ObjectMeta) {
	case "admission-opa":
		ctr := container(t, &spec, "opa")
		f := flagValues(ctr.Args)
		if ref.Path == nil || *ref.Path != "/" {
			t.Errorf("%s: OPA answers admission reviews at /, path is %v", id, ref.Path)
		}
		if !mountedFile(spec, *ctr, f["tls-cert-file"]) || !mountedFile(spec, *ctr, f["tls-private-key-file"]) {
			t.Errorf("%s: OPA's TLS files %q %q are not on a mounted Secret", id, f["tls-cert-file"], f["tls-private-key-file"])
		}
		// A client CA is used only with TLS authentication, and the reverse.
		if a, ca := f["authentication"], f["tls-ca-cert-file"]; (a == "tls") != (ca != "") || (a != "" && a != "tls") || (ca != "" && !mountedFile(spec, *ctr, ca)) {
			t.Errorf("%s: OPA's --authentication=%q with --tls-ca-cert-file=%q (want tls with a CA on a mounted Secret, or neither)", id, a, ca)
		}
		// With a certificate, OPA serves an address without a scheme over
		// HTTPS: the diagnostic address the HTTP probes use needs http://.
		if d := f["diagnostic-addr"]; d != "" && !strings.HasPrefix(d, "http://") {
			t.Errorf("%s: OPA's --diagnostic-addr=%s is served over HTTPS (it has --tls-cert-file); its probes speak HTTP", id, d)
		}
	case "gateway":
		ctr := container(t, &spec, "carbongate")
		f := flagValues(ctr.Args)
		if ref.Path == nil || *ref.Path != "/v1/admission/mutate" {
			t.Errorf("%s: carbongate's webhook route is /v1/admission/mutate, path is %v", id, ref.Path)
		}
		if f["admission"] != "true" || f["tls-cert"] == "" || f["tls-key"] == "" {
			t.Errorf("%s: the gateway runs without --admission and TLS: %v", id, ctr.Args)
		}
	default:
		t.Errorf("%s: Service %s selects %s, not a webhook server", id, svc.Name, d.Name)
	}
}

// checkOPA: OPA listens where its Service points, reads a configuration
// with the decision, and calls the gateway's Service within the webhook's
// timeout.
func checkOPA(t *testing.T, o *Objects) {
	t.Helper()
	d := o.deployment("admission-opa")
	if d == nil {
		return
	}
	spec := d.Spec.Template.Spec
	ctr := container(t, &spec, "opa")
	f := flagValues(ctr.Args)
	if !slices.ContainsFunc(ctr.Ports, func(p corev1.ContainerPort) bool { return ":"+strconv.Itoa(int(p.ContainerPort)) == f["addr"] }) {
		t.Errorf("OPA: --addr=%s is not a container port", f["addr"])
	}
	cm := o.configMap(d.Namespace, configMapOfMount(spec, *ctr, f["config-file"]))
	if cm == nil {
		t.Errorf("OPA: --config-file=%s is not on a rendered ConfigMap", f["config-file"])
	} else {
		var cfg struct {
			DefaultDecision string         `json:"default_decision"`
			Services        map[string]any `json:"services"`
			Bundles         map[string]any `json:"bundles"`
		}
		if err := yaml.UnmarshalStrict([]byte(cm.Data["config.yaml"]), &cfg); err != nil || !strings.HasPrefix(cfg.DefaultDecision, "/") {
			t.Errorf("OPA: config.yaml %q: %v (want a default_decision path)", cm.Data["config.yaml"], err)
		}
		if (len(cfg.Bundles) > 0) == slices.Contains(ctr.Args, "--bundle") {
			t.Errorf("OPA: the bundle comes from both or neither of the config's bundle server and --bundle")
		}
	}
	env := map[string]string{}
	for _, e := range ctr.Env {
		env[e.Name] = e.Value
	}
	gw := o.deployment("gateway")
	for _, s := range o.Services {
		if s.Namespace == gw.Namespace && len(selectedDeployments(o, s.Namespace, labels.SelectorFromSet(s.Spec.Selector))) == 1 &&
			selectedDeployments(o, s.Namespace, labels.SelectorFromSet(s.Spec.Selector))[0] == gw.Name {
			checkURLHost(t, "OPA CARBONGATE_URL", env["CARBONGATE_URL"], s.Name, s.Namespace, s.Spec.Ports[0].Port)
		}
	}
	timeout, err := time.ParseDuration(env["CARBONGATE_TIMEOUT"])
	if err != nil {
		t.Errorf("OPA: CARBONGATE_TIMEOUT %q: %v", env["CARBONGATE_TIMEOUT"], err)
	}
	for _, cfg := range o.Webhooks {
		if ws := cfg.Webhooks; len(ws) == 1 && ws[0].TimeoutSeconds != nil && time.Duration(*ws[0].TimeoutSeconds)*time.Second <= timeout {
			t.Errorf("OPA: the call to carbongate may take %v, the webhook only %ds", timeout, *ws[0].TimeoutSeconds)
		}
	}
}

// configMapOfMount returns the ConfigMap behind the mount holding path.
func configMapOfMount(spec corev1.PodSpec, ctr corev1.Container, path string) string {
	for _, m := range ctr.VolumeMounts {
		if !strings.HasPrefix(path, strings.TrimSuffix(m.MountPath, "/")+"/") {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name == m.Name && v.ConfigMap != nil {
				return v.ConfigMap.Name
			}
		}
	}
	return ""
}

// checkServiceMonitors: the fields the CRD requires, a selector that picks
// the gateway's Service, a named port of it, parseable intervals and the
// scheme the gateway serves.
func checkServiceMonitors(t *testing.T, o *Objects) {
	t.Helper()
	for _, sm := range o.ServiceMonitors {
		id := "ServiceMonitor " + sm.Name
		if sm.APIVersion != "monitoring.coreos.com/v1" || sm.Kind != "ServiceMonitor" || sm.Name == "" {
			t.Errorf("%s: apiVersion/kind/name %s/%s/%q", id, sm.APIVersion, sm.Kind, sm.Name)
		}
		sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
		if err != nil || sel.Empty() {
			t.Errorf("%s: selector %v: %v", id, sm.Spec.Selector, err)
			continue
		}
		var picked []*corev1.Service
		for _, s := range o.Services {
			if s.Namespace == sm.Namespace && sel.Matches(labels.Set(s.Labels)) {
				picked = append(picked, s)
			}
		}
		if len(picked) != 1 {
			t.Errorf("%s: selects %d Services, want the gateway's", id, len(picked))
			continue
		}
		if len(sm.Spec.Endpoints) == 0 {
			t.Errorf("%s: no endpoints", id)
		}
		scheme := "http"
		if f := flagValues(container(t, &o.deployment("gateway").Spec.Template.Spec, "carbongate").Args); f["admission"] == "true" {
			scheme = "https"
		}
		for _, ep := range sm.Spec.Endpoints {
			if !slices.ContainsFunc(picked[0].Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port }) {
				t.Errorf("%s: port %q is not a port name of Service %s", id, ep.Port, picked[0].Name)
			}
			if ep.Path != "/metrics" || ep.Scheme != scheme {
				t.Errorf("%s: scrapes %s %s, want %s /metrics", id, ep.Scheme, ep.Path, scheme)
			}
			iv, err1 := time.ParseDuration(ep.Interval)
			to, err2 := time.ParseDuration(ep.ScrapeTimeout)
			if err1 != nil || err2 != nil || to > iv {
				t.Errorf("%s: interval %q, scrapeTimeout %q: want durations, the timeout at most the interval", id, ep.Interval, ep.ScrapeTimeout)
			}
		}
	}
}

// checkCronJobs: a five-field schedule, the backfill command with its
// plan and Secret-backed environment (checkBackfillContainer), no restarts
// in place.
func checkCronJobs(t *testing.T, o *Objects) {
	t.Helper()
	for _, cj := range o.CronJobs {
		id := "CronJob " + cj.Name
		if fields := strings.Fields(cj.Spec.Schedule); len(fields) != 5 {
			t.Errorf("%s: schedule %q is not five cron fields", id, cj.Spec.Schedule)
		}
		spec := cj.Spec.JobTemplate.Spec.Template.Spec
		if spec.RestartPolicy != corev1.RestartPolicyNever && spec.RestartPolicy != corev1.RestartPolicyOnFailure {
			t.Errorf("%s: restartPolicy %q", id, spec.RestartPolicy)
		}
		if len(spec.Containers) != 1 || len(spec.Containers[0].Args) == 0 || spec.Containers[0].Args[0] != "backfill" {
			t.Errorf("%s: does not run `carbonctl backfill`", id)
			continue
		}
		checkBackfillContainer(t, id, spec.Containers[0])
	}
}

// checkConfigMaps: valid keys and a total under the 1 MiB object limit.
func checkConfigMaps(t *testing.T, o *Objects) {
	t.Helper()
	for _, cm := range o.ConfigMaps {
		size := 0
		for k, v := range cm.Data {
			if errs := validation.IsConfigMapKey(k); len(errs) > 0 {
				t.Errorf("ConfigMap %s: key %q: %v", cm.Name, k, errs)
			}
			size += len(k) + len(v)
		}
		if size > 900<<10 {
			t.Errorf("ConfigMap %s: %d bytes, too close to the 1 MiB limit", cm.Name, size)
		}
	}
}

// checkKServeRefs: every InferenceService runs on a rendered ServingRuntime
// of its namespace and carries the zone label discovery selects on.
func checkKServeRefs(t *testing.T, o *Objects) {
	t.Helper()
	for _, isvc := range o.InferenceSvcs {
		m := isvc.Spec.Predictor.Model
		if m == nil || m.Runtime == nil {
			t.Errorf("InferenceService %s: no model runtime", isvc.Name)
			continue
		}
		if !slices.ContainsFunc(o.Runtimes, func(r *v1alpha1.ServingRuntime) bool { return r.Name == *m.Runtime && r.Namespace == isvc.Namespace }) {
			t.Errorf("InferenceService %s: runtime %q is not rendered in %s", isvc.Name, *m.Runtime, isvc.Namespace)
		}
		if isvc.Labels["carbongate.io/zone"] == "" {
			t.Errorf("InferenceService %s: no carbongate.io/zone label", isvc.Name)
		}
	}
}

//go:build interop

package helm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/kserve/kserve/pkg/apis/serving/v1alpha1"
	"github.com/kserve/kserve/pkg/apis/serving/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
)

// ServiceMonitor is the part of the Prometheus Operator's
// monitoring.coreos.com/v1 ServiceMonitor that the chart uses, field for
// field as the operator's CRD names them. Its module is not a dependency of
// carbongate, so this local type stands in for it: a field the chart writes
// that is not listed here fails the strict decode, and checkServiceMonitor
// checks what the CRD requires.
type ServiceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              ServiceMonitorSpec `json:"spec"`
}

// ServiceMonitorSpec: selector and endpoints are required by the CRD.
type ServiceMonitorSpec struct {
	JobLabel          string                   `json:"jobLabel,omitempty"`
	Selector          metav1.LabelSelector     `json:"selector"`
	NamespaceSelector *NamespaceSelector       `json:"namespaceSelector,omitempty"`
	Endpoints         []ServiceMonitorEndpoint `json:"endpoints"`
}

// NamespaceSelector of a ServiceMonitor.
type NamespaceSelector struct {
	Any        bool     `json:"any,omitempty"`
	MatchNames []string `json:"matchNames,omitempty"`
}

// ServiceMonitorEndpoint is one scrape endpoint.
type ServiceMonitorEndpoint struct {
	Port          string                    `json:"port,omitempty"`
	Path          string                    `json:"path,omitempty"`
	Scheme        string                    `json:"scheme,omitempty"`
	Interval      string                    `json:"interval,omitempty"`
	ScrapeTimeout string                    `json:"scrapeTimeout,omitempty"`
	TLSConfig     *ServiceMonitorTLS        `json:"tlsConfig,omitempty"`
	Params        map[string][]string       `json:"params,omitempty"`
	HonorLabels   bool                      `json:"honorLabels,omitempty"`
	RelabelConfig []map[string]any          `json:"relabelings,omitempty"`
	BearerToken   *corev1.SecretKeySelector `json:"bearerTokenSecret,omitempty"`
}

// ServiceMonitorTLS is the endpoint's SafeTLSConfig subset the chart writes.
type ServiceMonitorTLS struct {
	ServerName         string            `json:"serverName,omitempty"`
	InsecureSkipVerify bool              `json:"insecureSkipVerify,omitempty"`
	CA                 *ServiceMonitorCA `json:"ca,omitempty"`
}

// ServiceMonitorCA is a SecretOrConfigMap.
type ServiceMonitorCA struct {
	Secret    *corev1.SecretKeySelector    `json:"secret,omitempty"`
	ConfigMap *corev1.ConfigMapKeySelector `json:"configMap,omitempty"`
}

// PrometheusRule is the Prometheus Operator's monitoring.coreos.com/v1
// PrometheusRule, field for field as its CRD names them (a local type, as
// ServiceMonitor): its spec is a Prometheus rule file.
type PrometheusRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              PrometheusRuleSpec `json:"spec"`
}

// PrometheusRuleSpec holds the rule groups.
type PrometheusRuleSpec struct {
	Groups []RuleGroup `json:"groups"`
}

// RuleGroup is one group of rules.
type RuleGroup struct {
	Name        string `json:"name"`
	Interval    string `json:"interval,omitempty"`
	QueryOffset string `json:"query_offset,omitempty"`
	Limit       *int   `json:"limit,omitempty"`
	Rules       []Rule `json:"rules"`
}

// Rule is an alerting or recording rule.
type Rule struct {
	Record        string            `json:"record,omitempty"`
	Alert         string            `json:"alert,omitempty"`
	Expr          string            `json:"expr"`
	For           string            `json:"for,omitempty"`
	KeepFiringFor string            `json:"keep_firing_for,omitempty"`
	Labels        map[string]string `json:"labels,omitempty"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// newObject returns a pointer to the Go type of apiVersion/kind, or nil for
// a kind the chart is not expected to render.
func newObject(apiVersion, kind string) any {
	switch apiVersion + "/" + kind {
	case "v1/ServiceAccount":
		return &corev1.ServiceAccount{}
	case "v1/Service":
		return &corev1.Service{}
	case "v1/ConfigMap":
		return &corev1.ConfigMap{}
	case "v1/Secret":
		return &corev1.Secret{}
	case "apps/v1/Deployment":
		return &appsv1.Deployment{}
	case "autoscaling/v2/HorizontalPodAutoscaler":
		return &autoscalingv2.HorizontalPodAutoscaler{}
	case "policy/v1/PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}
	case "rbac.authorization.k8s.io/v1/Role":
		return &rbacv1.Role{}
	case "rbac.authorization.k8s.io/v1/RoleBinding":
		return &rbacv1.RoleBinding{}
	case "rbac.authorization.k8s.io/v1/ClusterRole":
		return &rbacv1.ClusterRole{}
	case "rbac.authorization.k8s.io/v1/ClusterRoleBinding":
		return &rbacv1.ClusterRoleBinding{}
	case "batch/v1/CronJob":
		return &batchv1.CronJob{}
	case "admissionregistration.k8s.io/v1/MutatingWebhookConfiguration":
		return &admissionregistrationv1.MutatingWebhookConfiguration{}
	case "serving.kserve.io/v1alpha1/ServingRuntime":
		return &v1alpha1.ServingRuntime{}
	case "serving.kserve.io/v1alpha1/ClusterServingRuntime":
		return &v1alpha1.ClusterServingRuntime{}
	case "serving.kserve.io/v1beta1/InferenceService":
		return &v1beta1.InferenceService{}
	case "apiextensions.k8s.io/v1/CustomResourceDefinition":
		return &apiextensionsv1.CustomResourceDefinition{}
	case "monitoring.coreos.com/v1/ServiceMonitor":
		return &ServiceMonitor{}
	case "monitoring.coreos.com/v1/PrometheusRule":
		return &PrometheusRule{}
	}
	return nil
}

// decodeStrict decodes the JSON document j into a new value of its type:
// encoding/json with DisallowUnknownFields, then sigs.k8s.io/json's strict
// mode (as the API server's strict field validation), which also catches
// what encoding/json lets through: a field spelt in another case
// ("Replicas") and a duplicate field. Last, every value of j must survive
// a round trip through the type, so nothing is silently dropped or
// reinterpreted.
func decodeStrict(d Doc) (any, error) {
	obj := newObject(d.APIVersion, d.Kind)
	if obj == nil {
		return nil, fmt.Errorf("%s: no Go type for apiVersion %q kind %q: the chart renders a kind this test does not know", d.Source, d.APIVersion, d.Kind)
	}
	dec := json.NewDecoder(bytes.NewReader(d.JSON))
	dec.DisallowUnknownFields()
	if err := dec.Decode(obj); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", d.Source, d.ID(), err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: %s: trailing data after the object", d.Source, d.ID())
	}
	again := reflect.New(reflect.TypeOf(obj).Elem()).Interface()
	strict, err := sigsjson.UnmarshalStrict(d.JSON, again)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", d.Source, d.ID(), err)
	}
	if len(strict) > 0 {
		return nil, fmt.Errorf("%s: %s: strict decoding: %v", d.Source, d.ID(), strict)
	}
	back, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: marshal: %w", d.Source, d.ID(), err)
	}
	var want, got any
	if err := json.Unmarshal(d.JSON, &want); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(back, &got); err != nil {
		return nil, err
	}
	if diffs := subset("", want, got); len(diffs) > 0 {
		return nil, fmt.Errorf("%s: %s: values lost or changed by the Go type:\n  %s", d.Source, d.ID(), strings.Join(diffs, "\n  "))
	}
	return obj, nil
}

// subset lists the paths where want holds a value got does not: every
// rendered value must be kept by the type (got may add defaults and empty
// fields). Quantities compare by value ("1000m" is "1").
func subset(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: object became %T", path, got)}
		}
		var out []string
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			gv, ok := g[k]
			if !ok {
				if isEmpty(w[k]) {
					continue // an empty value the type omits
				}
				out = append(out, fmt.Sprintf("%s.%s: dropped", path, k))
				continue
			}
			out = append(out, subset(path+"."+k, w[k], gv)...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: list of %d became %v", path, len(w), got)}
		}
		var out []string
		for i := range w {
			out = append(out, subset(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return out
	case string:
		if g, ok := got.(string); ok && g != w {
			qw, errw := resource.ParseQuantity(w)
			qg, errg := resource.ParseQuantity(g)
			if errw == nil && errg == nil && qw.Cmp(qg) == 0 {
				return nil
			}
		}
	}
	if !reflect.DeepEqual(want, got) {
		return []string{fmt.Sprintf("%s: %v became %v", path, want, got)}
	}
	return nil
}

// isEmpty reports a zero value, which a type may omit (omitempty) without
// losing anything.
func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	case string:
		return x == ""
	case bool:
		return !x
	case float64:
		return x == 0
	}
	return false
}

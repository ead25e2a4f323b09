//go:build interop

package helm

import (
	"testing"

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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Objects are the decoded documents of one render, by type.
type Objects struct {
	All []Object

	Deployments     []*appsv1.Deployment
	Services        []*corev1.Service
	ServiceAccounts []*corev1.ServiceAccount
	ConfigMaps      []*corev1.ConfigMap
	Secrets         []*corev1.Secret
	PDBs            []*policyv1.PodDisruptionBudget
	HPAs            []*autoscalingv2.HorizontalPodAutoscaler
	Roles           []*rbacv1.Role
	RoleBindings    []*rbacv1.RoleBinding
	ClusterRoles    []*rbacv1.ClusterRole
	ClusterBindings []*rbacv1.ClusterRoleBinding
	CronJobs        []*batchv1.CronJob
	Webhooks        []*admissionregistrationv1.MutatingWebhookConfiguration
	Runtimes        []*v1alpha1.ServingRuntime
	InferenceSvcs   []*v1beta1.InferenceService
	CRDs            []*apiextensionsv1.CustomResourceDefinition
	ServiceMonitors []*ServiceMonitor
	PrometheusRules []*PrometheusRule
}

// Object is one decoded document with its metadata.
type Object struct {
	Doc  Doc
	Meta *metav1.ObjectMeta
	Obj  any
}

// decodeAll decodes every document of m strictly (decodeStrict); a
// document that does not decode fails the test.
func decodeAll(tb testing.TB, m Manifest) *Objects {
	tb.Helper()
	o := &Objects{}
	for _, d := range m.Docs {
		obj, err := decodeStrict(d)
		if err != nil {
			tb.Error(err)
			continue
		}
		var meta *metav1.ObjectMeta
		switch x := obj.(type) {
		case *appsv1.Deployment:
			o.Deployments, meta = append(o.Deployments, x), &x.ObjectMeta
		case *corev1.Service:
			o.Services, meta = append(o.Services, x), &x.ObjectMeta
		case *corev1.ServiceAccount:
			o.ServiceAccounts, meta = append(o.ServiceAccounts, x), &x.ObjectMeta
		case *corev1.ConfigMap:
			o.ConfigMaps, meta = append(o.ConfigMaps, x), &x.ObjectMeta
		case *corev1.Secret:
			o.Secrets, meta = append(o.Secrets, x), &x.ObjectMeta
		case *policyv1.PodDisruptionBudget:
			o.PDBs, meta = append(o.PDBs, x), &x.ObjectMeta
		case *autoscalingv2.HorizontalPodAutoscaler:
			o.HPAs, meta = append(o.HPAs, x), &x.ObjectMeta
		case *rbacv1.Role:
			o.Roles, meta = append(o.Roles, x), &x.ObjectMeta
		case *rbacv1.RoleBinding:
			o.RoleBindings, meta = append(o.RoleBindings, x), &x.ObjectMeta
		case *rbacv1.ClusterRole:
			o.ClusterRoles, meta = append(o.ClusterRoles, x), &x.ObjectMeta
		case *rbacv1.ClusterRoleBinding:
			o.ClusterBindings, meta = append(o.ClusterBindings, x), &x.ObjectMeta
		case *batchv1.CronJob:
			o.CronJobs, meta = append(o.CronJobs, x), &x.ObjectMeta
		case *admissionregistrationv1.MutatingWebhookConfiguration:
			o.Webhooks, meta = append(o.Webhooks, x), &x.ObjectMeta
		case *v1alpha1.ServingRuntime:
			o.Runtimes, meta = append(o.Runtimes, x), &x.ObjectMeta
		case *v1beta1.InferenceService:
			o.InferenceSvcs, meta = append(o.InferenceSvcs, x), &x.ObjectMeta
		case *apiextensionsv1.CustomResourceDefinition:
			o.CRDs, meta = append(o.CRDs, x), &x.ObjectMeta
		case *ServiceMonitor:
			o.ServiceMonitors, meta = append(o.ServiceMonitors, x), &x.ObjectMeta
		case *PrometheusRule:
			o.PrometheusRules, meta = append(o.PrometheusRules, x), &x.ObjectMeta
		default:
			tb.Errorf("%s: decoded to unhandled %T", d.ID(), obj)
			continue
		}
		o.All = append(o.All, Object{Doc: d, Meta: meta, Obj: obj})
	}
	if tb.Failed() {
		tb.FailNow()
	}
	return o
}

// component returns the app.kubernetes.io/component label.
func component(meta metav1.ObjectMeta) string { return meta.Labels["app.kubernetes.io/component"] }

// deployment returns the Deployment of component, or nil.
func (o *Objects) deployment(comp string) *appsv1.Deployment {
	for _, d := range o.Deployments {
		if component(d.ObjectMeta) == comp {
			return d
		}
	}
	return nil
}

// deploymentNamed returns the Deployment called name, or nil.
func (o *Objects) deploymentNamed(name string) *appsv1.Deployment {
	for _, d := range o.Deployments {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// service returns the Service named name in ns, or nil.
func (o *Objects) service(ns, name string) *corev1.Service {
	for _, s := range o.Services {
		if s.Namespace == ns && s.Name == name {
			return s
		}
	}
	return nil
}

// configMap returns the ConfigMap named name in ns, or nil.
func (o *Objects) configMap(ns, name string) *corev1.ConfigMap {
	for _, c := range o.ConfigMaps {
		if c.Namespace == ns && c.Name == name {
			return c
		}
	}
	return nil
}

// podTemplates are the pod templates of the Deployments and CronJobs with
// the name of their owner.
func (o *Objects) podTemplates() map[string]*corev1.PodTemplateSpec {
	out := map[string]*corev1.PodTemplateSpec{}
	for _, d := range o.Deployments {
		out["Deployment "+d.Name] = &d.Spec.Template
	}
	for _, c := range o.CronJobs {
		out["CronJob "+c.Name] = &c.Spec.JobTemplate.Spec.Template
	}
	return out
}

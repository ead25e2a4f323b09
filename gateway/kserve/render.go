// Package kserve runs carbongate's forecasting models on KServe: it renders
// the ServingRuntime and InferenceService manifests for carbonserve, and it
// discovers the ready InferenceServices through the Kubernetes API as a
// route.Source for the gateway.
//
// It holds the part of KServe's API types it needs (types.go) instead of
// importing github.com/kserve/kserve, whose API packages pull in KServe's
// storage agent and cloud SDKs; test/helm checks these types against
// KServe's. gateway/admission and gateway/controller import the Kubernetes
// client libraries too; carbonserve and the core packages stay free of them
// (TestCoreHasNoKubernetesDeps in internal/layers pins this).
//
// Labels put on every InferenceService:
//
//	carbongate.io/zone:   <ZONE> (upper case, as forecast.ParseZone returns it),
//	                      or "generic" (lower case) for the generic model
//	carbongate.io/signal: lifecycle | direct
//
// The generic model shares the zone label so that one selector
// ("carbongate.io/zone" exists) finds every model; "generic" cannot clash
// with a zone because zone ids are upper case and Render rejects the zone
// GENERIC.
package kserve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
)

// Labels and values shared by Render and Discovery.
const (
	LabelZone    = "carbongate.io/zone"   // zone id, or GenericZone
	LabelSignal  = "carbongate.io/signal" // forecast.Signal
	GenericZone  = "generic"              // LabelZone value of the generic model
	ModelFormat  = "carbongate"           // supportedModelFormats / modelFormat name
	GenericDir   = "generic"              // storage folder of the generic model (models/workflow.GenericDir)
	DefaultImage = "ghcr.io/carbongate/carbonserve:v0.1.0"

	DefaultRuntimeName    = "carbonserve"
	DefaultDeploymentMode = "Standard" // KServe's raw Deployment mode (formerly RawDeployment)
	DeploymentModeKnative = "Knative"  // formerly Serverless

	// Ports of the carbonserve container, following KServe's custom runtime
	// conventions: REST on 8080, gRPC (h2c) on 8081.
	HTTPPort int32 = 8080
	GRPCPort int32 = 8081
	// ReadyPath is the Open Inference Protocol's server readiness, the
	// container's readiness probe.
	ReadyPath = "/v2/health/ready"
)

// Resources are Kubernetes quantities ("100m", "256Mi") for the predictor
// container. Empty fields are left out of the manifest.
type Resources struct {
	RequestsCPU, RequestsMemory string
	LimitsCPU, LimitsMemory     string
}

// DefaultResources are used when RenderConfig.Resources is nil.
var DefaultResources = Resources{RequestsCPU: "100m", RequestsMemory: "256Mi", LimitsCPU: "1", LimitsMemory: "1Gi"}

// RenderConfig describes the manifests Render produces. Zero values take the
// documented defaults.
type RenderConfig struct {
	Zones      []forecast.Zone // one InferenceService each; required
	StorageURI string          // s3://, gs:// or pvc:// prefix holding <signal>/<ZONE>/ and <signal>/generic/; required
	Signal     forecast.Signal // default lifecycle

	Namespace   string // metadata.namespace; "" leaves it out (kubectl's current namespace)
	Image       string // default DefaultImage
	RuntimeName string // default DefaultRuntimeName
	// ClusterRuntime renders a cluster-scoped ClusterServingRuntime instead
	// of a namespaced ServingRuntime.
	ClusterRuntime bool
	NamePrefix     string // InferenceService name prefix; default DefaultNamePrefix()
	NoGeneric      bool   // leave out the generic InferenceService
	// DeploymentMode is the serving.kserve.io/deploymentMode annotation:
	// "Standard" (default: plain Deployment and Service, REST and gRPC ports)
	// or "Knative" (Knative allows one container port: REST only).
	DeploymentMode string

	MinReplicas *int32     // nil: KServe's default (1); 0 allows scale to zero under Knative
	MaxReplicas int32      // 0: KServe's default
	Resources   *Resources // nil: DefaultResources
}

// Render returns the manifests as multi-document YAML: the serving runtime
// first, then one InferenceService per zone in the given order, then the
// generic one. Invalid configuration yields a *forecast.Error with code
// EINVALID naming the field.
func Render(cfg RenderConfig) ([]byte, error) {
	objs, err := Objects(cfg)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	for i, o := range objs {
		b, err := marshalManifest(o)
		if err != nil {
			return nil, forecast.Errorf(forecast.EINTERNAL, "render %T: %v", o, err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}

// Objects returns what Render serialises: a *ServingRuntime or
// *ClusterServingRuntime followed by *InferenceService values.
func Objects(cfg RenderConfig) ([]any, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	objs := []any{c.runtime()}
	for _, z := range c.Zones {
		objs = append(objs, c.inferenceService(string(z), strings.ToLower(string(z)), string(z)))
	}
	if !c.NoGeneric {
		objs = append(objs, c.inferenceService(GenericZone, GenericZone, GenericDir))
	}
	return objs, nil
}

// DefaultNamePrefix is the InferenceService name prefix Render uses when
// Config.NamePrefix is empty: the registered models' name prefix
// (models.NamePrefix) without its trailing dash, so that a zone's
// InferenceService is named like its registered model.
func DefaultNamePrefix() string { return strings.TrimSuffix(models.NamePrefix, "-") }

// ServiceName returns the InferenceService name Render gives zone z's model,
// or the generic model's for "".
func ServiceName(prefix string, z forecast.Zone) string {
	if prefix == "" {
		prefix = DefaultNamePrefix()
	}
	if z == "" {
		return prefix + "-" + GenericZone
	}
	return prefix + "-" + strings.ToLower(string(z))
}

type renderConfig struct {
	RenderConfig
	resources corev1.ResourceRequirements
}

func (cfg RenderConfig) withDefaults() (*renderConfig, error) {
	c := &renderConfig{RenderConfig: cfg}
	c.Zones = nil
	if len(cfg.Zones) == 0 {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "zones", "at least one zone is required")
	}
	seen := map[forecast.Zone]bool{}
	for _, in := range cfg.Zones {
		z, err := forecast.ParseZone(string(in))
		if err != nil {
			return nil, forecast.FieldErrorf(forecast.EINVALID, "zones", "%s", forecast.ErrorMessage(err))
		}
		if strings.EqualFold(string(z), GenericZone) {
			return nil, forecast.FieldErrorf(forecast.EINVALID, "zones", "zone id %q is reserved for the generic model", in)
		}
		if seen[z] {
			return nil, forecast.FieldErrorf(forecast.EINVALID, "zones", "zone %s is listed twice", z)
		}
		seen[z] = true
		c.Zones = append(c.Zones, z)
	}

	sig, err := forecast.ParseSignal(string(cfg.Signal))
	if err != nil {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "signal", "%s", forecast.ErrorMessage(err))
	}
	c.Signal = sig

	uri, err := parseStorageURI(cfg.StorageURI)
	if err != nil {
		return nil, err
	}
	c.StorageURI = uri

	if c.Namespace != "" {
		if errs := validation.IsDNS1123Label(c.Namespace); len(errs) > 0 {
			return nil, forecast.FieldErrorf(forecast.EINVALID, "namespace", "namespace %q: %s", c.Namespace, strings.Join(errs, "; "))
		}
	}
	if c.Image == "" {
		c.Image = DefaultImage
	} else if strings.ContainsAny(c.Image, " \t\n") {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "image", "image %q may not contain white space", c.Image)
	}
	if c.RuntimeName == "" {
		c.RuntimeName = DefaultRuntimeName
	}
	if errs := validation.IsDNS1123Subdomain(c.RuntimeName); len(errs) > 0 {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "runtime_name", "runtime name %q: %s", c.RuntimeName, strings.Join(errs, "; "))
	}
	if c.NamePrefix == "" {
		c.NamePrefix = DefaultNamePrefix()
	}
	// KServe requires InferenceService names to be DNS-1035 labels (start
	// with a letter); check the longest one Render will produce.
	for _, z := range append([]forecast.Zone{""}, c.Zones...) {
		name := ServiceName(c.NamePrefix, z)
		if errs := validation.IsDNS1035Label(name); len(errs) > 0 {
			field := "zones"
			if z == "" {
				field = "name_prefix"
			}
			return nil, forecast.FieldErrorf(forecast.EINVALID, field, "InferenceService name %q: %s", name, strings.Join(errs, "; "))
		}
	}
	switch c.DeploymentMode {
	case "":
		c.DeploymentMode = DefaultDeploymentMode
	case DefaultDeploymentMode, DeploymentModeKnative:
	default:
		return nil, forecast.FieldErrorf(forecast.EINVALID, "deployment_mode", "deployment mode %q is not one of %s, %s", c.DeploymentMode, DefaultDeploymentMode, DeploymentModeKnative)
	}
	if c.MinReplicas != nil && *c.MinReplicas < 0 {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "min_replicas", "min replicas must not be negative, got %d", *c.MinReplicas)
	}
	if c.MaxReplicas < 0 {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "max_replicas", "max replicas must not be negative, got %d", c.MaxReplicas)
	}
	if c.MinReplicas != nil && c.MaxReplicas > 0 && c.MaxReplicas < *c.MinReplicas {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "max_replicas", "max replicas %d is below min replicas %d", c.MaxReplicas, *c.MinReplicas)
	}
	res := DefaultResources
	if cfg.Resources != nil {
		res = *cfg.Resources
	}
	if c.resources, err = res.requirements(); err != nil {
		return nil, err
	}
	return c, nil
}

// parseStorageURI accepts s3://bucket[/prefix], gs://bucket[/prefix] and
// pvc://claim[/path] and returns it without a trailing slash.
func parseStorageURI(s string) (string, error) {
	const field = "storage_uri"
	if s == "" {
		return "", forecast.FieldErrorf(forecast.EINVALID, field, "storage URI is required (s3://, gs:// or pvc://)")
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", forecast.FieldErrorf(forecast.EINVALID, field, "storage URI %q does not parse", s)
	}
	switch u.Scheme {
	case "s3", "gs", "pvc":
	default:
		return "", forecast.FieldErrorf(forecast.EINVALID, field, "storage URI %q must start with s3://, gs:// or pvc://", s)
	}
	if u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", forecast.FieldErrorf(forecast.EINVALID, field, "storage URI %q must be <scheme>://<bucket or claim>[/prefix]", s)
	}
	return strings.TrimRight(s, "/"), nil
}

func (r Resources) requirements() (corev1.ResourceRequirements, error) {
	var out corev1.ResourceRequirements
	set := func(list *corev1.ResourceList, name corev1.ResourceName, field, v string) error {
		if v == "" {
			return nil
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return forecast.FieldErrorf(forecast.EINVALID, field, "%q is not a Kubernetes quantity", v)
		}
		if *list == nil {
			*list = corev1.ResourceList{}
		}
		(*list)[name] = q
		return nil
	}
	for _, s := range []struct {
		list  *corev1.ResourceList
		name  corev1.ResourceName
		field string
		v     string
	}{
		{&out.Requests, corev1.ResourceCPU, "resources.requests.cpu", r.RequestsCPU},
		{&out.Requests, corev1.ResourceMemory, "resources.requests.memory", r.RequestsMemory},
		{&out.Limits, corev1.ResourceCPU, "resources.limits.cpu", r.LimitsCPU},
		{&out.Limits, corev1.ResourceMemory, "resources.limits.memory", r.LimitsMemory},
	} {
		if err := set(s.list, s.name, s.field, s.v); err != nil {
			return out, err
		}
	}
	for name, req := range out.Requests {
		if lim, ok := out.Limits[name]; ok && lim.Cmp(req) < 0 {
			return out, forecast.FieldErrorf(forecast.EINVALID, "resources.limits."+string(name), "limit %s is below request %s", lim.String(), req.String())
		}
	}
	return out, nil
}

func (c *renderConfig) runtime() any {
	ports := []corev1.ContainerPort{{Name: "http1", ContainerPort: HTTPPort, Protocol: corev1.ProtocolTCP}}
	if c.DeploymentMode != DeploymentModeKnative {
		ports = append(ports, corev1.ContainerPort{Name: "h2c", ContainerPort: GRPCPort, Protocol: corev1.ProtocolTCP})
	}
	spec := ServingRuntimeSpec{
		SupportedModelFormats: []SupportedModelFormat{{Name: ModelFormat, AutoSelect: ptr(true), Priority: ptr(int32(1))}},
		MultiModel:            ptr(false),
		ProtocolVersions:      []string{ProtocolV2},
		ServingRuntimePodSpec: ServingRuntimePodSpec{
			Annotations: map[string]string{
				"prometheus.kserve.io/port": fmt.Sprint(HTTPPort),
				"prometheus.kserve.io/path": "/metrics",
			},
			Containers: []corev1.Container{{
				Name:  InferenceServiceContainerName,
				Image: c.Image,
				Args: []string{
					"--model_name={{.Name}}",
					"--model_dir=" + DefaultModelLocalMountPath,
					fmt.Sprintf("--http_port=%d", HTTPPort),
					fmt.Sprintf("--grpc_port=%d", GRPCPort),
				},
				Ports: ports,
				// Ready once its model is loaded (carbonserve's server is not
				// ready until then): without it a predictor is routed to
				// while it still loads and every call falls back.
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: ReadyPath, Port: intstr.FromInt32(HTTPPort)}},
					PeriodSeconds: 5, FailureThreshold: 3, TimeoutSeconds: 2,
				},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr(false),
					Privileged:               ptr(false),
					RunAsNonRoot:             ptr(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
	meta := metav1.ObjectMeta{Name: c.RuntimeName, Labels: map[string]string{"app.kubernetes.io/part-of": "carbongate"}}
	if c.ClusterRuntime {
		return &ClusterServingRuntime{
			TypeMeta:   metav1.TypeMeta{APIVersion: V1alpha1.String(), Kind: "ClusterServingRuntime"},
			ObjectMeta: meta,
			Spec:       spec,
		}
	}
	meta.Namespace = c.Namespace
	return &ServingRuntime{
		TypeMeta:   metav1.TypeMeta{APIVersion: V1alpha1.String(), Kind: "ServingRuntime"},
		ObjectMeta: meta,
		Spec:       spec,
	}
}

// inferenceService renders one model: label is the LabelZone value, nameSuffix
// the lower-case name part, dir the storage folder under <uri>/<signal>/.
func (c *renderConfig) inferenceService(label, nameSuffix, dir string) *InferenceService {
	return &InferenceService{
		TypeMeta: metav1.TypeMeta{APIVersion: V1beta1.String(), Kind: "InferenceService"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      c.NamePrefix + "-" + nameSuffix,
			Namespace: c.Namespace,
			Labels: map[string]string{
				LabelZone:                   label,
				LabelSignal:                 string(c.Signal),
				"app.kubernetes.io/part-of": "carbongate",
			},
			Annotations: map[string]string{DeploymentModeAnnotation: c.DeploymentMode},
		},
		Spec: InferenceServiceSpec{
			Predictor: PredictorSpec{
				ComponentExtensionSpec: ComponentExtensionSpec{
					MinReplicas: c.MinReplicas,
					MaxReplicas: c.MaxReplicas,
				},
				Model: &ModelSpec{
					ModelFormat: ModelFormatSpec{Name: ModelFormat},
					Runtime:     ptr(c.RuntimeName),
					PredictorExtensionSpec: PredictorExtensionSpec{
						StorageURI:      ptr(c.StorageURI + "/" + string(c.Signal) + "/" + dir),
						ProtocolVersion: ptr(ProtocolV2),
						Container:       corev1.Container{Name: InferenceServiceContainerName, Resources: c.resources},
					},
				},
			},
		},
	}
}

// marshalManifest writes o as YAML without the fields a manifest must not
// carry: status and the null creationTimestamp.
func marshalManifest(o any) ([]byte, error) {
	j, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	return yaml.Marshal(m)
}

func ptr[T any](v T) *T { return &v }

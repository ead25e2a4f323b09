// Package kubejob renders a backfill as a Kubernetes Indexed Job: N pods,
// pod i running `carbonctl backfill … --shards N --shard-index i`, so the
// pods cover every unit of the backfill exactly once. The store URL and the
// registry's URL and token come from a Secret (secretKeyRef), never from
// the manifest.
package kubejob

import (
	"encoding/json"
	"regexp"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/carbongate/carbongate/forecast"
)

// Keys of the Secret.
const (
	KeyStore         = "store-url"      // required: the forecast store URL
	KeyRegistry      = "registry-url"   // optional: the model registry URI
	KeyRegistryToken = "registry-token" // optional: its bearer token
)

// IndexEnv is the variable holding the pod's completion index.
const IndexEnv = "JOB_COMPLETION_INDEX"

// Defaults of Config.
const (
	DefaultName                 = "carbongate-backfill"
	DefaultSecret               = "carbongate-backfill"
	DefaultBackoffLimitPerIndex = 3
)

// Resources are the container's requests and limits ("" = none).
type Resources struct {
	RequestsCPU, RequestsMemory, LimitsCPU, LimitsMemory string
}

// DefaultResources suit a backfill pod calling models in process.
var DefaultResources = Resources{RequestsCPU: "500m", RequestsMemory: "512Mi", LimitsCPU: "2", LimitsMemory: "2Gi"}

// Config describes the Job.
type Config struct {
	Name, Namespace string
	Image           string
	Shards          int
	// Args are carbonctl backfill's flags other than --store, --shards and
	// --shard-index, which the Job sets.
	Args []string
	// Secret names the Secret with KeyStore (and optionally KeyRegistry,
	// KeyRegistryToken).
	Secret               string
	Resources            Resources
	BackoffLimitPerIndex int32
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Job builds the Job. Errors are EINVALID naming the field (name,
// namespace, image, shards, secret, backoff_limit_per_index, resources.*).
func Job(cfg Config) (*batchv1.Job, error) {
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	if cfg.Secret == "" {
		cfg.Secret = DefaultSecret
	}
	switch {
	case len(cfg.Name) > 52 || !dnsLabel.MatchString(cfg.Name):
		return nil, forecast.FieldErrorf(forecast.EINVALID, "name", "job name %q is not a DNS label of at most 52 characters", cfg.Name)
	case cfg.Namespace != "" && (len(cfg.Namespace) > 63 || !dnsLabel.MatchString(cfg.Namespace)):
		return nil, forecast.FieldErrorf(forecast.EINVALID, "namespace", "namespace %q is not a DNS label", cfg.Namespace)
	case cfg.Image == "":
		return nil, forecast.FieldErrorf(forecast.EINVALID, "image", "an image is required")
	case cfg.Shards < 1 || cfg.Shards > 100000:
		return nil, forecast.FieldErrorf(forecast.EINVALID, "shards", "shards %d is not in 1..100000", cfg.Shards)
	case len(cfg.Secret) > 253 || !dnsLabel.MatchString(cfg.Secret):
		return nil, forecast.FieldErrorf(forecast.EINVALID, "secret", "secret name %q is not valid", cfg.Secret)
	case cfg.BackoffLimitPerIndex < 0:
		return nil, forecast.FieldErrorf(forecast.EINVALID, "backoff_limit_per_index", "backoff limit %d is negative", cfg.BackoffLimitPerIndex)
	}
	res, err := resources(cfg.Resources)
	if err != nil {
		return nil, err
	}
	n := int32(cfg.Shards)
	args := append([]string{"backfill"}, cfg.Args...)
	args = append(args, "--shards", strconv.Itoa(cfg.Shards), "--shard-index", "$("+IndexEnv+")")
	labels := map[string]string{"app.kubernetes.io/name": "carbongate", "app.kubernetes.io/component": "backfill"}
	secret := func(env, key string, optional bool) corev1.EnvVar {
		ref := &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: cfg.Secret}, Key: key}
		if optional {
			ref.Optional = &optional
		}
		return corev1.EnvVar{Name: env, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: ref}}
	}
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: cfg.Name, Namespace: cfg.Namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			CompletionMode:       ptr(batchv1.IndexedCompletion),
			Completions:          &n,
			Parallelism:          &n,
			BackoffLimitPerIndex: ptr(cfg.BackoffLimitPerIndex),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name:    "backfill",
						Image:   cfg.Image,
						Command: []string{"carbonctl"},
						Args:    args,
						Env: []corev1.EnvVar{
							{Name: IndexEnv, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
								FieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}},
							secret("CARBONGATE_STORE", KeyStore, false),
							secret("CARBONGATE_REGISTRY", KeyRegistry, true),
							secret("MLFLOW_TRACKING_TOKEN", KeyRegistryToken, true),
						},
						Resources: res,
					}},
				},
			},
		},
	}, nil
}

// Render returns the Job as YAML, without status and null timestamps.
func Render(cfg Config) ([]byte, error) {
	j, err := Job(cfg)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(j)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	dropTimestamp(m)
	if spec, ok := m["spec"].(map[string]any); ok {
		if tpl, ok := spec["template"].(map[string]any); ok {
			dropTimestamp(tpl)
		}
	}
	return yaml.Marshal(m)
}

func dropTimestamp(obj map[string]any) {
	if md, ok := obj["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
}

func resources(r Resources) (corev1.ResourceRequirements, error) {
	out := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	for _, q := range []struct {
		field, value string
		list         corev1.ResourceList
		name         corev1.ResourceName
	}{
		{"resources.requests.cpu", r.RequestsCPU, out.Requests, corev1.ResourceCPU},
		{"resources.requests.memory", r.RequestsMemory, out.Requests, corev1.ResourceMemory},
		{"resources.limits.cpu", r.LimitsCPU, out.Limits, corev1.ResourceCPU},
		{"resources.limits.memory", r.LimitsMemory, out.Limits, corev1.ResourceMemory},
	} {
		if q.value == "" {
			continue
		}
		v, err := resource.ParseQuantity(q.value)
		if err != nil {
			return out, forecast.FieldErrorf(forecast.EINVALID, q.field, "%q is not a quantity", q.value)
		}
		q.list[q.name] = v
	}
	return out, nil
}

func ptr[T any](v T) *T { return &v }

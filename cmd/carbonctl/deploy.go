package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/carbongate/carbongate/deploy/kubejob"
	"github.com/carbongate/carbongate/deploy/webhook"
	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/kserve"
)

// runDeploy dispatches the deploy subcommands. Today: render.
func runDeploy(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		w := stdout
		if len(args) == 0 {
			w = stderr
		}
		fmt.Fprintln(w, "usage: carbonctl deploy render --zones DE,SE --storage-uri s3://bucket/prefix [flags]\n       carbonctl deploy render --backfill --shards N --image IMAGE [backfill flags]\n       carbonctl deploy render --webhook --ca-bundle ca.crt [--url URL] [--failure-policy Ignore]\n\nsubcommands:\n  render     write KServe manifests (ServingRuntime + InferenceServices) for carbonserve to stdout,\n             with --backfill a Kubernetes Indexed Job sharding carbonctl backfill, or with\n             --webhook the MutatingWebhookConfiguration of carbongate's admission webhook\n\nRun 'carbonctl deploy render -h' (with --backfill or --webhook) for the flags.")
		if len(args) == 0 {
			return usagef("a subcommand is required")
		}
		return nil
	}
	switch args[0] {
	case "render":
		rest, backfill := cutBoolFlag(args[1:], "backfill")
		rest, hook := cutBoolFlag(rest, "webhook")
		switch {
		case backfill && hook:
			return usagef("--backfill and --webhook render different things; give one")
		case backfill:
			return runDeployRenderBackfill(rest, stdout, stderr)
		case hook:
			return runDeployRenderWebhook(rest, stdout, stderr)
		}
		return runDeployRender(ctx, args[1:], stdout, stderr)
	}
	return usagef("unknown subcommand %q (want render)", args[0])
}

// deployFlags maps kserve.RenderConfig fields, as *forecast.Error names
// them, to the flags that set them.
var deployFlags = map[string]string{
	"zones":                     "--zones",
	"storage_uri":               "--storage-uri",
	"signal":                    "--signal",
	"namespace":                 "--namespace",
	"image":                     "--image",
	"runtime_name":              "--runtime-name",
	"name_prefix":               "--name-prefix",
	"deployment_mode":           "--deployment-mode",
	"min_replicas":              "--min-replicas",
	"max_replicas":              "--max-replicas",
	"resources.requests.cpu":    "--cpu-request",
	"resources.requests.memory": "--memory-request",
	"resources.limits.cpu":      "--cpu-limit",
	"resources.limits.memory":   "--memory-limit",
}

// runDeployRender writes the manifests for carbonserve under KServe to
// stdout as multi-document YAML, ready for kubectl apply -f -.
func runDeployRender(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("deploy render", stdout)
	zones := fs.String("zones", "", "comma-separated zone ids: one InferenceService each (required)")
	storage := fs.String("storage-uri", "", "model store prefix `uri` (s3://, gs:// or pvc://) holding <signal>/<ZONE>/ and <signal>/generic/ as written by train (required)")
	signal := fs.String("signal", string(forecast.SignalLifecycle), "signal of the models: lifecycle or direct")
	namespace := fs.String("namespace", "", "metadata.namespace of every object (default: none, kubectl's current namespace)")
	image := fs.String("image", kserve.DefaultImage, "carbonserve container `image`")
	runtimeName := fs.String("runtime-name", kserve.DefaultRuntimeName, "name of the ServingRuntime")
	cluster := fs.Bool("cluster-runtime", false, "render a cluster-scoped ClusterServingRuntime instead of a ServingRuntime")
	prefix := fs.String("name-prefix", kserve.DefaultNamePrefix(), "InferenceService name prefix: <prefix>-<zone> and <prefix>-generic")
	noGeneric := fs.Bool("no-generic", false, "leave out the generic model's InferenceService")
	mode := fs.String("deployment-mode", kserve.DefaultDeploymentMode, "KServe deployment mode: Standard (REST and gRPC ports) or Knative (REST only)")
	minReplicas := fs.Int("min-replicas", -1, "predictor minReplicas (-1: KServe's default; 0 allows scale to zero under Knative)")
	maxReplicas := fs.Int("max-replicas", 0, "predictor maxReplicas (0: KServe's default)")
	def := kserve.DefaultResources
	cpuReq := fs.String("cpu-request", def.RequestsCPU, "predictor CPU request (\"\" for none)")
	memReq := fs.String("memory-request", def.RequestsMemory, "predictor memory request (\"\" for none)")
	cpuLim := fs.String("cpu-limit", def.LimitsCPU, "predictor CPU limit (\"\" for none)")
	memLim := fs.String("memory-limit", def.LimitsMemory, "predictor memory limit (\"\" for none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if *zones == "" || *storage == "" {
		return usagef("--zones and --storage-uri are required")
	}
	zs, err := parseZones(*zones)
	if err != nil {
		return usagef("--zones: %s", forecast.ErrorMessage(err))
	}
	sig, err := parseSignal(*signal)
	if err != nil {
		return usagef("--signal: %v", err)
	}
	const maxInt32 = 1<<31 - 1
	if *minReplicas < -1 || *minReplicas > maxInt32 {
		return usagef("--min-replicas: %d is out of range", *minReplicas)
	}
	if *maxReplicas < 0 || *maxReplicas > maxInt32 {
		return usagef("--max-replicas: %d is out of range", *maxReplicas)
	}
	cfg := kserve.RenderConfig{
		Zones:          zs,
		StorageURI:     *storage,
		Signal:         sig,
		Namespace:      *namespace,
		Image:          *image,
		RuntimeName:    *runtimeName,
		ClusterRuntime: *cluster,
		NamePrefix:     *prefix,
		NoGeneric:      *noGeneric,
		DeploymentMode: *mode,
		MaxReplicas:    int32(*maxReplicas),
		Resources:      &kserve.Resources{RequestsCPU: *cpuReq, RequestsMemory: *memReq, LimitsCPU: *cpuLim, LimitsMemory: *memLim},
	}
	if *minReplicas >= 0 {
		m := int32(*minReplicas)
		cfg.MinReplicas = &m
	}
	out, err := kserve.Render(cfg)
	if err != nil {
		if forecast.ErrorCode(err) == forecast.EINVALID {
			flag := deployFlags[forecast.ErrorField(err)]
			if flag == "" {
				flag = forecast.ErrorField(err)
			}
			return usagef("%s: %s", flag, forecast.ErrorMessage(err))
		}
		return err
	}
	_, err = stdout.Write(out)
	return err
}

// cutBoolFlag removes the boolean flag name, anywhere before "--" (as
// --name, -name, --name=true or -name=true), from args and reports whether
// it was there.
func cutBoolFlag(args []string, name string) ([]string, bool) {
	for i, a := range args {
		if a == "--" {
			break
		}
		switch a {
		case "--" + name, "-" + name, "--" + name + "=true", "-" + name + "=true":
			return append(append([]string(nil), args[:i]...), args[i+1:]...), true
		}
	}
	return args, false
}

// webhookFlags maps webhook.Config fields, as *forecast.Error names them,
// to the flags that set them.
var webhookFlags = map[string]string{
	"ca_bundle":      "--ca-bundle",
	"url":            "--url",
	"failure_policy": "--failure-policy",
}

// runDeployRenderWebhook writes deploy/webhook's MutatingWebhookConfiguration
// with its caBundle filled from --ca-bundle, ready for kubectl apply -f -.
func runDeployRenderWebhook(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("deploy render --webhook", stdout)
	caFile := fs.String("ca-bundle", "", "PEM `file` of the CA certificate(s) that signed carbongate's serving certificate (required)")
	url := fs.String("url", "", "call the webhook at this https `URL` instead of the carbongate Service (a webhook outside the cluster)")
	policy := fs.String("failure-policy", "", "what the API server does when the webhook cannot be reached: Fail (the file's default) or Ignore")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if *caFile == "" {
		return usagef("--ca-bundle is required")
	}
	ca, err := os.ReadFile(*caFile)
	if err != nil {
		return usagef("--ca-bundle: %v", err)
	}
	out, err := webhook.Render(webhook.Config{CABundle: ca, URL: *url, FailurePolicy: *policy})
	if err != nil {
		if forecast.ErrorCode(err) == forecast.EINVALID {
			return usagef("%s: %s", webhookFlags[forecast.ErrorField(err)], forecast.ErrorMessage(err))
		}
		return err
	}
	_, err = stdout.Write(out)
	return err
}

// backfillJobFlags maps kubejob.Config fields, as *forecast.Error names
// them, to the flags that set them.
var backfillJobFlags = map[string]string{
	"name":                      "--name",
	"namespace":                 "--namespace",
	"image":                     "--image",
	"shards":                    "--shards",
	"secret":                    "--secret",
	"backoff_limit_per_index":   "--backoff-limit-per-index",
	"resources.requests.cpu":    "--cpu-request",
	"resources.requests.memory": "--memory-request",
	"resources.limits.cpu":      "--cpu-limit",
	"resources.limits.memory":   "--memory-limit",
}

// runDeployRenderBackfill writes a Kubernetes Indexed Job running the
// backfill the flags describe in --shards pods. The backfill flags are
// checked as carbonctl backfill checks them and passed on as given; the
// store URL and registry credentials come from --secret.
func runDeployRenderBackfill(args []string, stdout, stderr io.Writer) error {
	var o backfillOpts
	fs := newFlags("deploy render --backfill", stdout)
	o.register(fs.FlagSet)
	// --store and --registry come from the Job's Secret, not from here.
	fs.Getenv = func(k string) string {
		if k == envStore || k == envRegistry {
			return ""
		}
		return os.Getenv(k)
	}
	name := fs.String("name", kubejob.DefaultName, "Job name")
	namespace := fs.String("namespace", "", "metadata.namespace (default: none, kubectl's current namespace)")
	image := fs.String("image", "", "container `image` holding carbonctl (required)")
	secret := fs.String("secret", kubejob.DefaultSecret, "Secret with keys "+kubejob.KeyStore+" (required), "+kubejob.KeyRegistry+" and "+kubejob.KeyRegistryToken+" (optional)")
	backoff := fs.Int("backoff-limit-per-index", kubejob.DefaultBackoffLimitPerIndex, "retries of one shard's pod before the index fails")
	def := kubejob.DefaultResources
	cpuReq := fs.String("cpu-request", def.RequestsCPU, "CPU request (\"\" for none)")
	memReq := fs.String("memory-request", def.RequestsMemory, "memory request (\"\" for none)")
	cpuLim := fs.String("cpu-limit", def.LimitsCPU, "CPU limit (\"\" for none)")
	memLim := fs.String("memory-limit", def.LimitsMemory, "memory limit (\"\" for none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	passed, err := backfillJobArgs(fs.FlagSet, time.Now())
	if err != nil {
		return err
	}
	if _, _, err := o.plan(); err != nil {
		return usagef("%v", err)
	}
	if *backoff < 0 || *backoff > 1<<31-1 {
		return usagef("--backoff-limit-per-index: %d is out of range", *backoff)
	}
	out, err := kubejob.Render(kubejob.Config{
		Name: *name, Namespace: *namespace, Image: *image, Shards: o.shards, Args: passed, Secret: *secret,
		Resources:            kubejob.Resources{RequestsCPU: *cpuReq, RequestsMemory: *memReq, LimitsCPU: *cpuLim, LimitsMemory: *memLim},
		BackoffLimitPerIndex: int32(*backoff),
	})
	if err != nil {
		if forecast.ErrorCode(err) == forecast.EINVALID {
			flag := backfillJobFlags[forecast.ErrorField(err)]
			if flag == "" {
				flag = forecast.ErrorField(err)
			}
			return usagef("%s: %s", flag, forecast.ErrorMessage(err))
		}
		return err
	}
	_, err = stdout.Write(out)
	return err
}

// jobOnlyFlags are deploy render --backfill's own flags, not passed on.
var jobOnlyFlags = map[string]bool{
	"name": true, "namespace": true, "image": true, "secret": true, "backoff-limit-per-index": true,
	"cpu-request": true, "memory-request": true, "cpu-limit": true, "memory-limit": true,
	"shards": true, "shard-index": true,
}

// backfillJobArgs returns the backfill flags set on fs, in flag order, as
// --name=value arguments for the pods. Credentials are refused: --store and
// --registry come from the Secret. Relative --from/--to (today-24h) are
// resolved against now: every pod, started or retried at any time, must
// plan the same units, or the shards would no longer cover them exactly once.
func backfillJobArgs(fs *flag.FlagSet, now time.Time) ([]string, error) {
	var out []string
	var err error
	fs.Visit(func(f *flag.Flag) {
		switch {
		case err != nil, jobOnlyFlags[f.Name]:
		case f.Name == "store" || f.Name == "registry":
			err = usagef("--%s is not rendered into the manifest: put it in the Secret (keys %s, %s)", f.Name, kubejob.KeyStore, kubejob.KeyRegistry)
		case f.Name == "from" || f.Name == "to":
			v := f.Value.String()
			t, perr := parseWhen(v, now)
			if perr != nil {
				err = usagef("--%s: %v", f.Name, perr)
				return
			}
			if strings.HasPrefix(v, "now") || strings.HasPrefix(v, "today") {
				v = t.Format(time.RFC3339)
			}
			out = append(out, "--"+f.Name+"="+v)
		default:
			out = append(out, "--"+f.Name+"="+f.Value.String())
		}
	})
	return out, err
}

package main

import (
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/yaml"

	"github.com/carbongate/carbongate/deploy/kubejob"
)

func TestBackfillUsageErrors(t *testing.T) {
	t.Parallel()
	base := []string{"backfill", "--zones", "DE,SE", "--from", "2021-01-01", "--to", "2021-01-31", "--store", "postgres://u@127.0.0.1:1/db"}
	with := func(extra ...string) []string { return append(append([]string(nil), base...), extra...) }
	tests := []struct {
		note string
		args []string
		want string
	}{
		{"missing range", []string{"backfill", "--zones", "DE"}, "--zones, --from and --to are required"},
		{"bad zone", []string{"backfill", "--zones", "D E", "--from", "2021-01-01", "--to", "2021-01-02"}, "--zones"},
		{"bad from", []string{"backfill", "--zones", "DE", "--from", "yesterday", "--to", "2021-01-02"}, "--from"},
		{"to before from", []string{"backfill", "--zones", "DE", "--from", "2021-02-01", "--to", "2021-01-02"}, "--from/--to"},
		{"from off the hour", []string{"backfill", "--zones", "DE", "--from", "2021-01-01T00:30:00Z", "--to", "2021-01-02"}, "--from/--to"},
		{"every not hours", with("--every", "90m"), "--every"},
		{"horizon zero", with("--horizon", "0s"), "--horizon"},
		{"bad signal", with("--signal", "marginal"), "--signal"},
		{"batch above 64", with("--batch", "65"), "--batch: 65 is not in 1..64"},
		{"no workers", with("--workers", "0"), "--workers"},
		{"shard index out of range", with("--shards", "3", "--shard-index", "3"), "--shard-index"},
		{"both model sources", with("--models", "m", "--endpoint", "http://127.0.0.1:1"), "--models and --endpoint exclude each other"},
		{"no store", []string{"backfill", "--zones", "DE", "--from", "2021-01-01", "--to", "2021-01-02", "--store", ""}, "--store"},
		{"bad store", with("--store", "mysql://x"), "--store"},
		{"stray argument", with("extra"), `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.note, func(t *testing.T) {
			t.Parallel()
			code, out, stderr := runCtl(t, tt.args...)
			if code != 2 {
				t.Errorf("exit=%d, want 2; stderr:\n%s", code, stderr)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr lacks %q:\n%s", tt.want, stderr)
			}
			if out != "" {
				t.Errorf("stdout on a usage error:\n%s", out)
			}
		})
	}
}

// backfillArgs are the flags of a typical backfill Job.
var backfillArgs = []string{"--zones", "DE,SE,PL", "--from", "2021-01-01", "--to", "2021-12-31", "--every", "24h", "--horizon", "96h",
	"--model", "models:/carbon-forecaster-{zone}@champion", "--signal", "direct", "--workers", "4", "--batch", "32",
	"--artifact-sources", "s3://b/registry", "--artifact-sources", "s3://b/models"}

func TestDeployRenderBackfillJob(t *testing.T) {
	t.Parallel()
	args := append([]string{"deploy", "render", "--backfill", "--shards", "6", "--image", "example.org/carbonctl:1", "--namespace", "carbon"}, backfillArgs...)
	code, out, stderr := runCtl(t, args...)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict([]byte(out), &job); err != nil {
		t.Fatalf("Job does not decode strictly: %v\n%s", err, out)
	}
	s := job.Spec
	if job.APIVersion != "batch/v1" || job.Kind != "Job" || job.Namespace != "carbon" {
		t.Errorf("object %s/%s in %q", job.APIVersion, job.Kind, job.Namespace)
	}
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion || *s.Completions != 6 || *s.Parallelism != 6 {
		t.Errorf("completionMode=%v completions=%v parallelism=%v, want Indexed 6 6", s.CompletionMode, s.Completions, s.Parallelism)
	}
	if s.BackoffLimitPerIndex == nil || *s.BackoffLimitPerIndex != kubejob.DefaultBackoffLimitPerIndex {
		t.Errorf("backoffLimitPerIndex=%v", s.BackoffLimitPerIndex)
	}
	if s.Template.Spec.RestartPolicy != "Never" {
		t.Errorf("restartPolicy=%q, want Never (backoffLimitPerIndex needs it)", s.Template.Spec.RestartPolicy)
	}
	c := s.Template.Spec.Containers[0]
	if c.Image != "example.org/carbonctl:1" || c.Resources.Limits.Memory().String() != "2Gi" || c.Resources.Requests.Cpu().String() != "500m" {
		t.Errorf("image %q resources %v", c.Image, c.Resources)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		if e.Value != "" {
			t.Errorf("env %s carries an inline value", e.Name)
		}
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			env[e.Name] = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil:
			env[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	if got, want := env["CARBONGATE_STORE"], kubejob.DefaultSecret+"/"+kubejob.KeyStore; got != want {
		t.Errorf("CARBONGATE_STORE from %q, want secret %q", got, want)
	}
	if got := env["MLFLOW_TRACKING_TOKEN"]; got != kubejob.DefaultSecret+"/"+kubejob.KeyRegistryToken {
		t.Errorf("MLFLOW_TRACKING_TOKEN from %q", got)
	}
	if !strings.Contains(env[kubejob.IndexEnv], "job-completion-index") {
		t.Errorf("%s from %q", kubejob.IndexEnv, env[kubejob.IndexEnv])
	}

	// Round trip: pod 4's command line parses to the flags given, with
	// its shard.
	if c.Command[0] != "carbonctl" || c.Args[0] != "backfill" {
		t.Fatalf("command %v %v", c.Command, c.Args)
	}
	podArgs := make([]string, len(c.Args)-1)
	for i, a := range c.Args[1:] {
		podArgs[i] = strings.ReplaceAll(a, "$("+kubejob.IndexEnv+")", "4")
	}
	got := parseBackfillOpts(t, podArgs)
	want := parseBackfillOpts(t, append(append([]string(nil), backfillArgs...), "--shards", "6", "--shard-index", "4"))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pod flags parse to\n%+v\nwant\n%+v", got, want)
	}
}

func parseBackfillOpts(t *testing.T, args []string) backfillOpts {
	t.Helper()
	var o backfillOpts
	fs := flag.NewFlagSet("backfill", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	if _, _, err := o.plan(); err != nil {
		t.Fatalf("plan of %v: %v", args, err)
	}
	return o
}

func TestDeployRenderBackfillErrors(t *testing.T) {
	t.Parallel()
	base := []string{"deploy", "render", "--backfill", "--shards", "3", "--image", "img:1", "--zones", "DE", "--from", "2021-01-01", "--to", "2021-02-01"}
	with := func(extra ...string) []string { return append(append([]string(nil), base...), extra...) }
	tests := []struct {
		note string
		args []string
		want string
	}{
		{"store inline", with("--store", "postgres://u:secret@db/x"), "--store is not rendered into the manifest"},
		{"registry inline", with("--registry", "postgres://u:secret@db/x"), "--registry is not rendered"},
		{"no image", []string{"deploy", "render", "--backfill", "--shards", "3", "--zones", "DE", "--from", "2021-01-01", "--to", "2021-02-01"}, "--image"},
		{"zero shards", with("--shards", "0"), "--shards"},
		{"bad plan", with("--every", "30m"), "--every"},
		{"bad name", with("--name", "Bad_Name"), "--name"},
		{"bad quantity", with("--memory-limit", "lots"), "--memory-limit"},
		{"missing range", []string{"deploy", "render", "--backfill", "--shards", "2", "--image", "i", "--zones", "DE"}, "--from and --to are required"},
	}
	for _, tt := range tests {
		t.Run(tt.note, func(t *testing.T) {
			t.Parallel()
			code, out, stderr := runCtl(t, tt.args...)
			if code != 2 {
				t.Errorf("exit=%d, want 2; stderr:\n%s", code, stderr)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr lacks %q:\n%s", tt.want, stderr)
			}
			if strings.Contains(stderr+out, "secret@") {
				t.Errorf("a credential is echoed:\n%s%s", stderr, out)
			}
			if out != "" {
				t.Errorf("stdout on error:\n%s", out)
			}
		})
	}
}

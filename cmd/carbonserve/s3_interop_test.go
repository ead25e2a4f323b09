//go:build interop

package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/carbongate/carbongate/models/serve/servetest"
	"github.com/carbongate/carbongate/test/services"
)

func uploadDir(t *testing.T, w *services.S3, bucket, prefix, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		w.PutObject(t, bucket, prefix+filepath.ToSlash(rel), b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestServeFromSeaweedFS: carbonserve --model_dir s3://… with KServe's S3
// environment loads the model from a real SeaweedFS, serves it over gRPC
// under --model_name, and swaps in a new version uploaded to the prefix.
func TestServeFromSeaweedFS(t *testing.T) {
	w := services.StartWeed(t)
	bucket := w.Bucket(t)
	oldM := servetest.Ridge(t, "carbon-forecaster-DE", "DE", 0)
	newM := servetest.Ridge(t, "carbon-forecaster-DE", "DE", 6)
	src := filepath.Join(t.TempDir(), "v1")
	servetest.Save(t, src, oldM)
	uploadDir(t, w, bucket, "lifecycle/DE/", src)
	env := map[string]string{
		"S3_ENDPOINT": w.Host, "S3_USE_HTTPS": "0", "AWS_REGION": w.Region,
		"AWS_ACCESS_KEY_ID": w.AccessKey, "AWS_SECRET_ACCESS_KEY": w.SecretKey,
	}
	m, _ := startMain(t, func(k string) string { return env[k] },
		"--model_dir", "s3://"+bucket+"/lifecycle/DE", "--model_name", "carbon-forecaster-de",
		"--cache-dir", t.TempDir(), "--reload-interval", "20ms")
	c := clients(t, m)["grpc"]
	req, h, st := forecastRequest(2)
	ctx := context.Background()
	resp, err := c.Infer(ctx, "carbon-forecaster-de", "", req)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(resp.Outputs[0].FP32, servetest.Want(t, oldM, h, st)) {
		t.Fatal("model fetched from S3 forecasts differently")
	}
	v1 := resp.ModelVersion

	src2 := filepath.Join(t.TempDir(), "v2")
	servetest.Save(t, src2, newM)
	uploadDir(t, w, bucket, "lifecycle/DE/", src2)
	want := servetest.Want(t, newM, h, st)
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := c.Infer(ctx, "carbon-forecaster-de", "", req)
		if err != nil {
			t.Fatalf("infer during the S3 reload: %v", err)
		}
		if slices.Equal(resp.Outputs[0].FP32, want) {
			if resp.ModelVersion == v1 {
				t.Fatal("new model answered under the old version")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("new version from S3 not served after 20s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

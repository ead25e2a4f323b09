//go:build interop

package s3_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models/artifact"
	"github.com/carbongate/carbongate/models/serve/servetest"
	"github.com/carbongate/carbongate/registry/s3"
	"github.com/carbongate/carbongate/test/services"
)

// upload puts every file of dir under prefix.
func upload(t *testing.T, w *services.S3, bucket, prefix, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = b
		w.PutObject(t, bucket, prefix+filepath.ToSlash(rel), b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func client(t *testing.T, w *services.S3) *minio.Client {
	t.Helper()
	c, err := s3.NewClient(s3.ConfigFromEnv(func(k string) string {
		return map[string]string{
			"AWS_ENDPOINT_URL": w.Endpoint, "AWS_ACCESS_KEY_ID": w.AccessKey,
			"AWS_SECRET_ACCESS_KEY": w.SecretKey, "AWS_REGION": w.Region,
		}[k]
	}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestFetchFromSeaweedFS runs against a real SeaweedFS S3 gateway: a model
// directory round-trips and loads, a refetch replaces the directory
// atomically, Stat tracks changes, errors map to the domain codes and keys
// escaping the destination are rejected.
func TestFetchFromSeaweedFS(t *testing.T) {
	w := services.StartWeed(t)
	c := client(t, w)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	t.Run("model dir round trip and reload", func(t *testing.T) {
		bucket := w.Bucket(t)
		src := filepath.Join(t.TempDir(), "src")
		model := servetest.Ridge(t, "carbon-forecaster-DE", "DE", 0)
		servetest.Save(t, src, model)
		files := upload(t, w, bucket, "lifecycle/DE/", src)
		w.PutObject(t, bucket, "lifecycle/DE/extra/notes.txt", []byte("nested"))
		w.PutObject(t, bucket, "lifecycle/DEX/MLmodel", []byte("a sibling prefix, not ours"))
		uri := "s3://" + bucket + "/lifecycle/DE"

		dst := filepath.Join(t.TempDir(), "models", "DE")
		res, err := s3.Fetch(ctx, c, uri, dst)
		if err != nil {
			t.Fatal(err)
		}
		if res.Objects != len(files)+1 {
			t.Fatalf("fetched %d objects, want %d", res.Objects, len(files)+1)
		}
		for rel, want := range files {
			got, err := os.ReadFile(filepath.Join(dst, filepath.FromSlash(rel)))
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: %d bytes, %v; want %d bytes", rel, len(got), err, len(want))
			}
		}
		if b, _ := os.ReadFile(filepath.Join(dst, "extra", "notes.txt")); string(b) != "nested" {
			t.Fatalf("nested object: %q", b)
		}
		loaded, err := artifact.Load(dst)
		if err != nil {
			t.Fatal(err)
		}
		h, st := servetest.Input(2)
		if !slices.Equal(servetest.Want(t, loaded, h, st), servetest.Want(t, model, h, st)) {
			t.Fatal("fetched model forecasts differently")
		}
		fp, err := s3.Stat(ctx, c, uri)
		if err != nil || fp != res.Fingerprint {
			t.Fatalf("Stat=%q, %v; want the fetch's %q", fp, err, res.Fingerprint)
		}

		// A new model version upstream: Stat changes, Fetch replaces dst
		// whole (the nested file that is gone upstream goes too).
		src2 := filepath.Join(t.TempDir(), "src")
		servetest.Save(t, src2, servetest.Ridge(t, "carbon-forecaster-DE", "DE", 4))
		upload(t, w, bucket, "lifecycle/DE/", src2)
		if _, status, err := w.Do(ctx, "DELETE", bucket, "lifecycle/DE/extra/notes.txt", nil); err != nil || status/100 != 2 {
			t.Fatalf("delete: %d %v", status, err)
		}
		fp2, err := s3.Stat(ctx, c, uri)
		if err != nil || fp2 == fp {
			t.Fatalf("Stat after an upload=%q, %v: want a new fingerprint", fp2, err)
		}
		if _, err := s3.Fetch(ctx, c, uri, dst); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dst, "extra")); err == nil {
			t.Fatal("a deleted object survived the refetch")
		}
		ents, _ := os.ReadDir(filepath.Dir(dst))
		if len(ents) != 1 {
			t.Fatalf("leftovers next to dst: %v", ents)
		}
	})

	t.Run("errors", func(t *testing.T) {
		bucket := w.Bucket(t)
		dst := filepath.Join(t.TempDir(), "x")
		for _, tc := range []struct {
			note, uri, code string
		}{
			{"empty prefix", "s3://" + bucket + "/nothing/here", forecast.ENOTFOUND},
			{"missing bucket", "s3://no-such-bucket-carbongate/x", forecast.ENOTFOUND},
			{"not s3", "file:///tmp", forecast.EINVALID},
		} {
			if _, err := s3.Fetch(ctx, c, tc.uri, dst); forecast.ErrorCode(err) != tc.code {
				t.Errorf("%s: %v, want %s", tc.note, err, tc.code)
			}
		}
		bad, err := s3.NewClient(s3.Config{Endpoint: w.Endpoint, AccessKey: w.AccessKey, SecretKey: "wrong", Region: w.Region})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s3.Fetch(ctx, bad, "s3://"+bucket+"/x", dst); forecast.ErrorCode(err) != forecast.EUNAUTHORIZED {
			t.Errorf("wrong secret: %v, want %s", err, forecast.EUNAUTHORIZED)
		}
		short, cancel := context.WithTimeout(ctx, time.Nanosecond)
		defer cancel()
		<-short.Done()
		if _, err := s3.Fetch(short, c, "s3://"+bucket+"/x", dst); !isContextErr(err) {
			t.Errorf("expired deadline: %v", err)
		}
		if _, err := os.Stat(dst); err == nil {
			t.Error("a failed fetch created dst")
		}
	})

	t.Run("traversal", func(t *testing.T) {
		// Keys a hostile or buggy writer could send. SeaweedFS refuses
		// ".", ".." and backslash segments (400) and normalises "//" away;
		// whatever it stores, Fetch must either reject the listing
		// (EINVALID) or write every file inside dst. The rejection path
		// itself is pinned with a crafted listing in fetch_test.go.
		for _, k := range []string{"m/a/../../../escape", "m/..\\..\\escape", "m/./escape", "m//escape"} {
			bucket := w.Bucket(t)
			w.PutObject(t, bucket, "m/MLmodel", []byte("x"))
			_, status, err := w.Do(ctx, "PUT", bucket, k, []byte("evil"))
			if err != nil {
				t.Fatal(err)
			}
			if status/100 != 2 {
				t.Logf("SeaweedFS refuses key %q: %d", k, status)
				continue
			}
			root := t.TempDir()
			dst := filepath.Join(root, "a", "b", "dst")
			_, err = s3.Fetch(ctx, c, "s3://"+bucket+"/m", dst)
			objs, _ := s3.List(ctx, c, s3.Location{Bucket: bucket, Prefix: "m/"})
			t.Logf("SeaweedFS stores key %q as %v; Fetch: %v", k, objs, err)
			if err != nil && forecast.ErrorCode(err) != forecast.EINVALID {
				t.Errorf("key %q: Fetch err=%v, want nil or EINVALID", k, err)
			}
			filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
				if rel, _ := filepath.Rel(dst, p); err == nil && !d.IsDir() && !filepath.IsLocal(rel) {
					t.Errorf("key %q: file %s written outside dst", k, filepath.Base(p))
				}
				return nil
			})
		}
	})
}

func isContextErr(err error) bool {
	return err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled))
}

// TestCredentialsFromSeaweedFS: keys from a shared credentials file, by
// profile, reach a real SeaweedFS; a profile the file lacks leaves the
// requests anonymous, which SeaweedFS refuses. A session token from the
// environment goes out with the static keys: SeaweedFS then takes them for
// temporary (STS) credentials it did not issue and refuses them, while the
// same keys without the token are accepted (the first two cases).
func TestCredentialsFromSeaweedFS(t *testing.T) {
	w := services.StartWeed(t)
	bucket := w.Bucket(t)
	w.PutObject(t, bucket, "creds/MLmodel", []byte("artifact_path: model\n"))
	uri := "s3://" + bucket + "/creds"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	file := filepath.Join(t.TempDir(), "credentials")
	if err := os.WriteFile(file, []byte("[carbongate]\naws_access_key_id = "+w.AccessKey+"\naws_secret_access_key = "+w.SecretKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		note string
		env  map[string]string
		code string
	}{
		{"static keys", map[string]string{"AWS_ACCESS_KEY_ID": w.AccessKey, "AWS_SECRET_ACCESS_KEY": w.SecretKey}, ""},
		{"static keys and a session token", map[string]string{"AWS_ACCESS_KEY_ID": w.AccessKey, "AWS_SECRET_ACCESS_KEY": w.SecretKey, "AWS_SESSION_TOKEN": "session-token"}, forecast.EUNAUTHORIZED},
		{"shared credentials file", map[string]string{"AWS_SHARED_CREDENTIALS_FILE": file, "AWS_PROFILE": "carbongate"}, ""},
		{"shared credentials file, missing profile", map[string]string{"AWS_SHARED_CREDENTIALS_FILE": file, "AWS_PROFILE": "other"}, forecast.EUNAUTHORIZED},
	} {
		t.Run(tc.note, func(t *testing.T) {
			tc.env["AWS_ENDPOINT_URL"], tc.env["AWS_REGION"] = w.Endpoint, w.Region
			c, err := s3.NewClient(s3.ConfigFromEnv(func(k string) string { return tc.env[k] }))
			if err != nil {
				t.Fatal(err)
			}
			dst := filepath.Join(t.TempDir(), "m")
			_, err = s3.Fetch(ctx, c, uri, dst)
			if forecast.ErrorCode(err) != tc.code {
				t.Fatalf("fetch: %v, want code %q", err, tc.code)
			}
			if tc.code == "" {
				if b, err := os.ReadFile(filepath.Join(dst, "MLmodel")); err != nil || string(b) != "artifact_path: model\n" {
					t.Fatalf("fetched %q, %v", b, err)
				}
			}
		})
	}
}

//go:build interop

// Package images builds the container images of the three binaries with
// deploy/container/build.sh (what `make images` runs) under Podman and runs
// them: each answers --version with the chart's appVersion, runs as the
// nonroot user with the OCI labels set, and the gateway image serves
// /healthz on the bundled default with host networking.
package images

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/test/services"
)

// podman returns the podman command test/setup/podman.sh prepared.
func podman(t *testing.T) string {
	t.Helper()
	p := os.Getenv("CARBONGATE_PODMAN")
	if p == "" {
		t.Fatal("CARBONGATE_PODMAN is not set: run test/setup/podman.sh (make test does) and export its output")
	}
	return p
}

// appVersion reads the chart's appVersion, the one place the version is set.
func appVersion(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "deploy/helm/carbongate/Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^appVersion:\s*"?([^"\s]+)"?\s*$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("Chart.yaml has no appVersion")
	}
	return "v" + string(m[1])
}

func run(t *testing.T, ctx context.Context, name string, args ...string) string {
	t.Helper()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestImages(t *testing.T) {
	p := podman(t)
	root := services.RepoRoot(t)
	version := appVersion(t, root)
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()

	build := exec.CommandContext(ctx, filepath.Join(root, "deploy/container/build.sh"))
	build.Env = append(os.Environ(), "CONTAINER="+p)
	build.Stderr = os.Stderr
	out, err := build.Output()
	if err != nil {
		t.Fatalf("build.sh: %v", err)
	}
	images := strings.Fields(string(out))
	want := []string{"ghcr.io/carbongate/carbongate:" + version, "ghcr.io/carbongate/carbonserve:" + version, "ghcr.io/carbongate/carbonctl:" + version}
	if strings.Join(images, " ") != strings.Join(want, " ") {
		t.Fatalf("build.sh built %q, want %q (the chart's names and tags)", images, want)
	}
	values, err := os.ReadFile(filepath.Join(root, "deploy/helm/carbongate/values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(values), "image: "+want[1]+"\n") {
		t.Errorf("values.yaml's carbonserve runtime image is not %s: chart and images disagree", want[1])
	}

	for _, img := range images {
		name := strings.TrimPrefix(strings.Split(img, ":")[0], "ghcr.io/carbongate/")
		t.Run(name, func(t *testing.T) {
			got := run(t, ctx, p, "run", "--rm", "--network", "host", img, "--version")
			if !strings.HasPrefix(got, name+" "+version+" (commit ") {
				t.Fatalf("%s --version: %q, want %q …", img, got, name+" "+version+" (commit")
			}
			var cfg struct {
				User   string
				Labels map[string]string
			}
			if err := json.Unmarshal([]byte(run(t, ctx, p, "image", "inspect", "--format", "{{json .Config}}", img)), &cfg); err != nil {
				t.Fatal(err)
			}
			if cfg.User != "65532:65532" || cfg.Labels["org.opencontainers.image.title"] != name ||
				cfg.Labels["org.opencontainers.image.version"] != version || cfg.Labels["org.opencontainers.image.revision"] == "" {
				t.Fatalf("%s: user %q labels %v, want the nonroot user and the OCI labels", img, cfg.User, cfg.Labels)
			}
		})
	}

	t.Run("gateway serves", func(t *testing.T) {
		// Held, the port goes to no other process between here and the
		// container binding it (the gateway sets SO_REUSEADDR, as every
		// Go server does, so it listens on it all the same).
		port := services.HeldPort(t)
		cname := fmt.Sprintf("carbongate-image-test-%d", port)
		run(t, ctx, p, "run", "-d", "--name", cname, "--network", "host", want[0], "--addr", fmt.Sprintf("127.0.0.1:%d", port))
		t.Cleanup(func() { exec.Command(p, "rm", "-f", cname).Run() })
		url := fmt.Sprintf("http://127.0.0.1:%d/healthz", port)
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			resp, err := http.Get(url)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				logs, _ := exec.Command(p, "logs", cname).CombinedOutput()
				t.Fatalf("GET %s: no 200 within 30 s (%v)\n%s", url, err, logs)
			}
		}
		// The 200 counts only if the container's process is the one
		// listening: else another server answered on the port.
		pid, err := strconv.Atoi(strings.TrimSpace(run(t, ctx, p, "inspect", "--format", "{{.State.Pid}}", cname)))
		if err != nil {
			t.Fatalf("container pid: %v", err)
		}
		if err := services.CheckListener(pid, port); err != nil {
			t.Fatalf("GET %s answered, but not by the container (pid %d): %v", url, pid, err)
		}
		// Positive control: the check tells listeners apart (this test
		// process holds the port but does not listen on it).
		if err := services.CheckListener(os.Getpid(), port); err == nil {
			t.Fatalf("CheckListener took the container's listener on %d for this process's", port)
		}
	})
}

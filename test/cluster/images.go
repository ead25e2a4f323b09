package cluster

import (
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/carbongate/carbongate/test/services"
)

// ProjectImages builds the project's images as `make images` does
// (deploy/container/build.sh with the Podman of test/setup/podman.sh) and
// saves each as an OCI archive for the nodes' containerd. It returns the
// archives and the images' names by command (carbongate, carbonctl, …).
func ProjectImages(t testing.TB) (archives []string, names map[string]string) {
	t.Helper()
	start := time.Now()
	podman := services.Tool(t, "CARBONGATE_PODMAN", "podman.sh")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "deploy/container/build.sh")
	cmd.Dir = services.RepoRoot(t)
	cmd.Env = append(os.Environ(), "CONTAINER="+podman)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("deploy/container/build.sh: %v\n%s", err, stderr.String())
	}
	names = map[string]string{}
	dir := t.TempDir()
	for _, name := range strings.Fields(string(out)) {
		base := filepath.Base(name)
		cmdName, _, _ := strings.Cut(base, ":")
		names[cmdName] = name
		archives = append(archives, saveImage(t, podman, name, filepath.Join(dir, cmdName+".oci.tar")))
	}
	if names["carbongate"] == "" || names["carbonctl"] == "" {
		t.Fatalf("deploy/container/build.sh printed %q, want the carbongate and carbonctl images", out)
	}
	t.Logf("images %v built and saved in %v", strings.Fields(string(out)), time.Since(start).Round(100*time.Millisecond))
	return archives, names
}

// saveImage saves Podman's image name as an OCI archive at path and
// returns path.
func saveImage(t testing.TB, podman, name, path string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if b, err := exec.CommandContext(ctx, podman, "save", "--format", "oci-archive", "-o", path, name).CombinedOutput(); err != nil {
		t.Fatalf("podman save %s: %v\n%s", name, err, b)
	}
	return path
}

// opaContainerfile makes an image of a static OPA binary laid out as
// OPA's own -static image is: /opa as entrypoint, `run` as default
// argument, a numeric non-root user (Kubernetes' runAsNonRoot cannot check
// a user name), no shell, no libraries.
const opaContainerfile = `FROM scratch
LABEL org.opencontainers.image.title="opa" \
      org.opencontainers.image.description="Open Policy Agent built by test/setup/opa.sh, for carbongate's tests"
COPY opa /opa
USER 1000:1000
WORKDIR /
ENTRYPOINT ["/opa"]
CMD ["run"]
`

// OPAImage builds an image of the OPA that test/setup/opa.sh builds from
// the Go module proxy ($CARBONGATE_OPA) under the name the Helm chart's
// admission.opa.image gives (the cluster has no registry to pull OPA's
// own image from), and saves it as an OCI archive for the nodes'
// containerd. It fails unless the binary is static (the image has no
// libraries) and of the version the chart's tag names. It returns the
// archive and the image's name.
func OPAImage(t testing.TB) (archive, name string) {
	t.Helper()
	start := time.Now()
	opa := services.OPABinary(t)
	checkStatic(t, opa)
	repo, tag := chartOPAImage(t)
	if got := opaVersion(t, opa); strings.TrimSuffix(tag, "-static") != got {
		t.Fatalf("test/setup/opa.sh built OPA %s; the chart's admission.opa.image.tag is %s", got, tag)
	}
	name = imageName(repo, tag)
	dir := t.TempDir()
	b, err := os.ReadFile(opa)
	if err != nil {
		t.Fatal(err)
	}
	for f, content := range map[string][]byte{"opa": b, "Containerfile": []byte(opaContainerfile)} {
		if err := os.WriteFile(filepath.Join(dir, f), content, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	podman := services.Tool(t, "CARBONGATE_PODMAN", "podman.sh")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, podman, "build", "--quiet", "-f", filepath.Join(dir, "Containerfile"), "-t", name, dir).CombinedOutput(); err != nil {
		t.Fatalf("podman build %s: %v\n%s", name, err, out)
	}
	archive = saveImage(t, podman, name, filepath.Join(t.TempDir(), "opa.oci.tar"))
	t.Logf("image %s of %s built and saved in %v", name, opa, time.Since(start).Round(100*time.Millisecond))
	return archive, name
}

// checkStatic fails t unless the ELF binary at path is statically linked:
// no program interpreter, no shared library needed.
func checkStatic(t testing.TB, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatalf("%s is dynamically linked (it has a program interpreter): build it with CGO_ENABLED=0", path)
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Fatalf("%s needs shared libraries %v (%v): build it with CGO_ENABLED=0", path, libs, err)
	}
}

// opaVersion is what `opa version` says the binary at path is.
func opaVersion(t testing.TB, path string) string {
	t.Helper()
	out, err := exec.Command(path, "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v", path, err)
	}
	for line := range strings.Lines(string(out)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Version: "); ok {
			return v
		}
	}
	t.Fatalf("%s version printed no version:\n%s", path, out)
	return ""
}

// chartOPAImage is the Helm chart's admission.opa.image: repository and tag.
func chartOPAImage(t testing.TB) (repo, tag string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(services.RepoRoot(t), "deploy", "helm", "carbongate", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Admission struct {
			OPA struct {
				Image struct{ Repository, Tag string }
			}
		}
	}
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("the chart's values.yaml: %v", err)
	}
	img := v.Admission.OPA.Image
	if img.Repository == "" || img.Tag == "" {
		t.Fatalf("the chart's values.yaml has no admission.opa.image repository and tag: %+v", img)
	}
	return img.Repository, img.Tag
}

// imageName is the full name the nodes' containerd gives an image that a
// pod names repo:tag: Docker Hub's when repo names no registry.
func imageName(repo, tag string) string {
	if first, _, ok := strings.Cut(repo, "/"); !ok || !strings.ContainsAny(first, ".:") && first != "localhost" {
		if !ok {
			repo = "library/" + repo
		}
		repo = "docker.io/" + repo
	}
	return fmt.Sprintf("%s:%s", repo, tag)
}

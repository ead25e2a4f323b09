//go:build interop

package helm

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/test/services"
)

// flagLine matches a flag in the usage text of the binaries (package
// cmd/internal/cli).
var flagLine = regexp.MustCompile(`(?m)^  --([A-Za-z0-9][-_A-Za-z0-9]*)`)

// runBinary runs path with args in an environment holding PATH and HOME
// only (no $CARBONGATE_STORE or $CARBONGATE_REGISTRY from the caller) and
// returns its exit code and combined output.
func runBinary(t *testing.T, path string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), out.String()
	}
	t.Fatalf("%s %s: %v", path, strings.Join(args, " "), err)
	return 0, ""
}

// usageFlags returns the flag names a usage text lists.
func usageFlags(t *testing.T, usage string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, m := range flagLine.FindAllStringSubmatch(usage, -1) {
		out[m[1]] = true
	}
	if len(out) == 0 {
		t.Fatalf("no flags in the usage text:\n%s", usage)
	}
	return out
}

// TestChartFlagsMatchBinaries builds carbongate and carbonctl from this
// tree and checks every case's rendered command lines against them: each
// gateway flag is one `carbongate -h` lists, and the backfill CronJob's
// arguments pass carbonctl's own flag parsing and plan validation. Run
// without $CARBONGATE_STORE, carbonctl then stops at the first step that
// needs the (Secret-backed) store URL, with a usage error naming it: that
// error proves everything before it was accepted.
func TestChartFlagsMatchBinaries(t *testing.T) {
	t.Parallel()
	bin := services.GoBuild(t, "carbongate", "carbonctl")
	_, gwUsage := runBinary(t, filepath.Join(bin, "carbongate"), "-h")
	gwFlags := usageFlags(t, gwUsage)
	_, bfUsage := runBinary(t, filepath.Join(bin, "carbonctl"), "backfill", "-h")
	bfFlags := usageFlags(t, bfUsage)
	const storeRequired = "carbonctl backfill: --store (or $CARBONGATE_STORE) is required\n'carbonctl help backfill' shows the flags"
	for _, c := range chartCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if c.apiServer {
				return // no carbongate runs there
			}
			o := decodeAll(t, render(t, c.release, c.ns, c.values))
			gw := container(t, &o.deployment("gateway").Spec.Template.Spec, "carbongate")
			for name := range flagValues(gw.Args) {
				if !gwFlags[name] {
					t.Errorf("gateway: --%s is not a flag of carbongate", name)
				}
			}
			for _, cj := range o.CronJobs {
				args := cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Args
				for name := range flagValues(args) {
					if !bfFlags[name] {
						t.Errorf("CronJob %s: --%s is not a flag of carbonctl backfill", cj.Name, name)
					}
				}
				code, out := runBinary(t, filepath.Join(bin, "carbonctl"), args...)
				if got := strings.TrimSpace(out); code != 2 || got != storeRequired {
					t.Errorf("CronJob %s: carbonctl %s: exit %d, output %q; want exit 2 and %q (flags and plan accepted)",
						cj.Name, strings.Join(args, " "), code, got, storeRequired)
				}
			}
		})
	}
}

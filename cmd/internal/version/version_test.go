package version

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestFill(t *testing.T) {
	t.Parallel()
	bi := &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"},
	}}
	tests := []struct {
		name string
		in   Info
		want Info
	}{
		{"from the build information", Info{}, Info{Version: "v1.2.3", Commit: "abc123-dirty", Date: "2026-01-02T03:04:05Z"}},
		{"the linker wins", Info{Version: "v0.1.0", Commit: "def", Date: "2026-11-26T00:00:00Z"}, Info{Version: "v0.1.0", Commit: "def", Date: "2026-11-26T00:00:00Z"}},
	}
	for _, tt := range tests {
		if got := fill(tt.in, bi); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
	if got := fill(Info{}, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}); got.Version != "" {
		t.Errorf("a (devel) build has version %q, want it left to the default", got.Version)
	}
}

func TestRequested(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]bool{"--version": true, "-version": true, "version": false, "--addr :1 --version": false, "": false, "--versions": false} {
		if got := Requested(strings.Fields(args)); got != want {
			t.Errorf("Requested(%q) = %v, want %v", args, got, want)
		}
	}
}

func TestCollector(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	reg.MustRegister(Collector("carbongate"))
	i := Get()
	want := `# HELP carbongate_build_info Always 1; labelled with the version, commit, build date and Go version of the running binary.
# TYPE carbongate_build_info gauge
carbongate_build_info{commit="` + i.Commit + `",date="` + i.Date + `",goversion="` + i.Go + `",version="` + i.Version + `"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "carbongate_build_info"); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(i.String("carbongate"), "carbongate "+i.Version+" (commit ") {
		t.Fatalf("version line %q", i.String("carbongate"))
	}
}

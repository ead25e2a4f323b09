// Package version tells which build of a carbongate binary is running:
// module version, commit, build date and Go version, for --version and the
// <binary>_build_info metric.
//
// Release builds set them with the linker (the Makefile does, from the
// Helm chart's appVersion, so that chart, images and binaries agree):
//
//	-X github.com/carbongate/carbongate/cmd/internal/version.version=v0.1.0
//	-X github.com/carbongate/carbongate/cmd/internal/version.commit=<sha>
//	-X github.com/carbongate/carbongate/cmd/internal/version.date=<RFC 3339>
//
// Without them the values come from the build information Go embeds
// (runtime/debug.ReadBuildInfo): the module version under `go install
// module@version`, the VCS revision and time in a git checkout.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// Set by the linker; empty: read from the build information.
var (
	version string
	commit  string
	date    string
)

// Info describes a build.
type Info struct {
	Version string // module version, "devel" when unknown
	Commit  string // VCS revision, "-dirty" appended for a modified tree; "unknown"
	Date    string // build date (or commit time), RFC 3339; "unknown"
	Go      string // Go version
}

// Get returns the running binary's build.
func Get() Info {
	i := Info{Version: version, Commit: commit, Date: date, Go: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		i = fill(i, bi)
	}
	if i.Version == "" {
		i.Version = "devel"
	}
	if i.Commit == "" {
		i.Commit = "unknown"
	}
	if i.Date == "" {
		i.Date = "unknown"
	}
	return i
}

// fill completes what the linker did not set from bi.
func fill(i Info, bi *debug.BuildInfo) Info {
	if i.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		i.Version = bi.Main.Version
	}
	setting := func(key string) string {
		if j := slices.IndexFunc(bi.Settings, func(s debug.BuildSetting) bool { return s.Key == key }); j >= 0 {
			return bi.Settings[j].Value
		}
		return ""
	}
	if i.Commit == "" {
		if i.Commit = setting("vcs.revision"); i.Commit != "" && setting("vcs.modified") == "true" {
			i.Commit += "-dirty"
		}
	}
	if i.Date == "" {
		i.Date = setting("vcs.time")
	}
	return i
}

// String is the --version line of binary name.
func (i Info) String(name string) string {
	return fmt.Sprintf("%s %s (commit %s, built %s, %s)", name, i.Version, i.Commit, i.Date, i.Go)
}

// Requested reports whether args ask for the version: --version or
// -version as the first argument.
func Requested(args []string) bool {
	return len(args) > 0 && (args[0] == "--version" || args[0] == "-version")
}

// Collector returns the gauge <namespace>_build_info, always 1, labelled
// with the build: the usual way to join a binary's version to its other
// metrics.
func Collector(namespace string) prometheus.Collector {
	i := Get()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        namespace + "_build_info",
		Help:        "Always 1; labelled with the version, commit, build date and Go version of the running binary.",
		ConstLabels: prometheus.Labels{"version": i.Version, "commit": i.Commit, "date": i.Date, "goversion": i.Go},
	})
	g.Set(1)
	return g
}

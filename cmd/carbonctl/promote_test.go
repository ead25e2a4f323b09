package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/embedded"
)

// gateRegistry creates carbon-forecaster-DE with versions 1..n in an
// embedded registry file, champion on version champion (0: no alias).
func gateRegistry(t *testing.T, n int, champion int64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "registry.db")
	s, err := embedded.Open(path, registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.CreateModel(ctx, "carbon-forecaster-DE", "", nil); err != nil {
		t.Fatal(err)
	}
	for range n {
		if _, err := s.CreateVersion(ctx, registry.NewVersion{Name: "carbon-forecaster-DE", Source: t.TempDir()}); err != nil {
			t.Fatal(err)
		}
	}
	if champion > 0 {
		if err := s.SetAlias(ctx, "carbon-forecaster-DE", "champion", champion); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// registryState returns the champion's version and the tags of every
// version of carbon-forecaster-DE.
func registryState(t *testing.T, path string) (champion int64, tags map[int64]map[string]string) {
	t.Helper()
	s, err := embedded.Open(path, registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if v, err := s.VersionByAlias(ctx, "carbon-forecaster-DE", "champion"); err == nil {
		champion = v.Version
	}
	tags = map[int64]map[string]string{}
	for v := int64(1); ; v++ {
		mv, err := s.GetVersion(ctx, "carbon-forecaster-DE", v)
		if err != nil {
			return champion, tags
		}
		tags[v] = map[string]string{}
		for _, tg := range mv.Tags {
			tags[v][tg.Key] = tg.Value
		}
	}
}

func promoteMem(m *store.Memory) func(context.Context, []string, *bytes.Buffer, *bytes.Buffer) error {
	return func(ctx context.Context, args []string, o, e *bytes.Buffer) error {
		return promoteWith(ctx, args, o, e, memOpener(m))
	}
}

// gateStore: version 1 (8 % error) has issue days 0-9, version 2 (4 %)
// days 5-14, version 3 (12 %) days 0-9, version 4 days 20-24.
func gateStore(t *testing.T) *store.Memory {
	t.Helper()
	m := store.NewMemory()
	observeDE(t, m, 30)
	backfillDE(t, m, "carbon-forecaster-DE", "1", 0, 10, 0.08, 0)
	backfillDE(t, m, "carbon-forecaster-DE", "2", 5, 15, 0.04, 0)
	backfillDE(t, m, "carbon-forecaster-DE", "3", 0, 10, 0.12, 0)
	backfillDE(t, m, "carbon-forecaster-DE", "4", 20, 25, 0.01, 0)
	return m
}

func TestPromoteIfBetter(t *testing.T) {
	t.Parallel()
	m := gateStore(t)
	for _, c := range []struct {
		note      string
		code      int // 3: declined
		champion  int64
		args      []string
		want      string
		champNow  int64
		tagged    map[int64]string // version → eval.mape_d1
		tagWindow string
	}{
		{"better challenger is promoted", 0, 1, []string{"--challenger", "2"},
			"mape_d1 on 2021-03-06/2021-03-10 (signal direct, 5 issued forecasts per version): challenger version 2 4.00, champion version 1 8.00: promoted, version 1 -> 2",
			2, map[int64]string{1: "8.00", 2: "4.00"}, "2021-03-06/2021-03-10"},
		{"worse challenger is not", 3, 1, []string{"--version", "3"},
			"challenger version 3 12.00, champion version 1 8.00: not lower, version 1 stays", 1,
			map[int64]string{1: "8.00", 3: "12.00"}, "2021-03-01/2021-03-10"},
		{"minimum improvement not reached", 3, 1, []string{"--challenger", "2", "--min-improvement", "0.6"},
			"not at least 60.0 % lower, version 1 stays", 1, map[int64]string{1: "8.00", 2: "4.00"}, "2021-03-06/2021-03-10"},
		{"p90 of lead day 2", 0, 3, []string{"--metric", "mape_d2_p90", "--challenger", "2"},
			"mape_d2_p90 on 2021-03-06/2021-03-10", 2, nil, ""},
		{"no champion: promoted without comparison", 0, 0, []string{"--challenger", "3"},
			"no version had the alias: promoted version 3 without a comparison", 3, nil, ""},
		{"already champion", 0, 2, []string{"--challenger", "2"}, "version 2 is already the target", 2, nil, ""},
	} {
		t.Run(c.note, func(t *testing.T) {
			t.Parallel()
			reg := gateRegistry(t, 4, c.champion)
			args := append([]string{"--registry", reg, "--zone", "DE", "--if-better", "--store", "postgres://x/y"}, c.args...)
			code, out, errOut := runWith(promoteMem(m), args...)
			if code != c.code || !strings.Contains(out, c.want) {
				t.Fatalf("exit %d\nstdout %s\nstderr %s\nwant %q", code, out, errOut, c.want)
			}
			champ, tags := registryState(t, reg)
			if champ != c.champNow {
				t.Fatalf("champion is version %d, want %d", champ, c.champNow)
			}
			for v, want := range c.tagged {
				if got := tags[v]["eval.mape_d1"]; got != want {
					t.Errorf("version %d eval.mape_d1 = %q, want %q", v, got, want)
				}
				if got := tags[v]["eval.window"]; got != c.tagWindow || tags[v]["eval.signal"] != "direct" {
					t.Errorf("version %d tags %v, want window %s", v, tags[v], c.tagWindow)
				}
			}
		})
	}
}

func TestPromoteIfBetterDefaultChallenger(t *testing.T) {
	t.Parallel()
	m := gateStore(t)
	reg := gateRegistry(t, 2, 1) // the latest version is 2
	code, out, errOut := runWith(promoteMem(m), "--registry", reg, "--zone", "DE", "--if-better", "--store", "postgres://x/y")
	if code != 0 || !strings.Contains(out, "promoted, version 1 -> 2") {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
}

func TestPromoteIfBetterErrors(t *testing.T) {
	t.Parallel()
	m := gateStore(t)
	reg := gateRegistry(t, 4, 1)
	base := []string{"--registry", reg, "--zone", "DE"}
	for _, c := range []struct {
		note string
		args []string
		code int
		want string
	}{
		{"no common window", []string{"--if-better", "--store", "postgres://x/y", "--challenger", "4"}, 1, "--store has no common backfill window for --challenger 4"},
		{"if-better without store", []string{"--if-better", "--challenger", "2"}, 2, "--store"},
		{"store without if-better", []string{"--store", "postgres://x/y", "--version", "2"}, 2, "--if-better"},
		{"unknown metric", []string{"--if-better", "--store", "postgres://x/y", "--metric", "rmse"}, 2, "--metric"},
		{"coverage is no error metric", []string{"--if-better", "--store", "postgres://x/y", "--metric", "coverage_d1"}, 2, "--metric"},
		{"lead day beyond", []string{"--if-better", "--store", "postgres://x/y", "--metric", "mape_d5"}, 2, "--metric"},
		{"improvement not a fraction", []string{"--if-better", "--store", "postgres://x/y", "--min-improvement", "1.5"}, 2, "--min-improvement"},
		{"versions disagree", []string{"--if-better", "--store", "postgres://x/y", "--version", "2", "--challenger", "3"}, 2, "disagree"},
		{"bad store scheme", []string{"--if-better", "--store", "mysql://x"}, 2, "--store"},
		{"challenger missing", []string{"--if-better", "--store", "postgres://x/y", "--challenger", "9"}, 1, "--challenger"},
		{"bad signal", []string{"--if-better", "--store", "postgres://x/y", "--signal", "marginal"}, 2, "--signal"},
	} {
		t.Run(c.note, func(t *testing.T) {
			code, out, errOut := runWith(promoteMem(m), append(base, c.args...)...)
			if code != c.code || !strings.Contains(errOut, c.want) {
				t.Fatalf("exit %d (want %d)\nstdout %s\nstderr %s", code, c.code, out, errOut)
			}
		})
	}
	if champ, tags := registryState(t, reg); champ != 1 || len(tags[1]) != 0 {
		t.Fatalf("failed gates changed the registry: champion %d, tags %v", champ, tags[1])
	}
}

// TestPromoteOutputJSON: --output json prints one object, the gate's
// numbers included, also when the gate declines (exit 3).
func TestPromoteOutputJSON(t *testing.T) {
	t.Parallel()
	m := gateStore(t)
	for _, c := range []struct {
		args     []string
		code     int
		promoted bool
		version  int64
		gate     bool
	}{
		{[]string{"--if-better", "--store", "postgres://x/y", "--challenger", "2"}, 0, true, 2, true},
		{[]string{"--if-better", "--store", "postgres://x/y", "--challenger", "3"}, 3, false, 1, true},
		{[]string{"--version", "4"}, 0, true, 4, false},
	} {
		reg := gateRegistry(t, 4, 1)
		args := append([]string{"--registry", reg, "--zone", "DE", "--output", "json"}, c.args...)
		code, out, errOut := runWith(promoteMem(m), args...)
		var res promoteResult
		if err := json.Unmarshal([]byte(out), &res); err != nil || code != c.code {
			t.Fatalf("%v: exit %d, %v\nstdout %s\nstderr %s", c.args, code, err, out, errOut)
		}
		if res.Promoted != c.promoted || res.Version != c.version || res.From == nil || *res.From != 1 || (res.Gate != nil) != c.gate {
			t.Errorf("%v: %+v", c.args, res)
		}
		if c.gate && (res.Gate.Metric != "mape_d1" || res.Gate.Champion != 1 || math.Abs(res.Gate.ChampionErr-8) > 1e-9) {
			t.Errorf("%v: gate %+v", c.args, *res.Gate)
		}
	}
}

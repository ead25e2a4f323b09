//go:build interop

package helm

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/carbongate/carbongate/deploy/kubejob"
)

// zoneID is what carbongate's forecast.ParseZone accepts (any case).
var zoneID = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)

// secretRefs returns the container's env entries that come from a
// secretKeyRef, as "secret/key" by env name.
func secretRefs(ctr corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range ctr.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			out[e.Name] = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		}
	}
	return out
}

// checkProduction checks the gateway's production-mode flags against its
// environment: --store is the Secret-backed $(CARBONGATE_STORE), the
// pollers run only with a store, each source has its credentials from a
// Secret, and the values parse as carbongate parses them.
func checkProduction(t *testing.T, o *Objects) {
	t.Helper()
	d := o.deployment("gateway")
	if d == nil {
		return
	}
	ctr := container(t, &d.Spec.Template.Spec, "carbongate")
	flags := flagValues(ctr.Args)
	refs := secretRefs(*ctr)
	_, store := flags["store"]
	if store && (flags["store"] != "$(CARBONGATE_STORE)" || refs["CARBONGATE_STORE"] == "") {
		t.Errorf("gateway: --store=%q with CARBONGATE_STORE from %q, want $(CARBONGATE_STORE) from a Secret", flags["store"], refs["CARBONGATE_STORE"])
	}
	if _, migrate := flags["store-migrate"]; migrate && !store {
		t.Errorf("gateway: --store-migrate without --store")
	}
	zones, em := flags["ingest-zones"]
	regions, wt := flags["watttime-regions"]
	if (em || wt) && !store {
		t.Errorf("gateway: ingest flags without --store: the pollers would have nowhere to write")
	}
	if em != (refs["ELECTRICITYMAPS_TOKEN"] != "") {
		t.Errorf("gateway: --ingest-zones set %v, ELECTRICITYMAPS_TOKEN from a Secret %v: want both or neither", em, refs["ELECTRICITYMAPS_TOKEN"] != "")
	}
	if em {
		for _, z := range strings.Split(zones, ",") {
			if !zoneID.MatchString(z) {
				t.Errorf("gateway: --ingest-zones: %q is not a zone id", z)
			}
		}
		for _, s := range strings.Split(flags["ingest-signals"], ",") {
			if s != "lifecycle" && s != "direct" {
				t.Errorf("gateway: --ingest-signals: %q is not lifecycle or direct", s)
			}
		}
	}
	wtCreds := refs["WATTTIME_USERNAME"] != "" && refs["WATTTIME_PASSWORD"] != ""
	if wt != wtCreds {
		t.Errorf("gateway: --watttime-regions set %v, WattTime user and password from a Secret %v: want both or neither", wt, wtCreds)
	}
	if wt {
		seen := map[string]bool{}
		for _, pair := range strings.Split(regions, ",") {
			z, r, ok := strings.Cut(pair, "=")
			if !ok || r == "" || !zoneID.MatchString(z) || seen[strings.ToUpper(z)] {
				t.Errorf("gateway: --watttime-regions: %q is not a ZONE=REGION pair of a new zone", pair)
			}
			seen[strings.ToUpper(z)] = true
		}
	}
	for _, f := range []string{"ingest-interval", "ingest-backfill"} {
		v, ok := flags[f]
		if ok != (em || wt) {
			t.Errorf("gateway: --%s set %v, pollers configured %v", f, ok, em || wt)
		}
		if d, err := time.ParseDuration(v); ok && (err != nil || d <= 0) {
			t.Errorf("gateway: --%s=%q is not a positive duration", f, v)
		}
	}
	if v, ok := flags["max-conns"]; ok {
		if n, err := strconv.Atoi(v); err != nil || n < 1 {
			t.Errorf("gateway: --max-conns=%q is not a positive integer", v)
		}
	}
}

// backfillSecretEnv returns the env names `carbonctl deploy render
// --backfill` gives the store URL and the registry URI, by Secret key.
func backfillSecretEnv(t *testing.T) map[string]string {
	t.Helper()
	j, err := kubejob.Job(kubejob.Config{Image: "ghcr.io/carbongate/carbonctl:test", Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range j.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			out[e.ValueFrom.SecretKeyRef.Key] = e.Name
		}
	}
	return out
}

// checkBackfillContainer: the plan flags carbonctl backfill requires, no
// store or registry on the command line, and both from a Secret under the
// env names the Indexed Job of `carbonctl deploy render --backfill` uses.
func checkBackfillContainer(t *testing.T, id string, ctr corev1.Container) {
	t.Helper()
	flags := flagValues(ctr.Args[1:])
	for _, f := range []string{"zones", "from", "to", "model"} {
		if flags[f] == "" {
			t.Errorf("%s: no --%s", id, f)
		}
	}
	for _, f := range []string{"store", "registry"} {
		if _, ok := flags[f]; ok {
			t.Errorf("%s: --%s on the command line; carbonctl reads it from the Secret-backed env", id, f)
		}
	}
	refs := secretRefs(ctr)
	names := backfillSecretEnv(t)
	for _, key := range []string{kubejob.KeyStore, kubejob.KeyRegistry} {
		name := names[key]
		if name == "" {
			t.Fatalf("kubejob renders no env for Secret key %s", key)
		}
		if refs[name] == "" {
			t.Errorf("%s: no env %s from a Secret (the name kubejob gives Secret key %s)", id, name, key)
		}
	}
}

// checkNoInlineCredentials: no string anywhere in the rendered objects is
// a URL with user information.
func checkNoInlineCredentials(t *testing.T, o *Objects) {
	t.Helper()
	for _, x := range o.All {
		var v any
		if err := json.Unmarshal(x.Doc.JSON, &v); err != nil {
			t.Fatal(err)
		}
		for _, s := range jsonStrings("", v) {
			if userinfoURL.MatchString(s[1]) {
				t.Errorf("%s: %s holds a URL with credentials", x.Doc.ID(), s[0])
			}
		}
	}
}

// jsonStrings returns every string value of v with its path.
func jsonStrings(path string, v any) [][2]string {
	var out [][2]string
	switch x := v.(type) {
	case string:
		out = append(out, [2]string{path, x})
	case map[string]any:
		for k, e := range x {
			out = append(out, jsonStrings(path+"."+k, e)...)
		}
	case []any:
		for i, e := range x {
			out = append(out, jsonStrings(fmt.Sprintf("%s[%d]", path, i), e)...)
		}
	}
	return out
}

// productionFlag reports a gateway flag that production mode sets.
func productionFlag(arg string) bool {
	k, _, _ := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
	return k == "store" || k == "store-migrate" || k == "max-conns" || strings.HasPrefix(k, "ingest-") ||
		strings.HasPrefix(k, "electricitymaps-") || strings.HasPrefix(k, "watttime-") || strings.HasPrefix(k, "vendor-")
}

// productionEnv are the env entries production mode adds to the gateway.
var productionEnv = []string{"CARBONGATE_STORE", "ELECTRICITYMAPS_TOKEN", "WATTTIME_USERNAME", "WATTTIME_PASSWORD"}

// TestProductionModeRender pins the gateway's production-mode flags and
// Secret references for value combinations.
func TestProductionModeRender(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, values string
		args         []string
		secrets      map[string]string
	}{
		{name: "defaults: bundled data, no pollers", values: "{}", secrets: map[string]string{}},
		{
			name:    "store only",
			values:  "store: {enabled: true, uriSecret: {name: pg, key: url}}",
			args:    []string{"--store=$(CARBONGATE_STORE)"},
			secrets: map[string]string{"CARBONGATE_STORE": "pg/url"},
		},
		{
			name: "store migrated, Electricity Maps, connection limit",
			values: `
gateway: {maxConns: 500}
store: {enabled: true, uriSecret: {name: pg}, migrate: true}
ingest: {electricityMaps: {zones: [DE, SE], signals: [direct], tokenSecret: {name: em, key: t}, url: "http://em:1"}, interval: 1m, backfill: 24h}
`,
			args: []string{"--max-conns=500", "--store=$(CARBONGATE_STORE)", "--store-migrate", "--ingest-zones=DE,SE",
				"--ingest-signals=direct", "--electricitymaps-url=http://em:1", "--ingest-interval=1m", "--ingest-backfill=24h"},
			secrets: map[string]string{"CARBONGATE_STORE": "pg/uri", "ELECTRICITYMAPS_TOKEN": "em/t"},
		},
		{
			name: "WattTime regions in zone order",
			values: `
store: {enabled: true, uriSecret: {name: crate}}
ingest: {wattTime: {regions: {US-NY-NYIS: NYISO, US-CAL-CISO: CAISO_NORTH}, credentialsSecret: {name: wt}}}
`,
			args: []string{"--store=$(CARBONGATE_STORE)", "--watttime-regions=US-CAL-CISO=CAISO_NORTH,US-NY-NYIS=NYISO",
				"--ingest-interval=15m", "--ingest-backfill=168h"},
			secrets: map[string]string{"CARBONGATE_STORE": "crate/uri", "WATTTIME_USERNAME": "wt/username", "WATTTIME_PASSWORD": "wt/password"},
		},
		{
			name: "Electricity Maps' forecast first, stored; no poller",
			values: `
store: {enabled: true, uriSecret: {name: pg}}
ingest: {electricityMaps: {tokenSecret: {name: em}, url: "http://em:1"}}
vendorForecast: {vendor: electricitymaps, position: first, horizon: 72, storeZones: [DE, FR]}
`,
			args: []string{"--store=$(CARBONGATE_STORE)", "--electricitymaps-url=http://em:1", "--vendor-forecast=electricitymaps",
				"--vendor-position=first", "--vendor-horizon=72", "--vendor-store-zones=DE,FR"},
			secrets: map[string]string{"CARBONGATE_STORE": "pg/uri", "ELECTRICITYMAPS_TOKEN": "em/token"},
		},
		{
			name: "WattTime's marginal forecast without the store",
			values: `
ingest: {wattTime: {regions: {US-CAL-CISO: CAISO_NORTH}, credentialsSecret: {name: wt}}}
vendorForecast: {vendor: watttime}
`,
			args: []string{"--watttime-regions=US-CAL-CISO=CAISO_NORTH", "--ingest-interval=15m", "--ingest-backfill=168h",
				"--vendor-forecast=watttime", "--vendor-position=after-generic", "--vendor-horizon=0"},
			secrets: map[string]string{"WATTTIME_USERNAME": "wt/username", "WATTTIME_PASSWORD": "wt/password"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			o := decodeAll(t, render(t, "carbongate", "carbon", c.values))
			ctr := container(t, &o.deployment("gateway").Spec.Template.Spec, "carbongate")
			var args []string
			for _, a := range ctr.Args {
				if productionFlag(a) {
					args = append(args, a)
				}
			}
			if !slices.Equal(args, c.args) {
				t.Errorf("production flags = %q, want %q", args, c.args)
			}
			refs := secretRefs(*ctr)
			got := map[string]string{}
			for _, name := range productionEnv {
				if r, ok := refs[name]; ok {
					got[name] = r
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(c.secrets) {
				t.Errorf("production env from Secrets = %v, want %v", got, c.secrets)
			}
		})
	}
}

// TestBackfillCronJobRender pins the CronJob's command line and
// environment for the defaults and for every value set.
func TestBackfillCronJobRender(t *testing.T) {
	t.Parallel()
	base := "store: {enabled: true, uriSecret: {name: pg-store, key: url}}\nregistry: {enabled: true, uriSecret: {name: pg-registry}}\n"
	for _, c := range []struct {
		name, values, timeZone string
		args, env              []string
	}{
		{
			name: "defaults", values: base + "backfill: {enabled: true, zones: [DE]}", timeZone: "Etc/UTC",
			args: []string{"backfill", "--zones=DE", "--from=today-24h", "--to=today", "--every=24h", "--horizon=96h",
				"--model=models:/carbon-forecaster-{zone}@champion", "--signal=lifecycle", "--workers=2", "--migrate=false"},
			env: []string{"CARBONGATE_STORE=pg-store/url", "CARBONGATE_REGISTRY=pg-registry/uri"},
		},
		{
			name: "every value, S3 and artifacts",
			values: `
store: {enabled: true, uriSecret: {name: pg-store, key: url}, migrate: true}
registry: {enabled: true, uriSecret: {name: pg-registry}, artifactsDestination: s3://m/a}
s3: {enabled: true, endpoint: http://s3:8333, credentialsSecret: {name: s3}}
backfill:
  enabled: true
  timeZone: ""
  zones: [DE, US-CAL-CISO]
  from: "2021-01-01"
  to: "2021-06-30T00:00:00Z"
  every: 12h
  horizon: 72h
  model: models:/cf-{zone}@challenger
  signal: direct
  workers: 8
  args: [--batch=8]
`,
			args: []string{"backfill", "--zones=DE,US-CAL-CISO", "--from=2021-01-01", "--to=2021-06-30T00:00:00Z", "--every=12h", "--horizon=72h",
				"--model=models:/cf-{zone}@challenger", "--signal=direct", "--workers=8", "--migrate=true", "--artifacts-destination=s3://m/a", "--batch=8"},
			env: []string{"CARBONGATE_STORE=pg-store/url", "CARBONGATE_REGISTRY=pg-registry/uri", "AWS_ENDPOINT_URL=http://s3:8333",
				"AWS_ACCESS_KEY_ID=s3/AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY=s3/AWS_SECRET_ACCESS_KEY"},
		},
		{
			name: "S3 keys with a session token", timeZone: "Etc/UTC",
			values: base + "s3: {enabled: true, credentialsSecret: {name: s3, sessionTokenKey: token}}\nbackfill: {enabled: true, zones: [DE]}",
			args: []string{"backfill", "--zones=DE", "--from=today-24h", "--to=today", "--every=24h", "--horizon=96h",
				"--model=models:/carbon-forecaster-{zone}@champion", "--signal=lifecycle", "--workers=2", "--migrate=false"},
			env: []string{"CARBONGATE_STORE=pg-store/url", "CARBONGATE_REGISTRY=pg-registry/uri",
				"AWS_ACCESS_KEY_ID=s3/AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY=s3/AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN=s3/token"},
		},
		{
			name: "S3 on AWS without keys (IRSA)", timeZone: "Etc/UTC",
			values: base + "s3: {enabled: true, region: eu-west-1}\nbackfill: {enabled: true, zones: [DE]}",
			args: []string{"backfill", "--zones=DE", "--from=today-24h", "--to=today", "--every=24h", "--horizon=96h",
				"--model=models:/carbon-forecaster-{zone}@champion", "--signal=lifecycle", "--workers=2", "--migrate=false"},
			env: []string{"CARBONGATE_STORE=pg-store/url", "CARBONGATE_REGISTRY=pg-registry/uri", "AWS_REGION=eu-west-1"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			o := decodeAll(t, render(t, "carbongate", "carbon", c.values))
			if len(o.CronJobs) != 1 {
				t.Fatalf("%d CronJobs, want 1", len(o.CronJobs))
			}
			cj := o.CronJobs[0]
			if got := cj.Spec.TimeZone; (got == nil && c.timeZone != "") || (got != nil && *got != c.timeZone) {
				t.Errorf("timeZone = %v, want %q", got, c.timeZone)
			}
			ctr := cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0]
			if !slices.Equal(ctr.Args, c.args) {
				t.Errorf("args = %q\nwant   %q", ctr.Args, c.args)
			}
			var env []string
			for _, e := range ctr.Env {
				v := e.Value
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					v = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
				}
				env = append(env, e.Name+"="+v)
			}
			if !slices.Equal(env, c.env) {
				t.Errorf("env = %q\nwant  %q", env, c.env)
			}
		})
	}
}

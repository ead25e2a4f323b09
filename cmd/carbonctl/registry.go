package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/carbongate/carbongate/cmd/internal/cli"
	"github.com/carbongate/carbongate/forecast"
	storeconnect "github.com/carbongate/carbongate/forecast/store/connect"
	"github.com/carbongate/carbongate/models/artifact"
	"github.com/carbongate/carbongate/models/evaluate"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/connect"
	"github.com/carbongate/carbongate/registry/crateblob"
	"github.com/carbongate/carbongate/registry/fetch"
	"github.com/carbongate/carbongate/registry/s3"
)

// registryFlag is the --registry flag shared by the registry commands.
const registryHelp = "registry: postgres://…, crate://…, http(s)://… (an MLflow-compatible server such as carbongate; token from $MLFLOW_TRACKING_TOKEN), file:PATH or PATH (the embedded store)"

// registryTimeout bounds one registry command.
const registryTimeout = 5 * time.Minute

func runRegistry(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		args = []string{"migrate", "-h"}
	}
	if len(args) == 0 || args[0] != "migrate" {
		return usagef("want a subcommand: carbonctl registry migrate --registry URI [--artifacts crate+blob://host:4200/TABLE]")
	}
	fs := newFlags("registry migrate", stdout)
	uri := fs.String("registry", "", registryHelp)
	arts := fs.String("artifacts", "", "also create the artifact store: crate+blob://host:4200/TABLE creates that CrateDB blob table unless it exists (one shard, replicas '0-1')")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	var table crateblob.Location
	if *arts != "" {
		l, err := crateblob.ParseURI(*arts)
		if err != nil {
			return usagef("--artifacts: %s", forecast.ErrorMessage(err))
		}
		table = l.TableLocation()
	}
	ctx, cancel := context.WithTimeout(ctx, registryTimeout)
	defer cancel()
	kind, err := connect.Migrate(ctx, *uri)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "registry schema ready (%s)\n", kind)
	if table.Table != "" {
		c := crateblob.New(crateblob.Config{})
		defer c.Close()
		if err := c.CreateTable(ctx, table); err != nil {
			return fmt.Errorf("--artifacts: %w", err)
		}
		fmt.Fprintf(stdout, "blob table ready (%s)\n", table)
	}
	return nil
}

// registerResult is what register prints, one JSON object.
type registerResult struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Source  string `json:"source"`
	Alias   string `json:"alias,omitempty"`
}

func runRegister(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("register", stdout)
	uri := fs.String("registry", "", registryHelp)
	zone := fs.String("zone", "", "zone of the model (e.g. DE), or generic")
	dir := fs.String("model-dir", "", "MLflow model directory written by carbonctl train (<out>/<signal>/<ZONE>)")
	arts := fs.String("artifacts", "", "where to store the files: s3://bucket/prefix (S3 settings from AWS_ENDPOINT_URL or S3_ENDPOINT, AWS_ACCESS_KEY_ID, ...), crate+blob://host:4200/TABLE (a CrateDB blob table; crate+blobs:// for HTTPS) or a local directory; default: artifacts/ next to an embedded registry file")
	maxBytes := fs.Int64("artifact-max-bytes", fetch.DefaultMaxBytes, "largest model directory stored in a CrateDB blob table, in bytes (the servers' --artifact-max-bytes default)")
	alias := fs.String("alias", "", "also point this alias (e.g. champion) at the new version")
	desc := fs.String("description", "", "version description")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *zone == "" || *dir == "" {
		return usagef("--zone and --model-dir are required")
	}
	name := registry.ModelName(*zone)
	if *zone == "generic" {
		name = registry.ModelName("")
	} else if _, err := forecast.ParseZone(*zone); err != nil {
		return usagef("--zone: %s", forecast.ErrorMessage(err))
	}
	if *alias != "" {
		if err := registry.ValidateAlias(*alias); err != nil {
			return usagef("--alias: %s", forecast.ErrorMessage(err))
		}
	}
	m, err := artifact.Load(*dir)
	if err != nil {
		return fmt.Errorf("--model-dir: %w", err)
	}
	meta := m.Meta()
	if wantZone := forecast.Zone(*zone); (*zone == "generic") != (meta.Zone == "") || (*zone != "generic" && meta.Zone != wantZone) {
		return usagef("--model-dir holds a model of zone %q, not %s", meta.Zone, *zone)
	}
	base, err := artifactBase(*uri, *arts)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, registryTimeout)
	defer cancel()
	store, _, err := connect.Open(ctx, *uri, registry.Options{})
	if err != nil {
		return err
	}
	defer store.Close()
	// Files first: if the store cannot take them, nothing is registered.
	up, err := storeArtifacts(ctx, *dir, base, name, *maxBytes)
	if err != nil {
		return err
	}
	if err := ensureModel(ctx, store, name, meta.Zone, meta.Signal); err != nil {
		up.undo()
		return err
	}
	v, err := store.CreateVersion(ctx, registry.NewVersion{
		Name: name, Source: up.location, Description: *desc,
		Tags: []registry.Tag{
			{Key: "zone", Value: zoneTag(meta.Zone)}, {Key: "signal", Value: string(meta.Signal)},
			{Key: "family", Value: meta.Family},
			{Key: "lookback", Value: strconv.Itoa(meta.Lookback)}, {Key: "horizon", Value: strconv.Itoa(meta.Horizon)},
		},
	})
	if err != nil {
		up.undo() // no version points at the files: remove them
		return err
	}
	res := registerResult{Name: name, Version: strconv.FormatInt(v.Version, 10), Source: v.Source}
	if *alias != "" {
		if err := store.SetAlias(ctx, name, *alias, v.Version); err != nil {
			return fmt.Errorf("version %d registered, alias not set: %w", v.Version, err)
		}
		res.Alias = *alias
	}
	return json.NewEncoder(stdout).Encode(res)
}

func zoneTag(z forecast.Zone) string {
	if z == "" {
		return "generic"
	}
	return string(z)
}

// ensureModel creates the registered model unless it exists.
func ensureModel(ctx context.Context, s registry.Store, name string, zone forecast.Zone, sig forecast.Signal) error {
	_, err := s.GetModel(ctx, name)
	if forecast.ErrorCode(err) != forecast.ENOTFOUND {
		return err
	}
	_, err = s.CreateModel(ctx, name, "carbon-intensity forecaster for "+zoneTag(zone),
		[]registry.Tag{{Key: "zone", Value: zoneTag(zone)}, {Key: "signal", Value: string(sig)}})
	if forecast.ErrorCode(err) == forecast.ECONFLICT {
		return nil // created concurrently
	}
	return err
}

// artifactBase is where register stores files: --artifacts, else
// artifacts/ next to an embedded registry file.
func artifactBase(uri, arts string) (string, error) {
	if arts != "" {
		return arts, nil
	}
	kind, addr, err := connect.Parse(uri)
	if err != nil {
		return "", err
	}
	if kind != connect.Embedded {
		return "", usagef("--artifacts is required with a %s registry", kind)
	}
	return filepath.Join(filepath.Dir(addr), "artifacts"), nil
}

// uploaded is a stored artifact directory and how to take it back.
type uploaded struct {
	location string
	undo     func()
}

// storeArtifacts copies dir to a fresh location under base:
// <base>/<name>/<time>-<random>/, or, for a CrateDB blob table, to the
// table's content-addressed blobs (at most maxBytes).
func storeArtifacts(ctx context.Context, dir, base, name string, maxBytes int64) (uploaded, error) {
	if crateblob.IsURI(base) {
		return storeBlobs(ctx, dir, base, maxBytes)
	}
	var rnd [4]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return uploaded{}, err
	}
	leaf := time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(rnd[:])
	if !s3.IsURI(base) {
		abs, err := filepath.Abs(filepath.Join(base, name, leaf))
		if err != nil {
			return uploaded{}, err
		}
		if err := (fetch.Fetcher{Sources: []string{dir}}).Fetch(ctx, dir, abs); err != nil {
			return uploaded{}, err
		}
		return uploaded{location: abs, undo: func() { os.RemoveAll(abs) }}, nil
	}
	c, err := s3.NewClient(s3.ConfigFromEnv(os.Getenv))
	if err != nil {
		return uploaded{}, err
	}
	loc := base
	if loc[len(loc)-1] != '/' {
		loc += "/"
	}
	loc += name + "/" + leaf
	keys, err := s3.Upload(ctx, c, dir, loc)
	if err != nil {
		return uploaded{}, err
	}
	return uploaded{location: loc, undo: func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = s3.Remove(ctx, c, loc, keys)
	}}, nil
}

// storeBlobs uploads dir into the blob table base names; undo removes
// the blobs the upload created (not those another version shares).
func storeBlobs(ctx context.Context, dir, base string, maxBytes int64) (uploaded, error) {
	table, err := crateblob.ParseURI(base)
	if err != nil {
		return uploaded{}, usagef("--artifacts: %s", forecast.ErrorMessage(err))
	}
	if table.Digest != "" {
		return uploaded{}, usagef("--artifacts: %s names a blob, not a table (crate+blob://host:port/TABLE)", base)
	}
	c := crateblob.New(crateblob.Config{})
	up, err := c.Upload(ctx, dir, table, maxBytes)
	if err != nil {
		c.Close()
		if forecast.ErrorCode(err) == forecast.EINVALID {
			return uploaded{}, fmt.Errorf("--model-dir: %w", err)
		}
		return uploaded{}, err
	}
	return uploaded{location: up.Location.String(), undo: func() {
		defer c.Close()
		_ = c.Remove(table, up.Created)
	}}, nil
}

// runPromote points an alias at a version; with --if-better only when the
// challenger beats the alias's current version on the same backfill window
// (promoteIfBetter).
func runPromote(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return promoteWith(ctx, args, stdout, stderr, openForecastStore)
}

// promoteResult is what promote prints with --output json: where the
// alias pointed before (null: nowhere) and points now, and with
// --if-better the comparison (null when none was needed).
type promoteResult struct {
	Model    string      `json:"model"`
	Alias    string      `json:"alias"`
	Promoted bool        `json:"promoted"`
	From     *int64      `json:"from"`
	Version  int64       `json:"version"`
	Gate     *gateResult `json:"gate"`
}

// gateResult is the comparison of promote --if-better.
type gateResult struct {
	Metric         string  `json:"metric"`
	Window         string  `json:"window"`
	Signal         string  `json:"signal"`
	Issues         int     `json:"issues"`
	Challenger     int64   `json:"challenger"`
	ChallengerErr  float64 `json:"challenger_value"`
	Champion       int64   `json:"champion"`
	ChampionErr    float64 `json:"champion_value"`
	MinImprovement float64 `json:"min_improvement"`
}

// printPromote writes res as JSON with --output json, else text.
func printPromote(w io.Writer, output string, res promoteResult, text string) error {
	if output == "json" {
		return json.NewEncoder(w).Encode(res)
	}
	_, err := fmt.Fprintln(w, text)
	return err
}

// gateFlags are the flags of promote --if-better.
type gateFlags struct {
	output                                  string
	ifBetter                                bool
	metric, challenger, store, signal, data string
	minImprovement                          float64
	leadDays                                int
}

func promoteWith(ctx context.Context, args []string, stdout, stderr io.Writer, open openStoreFunc) error {
	fs := newFlags("promote", stdout)
	uri := fs.String("registry", "", registryHelp)
	zone := fs.String("zone", "", "zone of the model (e.g. DE), or generic")
	version := fs.String("version", "", "version number to promote (with --if-better: the challenger)")
	alias := fs.String("alias", registry.ChampionAlias, "alias to point at the version")
	var g gateFlags
	fs.BoolVar(&g.ifBetter, "if-better", false, "promote only when the challenger's --metric is strictly lower than the current alias target's on the same backfill window (issue times both have forecasts for in --store); records the metrics as eval.* version tags")
	fs.StringVar(&g.metric, "metric", "mape_d1", "with --if-better: error metric to compare (mape_dN, mape_dN_median, mape_dN_p90, mae_dN, …)")
	fs.StringVar(&g.challenger, "challenger", "", "with --if-better: challenger version (default --version, else the latest version)")
	fs.StringVar(&g.store, "store", "", "with --if-better: "+storeHelp)
	fs.StringVar(&g.signal, "signal", "", "with --if-better: signal of the forecasts (default: the only one stored)")
	fs.StringVar(&g.data, "data", "", "with --if-better: observations from a data `dir` or bundled instead of the store's")
	fs.Float64Var(&g.minImprovement, "min-improvement", 0, "with --if-better: promote only when the challenger is lower by at least this fraction (0.05 = 5 %)")
	fs.IntVar(&g.leadDays, "lead-days", evaluate.DefaultLeadDays, "with --if-better: lead days scored")
	fs.StringVar(&g.output, "output", "table", "table (a line for people) or json (an object: model, alias, promoted, from, version, gate)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if g.output != "table" && g.output != "json" {
		return usagef("--output must be table or json, got %q", g.output)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if g.ifBetter {
		return promoteIfBetter(ctx, *uri, *zone, *version, *alias, g, open, stdout, stderr)
	}
	if g.challenger != "" || g.store != "" || g.data != "" || g.signal != "" || g.minImprovement != 0 {
		return usagef("--challenger, --store, --signal, --data and --min-improvement need --if-better")
	}
	if *zone == "" || *version == "" {
		return usagef("--zone and --version are required")
	}
	name := promoteModelName(*zone)
	v, err := registry.ParseVersion("version", *version)
	if err != nil {
		return usagef("--version: %s", forecast.ErrorMessage(err))
	}
	if err := registry.ValidateAlias(*alias); err != nil {
		return usagef("--alias: %s", forecast.ErrorMessage(err))
	}
	ctx, cancel := context.WithTimeout(ctx, registryTimeout)
	defer cancel()
	store, _, err := connect.Open(ctx, *uri, registry.Options{})
	if err != nil {
		return err
	}
	defer store.Close()
	prev, err := aliasTarget(ctx, store, name, *alias)
	if err != nil {
		return err
	}
	if err := store.SetAlias(ctx, name, *alias, v); err != nil {
		return err
	}
	from := "none"
	if prev != nil {
		from = strconv.FormatInt(*prev, 10)
	}
	return printPromote(stdout, g.output, promoteResult{Model: name, Alias: *alias, Promoted: true, From: prev, Version: v},
		fmt.Sprintf("%s@%s: version %s -> %d", name, *alias, from, v))
}

func promoteModelName(zone string) string {
	if zone == "generic" {
		return registry.ModelName("")
	}
	return registry.ModelName(zone)
}

// aliasTarget returns the version alias points at, or nil.
func aliasTarget(ctx context.Context, s registry.Store, name, alias string) (*int64, error) {
	old, err := s.VersionByAlias(ctx, name, alias)
	if forecast.ErrorCode(err) == forecast.ENOTFOUND {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &old.Version, nil
}

// promoteIfBetter is promote --if-better: compare the challenger with the
// alias's current version (evaluate.Compare), tag both versions with the
// scores, and move the alias only when the challenger wins. A model
// without the alias gets it without a comparison.
func promoteIfBetter(ctx context.Context, uri, zone, version, alias string, g gateFlags, open openStoreFunc, stdout, stderr io.Writer) error {
	if zone == "" || g.store == "" {
		return usagef("--if-better needs --zone and --store")
	}
	if err := evaluate.ParseMetric(g.metric, g.leadDays); err != nil || strings.HasPrefix(g.metric, evaluate.MeasureCoverage) || strings.HasPrefix(g.metric, evaluate.MeasureWidth) {
		return usagef("--metric %q: use an error metric such as mape_d1, mape_d1_p90 or mae_d2 (lead days 1 to %d)", g.metric, g.leadDays)
	}
	if !(g.minImprovement >= 0 && g.minImprovement < 1) {
		return usagef("--min-improvement %v is not a fraction in [0, 1)", g.minImprovement)
	}
	if g.challenger != "" && version != "" && g.challenger != version {
		return usagef("--challenger %s and --version %s disagree: give one", g.challenger, version)
	}
	var sig forecast.Signal
	if g.signal != "" {
		s, err := parseSignal(g.signal)
		if err != nil {
			return usagef("--signal: %v", err)
		}
		sig = s
	}
	if err := registry.ValidateAlias(alias); err != nil {
		return usagef("--alias: %s", forecast.ErrorMessage(err))
	}
	if _, _, err := storeconnect.Parse(g.store); err != nil {
		return usagef("--store: %s", forecast.ErrorMessage(err))
	}
	name := promoteModelName(zone)
	ctx, cancel := context.WithTimeout(ctx, evaluateTimeout)
	defer cancel()
	reg, _, err := connect.Open(ctx, uri, registry.Options{})
	if err != nil {
		return err
	}
	defer reg.Close()
	chall, err := challengerVersion(ctx, reg, name, cmp.Or(g.challenger, version))
	if err != nil {
		return err
	}
	champ, err := reg.VersionByAlias(ctx, name, alias)
	switch {
	case forecast.ErrorCode(err) == forecast.ENOTFOUND:
		if err := reg.SetAlias(ctx, name, alias, chall); err != nil {
			return err
		}
		return printPromote(stdout, g.output, promoteResult{Model: name, Alias: alias, Promoted: true, Version: chall},
			fmt.Sprintf("%s@%s: no version had the alias: promoted version %d without a comparison", name, alias, chall))
	case err != nil:
		return err
	case champ.Version == chall:
		return printPromote(stdout, g.output, promoteResult{Model: name, Alias: alias, From: &chall, Version: chall},
			fmt.Sprintf("%s@%s: version %d is already the target: nothing to compare", name, alias, chall))
	}
	verdict, err := compareVersions(ctx, g, sig, name, champ.Version, chall, open, stderr)
	if err != nil {
		return err
	}
	if err := tagVerdict(ctx, reg, name, champ.Version, chall, verdict); err != nil {
		return err
	}
	what := fmt.Sprintf("%s@%s: %s on %s (signal %s, %d issued forecasts per version): challenger version %d %.2f, %s version %d %.2f",
		name, alias, verdict.Metric, verdict.Window(), verdict.Signal, verdict.Issues, chall, verdict.Challenger, alias, champ.Version, verdict.Champion)
	res := promoteResult{Model: name, Alias: alias, From: &champ.Version, Version: champ.Version, Gate: &gateResult{
		Metric: verdict.Metric, Window: verdict.Window(), Signal: string(verdict.Signal), Issues: verdict.Issues,
		Challenger: chall, ChallengerErr: verdict.Challenger, Champion: champ.Version, ChampionErr: verdict.Champion, MinImprovement: g.minImprovement,
	}}
	if !verdict.Promote {
		need := "lower"
		if g.minImprovement > 0 {
			need = fmt.Sprintf("at least %.1f %% lower", 100*g.minImprovement)
		}
		if err := printPromote(stdout, g.output, res, fmt.Sprintf("%s: not %s, version %d stays", what, need, champ.Version)); err != nil {
			return err
		}
		return cli.ExitError{Code: cli.ExitDeclined, Msg: fmt.Sprintf("not promoted: challenger version %d is not %s than version %d", chall, need, champ.Version)}
	}
	if err := reg.SetAlias(ctx, name, alias, chall); err != nil {
		return err
	}
	res.Promoted, res.Version = true, chall
	return printPromote(stdout, g.output, res, fmt.Sprintf("%s: promoted, version %d -> %d", what, champ.Version, chall))
}

// challengerVersion returns the version flag's number, checking it exists,
// or the latest version of name when flag is empty.
func challengerVersion(ctx context.Context, reg registry.Store, name, flag string) (int64, error) {
	if flag != "" {
		v, err := registry.ParseVersion("challenger", flag)
		if err != nil {
			return 0, usagef("--challenger: %s", forecast.ErrorMessage(err))
		}
		if _, err := reg.GetVersion(ctx, name, v); err != nil {
			return 0, fmt.Errorf("--challenger: %w", err)
		}
		return v, nil
	}
	vs, err := reg.LatestVersions(ctx, name, nil)
	if err != nil {
		return 0, err
	}
	var latest int64
	for _, v := range vs {
		latest = max(latest, v.Version)
	}
	if latest == 0 {
		return 0, forecast.Errorf(forecast.ENOTFOUND, "model %s has no version to promote", name)
	}
	return latest, nil
}

// compareVersions runs the gate on the forecasts of --store.
func compareVersions(ctx context.Context, g gateFlags, sig forecast.Signal, name string, champ, chall int64, open openStoreFunc, stderr io.Writer) (*evaluate.Verdict, error) {
	db, err := open(ctx, g.store)
	if err != nil {
		return nil, fmt.Errorf("--store: %w", err)
	}
	defer db.Close()
	var obs evaluate.Observations = db
	if g.data != "" {
		tables, err := loadData(g.data, stderr)
		if err != nil {
			return nil, err
		}
		obs = tableObservations(tables)
	}
	v, err := evaluate.Compare(ctx, db, obs, evaluate.Gate{
		Model: name, Champion: strconv.FormatInt(champ, 10), Challenger: strconv.FormatInt(chall, 10),
		Signal: sig, Metric: g.metric, LeadDays: g.leadDays, MinImprovement: g.minImprovement,
	})
	switch forecast.ErrorField(err) {
	case "challenger":
		return nil, fmt.Errorf("--store has no common backfill window for --challenger %d and version %d: backfill both over the same issue times: %w", chall, champ, err)
	case "signal":
		return nil, usagef("--signal: %s", forecast.ErrorMessage(err))
	}
	return v, err
}

// tagVerdict records the scores as version tags: eval.<metric> on each
// version, and the window, signal and issue count on both.
func tagVerdict(ctx context.Context, reg registry.Store, name string, champ, chall int64, v *evaluate.Verdict) error {
	for _, x := range []struct {
		version int64
		value   float64
	}{{champ, v.Champion}, {chall, v.Challenger}} {
		for _, t := range []registry.Tag{
			{Key: "eval." + v.Metric, Value: strconv.FormatFloat(x.value, 'f', 2, 64)},
			{Key: "eval.window", Value: v.Window()},
			{Key: "eval.signal", Value: string(v.Signal)},
			{Key: "eval.issues", Value: strconv.Itoa(v.Issues)},
		} {
			if err := reg.SetVersionTag(ctx, name, x.version, t); err != nil {
				return err
			}
		}
	}
	return nil
}

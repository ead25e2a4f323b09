package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/carbongate/carbongate/cmd/internal/cli"
	"github.com/carbongate/carbongate/forecast"
	storeconnect "github.com/carbongate/carbongate/forecast/store/connect"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/decisions"
	"github.com/carbongate/carbongate/models/evaluate"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/connect"
)

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
	// Capture is the decision gate's outcome; nil without --min-capture
	// or --keep-capture.
	Capture *captureGateResult `json:"capture,omitempty"`
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
	capture                                 captureFlags
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
	g.capture.register(fs.FlagSet)
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
	if g.challenger != "" || g.store != "" || g.data != "" || g.signal != "" || g.minImprovement != 0 || g.capture.set() {
		return usagef("--challenger, --store, --signal, --data, --min-improvement, --min-capture, --keep-capture and --shapes need --if-better")
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
	var prev *int64
	if err := whileUnavailable(ctx, stderr, func(ctx context.Context) (err error) {
		prev, err = aliasTarget(ctx, store, name, *alias)
		return err
	}); err != nil {
		return err
	}
	// Pointing the alias again at the same version is harmless: a retry
	// after an answer lost on the way is safe.
	if err := whileUnavailable(ctx, stderr, func(ctx context.Context) error { return store.SetAlias(ctx, name, *alias, v) }); err != nil {
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
	if zone == "" {
		return models.GenericName
	}
	return models.ZoneModelName(forecast.Zone(zone))
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
	cg, err := g.capture.gate()
	if err != nil {
		return err
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
	verdict, capture, err := compareVersions(ctx, g, cg, sig, name, champ.Version, chall, open, stderr)
	if err != nil {
		return err
	}
	if err := tagVerdict(ctx, reg, name, champ.Version, chall, verdict, capture); err != nil {
		return err
	}
	what := fmt.Sprintf("%s@%s: %s on %s (signal %s, %d issued forecasts per version): challenger version %d %.2f, %s version %d %.2f",
		name, alias, verdict.Metric, verdict.Window(), verdict.Signal, verdict.Issues, chall, verdict.Challenger, alias, champ.Version, verdict.Champion)
	res := promoteResult{Model: name, Alias: alias, From: &champ.Version, Version: champ.Version, Gate: &gateResult{
		Metric: verdict.Metric, Window: verdict.Window(), Signal: string(verdict.Signal), Issues: verdict.Issues,
		Challenger: chall, ChallengerErr: verdict.Challenger, Champion: champ.Version, ChampionErr: verdict.Champion, MinImprovement: g.minImprovement,
		Capture: captureResult(cg, capture),
	}}
	if capture != nil {
		what += fmt.Sprintf("; capture %.3f against %.3f", capture.Challenger, capture.Champion)
	}
	if !verdict.Promote || (capture != nil && !capture.Pass) {
		need := "lower"
		if g.minImprovement > 0 {
			need = fmt.Sprintf("at least %.1f %% lower", 100*g.minImprovement)
		}
		why := fmt.Sprintf("is not %s than version %d", need, champ.Version)
		if verdict.Promote {
			need = captureNeed(cg)
			why = "is not " + need
		}
		if err := printPromote(stdout, g.output, res, fmt.Sprintf("%s: not %s, version %d stays", what, need, champ.Version)); err != nil {
			return err
		}
		return cli.ExitError{Code: cli.ExitDeclined, Msg: fmt.Sprintf("not promoted: challenger version %d %s", chall, why)}
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

// compareVersions runs the gate on the forecasts of --store, and the
// capture gate when cg is set (nil verdict otherwise).
func compareVersions(ctx context.Context, g gateFlags, cg *decisions.CaptureGate, sig forecast.Signal, name string, champ, chall int64, open openStoreFunc, stderr io.Writer) (*evaluate.Verdict, *decisions.CaptureVerdict, error) {
	db, err := open(ctx, g.store)
	if err != nil {
		return nil, nil, fmt.Errorf("--store: %w", err)
	}
	defer db.Close()
	var obs evaluate.Observations = db
	if g.data != "" {
		tables, err := loadData(g.data, stderr)
		if err != nil {
			return nil, nil, err
		}
		obs = tableObservations(tables)
	}
	gate := evaluate.Gate{
		Model: name, Champion: strconv.FormatInt(champ, 10), Challenger: strconv.FormatInt(chall, 10),
		Signal: sig, Metric: g.metric, LeadDays: g.leadDays, MinImprovement: g.minImprovement,
	}
	v, err := evaluate.Compare(ctx, db, obs, gate)
	if err == nil && cg != nil {
		if gate.Signal == "" {
			gate.Signal = v.Signal
		}
		var cv *decisions.CaptureVerdict
		cv, err = decisions.CompareCapture(ctx, db, obs, gate, *cg)
		if err == nil {
			return v, cv, nil
		}
	}
	switch forecast.ErrorField(err) {
	case "challenger":
		return nil, nil, fmt.Errorf("--store has no common backfill window for --challenger %d and version %d: backfill both over the same issue times: %w", chall, champ, err)
	case "signal":
		return nil, nil, usagef("--signal: %s", forecast.ErrorMessage(err))
	}
	return v, nil, err
}

// tagVerdict records the scores as version tags: eval.<metric> on each
// version, and the window, signal and issue count on both; with a capture
// verdict also eval.capture.
func tagVerdict(ctx context.Context, reg registry.Store, name string, champ, chall int64, v *evaluate.Verdict, cv *decisions.CaptureVerdict) error {
	for _, x := range []struct {
		version int64
		value   float64
		capture func(*decisions.CaptureVerdict) float64
	}{{champ, v.Champion, func(c *decisions.CaptureVerdict) float64 { return c.Champion }}, {chall, v.Challenger, func(c *decisions.CaptureVerdict) float64 { return c.Challenger }}} {
		tags := []registry.Tag{
			{Key: "eval." + v.Metric, Value: strconv.FormatFloat(x.value, 'f', 2, 64)},
			{Key: "eval.window", Value: v.Window()},
			{Key: "eval.signal", Value: string(v.Signal)},
			{Key: "eval.issues", Value: strconv.Itoa(v.Issues)},
		}
		if cv != nil {
			tags = append(tags, registry.Tag{Key: "eval.capture", Value: strconv.FormatFloat(x.capture(cv), 'f', 3, 64)})
		}
		for _, t := range tags {
			if err := reg.SetVersionTag(ctx, name, x.version, t); err != nil {
				return err
			}
		}
	}
	return nil
}

// captureFlags are the decision gate's flags of promote --if-better.
type captureFlags struct {
	min    float64
	keep   bool
	shapes string
}

func (c *captureFlags) register(fs *flag.FlagSet) {
	fs.Float64Var(&c.min, "min-capture", 0, "with --if-better: also require the challenger's decisions to capture at least this share of the oracle's saving (mean over --shapes, replayed on the common backfill window as evaluate --decisions does)")
	fs.BoolVar(&c.keep, "keep-capture", false, "with --if-better: also require the challenger's decisions to capture no less than the champion's")
	fs.StringVar(&c.shapes, "shapes", decisions.DefaultShapeList, "with --min-capture or --keep-capture: job shapes DURATION/SLACK[@ZONE+ZONE…] replayed")
}

// set reports whether a capture flag was given.
func (c captureFlags) set() bool {
	return c.min != 0 || c.keep || c.shapes != decisions.DefaultShapeList
}

// gate returns the capture gate the flags ask for, nil for none.
func (c captureFlags) gate() (*decisions.CaptureGate, error) {
	if !(c.min >= 0 && c.min <= 1) {
		return nil, usagef("--min-capture %v is not a share in [0, 1]", c.min)
	}
	if c.min == 0 && !c.keep {
		if c.shapes != decisions.DefaultShapeList {
			return nil, usagef("--shapes needs --min-capture or --keep-capture")
		}
		return nil, nil
	}
	shapes, err := decisions.ParseShapes(c.shapes)
	if err != nil {
		return nil, usagef("--shapes: %s", forecast.ErrorMessage(err))
	}
	return &decisions.CaptureGate{Shapes: shapes, Min: c.min, Keep: c.keep}, nil
}

// captureGateResult is the decision gate in promote's JSON.
type captureGateResult struct {
	Shapes     string  `json:"shapes"`
	Issues     int     `json:"issues"`
	Challenger float64 `json:"challenger"`
	Champion   float64 `json:"champion"`
	Min        float64 `json:"min_capture"`
	Keep       bool    `json:"keep_capture"`
	Pass       bool    `json:"pass"`
}

func captureResult(cg *decisions.CaptureGate, v *decisions.CaptureVerdict) *captureGateResult {
	if cg == nil || v == nil {
		return nil
	}
	names := make([]string, len(cg.Shapes))
	for i, s := range cg.Shapes {
		names[i] = s.String()
	}
	return &captureGateResult{Shapes: strings.Join(names, ","), Issues: v.Issues, Challenger: v.Challenger, Champion: v.Champion,
		Min: cg.Min, Keep: cg.Keep, Pass: v.Pass}
}

// captureNeed says what the capture gate required, for the decline message.
func captureNeed(cg *decisions.CaptureGate) string {
	var parts []string
	if cg.Min > 0 {
		parts = append(parts, fmt.Sprintf("capturing at least %.2f", cg.Min))
	}
	if cg.Keep {
		parts = append(parts, "capturing no less than the champion")
	}
	return strings.Join(parts, " and ")
}

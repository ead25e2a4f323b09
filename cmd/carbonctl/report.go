package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store/connect"
	"github.com/carbongate/carbongate/gateway/clock"
	"github.com/carbongate/carbongate/models/ledger"
)

// reportTimeout bounds one report command.
const reportTimeout = 5 * time.Minute

// reportFlags are the flags of carbonctl report.
type reportFlags struct {
	kubeconfig, namespace, zone, from, to string
	store, data, signal, baseline, output string
	replayStart, replayAnchor             string
	replaySpeed                           float64
}

// reportEnv is what report reaches: a Kubernetes client, a dynamic one
// for Karmada's ResourceBindings (nil: none read), and a store.
type reportEnv struct {
	kube    func(kubeconfig string) (kubernetes.Interface, error)
	dynamic func(kubeconfig string) (dynamic.Interface, error)
	open    openStoreFunc
}

func kubeConfig(kubeconfig string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	cfg.Timeout = 30 * time.Second
	return cfg, nil
}

func kubeClient(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := kubeConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

func dynamicClient(kubeconfig string) (dynamic.Interface, error) {
	cfg, err := kubeConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return dynamic.NewForConfig(cfg)
}

// runReport is carbonctl report: the ledger of held workloads.
func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return reportWith(ctx, args, stdout, stderr, reportEnv{kube: kubeClient, dynamic: dynamicClient, open: openForecastStore})
}

func reportWith(ctx context.Context, args []string, stdout, stderr io.Writer, env reportEnv) error {
	fs := newFlags("report", stdout)
	var f reportFlags
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig `file` of the cluster whose held Jobs and Pods are accounted, or of Karmada's API server for its held ResourceBindings of Jobs (required)")
	fs.StringVar(&f.namespace, "namespace", "", "only this namespace (default: every namespace)")
	fs.StringVar(&f.zone, "zone", "", "only workloads placed in this zone")
	fs.StringVar(&f.from, "from", "", "only workloads admitted at or after this time (YYYY-MM-DD or RFC 3339)")
	fs.StringVar(&f.to, "to", "", "only workloads admitted before this time (YYYY-MM-DD or RFC 3339)")
	fs.StringVar(&f.store, "store", "", storeHelp+": the observed intensity")
	fs.StringVar(&f.data, "data", "", "data `dir`, or bundled for the embedded data: the observed intensity instead of a store (replay)")
	fs.StringVar(&f.signal, "signal", "lifecycle", "signal the workloads were decided on: lifecycle, direct or marginal")
	fs.StringVar(&f.baseline, "baseline-zone", "", "zone running at admission would have run in, for every workload; default: the zone each decision's promise ran against (carbongate.io/baseline-zone), else its zone")
	fs.StringVar(&f.output, "output", "csv", "output format: csv or json")
	fs.StringVar(&f.replayStart, "replay-start", "", "with --data, the workloads were decided by a carbongate under a replay clock: its --replay-start (RFC 3339), to read the API's wall times in the replay's time")
	fs.StringVar(&f.replayAnchor, "replay-anchor", "", "with --replay-start, that carbongate's --replay-anchor (RFC 3339): the wall instant its replay read --replay-start")
	fs.Float64Var(&f.replaySpeed, "replay-speed", 1, "with --replay-start, that carbongate's --replay-speed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	q, err := f.query()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, reportTimeout)
	defer cancel()
	obs, closeObs, err := f.observations(ctx, env.open, stderr)
	if err != nil {
		return err
	}
	defer closeObs()
	ws, skipped, err := env.workloads(ctx, f.kubeconfig, f.namespace, q.signal, q.at)
	if err != nil {
		return err
	}
	for _, s := range skipped {
		fmt.Fprintf(stderr, "report: skipped %s\n", s)
	}
	var es []ledger.Entry
	for _, w := range ws {
		if !q.keep(w) {
			continue
		}
		if q.baseline != "" {
			w.BaselineZone = q.baseline
		}
		e, err := ledger.Account(ctx, obs, w)
		if err != nil {
			return err
		}
		es = append(es, e)
	}
	if f.output == "json" {
		return writeReportJSON(stdout, es)
	}
	return writeReportCSV(stdout, es)
}

// workloads lists what carbongate held or decided in shadow in namespace
// ("" for all) of the API server of kubeconfig, as ledger workloads of
// sig, their times read by at: Jobs and Pods, and ResourceBindings of Jobs
// on Karmada's; skipped says which could not be read and why.
func (env reportEnv) workloads(ctx context.Context, kubeconfig, namespace string, sig forecast.Signal, at func(time.Time) time.Time) ([]ledger.Workload, []string, error) {
	cs, err := env.kube(kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	ws, skipped, err := heldWorkloads(ctx, cs, namespace, sig, at)
	if err != nil || env.dynamic == nil {
		return ws, skipped, err
	}
	dyn, err := env.dynamic(kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	bs, skippedBindings, err := heldBindings(ctx, dyn, namespace, sig, at)
	return append(ws, bs...), append(skipped, skippedBindings...), err
}

// reportQuery is the parsed selection of report.
type reportQuery struct {
	zone, baseline forecast.Zone
	from, to       time.Time
	signal         forecast.Signal
	at             func(time.Time) time.Time // the API's wall times in the decisions' clock
}

func (q reportQuery) keep(w ledger.Workload) bool {
	return (q.zone == "" || w.Zone == q.zone) &&
		(q.from.IsZero() || !w.AdmittedAt.Before(q.from)) &&
		(q.to.IsZero() || w.AdmittedAt.Before(q.to))
}

func (f reportFlags) query() (reportQuery, error) {
	var q reportQuery
	var err error
	if f.kubeconfig == "" {
		return q, usagef("--kubeconfig is required")
	}
	if (f.store == "") == (f.data == "") {
		return q, usagef("give one of --store and --data: the observed intensity")
	}
	if f.output != "csv" && f.output != "json" {
		return q, usagef("--output %q is not one of csv, json", f.output)
	}
	if q.signal, err = forecast.ParseAnySignal(f.signal); err != nil {
		return q, usagef("--signal: %s", forecast.ErrorMessage(err))
	}
	for _, z := range []struct {
		flag, v string
		to      *forecast.Zone
	}{{"zone", f.zone, &q.zone}, {"baseline-zone", f.baseline, &q.baseline}} {
		if z.v == "" {
			continue
		}
		if *z.to, err = forecast.ParseZone(z.v); err != nil {
			return q, usagef("--%s: %s", z.flag, forecast.ErrorMessage(err))
		}
	}
	for _, t := range []struct {
		flag, v string
		to      *time.Time
	}{{"from", f.from, &q.from}, {"to", f.to, &q.to}} {
		if t.v == "" {
			continue
		}
		if *t.to, err = parseTime(t.v); err != nil {
			return q, usagef("--%s: %v", t.flag, err)
		}
	}
	if !q.from.IsZero() && !q.to.IsZero() && !q.to.After(q.from) {
		return q, usagef("--to %s is not after --from %s", f.to, f.from)
	}
	if f.store != "" {
		if _, _, err := connect.Parse(f.store); err != nil {
			return q, usagef("--store: %s", forecast.ErrorMessage(err))
		}
	}
	q.at, err = f.replayAt()
	return q, err
}

// replayAt reads the API's wall times in the time of the replay the
// workloads were decided under (--replay-start, --replay-anchor and
// --replay-speed: that carbongate's own), as its controller does; the
// identity without a replay.
func (f reportFlags) replayAt() (func(time.Time) time.Time, error) {
	if f.replayStart == "" {
		if f.replayAnchor != "" || f.replaySpeed != 1 {
			return nil, usagef("--replay-anchor and --replay-speed need --replay-start")
		}
		return func(t time.Time) time.Time { return t }, nil
	}
	if f.data == "" || f.replayAnchor == "" {
		return nil, usagef("--replay-start needs --data (a replay's observations) and --replay-anchor (the wall instant that carbongate's replay read it)")
	}
	start, err := time.Parse(time.RFC3339, f.replayStart)
	if err != nil {
		return nil, usagef("--replay-start: %v", err)
	}
	anchor, err := time.Parse(time.RFC3339Nano, f.replayAnchor)
	if err != nil {
		return nil, usagef("--replay-anchor: %v", err)
	}
	r, err := clock.NewReplayAnchored(start, anchor, f.replaySpeed, nil)
	if err != nil {
		return nil, usagef("--replay-speed: %s", forecast.ErrorMessage(err))
	}
	return func(t time.Time) time.Time { return clock.At(r, t) }, nil
}

// observations opens --store or loads --data.
func (f reportFlags) observations(ctx context.Context, open openStoreFunc, stderr io.Writer) (ledger.Observations, func(), error) {
	if f.data != "" {
		tables, err := loadData(f.data, stderr)
		if err != nil {
			return nil, nil, err
		}
		return tableObservations(tables), func() {}, nil
	}
	db, err := open(ctx, f.store)
	if err != nil {
		return nil, nil, fmt.Errorf("--store: %w", err)
	}
	return db, db.Close, nil
}

// reportJSON is report's JSON document.
type reportJSON struct {
	Workloads []entryJSON    `json:"workloads"`
	Totals    []ledger.Total `json:"totals"`
}

type entryJSON struct {
	Kind          string    `json:"kind"`
	Namespace     string    `json:"namespace"`
	Name          string    `json:"name"`
	Zone          string    `json:"zone"`
	BaselineZone  string    `json:"baseline_zone"`
	Signal        string    `json:"signal"`
	Accounting    string    `json:"accounting"`
	Mode          string    `json:"mode"`
	Status        string    `json:"status"`
	Reason        string    `json:"reason,omitempty"`
	Coverage      float64   `json:"coverage"`
	PowerWatts    float64   `json:"power_watts"`
	PowerSource   string    `json:"power_source,omitempty"` // declared, or estimated from its requests
	AdmittedAt    time.Time `json:"admitted_at"`
	Started       string    `json:"started,omitempty"`
	Ended         string    `json:"ended,omitempty"`
	EnergyKWh     float64   `json:"energy_kwh"`
	PromisedGrams *float64  `json:"promised_avoided_g"`
	RealizedGrams *float64  `json:"realized_g"`
	BaselineGrams *float64  `json:"run_at_admission_g"`
	AvoidedGrams  *float64  `json:"realized_avoided_g"`
}

func toJSON(e ledger.Entry) entryJSON {
	j := entryJSON{Kind: e.Kind, Namespace: e.Namespace, Name: e.Name, Zone: string(e.Zone), BaselineZone: string(e.BaselineZone),
		Signal: string(e.Signal), Accounting: e.Accounting, Mode: e.Mode, Status: string(e.Status), Reason: e.Reason, Coverage: e.Coverage,
		PowerWatts: e.PowerWatts, AdmittedAt: e.AdmittedAt, Started: stampOf(e.Started), Ended: stampOf(e.Ended), EnergyKWh: e.EnergyKWh,
		RealizedGrams: e.RealizedGrams, BaselineGrams: e.BaselineGrams, AvoidedGrams: e.AvoidedGrams}
	if j.BaselineZone == "" {
		j.BaselineZone = j.Zone
	}
	switch {
	case e.PowerEstimated:
		j.PowerSource = "estimated"
	case e.PowerWatts > 0:
		j.PowerSource = "declared"
	}
	if e.HasPromise {
		j.PromisedGrams = &e.PromisedGrams
	}
	return j
}

func stampOf(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func writeReportJSON(w io.Writer, es []ledger.Entry) error {
	doc := reportJSON{Workloads: []entryJSON{}, Totals: ledger.Totals(es)}
	for _, e := range es {
		doc.Workloads = append(doc.Workloads, toJSON(e))
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// writeReportCSV writes one row per workload, a blank line, then one row
// per namespace and zone.
func writeReportCSV(w io.Writer, es []ledger.Entry) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"kind", "namespace", "name", "zone", "baseline_zone", "signal", "accounting", "mode", "status", "reason", "coverage",
		"power_watts", "power_source", "admitted_at", "started", "ended", "energy_kwh", "promised_avoided_g", "realized_g", "run_at_admission_g", "realized_avoided_g"})
	for _, e := range es {
		j := toJSON(e)
		_ = cw.Write([]string{j.Kind, j.Namespace, j.Name, j.Zone, j.BaselineZone, j.Signal, j.Accounting, j.Mode, j.Status, j.Reason, num(&j.Coverage),
			num(&j.PowerWatts), j.PowerSource, stampOf(j.AdmittedAt), j.Started, j.Ended, num(&j.EnergyKWh), num(j.PromisedGrams), num(j.RealizedGrams), num(j.BaselineGrams), num(j.AvoidedGrams)})
	}
	cw.Flush()
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	_ = cw.Write([]string{"namespace", "zone", "accounting", "mode", "workloads", "realized", "partial", "pending", "deleted", "no_power",
		"promised_avoided_g", "promised_avoided_g_of_realized", "realized_g", "run_at_admission_g", "realized_avoided_g"})
	for _, t := range ledger.Totals(es) {
		_ = cw.Write([]string{t.Namespace, string(t.Zone), t.Accounting, t.Mode, strconv.Itoa(t.Workloads), strconv.Itoa(t.Realized), strconv.Itoa(t.Partial),
			strconv.Itoa(t.Pending), strconv.Itoa(t.Deleted), strconv.Itoa(t.NoPower), num(&t.PromisedGrams), num(&t.PromisedRealized),
			num(&t.RealizedGrams), num(&t.BaselineGrams), num(&t.AvoidedGrams)})
	}
	cw.Flush()
	return cw.Error()
}

// num formats a figure, "" for none.
func num(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}

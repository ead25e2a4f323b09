package main

// The client commands: schedule and forecast ask a running carbongate.

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/carbongate/carbongate/cmd/internal/cli"
	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway"
	"github.com/carbongate/carbongate/gateway/api"
)

// DefaultURL is the carbongate the client commands ask unless told
// otherwise ($CARBONGATE_URL or --url): the one make run starts.
const DefaultURL = "http://localhost:8080"

// exitDefer is the exit code of schedule --run-now-below when the job
// should not run now: waiting or moving it saves at least that much.
const exitDefer = cli.ExitDeclined

// clientFlags are the flags every client command shares.
type clientFlags struct {
	url     string
	output  string
	timeout time.Duration
}

// parseClient adds the shared flags to fs, whose own flags are defined,
// parses args and checks them; positional arguments are a usage error.
func parseClient(fs *cli.FlagSet, args []string) (*clientFlags, error) {
	c := &clientFlags{}
	c.add(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected arguments %q", fs.Args())
	}
	return c, nil
}

func (c *clientFlags) add(fs *cli.FlagSet) {
	fs.StringVar(&c.url, "url", DefaultURL, "carbongate's base URL")
	fs.StringVar(&c.output, "output", "table", "table (for people) or json (carbongate's answer as it came)")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Second, "bound of the request")
}

func (c *clientFlags) check() error {
	if c.output != "table" && c.output != "json" {
		return usagef("--output must be table or json, got %q", c.output)
	}
	u, err := url.Parse(c.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usagef("--url %q is not an http(s)://host[:port] URL", c.url)
	}
	if c.timeout <= 0 {
		return usagef("--timeout must be positive, got %v", c.timeout)
	}
	return nil
}

// client is the API client the flags describe.
func (c *clientFlags) client() *api.Client {
	return &api.Client{BaseURL: c.url, Timeout: c.timeout}
}

// answerError makes an error answer printable: carbongate's message may
// hold anything a request sent.
func answerError(err error) error {
	var e *api.Error
	if errors.As(err, &e) {
		field := ""
		if e.Field != "" {
			field = " for " + e.Field
		}
		return fmt.Errorf("carbongate answered %d%s: %s", e.Status, safe(field), safe(e.Message))
	}
	return err
}

// given is s, or nil (absent) when empty.
func given(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// number is v, or nil (absent) when NaN: the flag was not given.
func number(v float64) *float64 {
	if math.IsNaN(v) {
		return nil
	}
	return &v
}

// list splits a comma-separated flag value, dropping empty items.
func list(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// runSchedule asks carbongate's POST /v1/schedule where and when to run a
// job. With --run-now-below PCT the exit code gates a CI job: 0 when the
// best window saves less than PCT % over running now (run now), 3 when it
// saves at least that much (defer: run at the decision instead).
func runSchedule(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("schedule", stdout)
	zones := fs.String("zones", "", "candidate zones, comma-separated (DE,SE,PL)")
	locations := fs.String("locations", "", "candidate cloud regions, comma-separated provider:region (aws:eu-west-1,azure:westeurope)")
	duration := fs.String("duration", "", "the job's duration: 3h, 90m or PT3H (required)")
	deadline := fs.String("deadline", "", "the job must finish by it (RFC 3339); default: the forecast horizon")
	earliest := fs.String("earliest-start", "", "not before (RFC 3339); default: now")
	signal := fs.String("signal", "", "lifecycle (default), direct, or marginal where the gateway has WattTime's forecast")
	origin := fs.String("origin", "", "zone of the run-now baseline; default: the first candidate")
	step := fs.String("step", "", "spacing of candidate starts (e.g. 15m); default: carbongate's")
	runNowBelow := fs.Float64("run-now-below", math.NaN(), "exit 0 when the saving over running now is below this percentage, 3 when it is at least this (a CI gate)")
	// The job's power, for grams of CO2e (docs/sizing.md): one of
	// --power-watts, --instance-type, or --vcpus with --memory-gib.
	powerWatts := fs.Float64("power-watts", math.NaN(), "the job's average power in watts, PUE included: answers in grams of CO2e")
	instanceType := fs.String("instance-type", "", "or its instance type (m5.large, E2as v4), estimated by the Cloud Carbon Footprint method")
	provider := fs.String("provider", "", "with --instance-type or --vcpus: aws or azure")
	vcpus := fs.Float64("vcpus", math.NaN(), "or its vCPUs, with --memory-gib, on the provider's average coefficients")
	memoryGiB := fs.Float64("memory-gib", math.NaN(), "its memory in GiB, with --vcpus")
	utilization := fs.Float64("utilization", math.NaN(), "CPU utilisation 0..1 with --instance-type or --vcpus (default 0.5)")
	embodied := fs.Bool("embodied", false, "with --instance-type: also the type's embodied emissions")
	c, err := parseClient(fs, args)
	if err != nil {
		return err
	}
	if *duration == "" {
		return usagef("--duration is required")
	}
	if err := checkSchedule(fs, *duration); err != nil {
		return err
	}
	if *zones == "" && *locations == "" {
		return usagef("give --zones, --locations or both")
	}
	req := api.ScheduleRequest{Zones: list(*zones), Duration: duration}
	for _, l := range list(*locations) {
		p, r, ok := strings.Cut(l, ":")
		if !ok {
			p, r, ok = strings.Cut(l, "/")
		}
		if !ok || p == "" || r == "" {
			return usagef("--locations: %q is not provider:region", l)
		}
		req.Locations = append(req.Locations, api.Location{Provider: p, Region: r})
	}
	req.Deadline, req.EarliestStart, req.Signal, req.Origin, req.Step = given(*deadline), given(*earliest), given(*signal), given(*origin), given(*step)
	req.InstanceType, req.Provider = given(*instanceType), given(*provider)
	req.PowerWatts, req.VCPUs, req.MemoryGiB, req.Utilization = number(*powerWatts), number(*vcpus), number(*memoryGiB), number(*utilization)
	if *embodied {
		req.IncludeEmbodied = embodied
	}
	ans, b, err := c.client().Schedule(ctx, req)
	if err != nil {
		return answerError(err)
	}
	d := *ans
	safeStrings(&d)
	if c.output == "json" {
		if _, err := stdout.Write(append(bytes.TrimSpace(b), '\n')); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		grams := d.Decision.EmissionsG != nil // the request gave the job's power
		gramsHead := ""
		if grams {
			gramsHead = "\tCO2e g"
		}
		fmt.Fprintf(tw, "\tWHERE\tSTART\tEND\tMEAN %s%s\tSOURCE\n", d.Unit, gramsHead)
		row := func(label string, p api.Placement) {
			g := ""
			if grams && p.EmissionsG != nil {
				g = fmt.Sprintf("\t%.1f", *p.EmissionsG)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.1f%s\t%s\n", label, p.Where(), p.Start.Format(time.RFC3339), p.End.Format(time.RFC3339), p.MeanIntensity, g, d.Provenance[p.Zone].Source)
		}
		row("decision", d.Decision)
		if d.Baseline != nil {
			row("run now", *d.Baseline)
		}
		for _, a := range d.Alternatives {
			if a.Zone != d.Decision.Zone {
				row("alternative", a)
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if d.SavingsPct != nil {
			saved := ""
			if d.SavingsG != nil {
				saved = fmt.Sprintf(", %.1f g CO2e", *d.SavingsG)
			}
			fmt.Fprintf(stdout, "saving over running now: %.1f%%%s (%s signal)\n", *d.SavingsPct, saved, d.Signal)
		}
		if p := d.Power; p != nil {
			from := p.Source
			if p.InstanceType != "" {
				from = p.Provider + " " + p.InstanceType
			} else if p.Provider != "" {
				from += " on " + p.Provider
			}
			if p.Utilization != nil {
				from += fmt.Sprintf(" at %.0f%% CPU", *p.Utilization*100)
			}
			fmt.Fprintf(stdout, "job power: %.4g W (%s)\n", p.Watts, from)
		}
		if d.EmbodiedG != nil {
			fmt.Fprintf(stdout, "embodied emissions: %.1f g CO2e, wherever and whenever it runs (not in the grams above)\n", *d.EmbodiedG)
		}
	}
	if math.IsNaN(*runNowBelow) {
		return nil
	}
	if d.SavingsPct == nil {
		return fmt.Errorf("--run-now-below: carbongate gave no run-now baseline to compare with")
	}
	if *d.SavingsPct >= *runNowBelow {
		return cli.ExitError{Code: exitDefer, Msg: fmt.Sprintf("defer: waiting or moving saves %.1f%%, at least %g%%; run at %s in %s", *d.SavingsPct, *runNowBelow, d.Decision.Start.Format(time.RFC3339), d.Decision.Where())}
	}
	return nil
}

// checkSchedule applies, before anything is sent, the gateway's own rules
// to the flags of schedule it can check alone; a bad value is a usage
// error (exit 2) naming the flag. A flag's value NaN, which cannot be told
// from absent by its value, is refused when the flag is given.
func checkSchedule(fs *cli.FlagSet, duration string) error {
	if d, err := gateway.ParseDuration(duration); err != nil || d <= 0 {
		msg := "must be positive"
		if err != nil {
			msg = forecast.ErrorMessage(err)
		}
		return usagef("--duration %q: %s", duration, msg)
	}
	var err error
	fs.Visit(func(f *flag.Flag) {
		g, ok := f.Value.(flag.Getter)
		v, isFloat := g.Get().(float64)
		if !ok || !isFloat || err != nil {
			return
		}
		var e error
		switch f.Name {
		case "power-watts":
			e = gateway.CheckPowerWatts(v, "--power-watts")
		case "vcpus":
			e = gateway.CheckVCPUs(v, "--vcpus")
		case "utilization":
			e = gateway.CheckUtilization(v, "--utilization")
		case "memory-gib":
			if !(v >= 0 && v <= gateway.MaxMemoryGiB) {
				e = forecast.Errorf(forecast.EINVALID, "--memory-gib must be within 0..%d, got %g", gateway.MaxMemoryGiB, v)
			}
		case "run-now-below":
			if !(v >= 0 && v <= 100) {
				e = forecast.Errorf(forecast.EINVALID, "--run-now-below is a percentage within 0..100, got %g", v)
			}
		}
		if e != nil {
			err = usagef("%s", forecast.ErrorMessage(e))
		}
	})
	return err
}

// runForecast prints carbongate's GET /v1/forecast of a zone.
func runForecast(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("forecast", stdout)
	zone := fs.String("zone", "", "the zone (required), e.g. DE")
	signal := fs.String("signal", "", "lifecycle (default), direct, or marginal where the gateway has WattTime's forecast")
	c, err := parseClient(fs, args)
	if err != nil {
		return err
	}
	if *zone == "" {
		return usagef("--zone is required")
	}
	fc, b, err := c.client().Forecast(ctx, *zone, *signal)
	if err != nil {
		return answerError(err)
	}
	f := *fc
	if len(f.Values) == 0 {
		return fmt.Errorf("carbongate's forecast of %s has no values", *zone)
	}
	if c.output == "json" {
		_, err := stdout.Write(append(bytes.TrimSpace(b), '\n'))
		return err
	}
	safeStrings(&f)
	p := f.Provenance
	fmt.Fprintf(stdout, "%s %s forecast, first hour %s, source %s (model %s)\n", f.Zone, f.Signal, f.Start.Format(time.RFC3339), p.Source, strings.TrimSpace(p.Model+" "+p.Version))
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	interval := len(f.Lower) == len(f.Values) && len(f.Upper) == len(f.Values) && len(f.Values) > 0
	if interval {
		fmt.Fprintf(tw, "HOUR\t%s\tLOWER\tUPPER\n", f.Unit)
	} else {
		fmt.Fprintf(tw, "HOUR\t%s\n", f.Unit)
	}
	for i, v := range f.Values {
		h := f.Start.Add(time.Duration(i) * time.Hour).Format(time.RFC3339)
		if interval {
			fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\n", h, v, f.Lower[i], f.Upper[i])
		} else {
			fmt.Fprintf(tw, "%s\t%.1f\n", h, v)
		}
	}
	return tw.Flush()
}

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing/fstest"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/dataset"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/forecast/store/connect"
)

const ingestUsage = `usage: carbonctl ingest [--out DIR] [--store URL [--migrate]] [--zone Z] [--max-gap H] [--check] FILE...

Reads carbon-intensity CSV files (carbongate's layout or the Electricity Maps
hourly export, plain or gzip) and prints every issue as file:line. With --out
it writes each file normalised to DIR/<ZONE>/<name>.csv in carbongate's layout,
so that DIR can be read with --data by train and evaluate. Files in one zone
folder are consecutive periods read in name order. With --store it upserts the
hourly observations of each zone's direct and lifecycle signals into the
observed-signals store (postgres://…, postgresql://… or crate://…), in batches;
re-running it stores the same rows again and adds none. Nothing is written
when any file, or the resulting zone folder, has an error.
`

// ingestBatch is the most observations sent to the store in one call.
const ingestBatch = 5000

// ingested is one input file that passed the checks.
type ingested struct {
	src      string
	table    *dataset.Table
	warnings int
	rel      string // output path relative to --out, slash-separated
	data     []byte // the normalised CSV
}

// runIngest implements carbonctl ingest. Reading and validation live in
// package dataset; this only names the outputs and writes them atomically.
func runIngest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl := newFlags("ingest", stdout)
	out := fl.String("out", "", "data directory to write into (created if missing)")
	storeURI := fl.String("store", "", "observed-signals store to upsert into: postgres://…, postgresql://… or crate://…")
	migrate := fl.Bool("migrate", false, "with --store: create the store's tables when absent")
	zoneFlag := fl.String("zone", "", "zone of the files (needed for carbongate-layout files not named <zone>.csv; must match an Electricity Maps file's Zone id)")
	maxGap := fl.Int("max-gap", dataset.DefaultMaxGap, "longest gap in hours filled by linear interpolation (0 fills none)")
	check := fl.Bool("check", false, "check only; write nothing")
	fl.Intro = ingestUsage
	files, err := parseInterleaved(fl, args)
	if err != nil {
		return err
	}
	if *out == "" && *storeURI == "" {
		return usagef("--out or --store is required")
	}
	if *storeURI != "" {
		if _, _, err := connect.Parse(*storeURI); err != nil {
			return usagef("--store: %s", forecast.ErrorMessage(err))
		}
	} else if *migrate {
		return usagef("--migrate needs --store")
	}
	if len(files) == 0 {
		return usagef("no input files")
	}
	if *maxGap < 0 {
		return usagef("--max-gap must be ≥ 0")
	}
	loader := dataset.Loader{MaxGap: *maxGap}
	if *maxGap == 0 {
		loader.MaxGap = -1 // dataset: negative fills none
	}
	if *zoneFlag != "" {
		z, err := forecast.ParseZone(*zoneFlag)
		if err != nil {
			return usagef("--zone: %s", forecast.ErrorMessage(err))
		}
		loader.Zone = z
	}

	// Read and check every file before writing anything.
	var done []*ingested
	failed := 0
	targets := map[string]string{} // output path -> source
	for _, src := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		t, issues, err := loader.LoadFile(src)
		warnings := 0
		for _, is := range issues {
			fmt.Fprintln(stderr, is)
			if is.Severity == dataset.SeverityWarning {
				warnings++
			}
		}
		if err != nil {
			failed++
			if len(issues) == 0 { // not a data error: say what it was
				fmt.Fprintf(stderr, "%s: error: %v\n", src, err)
			}
			fmt.Fprintf(stdout, "%s: rejected (%d errors, %d warnings)\n", src, len(issues)-warnings, warnings)
			continue
		}
		rel := path.Join(string(t.Zone), outputName(src))
		if prev, dup := targets[rel]; dup {
			return usagef("%s and %s would both be written to %s", prev, src, rel)
		}
		targets[rel] = src
		var buf bytes.Buffer
		if err := t.WriteCSV(&buf); err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
		done = append(done, &ingested{src: src, table: t, warnings: warnings, rel: rel, data: buf.Bytes()})
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d file(s) have errors (listed above); nothing written", failed, len(files))
	}

	// Check that each zone folder still loads with the new periods in it.
	if *out != "" {
		if err := checkZones(*out, done, loader.MaxGap, stderr); err != nil {
			return err
		}
	}

	for _, in := range done {
		last := in.table.End().Add(-time.Hour)
		dest := "store"
		if *out != "" {
			dest = filepath.Join(*out, filepath.FromSlash(in.rel))
		}
		fmt.Fprintf(stdout, "%s: zone %s, %d hours, %s..%s, %d warnings -> %s\n",
			in.src, in.table.Zone, in.table.Len(), in.table.Start.Format(time.RFC3339), last.Format(time.RFC3339),
			in.warnings, dest)
	}
	if *check {
		fmt.Fprintln(stdout, "check only: nothing written")
		return nil
	}
	if *out != "" {
		if err := writeAll(*out, done); err != nil {
			return err
		}
	}
	if *storeURI == "" {
		return nil
	}
	return upsertAll(ctx, *storeURI, *migrate, done, stdout)
}

// upsertAll opens the store, creates its tables when migrate, and upserts
// the direct and lifecycle observations of every table in batches of
// ingestBatch, then reports the rows of each zone. A store URL the driver
// cannot parse is a usage error naming --store.
func upsertAll(ctx context.Context, uri string, migrate bool, done []*ingested, stdout io.Writer) error {
	db, err := connect.Open(ctx, uri)
	if err != nil {
		if forecast.ErrorCode(err) == forecast.EINVALID {
			return usagef("--store: %s", forecast.ErrorMessage(err))
		}
		return fmt.Errorf("--store: %w", err)
	}
	defer db.Close()
	if migrate {
		if err := db.Migrate(ctx); err != nil {
			return fmt.Errorf("--migrate: %w", err)
		}
	}
	rows := map[forecast.Zone]int{}
	var zones []forecast.Zone
	for _, in := range done {
		z := in.table.Zone
		if _, seen := rows[z]; !seen {
			zones = append(zones, z)
		}
		for _, sig := range []forecast.Signal{forecast.SignalDirect, forecast.SignalLifecycle} {
			n, err := upsertSeries(ctx, db, z, sig, in.table.Series(sig))
			rows[z] += n
			if err != nil {
				return fmt.Errorf("%s: zone %s %s: %w (%d rows of it stored)", in.src, z, sig, err, n)
			}
		}
	}
	slices.Sort(zones)
	for _, z := range zones {
		fmt.Fprintf(stdout, "store: zone %s: %d rows upserted (direct and lifecycle)\n", z, rows[z])
	}
	return nil
}

// upsertSeries upserts the finite hours of s in batches and returns how
// many it stored.
func upsertSeries(ctx context.Context, db store.Observed, zone forecast.Zone, sig forecast.Signal, s forecast.Series) (int, error) {
	obs := make([]store.Observation, 0, min(len(s.Values), ingestBatch))
	stored := 0
	flush := func() error {
		if len(obs) == 0 {
			return nil
		}
		if err := db.UpsertObserved(ctx, zone, sig, obs); err != nil {
			return err
		}
		stored += len(obs)
		obs = obs[:0]
		return nil
	}
	for i, v := range s.Values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue // a gap the loader left: stored as a missing hour
		}
		obs = append(obs, store.Observation{Time: s.Start.Add(time.Duration(i) * forecast.Hour), Value: v})
		if len(obs) == ingestBatch {
			if err := flush(); err != nil {
				return stored, err
			}
		}
	}
	return stored, flush()
}

// parseInterleaved parses flags that may come before, between or after the
// file arguments; everything after "--" is a file.
func parseInterleaved(fl interface {
	Parse([]string) error
	Args() []string
}, args []string) ([]string, error) {
	var files []string
	for {
		if err := fl.Parse(args); err != nil {
			return nil, err
		}
		rest := fl.Args()
		if len(rest) == 0 {
			return files, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(files, rest...), nil
		}
		files = append(files, rest[0])
		args = rest[1:]
	}
}

// outputName is the file name of an input in its zone folder: the base
// name with .csv and .gz removed, leading '.' and '_' (which the loader
// skips) removed, and .csv added.
func outputName(src string) string {
	base := filepath.Base(src)
	lower := strings.ToLower(base)
	if strings.HasSuffix(lower, ".gz") {
		base, lower = base[:len(base)-3], lower[:len(lower)-3]
	}
	if strings.HasSuffix(lower, ".csv") {
		base = base[:len(base)-4]
	}
	base = strings.TrimLeft(base, "._")
	if base == "" {
		base = "data"
	}
	return base + ".csv"
}

// checkZones loads every zone touched by this ingest as it will be after
// the write — its existing files in out plus the new ones — and fails when
// the result would not load.
func checkZones(out string, done []*ingested, maxGap int, stderr io.Writer) error {
	view := fstest.MapFS{}
	zones := map[forecast.Zone]bool{}
	for _, in := range done {
		zones[in.table.Zone] = true
	}
	entries, err := os.ReadDir(out)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			continue
		}
		z, err := forecast.ParseZone(strings.TrimSuffix(strings.TrimSuffix(name, ".gz"), ".csv"))
		if err != nil || !zones[z] {
			continue
		}
		if !e.IsDir() {
			if err := addFile(view, out, name); err != nil {
				return err
			}
			continue
		}
		sub, err := os.ReadDir(filepath.Join(out, name))
		if err != nil {
			return err
		}
		for _, f := range sub {
			if !f.IsDir() {
				if err := addFile(view, out, path.Join(name, f.Name())); err != nil {
					return err
				}
			}
		}
	}
	source := map[string]string{} // new files name their input
	for _, in := range done {
		view[in.rel] = &fstest.MapFile{Data: in.data}
		source[in.rel] = in.src
	}
	name := func(p string) string {
		if src, ok := source[p]; ok {
			return src
		}
		return filepath.Join(out, filepath.FromSlash(p))
	}
	_, issues, err := dataset.Loader{MaxGap: maxGap, Name: name}.LoadFS(view, ".")
	if err == nil {
		return nil
	}
	if len(issues) == 0 {
		return err
	}
	fmt.Fprintf(stderr, "checking %s with the new files in place:\n", out)
	for _, is := range issues {
		if is.Severity == dataset.SeverityError {
			fmt.Fprintln(stderr, is)
		}
	}
	return fmt.Errorf("the zone folders in %s would not load with the new files (errors listed above); nothing written", out)
}

func addFile(view fstest.MapFS, out, rel string) error {
	b, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(rel)))
	if err != nil {
		return err
	}
	view[rel] = &fstest.MapFile{Data: b}
	return nil
}

// writeAll writes every file to a temporary file in its zone folder (whose
// dot-name the loader skips), then renames them into place.
func writeAll(out string, done []*ingested) error {
	type staged struct{ tmp, final string }
	var ok []staged
	cleanup := func() {
		for _, s := range ok {
			os.Remove(s.tmp)
		}
	}
	for _, in := range done {
		final := filepath.Join(out, filepath.FromSlash(in.rel))
		tmp, err := writeTemp(filepath.Dir(final), in.data)
		if err != nil {
			cleanup()
			return fmt.Errorf("%s: %w; nothing written", in.src, err)
		}
		ok = append(ok, staged{tmp, final})
	}
	for i, s := range ok {
		if err := os.Rename(s.tmp, s.final); err != nil {
			for _, r := range ok[i:] {
				os.Remove(r.tmp)
			}
			return fmt.Errorf("renaming into %s: %w (%d of %d files were written)", s.final, err, i, len(ok))
		}
	}
	return nil
}

func writeTemp(dir string, data []byte) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, ".ingest-*.tmp")
	if err != nil {
		return "", err
	}
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(f.Name(), 0o644)
	}
	if werr != nil {
		os.Remove(f.Name())
		return "", werr
	}
	return f.Name(), nil
}

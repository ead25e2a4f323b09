package cratedb

import (
	"context"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/internal/pgwire"
)

var update = flag.Bool("update", false, "rewrite the golden statement transcripts in testdata")

var (
	ctx = context.Background()
	t0  = time.Date(2021, 3, 1, 0, 0, 0, 0, time.UTC)
	cet = time.FixedZone("CET", 3600)
)

func hour(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }

func row(zone forecast.Zone, issued, lead int, lower, upper float64) store.ForecastRow {
	return store.ForecastRow{Zone: zone, Signal: forecast.SignalLifecycle, ModelName: "m", ModelVersion: "1",
		IssuedAt: hour(issued), TargetTime: hour(issued + lead), Value: 100 + float64(lead), Lower: lower, Upper: upper}
}

// operations are the calls the golden and rule tests run, each on a Store
// over a fake answering with replies.
var operations = []struct {
	name    string
	replies []*reply
	run     func(s *Store) error
}{
	{name: "migrate", run: func(s *Store) error { return s.Migrate(ctx) }},
	{name: "write_forecasts", run: func(s *Store) error {
		nan := math.NaN()
		rows := []store.ForecastRow{row("SE", 0, 1, 90, 110), row("DE", 0, 0, nan, nan), row("DE", 0, 0, 95, 105)}
		rows[0].IssuedAt, rows[0].TargetTime = rows[0].IssuedAt.In(cet), rows[0].TargetTime.In(cet)
		units := []store.Unit{{Zone: "SE", IssuedAt: hour(0)}, {Zone: "DE", IssuedAt: hour(0).In(cet)}, {Zone: "DE", IssuedAt: hour(0)}}
		return s.WriteForecasts(ctx, "job-1", units, rows)
	}},
	{name: "write_checkpoints_only", run: func(s *Store) error {
		return s.WriteForecasts(ctx, "job-1", []store.Unit{{Zone: "DE", IssuedAt: hour(24)}}, nil)
	}},
	{name: "upsert_observed", run: func(s *Store) error {
		return s.UpsertObserved(ctx, "DE", forecast.SignalDirect, []store.Observation{
			{Time: hour(0), Value: 200}, {Time: hour(1), Value: 201, Estimated: true}, {Time: hour(2), Value: 202}})
	}},
	{name: "read_forecasts_all", run: func(s *Store) error {
		return s.ReadForecasts(ctx, store.ForecastQuery{}, func(store.ForecastRow) error { return nil })
	}},
	{name: "read_forecasts_filtered", run: func(s *Store) error {
		q := store.ForecastQuery{Zones: []forecast.Zone{"DE", "SE"}, Signal: forecast.SignalDirect, ModelName: "m",
			ModelVersion: "2", IssuedFrom: hour(0).In(cet), IssuedTo: hour(48)}
		return s.ReadForecasts(ctx, q, func(store.ForecastRow) error { return nil })
	}},
	{name: "done", run: func(s *Store) error { _, err := s.Done(ctx, "job-1"); return err }},
	{name: "latest_observed", run: func(s *Store) error { _, _, err := s.LatestObserved(ctx, "DE", forecast.SignalDirect); return err }},
	{name: "last_unknown_zone", run: func(s *Store) error {
		_, err := s.Last(ctx, "XX", forecast.SignalDirect, hour(24).Add(30*time.Minute), 3)
		if forecast.ErrorCode(err) == forecast.ENOTFOUND {
			return nil
		}
		return err
	}},
}

func TestGolden(t *testing.T) {
	t.Parallel()
	for _, op := range operations {
		t.Run(op.name, func(t *testing.T) {
			t.Parallel()
			db := newFake(op.replies...)
			if err := op.run(newTestStore(t, db, 2)); err != nil {
				t.Fatal(err)
			}
			got := transcript(db.statements())
			path := filepath.Join("testdata", op.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Fatalf("statements differ from %s (run with -update after a deliberate change):\n--- got\n%s\n--- want\n%s", path, got, want)
			}
		})
	}
}

var (
	forbidden   = regexp.MustCompile(`(?i)\b(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|COPY|TEMP|TEMPORARY|COLLATE|FOR UPDATE)\b`)
	placeholder = regexp.MustCompile(`\$(\d+)`)
)

// insertRows returns the rows of an INSERT … UNNEST: the length of its
// array arguments, -1 when they differ or one is no array.
func insertRows(s stmt) int {
	n := -1
	for i, a := range s.args {
		v := reflect.ValueOf(a)
		if v.Kind() != reflect.Slice || (i > 0 && v.Len() != n) {
			return -1
		}
		n = v.Len()
	}
	return n
}

// checkRules fails when a statement breaks CrateDB's rules or binds its
// arguments wrongly: the placeholders must be exactly $1 … $len(args), and
// an INSERT binds one array per column, all of the same length, at most
// MaxBatch.
func checkRules(tb testing.TB, stmts []stmt) {
	tb.Helper()
	for _, s := range stmts {
		if m := forbidden.FindString(s.sql); m != "" {
			tb.Errorf("statement uses %s, which CrateDB does not support: %.120s", m, s.sql)
		}
		used := map[int]bool{}
		for _, m := range placeholder.FindAllStringSubmatch(s.sql, -1) {
			n, _ := strconv.Atoi(m[1])
			used[n] = true
		}
		if len(used) != len(s.args) {
			tb.Errorf("statement has %d distinct placeholders and %d arguments: %.120s", len(used), len(s.args), s.sql)
		}
		for i := 1; i <= len(s.args); i++ {
			if !used[i] {
				tb.Errorf("placeholder $%d missing: %.120s", i, s.sql)
			}
		}
		if strings.HasPrefix(s.sql, "INSERT") {
			if n := insertRows(s); n < 1 || n > MaxBatch {
				tb.Errorf("INSERT of %d rows (-1: arrays of different lengths), want 1..%d: %.120s", n, MaxBatch, s.sql)
			}
		}
	}
}

func TestStatementRules(t *testing.T) {
	t.Parallel()
	for _, op := range operations {
		db := newFake(op.replies...)
		if err := op.run(newTestStore(t, db, MaxBatch)); err != nil {
			t.Fatal(err)
		}
		checkRules(t, db.statements())
	}
}

// TestLargeWriteBatches: 2.5 MaxBatch rows go in three statements of at
// most MaxBatch rows, all before the table is refreshed and before any
// checkpoint is written.
func TestLargeWriteBatches(t *testing.T) {
	t.Parallel()
	var rows []store.ForecastRow
	var units []store.Unit
	for d := range MaxBatch / 40 {
		units = append(units, store.Unit{Zone: "DE", IssuedAt: hour(24 * d)})
		for l := range 100 {
			rows = append(rows, row("DE", 24*d, l, math.NaN(), math.NaN()))
		}
	}
	db := newFake()
	if err := newTestStore(t, db, MaxBatch).WriteForecasts(ctx, "job", units, rows); err != nil {
		t.Fatal(err)
	}
	stmts := db.statements()
	checkRules(t, stmts)
	var kinds []string
	for _, s := range stmts {
		switch {
		case strings.HasPrefix(s.sql, `INSERT INTO "forecasts"`):
			kinds = append(kinds, "rows:"+strconv.Itoa(insertRows(s)))
		case strings.HasPrefix(s.sql, `INSERT INTO "backfill_checkpoints"`):
			kinds = append(kinds, "units:"+strconv.Itoa(insertRows(s)))
		default:
			kinds = append(kinds, s.sql)
		}
	}
	want := []string{"rows:" + strconv.Itoa(MaxBatch), "rows:" + strconv.Itoa(MaxBatch), "rows:" + strconv.Itoa(MaxBatch/2),
		`REFRESH TABLE "forecasts"`, "units:" + strconv.Itoa(MaxBatch/40), `REFRESH TABLE "backfill_checkpoints"`}
	if strings.Join(kinds, "|") != strings.Join(want, "|") {
		t.Fatalf("statements %v, want %v", kinds, want)
	}
}

// TestFailedBatchRecordsNoUnit: when a batch fails, no later batch and no
// checkpoint is sent, and the error says the database is unavailable.
func TestFailedBatchRecordsNoUnit(t *testing.T) {
	t.Parallel()
	var rows []store.ForecastRow
	for l := range 5 {
		rows = append(rows, row("DE", 0, l, math.NaN(), math.NaN()))
	}
	first := &reply{match: `INSERT INTO "forecasts"`}
	broken := &reply{match: `INSERT INTO "forecasts"`, err: errors.Join(pgwire.ErrUnavailable, errors.New("connection reset"))}
	db := newFake(first, broken)
	err := newTestStore(t, db, 2).WriteForecasts(ctx, "job", []store.Unit{{Zone: "DE", IssuedAt: hour(0)}}, rows)
	if got := forecast.ErrorCode(err); got != forecast.EUNAVAILABLE {
		t.Fatalf("error code=%q, want %s (err: %v)", got, forecast.EUNAVAILABLE, err)
	}
	if n := len(db.statements()); n != 2 {
		t.Fatalf("%d statements sent, want 2 (the stored batch and the failed one)", n)
	}
}

func TestBadInputSendsNothing(t *testing.T) {
	t.Parallel()
	bad := row("DE", 0, 0, math.NaN(), math.NaN())
	bad.Value = math.Inf(1)
	tests := []struct {
		name  string
		run   func(s *Store) error
		field string
	}{
		{"bad forecast row", func(s *Store) error { return s.WriteForecasts(ctx, "j", nil, []store.ForecastRow{bad}) }, "value"},
		{"unit without zone", func(s *Store) error {
			return s.WriteForecasts(ctx, "j", []store.Unit{{IssuedAt: hour(0)}}, nil)
		}, "units"},
		{"observations out of order", func(s *Store) error {
			return s.UpsertObserved(ctx, "DE", forecast.SignalDirect, []store.Observation{{Time: hour(1), Value: 1}, {Time: hour(0), Value: 1}})
		}, "time"},
		{"observed range reversed", func(s *Store) error {
			_, err := s.Observed(ctx, "DE", forecast.SignalDirect, hour(2), hour(1))
			return err
		}, "to"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := newFake()
			err := tt.run(newTestStore(t, db, MaxBatch))
			if forecast.ErrorCode(err) != forecast.EINVALID || forecast.ErrorField(err) != tt.field {
				t.Fatalf("error %v, want %s naming %s", err, forecast.EINVALID, tt.field)
			}
			if n := len(db.statements()); n != 0 {
				t.Fatalf("%d statements sent for bad input", n)
			}
		})
	}
}

func TestReadForecastsScans(t *testing.T) {
	t.Parallel()
	db := newFake(&reply{match: `FROM "forecasts"`, rows: [][]any{
		{"DE", "lifecycle", "m", "1", hour(0).In(cet), hour(1).In(cet), 101.5, nil, nil},
		{"DE", "lifecycle", "m", "1", hour(0), hour(2), 102.0, 90.0, 110.0},
	}})
	var got []store.ForecastRow
	err := newTestStore(t, db, MaxBatch).ReadForecasts(ctx, store.ForecastQuery{}, func(r store.ForecastRow) error {
		got = append(got, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].HasInterval() || !math.IsNaN(got[0].Lower) || got[0].IssuedAt.Location() != time.UTC ||
		!got[0].TargetTime.Equal(hour(1)) || got[1].Lower != 90 || got[1].Upper != 110 || got[1].Value != 102 {
		t.Fatalf("read %+v", got)
	}
}

func TestLast(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		replies []*reply
		want    []float64
		code    string
		missing time.Time
	}{
		{name: "complete", replies: []*reply{{match: `"time" >= $3`, rows: [][]any{{hour(21), 1.0}, {hour(22), 2.0}, {hour(23), 3.0}}}}, want: []float64{1, 2, 3}},
		{name: "gap", replies: []*reply{{match: `"time" >= $3`, rows: [][]any{{hour(21), 1.0}, {hour(23), 3.0}}}}, code: forecast.EUNAVAILABLE, missing: hour(22)},
		{name: "nothing in the window, zone known", replies: []*reply{{match: "LIMIT 1", rows: [][]any{{hour(0)}}}}, code: forecast.EUNAVAILABLE, missing: hour(21)},
		{name: "zone unknown", code: forecast.ENOTFOUND},
		{name: "database down", replies: []*reply{{match: `"time" >= $3`, err: errors.Join(pgwire.ErrUnavailable, errors.New("refused"))}}, code: forecast.EUNAVAILABLE},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := newTestStore(t, newFake(tt.replies...), MaxBatch).Last(ctx, "DE", forecast.SignalDirect, hour(24), 3)
			if tt.code != "" {
				if forecast.ErrorCode(err) != tt.code {
					t.Fatalf("error %v, want code %s", err, tt.code)
				}
				if !tt.missing.IsZero() && !strings.Contains(err.Error(), tt.missing.Format(time.RFC3339)) {
					t.Fatalf("error %q does not name %s", err, tt.missing.Format(time.RFC3339))
				}
				return
			}
			if err != nil || len(got) != len(tt.want) {
				t.Fatalf("Last = %v, %v; want %v", got, err, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("Last = %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestMigrateRace(t *testing.T) {
	t.Parallel()
	db := newFake(&reply{match: `"forecasts"`, err: &pgconn.PgError{Code: "XX000", Message: "RelationAlreadyExists[Relation 'doc.forecasts' already exists.]"}})
	if err := newTestStore(t, db, MaxBatch).Migrate(ctx); err != nil {
		t.Fatalf("Migrate after losing a creation race: %v", err)
	}
	if n := len(db.statements()); n != len(ddl) {
		t.Fatalf("%d statements, want %d", n, len(ddl))
	}
}

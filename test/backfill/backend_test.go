//go:build interop

package backfill

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/carbongate/carbongate/forecast"
	storeconnect "github.com/carbongate/carbongate/forecast/store/connect"
	"github.com/carbongate/carbongate/internal/pgwire"
	"github.com/carbongate/carbongate/test/services"
)

// backend is a database server the backfills write to; every test and
// the benchmark run on each.
type backend struct {
	name string
	// store returns the --store URI of an empty database of tb's own on
	// the test binary's shared server.
	store func(tb testing.TB) string
	// private starts a server of tb's own and returns the --store URI of
	// an empty database on it and a func restarting that server.
	private func(tb testing.TB) (string, func(tb testing.TB))
	// atomic says a write's rows and checkpoints become visible together
	// or not at all (a transaction). Without it (CrateDB) the rows of a
	// write cut off before its checkpoints may stay visible; a checkpoint
	// is still never visible without all its unit's rows.
	atomic bool
	// maxDays caps the days a test backfills (0: none) and writeScale
	// multiplies its --write-units: a CrateDB write costs two REFRESHes
	// whatever its rows (up to a second each on a loaded machine), so its
	// runs are shorter and write more at once to keep make test short.
	maxDays, writeScale int
	// idle is the query counting what other sessions still hold: sessions
	// on the database (PostgreSQL), statements running (CrateDB);
	// visible, if not empty, makes every row stored visible to queries.
	idle, visible string
	// copy bulk-loads the rows of forecasts with the database's own COPY
	// into an identical table and returns the rows loaded and how long it
	// took; copyName says what it does.
	copy     func(b *testing.B, url string) (int, time.Duration)
	copyName string
}

var backends = []backend{
	{
		name:  "PostgreSQL",
		store: func(tb testing.TB) string { return services.StartPostgres(tb).Database(tb) },
		private: func(tb testing.TB) (string, func(testing.TB)) {
			pg := services.StartPrivatePostgres(tb)
			return pg.Database(tb), pg.Restart
		},
		atomic:     true,
		writeScale: 1,
		idle:       `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
		copy:       pgCopy,
		copyName:   "plain COPY as CSV",
	},
	{
		name:  "CrateDB",
		store: func(tb testing.TB) string { return services.StartCrateDB(tb).StoreURI(tb) },
		private: func(tb testing.TB) (string, func(testing.TB)) {
			c := services.StartPrivateCrateDB(tb)
			return c.StoreURI(tb), func(tb testing.TB) { c.Stop(tb); c.Start(tb) }
		},
		maxDays:    31,
		writeScale: 2,
		// sys.jobs lists the statements running, this one included.
		idle: `SELECT count(*) - 1 FROM sys.jobs`,
		// What a killed run stored but did not refresh shows at the
		// next periodic refresh anyway.
		visible:  `REFRESH TABLE forecasts, backfill_checkpoints`,
		copy:     crateCopy,
		copyName: "COPY FROM of JSON lines",
	},
}

// sized returns the last day and the --write-units of a test's backfill
// from from to to writing writeUnits at once, on be.
func (be backend) sized(from, to string, writeUnits int) (string, string) {
	if be.maxDays > 0 && days(from, to) > be.maxDays {
		first, _ := time.Parse(time.DateOnly, from)
		to = first.AddDate(0, 0, be.maxDays-1).Format(time.DateOnly)
	}
	return to, strconv.Itoa(writeUnits * be.writeScale)
}

// eachBackend runs test as a subtest per backend.
func eachBackend(t *testing.T, test func(t *testing.T, be backend)) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) { test(t, be) })
	}
}

// connect opens a plain connection to the database of the --store URI uri.
func connect(ctx context.Context, tb testing.TB, uri string) *pgx.Conn {
	tb.Helper()
	_, addr, err := storeconnect.Parse(uri)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := pgx.Connect(ctx, addr)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// waitIdle waits until no other session runs a statement on the server
// of uri, then makes what is stored visible (be.visible). A client killed
// right after sending a statement (COMMIT on PostgreSQL, an INSERT or
// REFRESH on CrateDB) leaves the server to finish it; counting before it
// has ended can miss the last batch.
func (be backend) waitIdle(tb testing.TB, uri string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(ctx, tb, uri)
	defer c.Close(context.Background())
	for {
		var n int
		err := c.QueryRow(ctx, be.idle).Scan(&n)
		if err != nil {
			tb.Fatalf("statements of the killed run still running after 30s (%d): %v", n, err)
		}
		if n == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if be.visible != "" {
		if _, err := c.Exec(ctx, be.visible); err != nil {
			tb.Fatal(err)
		}
	}
}

// crateDB classifies CrateDB's errors as carbongate's CrateDB backends do.
var crateDB = pgwire.Backend{Name: "cratedb", CrateDB: true}

// consistentWhileWriting checks what holds while a backfill is writing to
// the database of url: on an atomic backend all of consistent (PostgreSQL
// reads a statement's subqueries in one snapshot); on CrateDB, whose
// subqueries each read a table as last refreshed when they run (a write
// refreshed between two of them made 1,246 rows look duplicated), only
// that no key is stored twice, counted in one scan of the table. Right
// after a restart CrateDB may still answer a table's queries "shard N is
// not available" (a shard recovering while the node already serves): the
// scan is retried while the product's own classification of CrateDB's
// errors says EUNAVAILABLE, for up to 30 s.
func (be backend) consistentWhileWriting(tb testing.TB, url string) {
	tb.Helper()
	if be.atomic {
		be.consistent(tb, count(tb, url), 96)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(ctx, tb, url)
	defer c.Close(context.Background())
	var rows, distinct int
	for {
		err := c.QueryRow(ctx, `SELECT count(*), count(DISTINCT zone || '|' || signal || '|' || model_name || '|' || model_version || '|' ||
			CAST(issued_at AS TEXT) || '|' || CAST(target_time AS TEXT)) FROM forecasts`).Scan(&rows, &distinct)
		if err == nil {
			break
		}
		if forecast.ErrorCode(crateDB.Classify(ctx, "scan", err)) != forecast.EUNAVAILABLE || ctx.Err() != nil {
			tb.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if rows != distinct {
		tb.Errorf("%d rows but %d distinct keys", rows, distinct)
	}
}

// consistent checks that no unit is recorded done without all its rows
// and that nothing is duplicated; on an atomic backend also that nothing
// of an unrecorded unit is visible (no partial batch).
func (be backend) consistent(tb testing.TB, n counts, horizon int) {
	tb.Helper()
	if n.recorded != n.units*horizon {
		tb.Errorf("%d rows of %d checkpointed units: want exactly %d (a unit recorded without all its rows)", n.recorded, n.units, n.units*horizon)
	}
	if be.atomic && n.rows != n.recorded {
		tb.Errorf("%d rows, %d of checkpointed units: a partial batch is visible", n.rows, n.recorded)
	}
	if n.distinct != n.rows {
		tb.Errorf("%d rows but %d distinct keys", n.rows, n.distinct)
	}
}

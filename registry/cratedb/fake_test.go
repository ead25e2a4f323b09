package cratedb

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/carbongate/carbongate/registry"
)

var update = flag.Bool("update", false, "rewrite the golden statement transcripts in testdata")

// reply is a scripted answer to the first statement whose SQL contains
// match and that no earlier statement consumed. Statements without a reply
// get the defaults: Exec affects 1 row, Query returns no rows.
type reply struct {
	match   string
	n       int64   // Exec: rows affected
	rows    [][]any // Query: the rows, one value per scanned column
	err     error   // returned by Exec or Query
	lateErr error   // Query: returned by Rows.Err after the rows
	used    bool
}

func execN(match string, n int64) *reply    { return &reply{match: match, n: n} }
func fail(match string, err error) *reply   { return &reply{match: match, err: err} }
func rows(match string, rs ...[]any) *reply { return &reply{match: match, rows: rs} }
func row(vals ...any) []any                 { return vals }
func pgErr(code, msg string) *pgconn.PgError {
	return &pgconn.PgError{Severity: "ERROR", Code: code, Message: msg}
}
func duplicate() *pgconn.PgError {
	return pgErr("XX000", "DuplicateKeyException[A document with the same primary key exists already]")
}
func refreshed(tables ...string) string { return "REFRESH TABLE " + strings.Join(tables, ", ") }
func testClock() func() time.Time       { return func() time.Time { return testNow } }

// newTestStore is a Store on db whose CreateVersion gives up after
// testMaxInserts duplicate keys, so that transcripts stay short.
func newTestStore(tb testing.TB, db DB) *Store {
	s := must(New(db, registry.Options{Now: testClock()}))(tb)
	s.maxInserts = testMaxInserts
	return s
}

const testMaxInserts = 10

var testNow = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func must[T any](v T, err error) func(testing.TB) T {
	return func(tb testing.TB) T {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		return v
	}
}

// call is one statement the Store issued.
type call struct {
	kind     string // exec or query
	sql      string
	args     []any
	reply    string
	deadline bool // the context had a deadline
}

// fakeDB records statements and answers them from a script. It does not
// interpret SQL: what the Store issues is checked by the golden
// transcripts and checkRules.
type fakeDB struct {
	mu      sync.Mutex
	replies []*reply
	calls   []call
}

func newFake(rs ...*reply) *fakeDB { return &fakeDB{replies: rs} }

func (f *fakeDB) next(sql string) *reply {
	for _, r := range f.replies {
		if !r.used && strings.Contains(sql, r.match) {
			r.used = true
			return r
		}
	}
	return nil
}

func (f *fakeDB) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := call{kind: "exec", sql: sql, args: args, deadline: hasDeadline(ctx)}
	n, err := int64(1), error(nil)
	if r := f.next(sql); r != nil {
		n, err = r.n, r.err
	}
	if err != nil {
		c.reply = "error: " + err.Error()
	} else {
		c.reply = fmt.Sprintf("%d row(s) affected", n)
	}
	f.calls = append(f.calls, c)
	return n, err
}

func (f *fakeDB) Query(ctx context.Context, sql string, args ...any) (Rows, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := call{kind: "query", sql: sql, args: args, deadline: hasDeadline(ctx)}
	r := f.next(sql)
	if r == nil {
		r = &reply{}
	}
	switch {
	case r.err != nil:
		c.reply = "error: " + r.err.Error()
	case r.lateErr != nil:
		c.reply = fmt.Sprintf("%d row(s), then error: %v", len(r.rows), r.lateErr)
	default:
		c.reply = fmt.Sprintf("%d row(s)", len(r.rows))
	}
	f.calls = append(f.calls, c)
	if r.err != nil {
		return nil, r.err
	}
	return &fakeRows{rows: r.rows, err: r.lateErr, i: -1}, nil
}

func hasDeadline(ctx context.Context) bool {
	_, ok := ctx.Deadline()
	return ok
}

func (f *fakeDB) transcript() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

type fakeRows struct {
	rows   [][]any
	err    error
	i      int
	closed bool
}

func (r *fakeRows) Next() bool {
	if r.closed || r.i+1 >= len(r.rows) {
		return false
	}
	r.i++
	return true
}

func (r *fakeRows) Err() error { return r.err }
func (r *fakeRows) Close()     { r.closed = true }

// Scan assigns the scripted values as pgx would: NULL (nil) into a
// pointer-to-pointer leaves it nil, numbers convert between integer types.
func (r *fakeRows) Scan(dest ...any) error {
	vals := r.rows[r.i]
	if len(vals) != len(dest) {
		return fmt.Errorf("fake: %d values for %d columns", len(vals), len(dest))
	}
	for i, d := range dest {
		if err := assign(reflect.ValueOf(d).Elem(), vals[i]); err != nil {
			return fmt.Errorf("fake: column %d: %w", i, err)
		}
	}
	return nil
}

func assign(dst reflect.Value, v any) error {
	if v == nil {
		if dst.Kind() != reflect.Pointer {
			return fmt.Errorf("cannot scan NULL into %s", dst.Type())
		}
		dst.SetZero()
		return nil
	}
	if dst.Kind() == reflect.Pointer {
		p := reflect.New(dst.Type().Elem())
		if err := assign(p.Elem(), v); err != nil {
			return err
		}
		dst.Set(p)
		return nil
	}
	src := reflect.ValueOf(v)
	if !src.Type().ConvertibleTo(dst.Type()) || (src.Kind() == reflect.String) != (dst.Kind() == reflect.String) {
		return fmt.Errorf("cannot scan %T into %s", v, dst.Type())
	}
	dst.Set(src.Convert(dst.Type()))
	return nil
}

// golden compares the transcript (and the operation's outcome) with
// testdata/<name>.golden, rewriting it under -update.
func golden(t *testing.T, name string, calls []call, outcome string) {
	t.Helper()
	var b strings.Builder
	for _, c := range calls {
		fmt.Fprintf(&b, "%s: %s\n", c.kind, c.sql)
		if len(c.args) > 0 {
			fmt.Fprintf(&b, "  args: %s\n", formatArgs(c.args))
		}
		fmt.Fprintf(&b, "  -> %s\n", c.reply)
	}
	fmt.Fprintf(&b, "outcome: %s\n", outcome)
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got := b.String(); got != string(want) {
		t.Errorf("statements differ from %s (go test -update rewrites it)\n--- got\n%s--- want\n%s", path, got, want)
	}
}

func formatArgs(args []any) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = fmt.Sprintf("$%d=%#v", i+1, a)
	}
	return strings.Join(parts, " ")
}

var (
	firstFrom = regexp.MustCompile(`(?:FROM|INTO|UPDATE) (\w+)`)
	allFrom   = regexp.MustCompile(`FROM (\w+)`)
	eqParam   = regexp.MustCompile(`^(?:\w+\.)?"?(\w+)"? = \$\d+$`)
)

// checkRules enforces CrateDB's rules on a transcript:
//   - no transaction statement (BEGIN, COMMIT, ROLLBACK, ...), no SELECT
//     FOR UPDATE, no COPY, no sequence;
//   - no literal in DML: every value is a parameter;
//   - after a write to a table, no statement reads that table other than
//     by its full primary key until a REFRESH TABLE names it; UPDATE and
//     DELETE whose WHERE is not the full primary key count as reads;
//   - when the operation succeeded, every written table was refreshed;
//   - every statement ran under a deadline.
func checkRules(t *testing.T, calls []call, succeeded bool) {
	t.Helper()
	for _, v := range ruleViolations(calls, succeeded) {
		t.Error(v)
	}
}

func ruleViolations(calls []call, succeeded bool) []string {
	var out []string
	errorf := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	dirty := map[string]bool{}
	for _, c := range calls {
		sql := c.sql
		if !c.deadline {
			errorf("issued without a deadline: %s", sql)
		}
		first := strings.ToUpper(strings.Fields(sql)[0])
		switch first {
		case "BEGIN", "START", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "COPY":
			errorf("%s issued: %s", first, sql)
		}
		if strings.Contains(strings.ToUpper(sql), "FOR UPDATE") || strings.Contains(strings.ToUpper(sql), "NEXTVAL") {
			errorf("unsupported construct: %s", sql)
		}
		if first != "CREATE" && first != "ALTER" && strings.Contains(sql, "'") {
			errorf("literal in SQL (values must be parameters): %s", sql)
		}
		if first == "REFRESH" {
			for _, tbl := range strings.Split(strings.TrimPrefix(sql, "REFRESH TABLE "), ", ") {
				delete(dirty, tbl)
			}
			continue
		}
		for _, tbl := range readTables(first, sql) {
			if dirty[tbl] {
				errorf("reads %s without REFRESH TABLE after writing it: %s", tbl, sql)
			}
		}
		if first == "INSERT" || first == "UPDATE" || first == "DELETE" {
			dirty[firstFrom.FindStringSubmatch(sql)[1]] = true
		}
	}
	if succeeded && len(dirty) > 0 {
		errorf("written but never refreshed: %v", dirty)
	}
	return out
}

// readTables are the registry tables a statement searches (reads other
// than by the full primary key).
func readTables(first, sql string) []string {
	var out []string
	switch first {
	case "SELECT":
		for _, m := range allFrom.FindAllStringSubmatch(sql, -1) {
			if _, ok := primaryKeys[m[1]]; ok {
				out = append(out, m[1])
			}
		}
		if len(out) == 1 && !strings.Contains(sql, "(SELECT") && pkLookup(sql, out[0]) {
			return nil
		}
	case "UPDATE", "DELETE":
		tbl := firstFrom.FindStringSubmatch(sql)[1]
		if !pkLookup(sql, tbl) {
			out = append(out, tbl)
		}
	}
	return out
}

// pkLookup reports whether the WHERE clause pins every primary-key column
// with "col = $n", joined by AND only.
func pkLookup(sql, table string) bool {
	_, where, ok := strings.Cut(sql, " WHERE ")
	if !ok || strings.Contains(where, " OR ") || strings.Contains(where, " IN (") {
		return false
	}
	for _, stop := range []string{" ORDER BY ", " LIMIT "} {
		where, _, _ = strings.Cut(where, stop)
	}
	have := map[string]bool{}
	for _, cond := range strings.Split(where, " AND ") {
		if m := eqParam.FindStringSubmatch(strings.TrimSpace(cond)); m != nil {
			have[m[1]] = true
		}
	}
	for _, col := range primaryKeys[table] {
		if !have[col] {
			return false
		}
	}
	return true
}

package cratedb

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// stmt is one statement the fake received.
type stmt struct {
	sql  string
	args []any
}

// reply is a scripted answer to the first unused statement whose SQL
// contains match: rows for a query, or an error.
type reply struct {
	match string
	rows  [][]any
	err   error
	used  bool
}

// fakeDB records every statement and answers from its script; statements
// without a reply affect one row or return no rows.
type fakeDB struct {
	mu      sync.Mutex
	stmts   []stmt
	replies []*reply
}

func newFake(replies ...*reply) *fakeDB { return &fakeDB{replies: replies} }

func (f *fakeDB) answer(sql string, args []any) *reply {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stmts = append(f.stmts, stmt{sql, args})
	for _, r := range f.replies {
		if !r.used && strings.Contains(sql, r.match) {
			r.used = true
			return r
		}
	}
	return &reply{}
}

func (f *fakeDB) Exec(_ context.Context, sql string, args ...any) (int64, error) {
	r := f.answer(sql, args)
	return 1, r.err
}

func (f *fakeDB) Query(_ context.Context, sql string, args ...any) (Rows, error) {
	r := f.answer(sql, args)
	if r.err != nil {
		return nil, r.err
	}
	return &fakeRows{rows: r.rows, i: -1}, nil
}

func (f *fakeDB) statements() []stmt {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]stmt(nil), f.stmts...)
}

type fakeRows struct {
	rows [][]any
	i    int
}

func (r *fakeRows) Next() bool { r.i++; return r.i < len(r.rows) }
func (r *fakeRows) Err() error { return nil }
func (r *fakeRows) Close()     {}

// Scan assigns the row's values as pgx would: nil to a pointer target
// leaves it nil, a value to a pointer target allocates.
func (r *fakeRows) Scan(dest ...any) error {
	row := r.rows[r.i]
	if len(dest) != len(row) {
		return fmt.Errorf("scan of %d columns into %d targets", len(row), len(dest))
	}
	for i, d := range dest {
		target := reflect.ValueOf(d).Elem()
		if row[i] == nil {
			target.SetZero()
			continue
		}
		v := reflect.ValueOf(row[i])
		if target.Kind() == reflect.Pointer {
			p := reflect.New(target.Type().Elem())
			p.Elem().Set(v.Convert(target.Type().Elem()))
			target.Set(p)
			continue
		}
		target.Set(v.Convert(target.Type()))
	}
	return nil
}

// newTestStore returns a Store over db writing batches of at most batch
// rows.
func newTestStore(tb testing.TB, db DB, batch int) *Store {
	tb.Helper()
	s, err := New(db)
	if err != nil {
		tb.Fatal(err)
	}
	s.maxBatch = batch
	return s
}

// transcript renders statements for golden files: one per block, the SQL
// then its arguments.
func transcript(stmts []stmt) string {
	var b strings.Builder
	for _, s := range stmts {
		b.WriteString(s.sql)
		b.WriteString("\n")
		if len(s.args) > 0 {
			b.WriteString("  args:")
			for _, a := range s.args {
				b.WriteString(" ")
				b.WriteString(formatArg(a))
			}
			b.WriteString("\n")
		}
		b.WriteString("--\n")
	}
	return b.String()
}

func formatArg(a any) string {
	if v := reflect.ValueOf(a); v.Kind() == reflect.Slice || v.Kind() == reflect.Pointer {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return "NULL"
			}
			return formatArg(v.Elem().Interface())
		}
		elems := make([]string, v.Len())
		for i := range elems {
			elems[i] = formatArg(v.Index(i).Interface())
		}
		return "[" + strings.Join(elems, " ") + "]"
	}
	switch v := a.(type) {
	case nil:
		return "NULL"
	case string:
		return fmt.Sprintf("%q", v)
	case time.Time:
		return v.Format(time.RFC3339)
	case float64:
		if math.IsNaN(v) {
			return "NaN"
		}
		return fmt.Sprint(v)
	}
	return fmt.Sprint(a)
}

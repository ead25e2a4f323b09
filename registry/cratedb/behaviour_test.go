package cratedb

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/internal/pgwire"
	"github.com/carbongate/carbongate/registry"
)

// versionInserts returns the version numbers CreateVersion tried, checking
// that each insert is a plain INSERT that the primary key can reject.
func versionInserts(t *testing.T, calls []call) []int64 {
	t.Helper()
	var tried []int64
	for _, c := range calls {
		if !strings.HasPrefix(c.sql, "INSERT INTO model_versions") {
			continue
		}
		if strings.Contains(c.sql, "ON CONFLICT") {
			t.Errorf("version insert must fail on a taken number, not upsert: %s", c.sql)
		}
		tried = append(tried, c.args[1].(int64))
	}
	return tried
}

func TestCreateVersionAllocation(t *testing.T) {
	t.Parallel()
	nv := registry.NewVersion{Name: "m", Source: "s3://b/m"}
	model := func() *reply { return rows(selModel, modelRowOf("m")) }
	highest := func(v any) *reply { return rows(`SELECT max("version")`, row(v)) }
	insert := `INSERT INTO model_versions`
	taken := func() []*reply {
		var rs []*reply
		for range testMaxInserts {
			rs = append(rs, fail(insert, duplicate()))
		}
		return rs
	}
	tests := []struct {
		name    string
		replies []*reply
		tried   []int64
		code    string
	}{
		{name: "first version is 1", replies: []*reply{model(), highest(nil)}, tried: []int64{1}},
		{name: "max+1, deleted versions included", replies: []*reply{model(), highest(int64(9))}, tried: []int64{10}},
		{name: "duplicate message: next number", replies: []*reply{model(), highest(int64(2)), fail(insert, duplicate())}, tried: []int64{3, 4}},
		{name: "message without exception name", replies: []*reply{model(), highest(int64(2)),
			fail(insert, pgErr("XX000", "A document with the same primary key exists already"))}, tried: []int64{3, 4}},
		{name: "SQLSTATE 23505", replies: []*reply{model(), highest(int64(2)), fail(insert, pgErr("23505", "duplicate key"))}, tried: []int64{3, 4}},
		{name: "0 rows counts as taken", replies: []*reply{model(), highest(int64(2)), execN(insert, 0)}, tried: []int64{3, 4}},
		{name: "bounded retries then ECONFLICT", replies: append([]*reply{model(), highest(int64(0))}, taken()...),
			tried: []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, code: forecast.ECONFLICT},
		{name: "other errors are not retried", replies: []*reply{model(), highest(int64(2)), fail(insert, pgErr("XX000", "SQLParseException[oops]"))},
			tried: []int64{3}, code: forecast.EINTERNAL},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := newFake(tc.replies...)
			v, err := newTestStore(t, db).CreateVersion(context.Background(), nv)
			if got := forecast.ErrorCode(err); got != tc.code {
				t.Fatalf("error %v, want code %q", err, tc.code)
			}
			calls := db.transcript()
			tried := versionInserts(t, calls)
			if len(tried) != len(tc.tried) {
				t.Fatalf("tried versions %v, want %v", tried, tc.tried)
			}
			for i := range tried {
				if tried[i] != tc.tried[i] {
					t.Fatalf("tried versions %v, want %v", tried, tc.tried)
				}
			}
			if err == nil && v.Version != tc.tried[len(tc.tried)-1] {
				t.Errorf("Version=%d, want %d", v.Version, tc.tried[len(tc.tried)-1])
			}
			checkRules(t, calls, err == nil)
			assertMaxQuery(t, calls)
		})
	}
}

// assertMaxQuery checks that the highest version is read over all rows of
// the model (soft-deleted included) right after a REFRESH TABLE.
func assertMaxQuery(t *testing.T, calls []call) {
	t.Helper()
	for i, c := range calls {
		if !strings.Contains(c.sql, "max(") {
			continue
		}
		if strings.Contains(c.sql, "current_stage") {
			t.Errorf("max(version) must include deleted versions: %s", c.sql)
		}
		if i == 0 || calls[i-1].sql != refreshed(tVersions) {
			t.Errorf("max(version) not preceded by REFRESH TABLE model_versions")
		}
		return
	}
	t.Error("no max(version) query")
}

// TestRuleChecker makes sure checkRules catches what it is meant to catch.
func TestRuleChecker(t *testing.T) {
	t.Parallel()
	at := func(sql string) call { return call{sql: sql, deadline: true} }
	tests := []struct {
		name      string
		calls     []call
		succeeded bool
		want      string // "" means no violation
	}{
		{"pk read after write is fine", []call{at(`INSERT INTO registered_models (name) VALUES ($1)`),
			at(`SELECT name FROM registered_models WHERE name = $1`), at(refreshed(tModels))}, true, ""},
		{"search after write", []call{at(`INSERT INTO model_versions (name) VALUES ($1)`),
			at(`SELECT max("version") FROM model_versions WHERE name = $1`)}, false, "without REFRESH"},
		{"partial key delete after write", []call{at(`UPDATE registered_model_aliases SET "version" = $1 WHERE name = $2 AND "alias" = $3`),
			at(`DELETE FROM registered_model_aliases WHERE name = $1`)}, false, "without REFRESH"},
		{"refresh clears", []call{at(`INSERT INTO model_versions (name) VALUES ($1)`), at(refreshed(tVersions)),
			at(`SELECT max("version") FROM model_versions WHERE name = $1`)}, true, ""},
		{"write never refreshed", []call{at(`DELETE FROM registered_models WHERE name = $1`)}, true, "never refreshed"},
		{"rollback", []call{at("ROLLBACK")}, false, "ROLLBACK issued"},
		{"begin", []call{at("BEGIN")}, false, "BEGIN issued"},
		{"literal", []call{at(`SELECT name FROM registered_models WHERE name = 'x'`)}, false, "literal"},
		{"no deadline", []call{{sql: `SELECT name FROM registered_models WHERE name = $1`}}, false, "deadline"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := strings.Join(ruleViolations(tc.calls, tc.succeeded), "; ")
			if (tc.want == "" && got != "") || (tc.want != "" && !strings.Contains(got, tc.want)) {
				t.Fatalf("violations %q, want %q", got, tc.want)
			}
		})
	}
}

func TestValidationIssuesNoStatement(t *testing.T) {
	t.Parallel()
	search := func(q registry.Search) func(*Store) error {
		return func(s *Store) error { _, _, err := s.SearchVersions(context.Background(), q); return err }
	}
	one := func(c registry.Clause) registry.Search {
		return registry.Search{Filter: []registry.Clause{c}, MaxResults: 10}
	}
	tests := []struct {
		name  string
		field string
		op    func(*Store) error
	}{
		{"page too small", "max_results", search(registry.Search{MaxResults: 0})},
		{"page too large", "max_results", search(registry.Search{MaxResults: 1001})},
		{"negative offset", "page_token", search(registry.Search{MaxResults: 1, Offset: -1})},
		{"unknown comparator", "filter", search(one(registry.Clause{Key: "name", Op: ">", Values: []string{"a"}}))},
		{"LIKE on a number", "filter", search(one(registry.Clause{Key: "version_number", Op: "LIKE", Values: []string{"1%"}}))},
		{"version not a number", "filter", search(one(registry.Clause{Key: "version_number", Op: "=", Values: []string{"1 OR 1=1"}}))},
		{"IN without values", "filter", search(one(registry.Clause{Key: "run_id", Op: "IN"}))},
		{"two values for =", "filter", search(one(registry.Clause{Key: "name", Op: "=", Values: []string{"a", "b"}}))},
		{"unknown order key", "order_by", search(registry.Search{OrderBy: []registry.Order{{Key: "name DESC; --"}}, MaxResults: 1})},
		{"model filter key", "filter", func(s *Store) error {
			_, _, err := s.SearchModels(context.Background(), one(registry.Clause{Key: "run_id", Op: "=", Values: []string{"r"}}))
			return err
		}},
		{"version 0", "version", func(s *Store) error { _, err := s.GetVersion(context.Background(), "m", 0); return err }},
		{"empty tag key", "key", func(s *Store) error { return s.DeleteModelTag(context.Background(), "m", "") }},
		{"bad status", "status", func(s *Store) error {
			_, err := s.CreateVersion(context.Background(), registry.NewVersion{Name: "m", Status: "DONE"})
			return err
		}},
		{"rename to an invalid name", "new_name", func(s *Store) error { _, err := s.RenameModel(context.Background(), "m", "a/b"); return err }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := newFake()
			err := tc.op(newTestStore(t, db))
			if got := forecast.ErrorCode(err); got != forecast.EINVALID {
				t.Fatalf("error %v, want EINVALID", err)
			}
			if got := forecast.ErrorField(err); got != tc.field {
				t.Errorf("field %q, want %q", got, tc.field)
			}
			if n := len(db.transcript()); n != 0 {
				t.Errorf("%d statements issued for an invalid request", n)
			}
		})
	}
}

func TestRowsErrAndScanErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		reply *reply
		code  string
	}{
		{"late error", &reply{match: selModel, lateErr: pgErr("XX000", "NodeDisconnectedException[node left]")}, forecast.EUNAVAILABLE},
		{"connection lost", &reply{match: selModel, err: errors.Join(pgwire.ErrUnavailable, errors.New("EOF"))}, forecast.EUNAVAILABLE},
		{"column of the wrong type", rows(selModel, row(int64(1), int64(2), int64(3), "d")), forecast.EINTERNAL},
		{"alias version not a number", nil, forecast.EINTERNAL},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rs := []*reply{tc.reply}
			if tc.reply == nil {
				rs = []*reply{rows(selModel, modelRowOf("m")), rows("FROM registered_model_aliases", row("m", "champion", "three"))}
			}
			_, err := newTestStore(t, newFake(rs...)).GetModel(context.Background(), "m")
			if got := forecast.ErrorCode(err); got != tc.code {
				t.Fatalf("error %v, want code %q", err, tc.code)
			}
		})
	}
}

func TestCallerDeadlineKept(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	db := newFake(&reply{match: selModel, err: context.Canceled})
	_, err := newTestStore(t, db).GetModel(ctx, "m")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled in the chain", err)
	}
}

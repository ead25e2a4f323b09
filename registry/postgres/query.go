package postgres

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/sqlsearch"
)

// The workspace carbongate works in once the tables carry one.
const workspace = "default"

// ws returns the workspace predicate on alias t (" AND t.workspace =
// 'default'"), or "" before MLflow 3.10. The value is a constant, never
// input.
func (l layout) ws(t string) string {
	if !l.workspace {
		return ""
	}
	return " AND " + t + ".workspace = '" + workspace + "'"
}

// wsEq joins two aliases on workspace (" AND a.workspace = b.workspace").
func (l layout) wsEq(a, b string) string {
	if !l.workspace {
		return ""
	}
	return " AND " + a + ".workspace = " + b + ".workspace"
}

// wsCol and wsVal prefix an INSERT's column and value lists.
func (l layout) wsCol() string {
	if !l.workspace {
		return ""
	}
	return "workspace, "
}

// wsSel prefixes an INSERT … SELECT's select list with alias t's workspace.
func (l layout) wsSel(t string) string {
	if !l.workspace {
		return ""
	}
	return t + ".workspace, "
}

func (l layout) wsVal() string {
	if !l.workspace {
		return ""
	}
	return "'" + workspace + "', "
}

// key is a table's primary key columns for ON CONFLICT.
func (l layout) key(cols string) string {
	if l.workspace {
		return "(workspace, " + cols + ")"
	}
	return "(" + cols + ")"
}

// wsPred is the workspace predicate on alias t as a search's base
// predicates (none before MLflow 3.10).
func (l layout) wsPred(t string) []string {
	if !l.workspace {
		return nil
	}
	return []string{strings.TrimPrefix(l.ws(t), " AND ")}
}

// dialect is PostgreSQL's SQL for sqlsearch: IN takes one array parameter.
var dialect = sqlsearch.Dialect{AnyArray: true, TagKey: "t.key", TagValue: "t.value"}

// modelTarget and versionTarget are what searches run over; a tag joins
// its row within the workspace too.
func (l layout) modelTarget() sqlsearch.Target {
	return sqlsearch.Target{
		From:     "registered_models m",
		Attrs:    map[string]string{"name": "m.name"},
		Tags:     "registered_model_tags",
		TagJoin:  "t.name = m.name" + l.wsEq("t", "m"),
		Orders:   map[string]string{"name": "m.name" + byteOrder, "creation_timestamp": "m.creation_time", "last_updated_timestamp": "m.last_updated_time"},
		Tiebreak: []registry.Order{{Key: "name"}},
	}
}

func (l layout) versionTarget() sqlsearch.Target {
	return sqlsearch.Target{
		From:     "model_versions v",
		Attrs:    map[string]string{"name": "v.name", "run_id": "v.run_id", "source_path": "v.source", "version_number": "v.version"},
		IntAttrs: map[string]bool{"version_number": true},
		Tags:     "model_version_tags",
		TagJoin:  "t.name = v.name AND t.version = v.version" + l.wsEq("t", "v"),
		Orders: map[string]string{"name": "v.name" + byteOrder, "version_number": "v.version",
			"creation_timestamp": "v.creation_time", "last_updated_timestamp": "v.last_updated_time"},
		Tiebreak: []registry.Order{{Key: "name"}, {Key: "version_number", Desc: true}},
	}
}

// fetchPage runs a query of sqlsearch: it scans the rows (one more than
// the page at most), trims the extra one into more and fills in the
// page's tags and aliases with extras.
func fetchPage[T any](ctx context.Context, q querier, sql string, a sqlsearch.Args, size int,
	scan func(pgx.Row) (T, error), extras func([]T) error) ([]T, bool, error) {
	rows, err := q.Query(ctx, sql, a...)
	if err != nil {
		return nil, false, err
	}
	page, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (T, error) { return scan(r) })
	if err != nil {
		return nil, false, err
	}
	page, more := sqlsearch.Trim(page, size)
	return page, more, extras(page)
}

package postgres

import (
	"context"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
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

// args collects query parameters; add returns the placeholder of v. Every
// value of a search reaches the server this way, never inside the SQL text.
type args []any

func (a *args) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

// target describes what a search runs over.
type target struct {
	alias    string            // "m" or "v"
	attrs    map[string]string // filter key → column
	intAttrs map[string]bool   // keys compared as integers
	tags     string            // tag table
	tagJoin  string            // correlates tag alias t with alias
	orders   map[string]string // order_by key → column
	tiebreak []registry.Order  // appended unless present
}

var modelTarget = target{
	alias:    "m",
	attrs:    map[string]string{"name": "m.name"},
	tags:     "registered_model_tags",
	tagJoin:  "t.name = m.name",
	orders:   map[string]string{"name": "m.name" + byteOrder, "creation_timestamp": "m.creation_time", "last_updated_timestamp": "m.last_updated_time"},
	tiebreak: []registry.Order{{Key: "name"}},
}

var versionTarget = target{
	alias:    "v",
	attrs:    map[string]string{"name": "v.name", "run_id": "v.run_id", "source_path": "v.source", "version_number": "v.version"},
	intAttrs: map[string]bool{"version_number": true},
	tags:     "model_version_tags",
	tagJoin:  "t.name = v.name AND t.version = v.version",
	orders: map[string]string{"name": "v.name" + byteOrder, "version_number": "v.version",
		"creation_timestamp": "v.creation_time", "last_updated_timestamp": "v.last_updated_time"},
	tiebreak: []registry.Order{{Key: "name"}, {Key: "version_number", Desc: true}},
}

var sqlOps = map[string]string{"=": "=", "!=": "<>", "LIKE": "LIKE", "ILIKE": "ILIKE"}

// where translates AND-joined clauses into SQL predicates on t, with every
// value (LIKE patterns included) passed as a parameter.
func (t target) where(l layout, clauses []registry.Clause, a *args) ([]string, error) {
	var preds []string
	for _, c := range clauses {
		p, err := t.predicate(l, c, a)
		if err != nil {
			return nil, err
		}
		preds = append(preds, p)
	}
	return preds, nil
}

func (t target) predicate(l layout, c registry.Clause, a *args) (string, error) {
	op := strings.ToUpper(c.Op)
	if key, ok := strings.CutPrefix(c.Key, "tags."); ok {
		sqlOp, known := sqlOps[op]
		if !known || key == "" || len(c.Values) != 1 {
			return "", badFilter("invalid tag comparison %q %s on %d values", c.Key, c.Op, len(c.Values))
		}
		return "EXISTS (SELECT 1 FROM " + t.tags + " t WHERE " + t.tagJoin + l.wsEq("t", t.alias) +
			" AND t.key = " + a.add(key) + " AND t.value " + sqlOp + " " + a.add(c.Values[0]) + ")", nil
	}
	col, ok := t.attrs[c.Key]
	if !ok {
		return "", badFilter("invalid attribute key %q; valid keys are %s and tags.<key>", c.Key, strings.Join(sortedKeys(t.attrs), ", "))
	}
	if op == "IN" {
		if len(c.Values) == 0 {
			return "", badFilter("IN needs at least one value for %q", c.Key)
		}
		if t.intAttrs[c.Key] {
			ns, err := ints(c.Key, c.Values)
			if err != nil {
				return "", err
			}
			return col + " = ANY(" + a.add(ns) + ")", nil
		}
		return col + " = ANY(" + a.add(c.Values) + ")", nil
	}
	sqlOp, known := sqlOps[op]
	if !known || len(c.Values) != 1 {
		return "", badFilter("invalid comparison %q %s on %d values", c.Key, c.Op, len(c.Values))
	}
	if t.intAttrs[c.Key] {
		if op != "=" && op != "!=" {
			return "", badFilter("%s compares with =, != or IN, not %s", c.Key, c.Op)
		}
		ns, err := ints(c.Key, c.Values)
		if err != nil {
			return "", err
		}
		return col + " " + sqlOp + " " + a.add(ns[0]), nil
	}
	return col + " " + sqlOp + " " + a.add(c.Values[0]), nil
}

func ints(key string, vals []string) ([]int64, error) {
	ns := make([]int64, len(vals))
	for i, s := range vals {
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil || n < math.MinInt32 || n > math.MaxInt32 {
			return nil, badFilter("%s value %q is not a version number", key, s)
		}
		ns[i] = n
	}
	return ns, nil
}

// orderBy returns the ORDER BY list: the requested terms, then the unique
// tiebreak terms not already present, so pages are stable.
func (t target) orderBy(orders []registry.Order) (string, error) {
	seen := map[string]bool{}
	var terms []string
	add := func(o registry.Order) error {
		col, ok := t.orders[o.Key]
		if !ok {
			return forecast.FieldErrorf(forecast.EINVALID, "order_by", "invalid order_by key %q; valid keys are %s", o.Key, strings.Join(sortedKeys(t.orders), ", "))
		}
		if seen[col] {
			return forecast.FieldErrorf(forecast.EINVALID, "order_by", "order_by names %q twice", o.Key)
		}
		seen[col] = true
		dir := " ASC"
		if o.Desc {
			dir = " DESC"
		}
		terms = append(terms, col+dir)
		return nil
	}
	for _, o := range orders {
		if err := add(o); err != nil {
			return "", err
		}
	}
	for _, o := range t.tiebreak {
		if !seen[t.orders[o.Key]] {
			if err := add(o); err != nil {
				return "", err
			}
		}
	}
	return strings.Join(terms, ", "), nil
}

// page validates a Search's paging and returns LIMIT (one more row than
// the page, to tell whether more follow) and OFFSET.
func page(s registry.Search) (limit, offset int, err error) {
	if s.MaxResults < 1 || s.MaxResults > 1000 {
		return 0, 0, forecast.FieldErrorf(forecast.EINVALID, "max_results", "max_results must be between 1 and 1000, got %d", s.MaxResults)
	}
	if s.Offset < 0 {
		return 0, 0, forecast.FieldErrorf(forecast.EINVALID, "page_token", "invalid page token: negative offset %d", s.Offset)
	}
	return s.MaxResults + 1, s.Offset, nil
}

// searchSQL builds the query for one page of t: selection is the column
// list, from the FROM clause (alias t.alias), base extra predicates.
func (t target) searchSQL(l layout, s registry.Search, selection, from string, base []string) (string, args, error) {
	limit, offset, err := page(s)
	if err != nil {
		return "", nil, err
	}
	var a args
	preds, err := t.where(l, s.Filter, &a)
	if err != nil {
		return "", nil, err
	}
	order, err := t.orderBy(s.OrderBy)
	if err != nil {
		return "", nil, err
	}
	preds = slices.Concat(base, preds)
	sql := "SELECT " + selection + " FROM " + from + " WHERE TRUE" + l.ws(t.alias)
	for _, p := range preds {
		sql += " AND " + p
	}
	sql += " ORDER BY " + order + " LIMIT " + a.add(limit) + " OFFSET " + a.add(offset)
	return sql, a, nil
}

// fetchPage runs a query of searchSQL: it scans the rows (one more than
// the page at most), trims the extra one into more and fills in the
// page's tags and aliases with extras.
func fetchPage[T any](ctx context.Context, q querier, sql string, a args, size int,
	scan func(pgx.Row) (T, error), extras func([]T) error) ([]T, bool, error) {
	rows, err := q.Query(ctx, sql, a...)
	if err != nil {
		return nil, false, err
	}
	page, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (T, error) { return scan(r) })
	if err != nil {
		return nil, false, err
	}
	more := len(page) > size
	if more {
		page = page[:size]
	}
	return page, more, extras(page)
}

func badFilter(format string, v ...any) error {
	return forecast.FieldErrorf(forecast.EINVALID, "filter", format, v...)
}

func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}

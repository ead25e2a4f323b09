// Package sqlsearch compiles a registry.Search (MLflow's filter clauses,
// order_by and paging) into one SELECT for the SQL backends
// (registry/postgres, registry/cratedb). What differs between them is data:
// a Dialect (how IN takes its list, how the tag table's columns are
// spelled) and a Target per searched table (columns, tag table, order
// keys, tiebreak).
//
// The SQL text is built from the Target's and Dialect's constants only;
// every value of a search becomes a $n parameter.
package sqlsearch

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

// Dialect is what differs between backends' SQL.
type Dialect struct {
	// AnyArray renders IN as "col = ANY($n)" with one array parameter
	// (PostgreSQL); otherwise as "col IN ($1, $2, …)" (CrateDB).
	AnyArray bool
	// TagKey and TagValue are the tag table's key and value columns on
	// its alias t, quoted as the dialect needs.
	TagKey, TagValue string
}

// Target describes what a search runs over.
type Target struct {
	From     string            // FROM clause, the table with its alias
	Attrs    map[string]string // filter key → column
	IntAttrs map[string]bool   // keys compared as integers (version numbers)
	Tags     string            // tag table, aliased t
	TagJoin  string            // correlates the tag alias t with From's alias
	Orders   map[string]string // order_by key → column
	Tiebreak []registry.Order  // appended unless present, so pages are stable
}

// Args collects query parameters; Add returns the placeholder of v.
type Args []any

// Add appends v and returns its placeholder.
func (a *Args) Add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

var sqlOps = map[string]string{"=": "=", "!=": "<>", "LIKE": "LIKE", "ILIKE": "ILIKE"}

// Select builds the query for one page of t: selection is the column
// list, base the predicates every row must meet (SQL built by the caller
// from constants, or with placeholders of a). It asks for one row more
// than the page, so that Trim tells whether more follow.
func (d Dialect) Select(t Target, s registry.Search, selection string, base []string, a *Args) (string, error) {
	limit, offset, err := Page(s)
	if err != nil {
		return "", err
	}
	preds := slices.Clone(base)
	for _, c := range s.Filter {
		p, err := d.Predicate(t, c, a)
		if err != nil {
			return "", err
		}
		preds = append(preds, p)
	}
	order, err := t.OrderBy(s.OrderBy)
	if err != nil {
		return "", err
	}
	sql := "SELECT " + selection + " FROM " + t.From
	if len(preds) > 0 {
		sql += " WHERE " + strings.Join(preds, " AND ")
	}
	return sql + " ORDER BY " + order + " LIMIT " + a.Add(int64(limit)) + " OFFSET " + a.Add(int64(offset)), nil
}

// Predicate translates one clause into an SQL predicate on t; EINVALID
// (field "filter") for an unknown key, operator or value count.
func (d Dialect) Predicate(t Target, c registry.Clause, a *Args) (string, error) {
	op := strings.ToUpper(c.Op)
	if key, ok := strings.CutPrefix(c.Key, "tags."); ok {
		sqlOp, known := sqlOps[op]
		if !known || key == "" || len(c.Values) != 1 {
			return "", badFilter("invalid tag comparison %q %s on %d values", c.Key, c.Op, len(c.Values))
		}
		return "EXISTS (SELECT 1 FROM " + t.Tags + " t WHERE " + t.TagJoin +
			" AND " + d.TagKey + " = " + a.Add(key) + " AND " + d.TagValue + " " + sqlOp + " " + a.Add(c.Values[0]) + ")", nil
	}
	col, ok := t.Attrs[c.Key]
	if !ok {
		return "", badFilter("invalid attribute key %q; valid keys are %s and tags.<key>", c.Key, strings.Join(sortedKeys(t.Attrs), ", "))
	}
	if op == "IN" {
		if len(c.Values) == 0 {
			return "", badFilter("IN needs at least one value for %q", c.Key)
		}
		list, each, err := t.values(c)
		if err != nil {
			return "", err
		}
		return d.in(col, list, each, a), nil
	}
	sqlOp, known := sqlOps[op]
	if !known || len(c.Values) != 1 {
		return "", badFilter("invalid comparison %q %s on %d values", c.Key, c.Op, len(c.Values))
	}
	if t.IntAttrs[c.Key] && op != "=" && op != "!=" {
		return "", badFilter("%s compares with =, != or IN, not %s", c.Key, c.Op)
	}
	_, each, err := t.values(c)
	if err != nil {
		return "", err
	}
	return col + " " + sqlOp + " " + a.Add(each[0]), nil
}

// in renders "col IN list" in the dialect's form.
func (d Dialect) in(col string, list any, each []any, a *Args) string {
	if d.AnyArray {
		return col + " = ANY(" + a.Add(list) + ")"
	}
	ph := make([]string, len(each))
	for i, v := range each {
		ph[i] = a.Add(v)
	}
	return col + " IN (" + strings.Join(ph, ", ") + ")"
}

// values returns c's values as one list ([]string, or []int64 for an
// integer key) and one by one.
func (t Target) values(c registry.Clause) (list any, each []any, err error) {
	each = make([]any, len(c.Values))
	if !t.IntAttrs[c.Key] {
		for i, s := range c.Values {
			each[i] = s
		}
		return c.Values, each, nil
	}
	ns := make([]int64, len(c.Values))
	for i, s := range c.Values {
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil || n < math.MinInt32 || n > math.MaxInt32 {
			return nil, nil, badFilter("%s value %q is not a version number", c.Key, s)
		}
		ns[i], each[i] = n, n
	}
	return ns, each, nil
}

// OrderBy returns the ORDER BY list: the requested terms, then the
// tiebreak terms not already present, so pages are stable; EINVALID
// (field "order_by") for an unknown key or one named twice.
func (t Target) OrderBy(orders []registry.Order) (string, error) {
	seen := map[string]bool{}
	var terms []string
	add := func(o registry.Order) error {
		col, ok := t.Orders[o.Key]
		if !ok {
			return forecast.FieldErrorf(forecast.EINVALID, "order_by", "invalid order_by key %q; valid keys are %s", o.Key, strings.Join(sortedKeys(t.Orders), ", "))
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
	for _, o := range t.Tiebreak {
		if !seen[t.Orders[o.Key]] {
			if err := add(o); err != nil {
				return "", err
			}
		}
	}
	return strings.Join(terms, ", "), nil
}

// Page validates a Search's paging and returns LIMIT (one more row than
// the page, to tell whether more follow) and OFFSET.
func Page(s registry.Search) (limit, offset int, err error) {
	if s.MaxResults < 1 || s.MaxResults > 1000 {
		return 0, 0, forecast.FieldErrorf(forecast.EINVALID, "max_results", "max_results must be between 1 and 1000, got %d", s.MaxResults)
	}
	if s.Offset < 0 {
		return 0, 0, forecast.FieldErrorf(forecast.EINVALID, "page_token", "invalid page token: negative offset %d", s.Offset)
	}
	return s.MaxResults + 1, s.Offset, nil
}

// Trim cuts the extra row Select asked for off page and reports whether
// there was one.
func Trim[T any](page []T, size int) ([]T, bool) {
	if len(page) > size {
		return page[:size], true
	}
	return page, false
}

func badFilter(format string, v ...any) error {
	return forecast.FieldErrorf(forecast.EINVALID, "filter", format, v...)
}

func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}

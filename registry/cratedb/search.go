package cratedb

import (
	"context"
	"slices"
	"strings"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

// Search SQL is built from fixed fragments only: column names come from the
// tables below, every value of a filter becomes a $n parameter.

// modelOrder and versionOrder map order_by keys to columns.
var (
	modelOrder   = map[string]string{"name": "name", "creation_timestamp": "creation_time", "last_updated_timestamp": "last_updated_time"}
	versionOrder = map[string]string{"name": "name", "version_number": `"version"`, "creation_timestamp": "creation_time", "last_updated_timestamp": "last_updated_time"}
	// versionFilter maps filter keys (other than tags.<key>) to columns.
	versionFilter = map[string]string{"name": "name", "run_id": "run_id", "source_path": "source", "version_number": `"version"`}
)

// SearchModels returns one page of registered models. Filters on name use
// =, <>, LIKE, ILIKE or IN on the column; filters on tags.<key> become
// name IN (SELECT name FROM registered_model_tags WHERE "key" = $k AND
// "value" <op> $v). Like every scan, it sees rows once refreshed (this
// package refreshes after each write).
func (s *Store) SearchModels(ctx context.Context, q registry.Search) ([]registry.RegisteredModel, bool, error) {
	if err := checkPage(q); err != nil {
		return nil, false, err
	}
	var a args
	var conds []string
	for _, c := range q.Filter {
		cond, err := modelClause(c, &a)
		if err != nil {
			return nil, false, err
		}
		conds = append(conds, cond)
	}
	order, err := orderBy(q.OrderBy, modelOrder, []registry.Order{{Key: "name"}})
	if err != nil {
		return nil, false, err
	}
	sql := `SELECT ` + modelCols + ` FROM registered_models` + where(conds) + order + page(q, &a)
	ctx, cancel := bound(ctx)
	defer cancel()
	var out []registry.RegisteredModel
	err = s.query(ctx, "search registered models", func(scan func(...any) error) error {
		var r modelRow
		if err := scan(r.dest()...); err != nil {
			return err
		}
		out = append(out, r.model())
		return nil
	}, sql, a...)
	if err != nil {
		return nil, false, err
	}
	more := len(out) > q.MaxResults
	if more {
		out = out[:q.MaxResults]
	}
	if err := s.decorateModels(ctx, out); err != nil {
		return nil, false, err
	}
	return out, more, nil
}

func modelClause(c registry.Clause, a *args) (string, error) {
	if key, ok := strings.CutPrefix(c.Key, "tags."); ok && key != "" {
		k := a.add(key)
		cond, err := compare(`"value"`, c, a, nil)
		if err != nil {
			return "", err
		}
		return `name IN (SELECT name FROM registered_model_tags WHERE "key" = ` + k + ` AND ` + cond + `)`, nil
	}
	if c.Key != "name" {
		return "", forecast.FieldErrorf(forecast.EINVALID, "filter", "invalid filter key %q for registered models: name or tags.<key>", c.Key)
	}
	return compare("name", c, a, nil)
}

// SearchVersions returns one page of live (not soft-deleted) versions.
// Filters on tags.<key> become a correlated EXISTS subquery on
// model_version_tags (CrateDB 5.1 or later).
func (s *Store) SearchVersions(ctx context.Context, q registry.Search) ([]registry.ModelVersion, bool, error) {
	if err := checkPage(q); err != nil {
		return nil, false, err
	}
	var a args
	conds := []string{"current_stage <> " + a.add(registry.StageDeleted)}
	for _, c := range q.Filter {
		cond, err := versionClause(c, &a)
		if err != nil {
			return nil, false, err
		}
		conds = append(conds, cond)
	}
	order, err := orderBy(q.OrderBy, versionOrder, []registry.Order{{Key: "name"}, {Key: "version_number", Desc: true}})
	if err != nil {
		return nil, false, err
	}
	sql := `SELECT ` + versionCols + ` FROM model_versions mv` + where(conds) + order + page(q, &a)
	ctx, cancel := bound(ctx)
	defer cancel()
	var out []registry.ModelVersion
	err = s.query(ctx, "search model versions", func(scan func(...any) error) error {
		var r versionRow
		if err := scan(r.dest()...); err != nil {
			return err
		}
		out = append(out, r.modelVersion())
		return nil
	}, sql, a...)
	if err != nil {
		return nil, false, err
	}
	more := len(out) > q.MaxResults
	if more {
		out = out[:q.MaxResults]
	}
	if err := s.decorateVersions(ctx, out); err != nil {
		return nil, false, err
	}
	return out, more, nil
}

func versionClause(c registry.Clause, a *args) (string, error) {
	if key, ok := strings.CutPrefix(c.Key, "tags."); ok && key != "" {
		k := a.add(key)
		cond, err := compare(`t."value"`, c, a, nil)
		if err != nil {
			return "", err
		}
		return `EXISTS (SELECT 1 FROM model_version_tags t WHERE t.name = mv.name AND t."version" = mv."version" AND t."key" = ` + k + ` AND ` + cond + `)`, nil
	}
	col, ok := versionFilter[c.Key]
	if !ok {
		return "", forecast.FieldErrorf(forecast.EINVALID, "filter", "invalid filter key %q for model versions: name, run_id, source_path, version_number or tags.<key>", c.Key)
	}
	var conv func(string) (any, error)
	if c.Key == "version_number" {
		conv = func(s string) (any, error) { return registry.ParseVersion("filter", s) }
	}
	return compare(col, c, a, conv)
}

// compare renders "col <op> $n" for one clause. conv, when set, converts
// each value (version numbers); LIKE and ILIKE apply to text columns only.
func compare(col string, c registry.Clause, a *args, conv func(string) (any, error)) (string, error) {
	op := strings.ToUpper(c.Op)
	vals, err := clauseValues(c, op == "IN", conv)
	if err != nil {
		return "", err
	}
	switch {
	case op == "=":
		return col + " = " + a.add(vals[0]), nil
	case op == "!=":
		return col + " <> " + a.add(vals[0]), nil
	case (op == "LIKE" || op == "ILIKE") && conv == nil:
		return col + " " + op + " " + a.add(vals[0]), nil
	case op == "IN":
		ph := make([]string, len(vals))
		for i, v := range vals {
			ph[i] = a.add(v)
		}
		return col + " IN (" + strings.Join(ph, ", ") + ")", nil
	}
	return "", forecast.FieldErrorf(forecast.EINVALID, "filter", "invalid comparator %q for %s", c.Op, c.Key)
}

// clauseValues checks the number of values (one, or at least one for IN)
// and converts them with conv when set.
func clauseValues(c registry.Clause, list bool, conv func(string) (any, error)) ([]any, error) {
	if list && len(c.Values) == 0 {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "filter", "filter on %s %s needs at least one value", c.Key, c.Op)
	}
	if !list && len(c.Values) != 1 {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "filter", "filter on %s %s takes one value", c.Key, c.Op)
	}
	vals := make([]any, len(c.Values))
	for i, v := range c.Values {
		vals[i] = v
		if conv != nil {
			cv, err := conv(v)
			if err != nil {
				return nil, err
			}
			vals[i] = cv
		}
	}
	return vals, nil
}

// orderBy renders the ORDER BY clause: the requested terms, then each
// tiebreak term whose column is not ordered on yet, so pages are stable.
func orderBy(terms []registry.Order, cols map[string]string, tiebreak []registry.Order) (string, error) {
	var parts, used []string
	add := func(o registry.Order) error {
		col, ok := cols[o.Key]
		if !ok {
			return forecast.FieldErrorf(forecast.EINVALID, "order_by", "invalid order_by key %q", o.Key)
		}
		if slices.Contains(used, col) {
			return nil
		}
		used = append(used, col)
		dir := " ASC"
		if o.Desc {
			dir = " DESC"
		}
		parts = append(parts, col+dir)
		return nil
	}
	for _, o := range terms {
		if err := add(o); err != nil {
			return "", err
		}
	}
	for _, o := range tiebreak {
		if err := add(o); err != nil {
			return "", err
		}
	}
	return " ORDER BY " + strings.Join(parts, ", "), nil
}

func where(conds []string) string {
	if len(conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(conds, " AND ")
}

// page asks for one row more than the page so the caller learns whether
// more follow.
func page(q registry.Search, a *args) string {
	return " LIMIT " + a.add(int64(q.MaxResults+1)) + " OFFSET " + a.add(int64(q.Offset))
}

func checkPage(q registry.Search) error {
	if q.MaxResults < 1 || q.MaxResults > 1000 {
		return forecast.FieldErrorf(forecast.EINVALID, "max_results", "max_results %d is not in 1..1000", q.MaxResults)
	}
	if q.Offset < 0 {
		return forecast.FieldErrorf(forecast.EINVALID, "page_token", "page offset %d is negative", q.Offset)
	}
	return nil
}

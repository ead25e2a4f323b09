package embedded

import (
	"cmp"
	"context"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

// MaxResults is the largest page SearchModels and SearchVersions return.
const MaxResults = 1000

// searchKind is what a search may filter on (besides tags.<key>) and
// order by, and the tiebreak appended to its order (MLflow's).
type searchKind struct {
	filterKeys, orderKeys []string
	tiebreak              []registry.Order
}

func modelSearch() searchKind {
	return searchKind{
		filterKeys: []string{"name"},
		orderKeys:  []string{"name", "creation_timestamp", "last_updated_timestamp"},
		tiebreak:   []registry.Order{{Key: "name"}},
	}
}

func versionSearch() searchKind {
	return searchKind{
		filterKeys: []string{"name", "run_id", "source_path", "version_number"},
		orderKeys:  []string{"name", "version_number", "creation_timestamp", "last_updated_timestamp"},
		tiebreak:   []registry.Order{{Key: "name"}, {Key: "version_number", Desc: true}},
	}
}

// SearchModels implements registry.Store. EINVALID (field "filter",
// "order_by", "max_results" or "page_token") for what it cannot search.
func (s *Store) SearchModels(ctx context.Context, q registry.Search) ([]registry.RegisteredModel, bool, error) {
	sel, err := compileSearch(q, modelSearch())
	if err != nil {
		return nil, false, err
	}
	var out []registry.RegisteredModel
	var more bool
	err = s.view(ctx, func(st *state) error {
		var rows []row
		var refs []*model
		for _, m := range st.models {
			rows = append(rows, row{name: m.Name, created: m.CreationTime, updated: m.LastUpdatedTime, tags: m.Tags, ref: len(refs)})
			refs = append(refs, m)
		}
		var page []int
		page, more = sel.run(rows)
		for _, i := range page {
			out = append(out, refs[i].export())
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return out, more, nil
}

// SearchVersions implements registry.Store; soft-deleted versions are
// never returned. Errors as SearchModels.
func (s *Store) SearchVersions(ctx context.Context, q registry.Search) ([]registry.ModelVersion, bool, error) {
	sel, err := compileSearch(q, versionSearch())
	if err != nil {
		return nil, false, err
	}
	type ref struct {
		m *model
		v *version
	}
	var out []registry.ModelVersion
	var more bool
	err = s.view(ctx, func(st *state) error {
		var rows []row
		var refs []ref
		for _, m := range st.models {
			for _, v := range m.Versions {
				if v.CurrentStage == registry.StageDeleted {
					continue
				}
				rows = append(rows, row{
					name: m.Name, version: v.Version, runID: v.RunID, source: v.Source,
					created: v.CreationTime, updated: v.LastUpdatedTime, tags: v.Tags, ref: len(refs),
				})
				refs = append(refs, ref{m, v})
			}
		}
		var page []int
		page, more = sel.run(rows)
		for _, i := range page {
			out = append(out, refs[i].v.export(refs[i].m))
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return out, more, nil
}

// row is what a search sees of a model or a version; ref indexes the
// caller's slice of the rows' sources.
type row struct {
	name             string
	version          int64 // 0 for a model
	runID, source    string
	created, updated int64
	tags             map[string]string
	ref              int
}

// get returns the value of a filter key and whether the row has it (a tag
// may be unset).
func (r row) get(key string) (string, bool) {
	switch key {
	case "name":
		return r.name, true
	case "run_id":
		return r.runID, true
	case "source_path":
		return r.source, true
	case "version_number":
		return strconv.FormatInt(r.version, 10), true
	}
	v, ok := r.tags[strings.TrimPrefix(key, "tags.")]
	return v, ok
}

// compare orders a and b on one order key, ascending.
func compare(a, b row, key string) int {
	switch key {
	case "name":
		return strings.Compare(a.name, b.name)
	case "version_number":
		return cmp.Compare(a.version, b.version)
	case "creation_timestamp":
		return cmp.Compare(a.created, b.created)
	default: // last_updated_timestamp
		return cmp.Compare(a.updated, b.updated)
	}
}

// selection is a compiled Search.
type selection struct {
	conds  []cond
	orders []registry.Order
	limit  int
	offset int
}

// cond is one compiled filter clause.
type cond struct {
	key    string
	op     string
	values []string
	re     *regexp.Regexp // LIKE and ILIKE
}

func (c cond) match(r row) bool {
	v, ok := r.get(c.key)
	switch {
	case !ok:
		return false
	case c.re != nil:
		return c.re.MatchString(v)
	case c.op == "=":
		return v == c.values[0]
	case c.op == "!=":
		return v != c.values[0]
	default: // IN
		return slices.Contains(c.values, v)
	}
}

// run filters, orders and pages rows: it returns the refs of the page and
// whether more rows follow it.
func (sel selection) run(rows []row) ([]int, bool) {
	rows = slices.DeleteFunc(rows, func(r row) bool {
		for _, c := range sel.conds {
			if !c.match(r) {
				return true
			}
		}
		return false
	})
	slices.SortFunc(rows, func(a, b row) int {
		for _, o := range sel.orders {
			c := compare(a, b, o.Key)
			if o.Desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return 0
	})
	start := min(sel.offset, len(rows))
	end := min(start+sel.limit, len(rows))
	var refs []int
	for _, r := range rows[start:end] {
		refs = append(refs, r.ref)
	}
	return refs, end < len(rows)
}

func compileSearch(q registry.Search, k searchKind) (selection, error) {
	if q.MaxResults < 1 || q.MaxResults > MaxResults {
		return selection{}, forecast.FieldErrorf(forecast.EINVALID, "max_results", "max_results %d is not between 1 and %d", q.MaxResults, MaxResults)
	}
	if q.Offset < 0 {
		return selection{}, forecast.FieldErrorf(forecast.EINVALID, "page_token", "negative offset %d", q.Offset)
	}
	sel := selection{limit: q.MaxResults, offset: q.Offset}
	for _, c := range q.Filter {
		cc, err := compileClause(c, k.filterKeys)
		if err != nil {
			return selection{}, err
		}
		sel.conds = append(sel.conds, cc)
	}
	seen := map[string]bool{}
	for _, o := range q.OrderBy {
		if !slices.Contains(k.orderKeys, o.Key) {
			return selection{}, forecast.FieldErrorf(forecast.EINVALID, "order_by", "invalid order_by key %q; one of %s", o.Key, strings.Join(k.orderKeys, ", "))
		}
		if seen[o.Key] {
			return selection{}, forecast.FieldErrorf(forecast.EINVALID, "order_by", "order_by names %q twice", o.Key)
		}
		seen[o.Key] = true
		sel.orders = append(sel.orders, o)
	}
	for _, o := range k.tiebreak {
		if !seen[o.Key] {
			sel.orders = append(sel.orders, o)
		}
	}
	return sel, nil
}

func compileClause(c registry.Clause, keys []string) (cond, error) {
	invalid := func(format string, args ...any) (cond, error) {
		return cond{}, forecast.FieldErrorf(forecast.EINVALID, "filter", format, args...)
	}
	tagKey, isTag := strings.CutPrefix(c.Key, "tags.")
	if isTag && tagKey == "" || !isTag && !slices.Contains(keys, c.Key) {
		return invalid("invalid filter key %q; one of %s or tags.<key>", c.Key, strings.Join(keys, ", "))
	}
	switch c.Op {
	case "=", "!=", "LIKE", "ILIKE":
		if len(c.Values) != 1 {
			return invalid("%s %s takes one value, got %d", c.Key, c.Op, len(c.Values))
		}
	case "IN":
		if len(c.Values) == 0 {
			return invalid("%s IN takes at least one value", c.Key)
		}
	default:
		return invalid("invalid comparator %q; one of =, !=, LIKE, ILIKE, IN", c.Op)
	}
	out := cond{key: c.Key, op: c.Op, values: c.Values}
	if c.Key == "version_number" {
		if c.Op == "LIKE" || c.Op == "ILIKE" {
			return invalid("version_number cannot be compared with %s", c.Op)
		}
		out.values = make([]string, len(c.Values))
		for i, v := range c.Values {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return invalid("version_number %q is not an integer", v)
			}
			out.values[i] = strconv.FormatInt(n, 10)
		}
	}
	if c.Op == "LIKE" || c.Op == "ILIKE" {
		re, err := likeRegexp(c.Values[0], c.Op == "ILIKE")
		if err != nil {
			return invalid("%s pattern %q: %v", c.Op, c.Values[0], err)
		}
		out.re = re
	}
	return out, nil
}

// likeRegexp translates an SQL LIKE pattern: % matches any run of
// characters, _ one character, a backslash makes the next character
// literal (PostgreSQL's default escape).
func likeRegexp(pattern string, fold bool) (*regexp.Regexp, error) {
	var b strings.Builder
	if fold {
		b.WriteString("(?i)")
	}
	b.WriteString(`(?s)\A`)
	for i := 0; i < len(pattern); {
		r, n := utf8.DecodeRuneInString(pattern[i:])
		i += n
		switch r {
		case '%':
			b.WriteString(".*")
		case '_':
			b.WriteString(".")
		case '\\':
			if i == len(pattern) {
				return nil, errors.New("the pattern ends with the escape character")
			}
			r, n = utf8.DecodeRuneInString(pattern[i:])
			i += n
			b.WriteString(regexp.QuoteMeta(string(r)))
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString(`\z`)
	return regexp.Compile(b.String())
}

package mlflowclient

import (
	"cmp"
	"context"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/filter"
	"github.com/carbongate/carbongate/registry/mlflowjson"
)

// aliasPage is the page size AliasTargets reads models with (MLflow's
// maximum for registered-models/search).
const aliasPage = 1000

// maxAliasPages bounds AliasTargets against a server that keeps answering
// a next page.
const maxAliasPages = 10_000

var (
	// plainKey is an attribute or order_by key written bare.
	plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.]*$`)
	// bareTag is a tag key written bare after "tags.".
	bareTag = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)
	// plainOp is an operator passed on for the server to judge.
	plainOp = regexp.MustCompile(`^(?:[A-Za-z]+|[=!<>~]+)$`)
	digits  = regexp.MustCompile(`^[0-9]+$`)
)

// SearchModels implements registry.Store (GET registered-models/search).
// The clauses are written back into an MLflow filter string (FormatFilter),
// Offset becomes MLflow's page token; more is true when the server
// answers a next_page_token.
func (c *Client) SearchModels(ctx context.Context, s registry.Search) ([]registry.RegisteredModel, bool, error) {
	q, err := searchQuery(s)
	if err != nil {
		return nil, false, err
	}
	var out mlflowjson.ModelsPage
	if err := c.get(ctx, "registered-models/search", q, &out); err != nil {
		return nil, false, err
	}
	page, err := mlflowjson.Models(out.RegisteredModels)
	return page, out.NextPageToken != "", err
}

// SearchVersions implements registry.Store (GET model-versions/search),
// as SearchModels. MLflow's rows carry no aliases (GetVersion's do), and
// its default order is last_updated_timestamp DESC, name, version DESC.
func (c *Client) SearchVersions(ctx context.Context, s registry.Search) ([]registry.ModelVersion, bool, error) {
	q, err := searchQuery(s)
	if err != nil {
		return nil, false, err
	}
	var out mlflowjson.VersionsPage
	if err := c.get(ctx, "model-versions/search", q, &out); err != nil {
		return nil, false, err
	}
	page, err := mlflowjson.Versions(out.ModelVersions)
	return page, out.NextPageToken != "", err
}

// AliasTargets implements registry.Store: it pages through every
// registered model (MLflow has no call that lists aliases) and collects
// their aliases, sorted by name then alias.
func (c *Client) AliasTargets(ctx context.Context) ([]registry.AliasTarget, error) {
	var out []registry.AliasTarget
	token := ""
	for range maxAliasPages {
		q := url.Values{"max_results": {strconv.Itoa(aliasPage)}}
		if token != "" {
			q.Set("page_token", token)
		}
		var page mlflowjson.ModelsPage
		if err := c.get(ctx, "registered-models/search", q, &page); err != nil {
			return nil, err
		}
		ms, err := mlflowjson.Models(page.RegisteredModels)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			for _, a := range m.Aliases {
				out = append(out, registry.AliasTarget{Name: m.Name, Alias: a.Alias, Version: a.Version})
			}
		}
		if page.NextPageToken == "" || page.NextPageToken == token {
			slices.SortFunc(out, func(a, b registry.AliasTarget) int {
				return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Alias, b.Alias))
			})
			return out, nil
		}
		token = page.NextPageToken
	}
	return nil, forecast.Errorf(forecast.EUNAVAILABLE, "mlflow: registered-models/search keeps answering a next page after %d pages", maxAliasPages)
}

// searchQuery is the query of a search call.
func searchQuery(s registry.Search) (url.Values, error) {
	q := url.Values{}
	f, err := FormatFilter(s.Filter)
	if err != nil {
		return nil, err
	}
	if f != "" {
		q.Set("filter", f)
	}
	for _, o := range s.OrderBy {
		if !plainKey.MatchString(o.Key) {
			return nil, forecast.FieldErrorf(forecast.EINVALID, "order_by", "invalid order_by key %q", o.Key)
		}
		dir := " ASC"
		if o.Desc {
			dir = " DESC"
		}
		q.Add("order_by", o.Key+dir)
	}
	switch {
	case s.MaxResults < 0:
		return nil, forecast.FieldErrorf(forecast.EINVALID, "max_results", "max_results %d must be positive", s.MaxResults)
	case s.MaxResults > 0:
		q.Set("max_results", strconv.Itoa(s.MaxResults))
	}
	switch {
	case s.Offset < 0 || s.Offset > filter.MaxOffset:
		return nil, forecast.FieldErrorf(forecast.EINVALID, "page_token", "offset %d is out of range", s.Offset)
	case s.Offset > 0:
		q.Set("page_token", filter.EncodePageToken(s.Offset))
	}
	return q, nil
}

// FormatFilter writes clauses as an MLflow filter string: AND-joined
// comparisons, string values in single quotes (double quotes when the
// value holds a single quote), IN lists in parentheses, version_number
// digits bare, tag keys bare when they are dot-separated words and in
// backticks otherwise. MLflow compares what is between the quotes
// verbatim, with no escapes, so a value holding both quote characters, or
// ending in a backslash, cannot be written: EINVALID (field "filter"), as
// for a malformed key or operator. Operators other than MLflow's are
// passed on for the server to refuse.
func FormatFilter(cs []registry.Clause) (string, error) {
	var b strings.Builder
	for i, c := range cs {
		if i > 0 {
			b.WriteString(" AND ")
		}
		if err := writeKey(&b, c.Key); err != nil {
			return "", err
		}
		op := strings.ToUpper(c.Op)
		if !plainOp.MatchString(op) {
			return "", forecast.FieldErrorf(forecast.EINVALID, "filter", "invalid comparison operator %q", c.Op)
		}
		b.WriteString(" " + op + " ")
		if err := writeValues(&b, c, op); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

func writeKey(b *strings.Builder, key string) error {
	tag, isTag := strings.CutPrefix(key, "tags.")
	switch {
	case !isTag && plainKey.MatchString(key):
		b.WriteString(key)
	case isTag && bareTag.MatchString(tag):
		b.WriteString(key)
	case isTag && tag != "" && !strings.Contains(tag, "`"):
		b.WriteString("tags.`" + tag + "`")
	default:
		return forecast.FieldErrorf(forecast.EINVALID, "filter", "filter key %q cannot be written in an MLflow filter", key)
	}
	return nil
}

func writeValues(b *strings.Builder, c registry.Clause, op string) error {
	if op == filter.OpIn {
		if len(c.Values) == 0 {
			return forecast.FieldErrorf(forecast.EINVALID, "filter", "%s IN needs at least one value", c.Key)
		}
		b.WriteByte('(')
		for j, v := range c.Values {
			if j > 0 {
				b.WriteString(", ")
			}
			if err := writeString(b, v); err != nil {
				return err
			}
		}
		b.WriteByte(')')
		return nil
	}
	if len(c.Values) != 1 {
		return forecast.FieldErrorf(forecast.EINVALID, "filter", "%s %s needs one value, got %d", c.Key, c.Op, len(c.Values))
	}
	if v := c.Values[0]; c.Key == "version_number" && digits.MatchString(v) {
		b.WriteString(v)
		return nil
	}
	return writeString(b, c.Values[0])
}

// writeString quotes v so that MLflow reads v back verbatim.
func writeString(b *strings.Builder, v string) error {
	switch {
	case strings.HasSuffix(v, `\`):
	case !strings.Contains(v, "'"):
		b.WriteString("'" + v + "'")
		return nil
	case !strings.Contains(v, `"`):
		b.WriteString(`"` + v + `"`)
		return nil
	}
	return forecast.FieldErrorf(forecast.EINVALID, "filter", "value %q cannot be written in an MLflow filter (both quote characters, or a trailing backslash)", v)
}

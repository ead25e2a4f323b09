package mlflowapi

import (
	"context"
	"strings"

	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/filter"
	"github.com/carbongate/carbongate/registry/mlflowjson"
)

// Search limits, as MLflow's server applies them.
const (
	// DefaultModelResults and MaxModelResults are MLflow's max_results
	// default and limit for registered-models/search.
	DefaultModelResults = 100
	MaxModelResults     = 1000
	// MaxVersionResults is MLflow's max_results limit for
	// model-versions/search (and its default when omitted); pages are
	// at most PageVersionResults long, with a next_page_token for the rest.
	MaxVersionResults  = 200_000
	PageVersionResults = 1000
)

// promptTag marks MLflow prompts, which share the registry's tables.
const promptTag = "tags.mlflow.prompt.is_prompt"

// defaultVersionOrder is MLflow's order of model-versions/search when the
// request gives none.
func defaultVersionOrder() []registry.Order {
	return []registry.Order{
		{Key: filter.OrderLastUpdated, Desc: true}, {Key: filter.OrderName}, {Key: filter.OrderVersion, Desc: true},
	}
}

// searchRequest is the request of both searches.
type searchRequest struct {
	Filter     string   `json:"filter"`
	MaxResults optInt   `json:"max_results"`
	OrderBy    []string `json:"order_by"`
	PageToken  string   `json:"page_token"`
}

// search parses a search request into a registry.Search; prompts tells
// whether to drop prompts from the results (see withoutPrompts).
func (in *input) search(versions bool) (s registry.Search, dropPrompts bool, err error) {
	var req searchRequest
	if err := in.decode(&req); err != nil {
		return s, false, err
	}
	parse, limit, def := filter.ParseModels, MaxModelResults, DefaultModelResults
	if versions {
		parse, limit, def = filter.ParseVersions, MaxVersionResults, MaxVersionResults
	}
	if s.Filter, err = parse(req.Filter); err != nil {
		return s, false, err
	}
	if s.OrderBy, err = filter.ParseOrderBy(req.OrderBy, versions); err != nil {
		return s, false, err
	}
	if versions && len(s.OrderBy) == 0 {
		s.OrderBy = defaultVersionOrder()
	}
	if s.Offset, err = filter.DecodePageToken(req.PageToken); err != nil {
		return s, false, err
	}
	s.MaxResults = def
	if req.MaxResults.set {
		n := req.MaxResults.v
		if n < 1 || n > int64(limit) {
			return s, false, invalid("max_results", "Invalid value for request parameter max_results. It must be between 1 and %d, but got value %d", limit, n)
		}
		s.MaxResults = int(n)
	}
	if versions {
		s.MaxResults = min(s.MaxResults, PageVersionResults)
	}
	s.Filter, dropPrompts = withoutPrompts(s.Filter)
	return s, dropPrompts, nil
}

// withoutPrompts mirrors MLflow's SQL store: unless the filter asks for
// prompts (tag mlflow.prompt.is_prompt = 'true', or != 'false'), the
// clauses on that tag are removed (MLflow's client adds
// "tag.`mlflow.prompt.is_prompt` != 'true'" to every model search) and
// prompts are dropped from the results instead, so that models without
// the tag match.
func withoutPrompts(cs []registry.Clause) ([]registry.Clause, bool) {
	for _, c := range cs {
		if c.Key != promptTag || len(c.Values) != 1 {
			continue
		}
		v := strings.ToLower(c.Values[0])
		if c.Op == filter.OpEq && v == "true" || c.Op == filter.OpNe && v == "false" {
			return cs, false
		}
	}
	var kept []registry.Clause
	for _, c := range cs {
		if c.Key != promptTag {
			kept = append(kept, c)
		}
	}
	return kept, true
}

func isPrompt(tags []registry.Tag) bool {
	for _, t := range tags {
		if "tags."+t.Key == promptTag {
			return t.Value == "true"
		}
	}
	return false
}

// nextToken is the page token after a page read at offset, or "".
func nextToken(s registry.Search, more bool) string {
	if !more {
		return ""
	}
	return filter.EncodePageToken(s.Offset + s.MaxResults)
}

func (a *API) searchModels(ctx context.Context, in *input) (any, error) {
	s, dropPrompts, err := in.search(false)
	if err != nil {
		return nil, err
	}
	page, more, err := a.cfg.Store.SearchModels(ctx, s)
	if err != nil {
		return nil, err
	}
	out := mlflowjson.ModelsPage{NextPageToken: nextToken(s, more)}
	for _, m := range page {
		if dropPrompts && isPrompt(m.Tags) {
			continue
		}
		j, err := a.withLatest(ctx, m)
		if err != nil {
			return nil, err
		}
		out.RegisteredModels = append(out.RegisteredModels, j)
	}
	return out, nil
}

func (a *API) searchVersions(ctx context.Context, in *input) (any, error) {
	s, dropPrompts, err := in.search(true)
	if err != nil {
		return nil, err
	}
	page, more, err := a.cfg.Store.SearchVersions(ctx, s)
	if err != nil {
		return nil, err
	}
	out := mlflowjson.VersionsPage{NextPageToken: nextToken(s, more)}
	for _, v := range page {
		if dropPrompts && isPrompt(v.Tags) {
			continue
		}
		out.ModelVersions = append(out.ModelVersions, mlflowjson.FromVersion(v))
	}
	return out, nil
}

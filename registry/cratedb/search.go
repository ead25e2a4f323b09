package cratedb

import (
	"context"

	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/sqlsearch"
)

// Search SQL comes from sqlsearch: column names from the targets below,
// every value of a filter a $n parameter. Filters on tags.<key> become
// correlated EXISTS subqueries on the tag tables (CrateDB 5.1 or later).

// dialect is CrateDB's SQL for sqlsearch: IN takes a list of parameters,
// key and value are quoted.
var dialect = sqlsearch.Dialect{TagKey: `t."key"`, TagValue: `t."value"`}

var (
	modelTarget = sqlsearch.Target{
		From:     "registered_models m",
		Attrs:    map[string]string{"name": "name"},
		Tags:     "registered_model_tags",
		TagJoin:  "t.name = m.name",
		Orders:   map[string]string{"name": "name", "creation_timestamp": "creation_time", "last_updated_timestamp": "last_updated_time"},
		Tiebreak: []registry.Order{{Key: "name"}},
	}
	versionTarget = sqlsearch.Target{
		From:     "model_versions mv",
		Attrs:    map[string]string{"name": "name", "run_id": "run_id", "source_path": "source", "version_number": `"version"`},
		IntAttrs: map[string]bool{"version_number": true},
		Tags:     "model_version_tags",
		TagJoin:  `t.name = mv.name AND t."version" = mv."version"`,
		Orders:   map[string]string{"name": "name", "version_number": `"version"`, "creation_timestamp": "creation_time", "last_updated_timestamp": "last_updated_time"},
		Tiebreak: []registry.Order{{Key: "name"}, {Key: "version_number", Desc: true}},
	}
)

// SearchModels returns one page of registered models. Like every scan, it
// sees rows once refreshed (this package refreshes after each write).
func (s *Store) SearchModels(ctx context.Context, q registry.Search) ([]registry.RegisteredModel, bool, error) {
	var a sqlsearch.Args
	sql, err := dialect.Select(modelTarget, q, modelCols, nil, &a)
	if err != nil {
		return nil, false, err
	}
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
	out, more := sqlsearch.Trim(out, q.MaxResults)
	if err := s.decorateModels(ctx, out); err != nil {
		return nil, false, err
	}
	return out, more, nil
}

// SearchVersions returns one page of live (not soft-deleted) versions.
func (s *Store) SearchVersions(ctx context.Context, q registry.Search) ([]registry.ModelVersion, bool, error) {
	var a sqlsearch.Args
	live := "current_stage <> " + a.Add(registry.StageDeleted)
	sql, err := dialect.Select(versionTarget, q, versionCols, []string{live}, &a)
	if err != nil {
		return nil, false, err
	}
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
	out, more := sqlsearch.Trim(out, q.MaxResults)
	if err := s.decorateVersions(ctx, out); err != nil {
		return nil, false, err
	}
	return out, more, nil
}

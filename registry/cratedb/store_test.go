package cratedb

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

// Scripted rows, in the column order of modelCols and versionCols.
func modelRowOf(name string) []any { return row(name, int64(1000), int64(2000), "desc") }

func versionRowOf(name string, version int64, stage string) []any {
	return row(name, version, int64(1000), int64(2000), nil, "alice", stage, "s3://b/m/"+fmt.Sprint(version),
		nil, "run1", nil, registry.StatusReady, nil)
}

// withOCC appends _seq_no and _primary_term to a version row.
func withOCC(r []any, seq int64) []any { return append(r, seq, int64(1)) }

const (
	selModel   = `SELECT name, creation_time, last_updated_time, description FROM registered_models WHERE name = $1`
	selVersion = `current_stage, source, storage_location, run_id, run_link, status, status_message FROM model_versions WHERE name = $1 AND "version" = $2`
	selOCC     = `"_seq_no", "_primary_term" FROM model_versions WHERE`
	updOCC     = `UPDATE model_versions SET`
)

type opCase struct {
	name    string
	replies []*reply
	op      func(ctx context.Context, s *Store) (any, error)
	code    string // expected error code, "" for success
}

// TestOperations runs each operation against scripted replies and compares
// the statements it issued with testdata/<name>.golden; checkRules enforces
// CrateDB's rules on every transcript.
func TestOperations(t *testing.T) {
	t.Parallel()
	for _, tc := range opCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := newFake(tc.replies...)
			s := newTestStore(t, db)
			got, err := tc.op(context.Background(), s)
			if code := forecast.ErrorCode(err); code != tc.code {
				t.Fatalf("error %v (code %q), want code %q", err, code, tc.code)
			}
			outcome := fmt.Sprintf("%+v", got)
			if err != nil {
				outcome = fmt.Sprintf("error %s: %s", forecast.ErrorCode(err), forecast.ErrorMessage(err))
			}
			calls := db.transcript()
			checkRules(t, calls, err == nil)
			golden(t, tc.name, calls, outcome)
		})
	}
}

func opCases() []opCase {
	var cases []opCase
	cases = append(cases, modelCases()...)
	cases = append(cases, versionCases()...)
	cases = append(cases, aliasCases()...)
	return append(cases, searchCases()...)
}

func modelCases() []opCase {
	tags := []registry.Tag{{Key: "zone", Value: "DE"}, {Key: "horizon", Value: "48"}}
	return []opCase{
		{name: "create_model", op: func(ctx context.Context, s *Store) (any, error) {
			return s.CreateModel(ctx, "carbon-forecaster-DE", "per-zone model", tags)
		}},
		{name: "create_model_duplicate", replies: []*reply{fail("INSERT INTO registered_models", duplicate())},
			code: forecast.ECONFLICT, op: func(ctx context.Context, s *Store) (any, error) {
				return s.CreateModel(ctx, "carbon-forecaster-DE", "", tags)
			}},
		{name: "create_model_invalid_name", code: forecast.EINVALID, op: func(ctx context.Context, s *Store) (any, error) {
			return s.CreateModel(ctx, "a/b", "", nil)
		}},
		{name: "create_model_long_description", code: forecast.EINVALID, op: func(ctx context.Context, s *Store) (any, error) {
			return s.CreateModel(ctx, "m", strings.Repeat("d", registry.MaxDescriptionLen+1), nil)
		}},
		{name: "update_version_long_description", code: forecast.EINVALID, op: func(ctx context.Context, s *Store) (any, error) {
			return s.UpdateVersion(ctx, "m", 1, strings.Repeat("d", registry.MaxDescriptionLen+1))
		}},
		{name: "create_version_long_source", code: forecast.EINVALID, op: func(ctx context.Context, s *Store) (any, error) {
			return s.CreateVersion(ctx, registry.NewVersion{Name: "m", Source: "s3://" + strings.Repeat("s", registry.MaxSourceLen)})
		}},
		{name: "get_model", replies: []*reply{
			rows(selModel, modelRowOf("m")),
			rows("FROM registered_model_tags", row("m", "zone", "DE")),
			rows("FROM registered_model_aliases", row("m", "champion", "3")),
		}, op: func(ctx context.Context, s *Store) (any, error) { return s.GetModel(ctx, "m") }},
		{name: "get_model_missing", code: forecast.ENOTFOUND, op: func(ctx context.Context, s *Store) (any, error) {
			return s.GetModel(ctx, "m")
		}},
		{name: "update_model", replies: []*reply{rows(selModel, modelRowOf("m"))}, op: func(ctx context.Context, s *Store) (any, error) {
			return s.UpdateModel(ctx, "m", "new description")
		}},
		{name: "update_model_missing", replies: []*reply{execN("UPDATE registered_models", 0)}, code: forecast.ENOTFOUND,
			op: func(ctx context.Context, s *Store) (any, error) { return s.UpdateModel(ctx, "m", "x") }},
		{name: "rename_model", replies: []*reply{rows(selModel, modelRowOf("m")), rows(selModel, modelRowOf("n"))},
			op: func(ctx context.Context, s *Store) (any, error) { return s.RenameModel(ctx, "m", "n") }},
		{name: "rename_model_onto_existing", replies: []*reply{rows(selModel, modelRowOf("m")), fail("INSERT INTO registered_models", duplicate())},
			code: forecast.ECONFLICT, op: func(ctx context.Context, s *Store) (any, error) { return s.RenameModel(ctx, "m", "n") }},
		{name: "rename_model_to_itself", replies: []*reply{rows(selModel, modelRowOf("m")), rows(selModel, modelRowOf("m"))},
			op: func(ctx context.Context, s *Store) (any, error) { return s.RenameModel(ctx, "m", "m") }},
		{name: "rename_model_missing", code: forecast.ENOTFOUND,
			op: func(ctx context.Context, s *Store) (any, error) { return s.RenameModel(ctx, "m", "n") }},
		{name: "delete_model", replies: []*reply{rows(selModel, modelRowOf("m"))}, op: func(ctx context.Context, s *Store) (any, error) {
			return nil, s.DeleteModel(ctx, "m")
		}},
		{name: "delete_model_missing", code: forecast.ENOTFOUND, op: func(ctx context.Context, s *Store) (any, error) {
			return nil, s.DeleteModel(ctx, "m")
		}},
		{name: "set_model_tag", replies: []*reply{rows(selModel, modelRowOf("m"))}, op: func(ctx context.Context, s *Store) (any, error) {
			return nil, s.SetModelTag(ctx, "m", registry.Tag{Key: "zone", Value: "SE"})
		}},
		{name: "delete_model_tag", replies: []*reply{rows(selModel, modelRowOf("m"))}, op: func(ctx context.Context, s *Store) (any, error) {
			return nil, s.DeleteModelTag(ctx, "m", "zone")
		}},
		{name: "table_missing", replies: []*reply{fail(selModel, pgErr("XX000", "Relation 'registered_models' unknown"))},
			code: forecast.EUNAVAILABLE, op: func(ctx context.Context, s *Store) (any, error) { return s.GetModel(ctx, "m") }},
	}
}

func versionCases() []opCase {
	nv := registry.NewVersion{Name: "m", Source: "s3://b/m/7", RunID: "run1", UserID: "alice"}
	tagged := nv
	tagged.Tags = []registry.Tag{{Key: "mae", Value: "12.5"}}
	model := func() *reply { return rows(selModel, modelRowOf("m")) }
	allDup := []*reply{model(), rows(`SELECT max("version")`, row(int64(2)))}
	for range testMaxInserts {
		allDup = append(allDup, fail("INSERT INTO model_versions", duplicate()))
	}
	return []opCase{
		{name: "create_version_first", replies: []*reply{model(), rows(`SELECT max("version")`, row(nil))},
			op: func(ctx context.Context, s *Store) (any, error) { return s.CreateVersion(ctx, nv) }},
		{name: "create_version_with_tags", replies: []*reply{model(), rows(`SELECT max("version")`, row(int64(6)))},
			op: func(ctx context.Context, s *Store) (any, error) { return s.CreateVersion(ctx, tagged) }},
		{name: "create_version_retry", replies: []*reply{model(), rows(`SELECT max("version")`, row(int64(3))),
			fail("INSERT INTO model_versions", duplicate()),
			fail("INSERT INTO model_versions", pgErr("23505", "A document with the same primary key exists already")),
		}, op: func(ctx context.Context, s *Store) (any, error) { return s.CreateVersion(ctx, nv) }},
		{name: "create_version_exhausted", replies: allDup, code: forecast.ECONFLICT,
			op: func(ctx context.Context, s *Store) (any, error) { return s.CreateVersion(ctx, nv) }},
		{name: "create_version_model_missing", code: forecast.ENOTFOUND,
			op: func(ctx context.Context, s *Store) (any, error) { return s.CreateVersion(ctx, nv) }},
		{name: "create_version_insert_fails", replies: []*reply{model(), rows(`SELECT max("version")`, row(int64(1))),
			fail("INSERT INTO model_versions", pgErr("XX000", "UnavailableShardsException[[model_versions][1] primary shard is not active]"))},
			code: forecast.EUNAVAILABLE, op: func(ctx context.Context, s *Store) (any, error) { return s.CreateVersion(ctx, nv) }},
		{name: "get_version", replies: []*reply{
			rows(selVersion, versionRowOf("m", 3, registry.StageProduction)),
			rows("FROM model_version_tags", row("m", int64(3), "mae", "12.5")),
			rows("FROM registered_model_aliases", row("m", "champion", "3"), row("m", "old", "2")),
		}, op: func(ctx context.Context, s *Store) (any, error) { return s.GetVersion(ctx, "m", 3) }},
		{name: "get_version_deleted", replies: []*reply{rows(selVersion, versionRowOf("m", 3, registry.StageDeleted))},
			code: forecast.ENOTFOUND, op: func(ctx context.Context, s *Store) (any, error) { return s.GetVersion(ctx, "m", 3) }},
		{name: "update_version_occ_retry", replies: []*reply{
			rows(selOCC, withOCC(versionRowOf("m", 3, registry.StageNone), 7)),
			execN(updOCC, 0),
			rows(selOCC, withOCC(versionRowOf("m", 3, registry.StageNone), 8)),
			rows(selVersion, versionRowOf("m", 3, registry.StageNone)),
		}, op: func(ctx context.Context, s *Store) (any, error) { return s.UpdateVersion(ctx, "m", 3, "better") }},
		{name: "update_version_deleted_meanwhile", replies: []*reply{
			rows(selOCC, withOCC(versionRowOf("m", 3, registry.StageNone), 7)),
			execN(updOCC, 0),
			rows(selOCC, withOCC(versionRowOf("m", 3, registry.StageDeleted), 8)),
		}, code: forecast.ENOTFOUND, op: func(ctx context.Context, s *Store) (any, error) { return s.UpdateVersion(ctx, "m", 3, "x") }},
		{name: "transition_archive_existing", replies: []*reply{
			rows(selOCC, withOCC(versionRowOf("m", 4, registry.StageStaging), 1)),
			rows(`SELECT "version" FROM model_versions`, row(int64(2)), row(int64(3))),
			rows(selOCC, withOCC(versionRowOf("m", 2, registry.StageProduction), 5)),
			rows(selOCC, withOCC(versionRowOf("m", 3, registry.StageArchived), 6)), // moved meanwhile: left alone
			rows(selVersion, versionRowOf("m", 4, registry.StageProduction)),
		}, op: func(ctx context.Context, s *Store) (any, error) {
			return s.TransitionStage(ctx, "m", 4, "production", true)
		}},
		{name: "delete_version", replies: []*reply{
			rows(selVersion, versionRowOf("m", 3, registry.StageProduction)),
			rows(selOCC, withOCC(versionRowOf("m", 3, registry.StageProduction), 4)),
		}, op: func(ctx context.Context, s *Store) (any, error) { return nil, s.DeleteVersion(ctx, "m", 3) }},
		{name: "latest_versions", replies: []*reply{
			model(),
			rows("current_stage = $2 ORDER BY", versionRowOf("m", 5, registry.StageProduction)),
			rows("current_stage = $2 ORDER BY"),
		}, op: func(ctx context.Context, s *Store) (any, error) {
			return s.LatestVersions(ctx, "m", []string{"production", "Staging", "Production"})
		}},
		{name: "set_version_tag", replies: []*reply{rows(selVersion, versionRowOf("m", 3, registry.StageNone))},
			op: func(ctx context.Context, s *Store) (any, error) {
				return nil, s.SetVersionTag(ctx, "m", 3, registry.Tag{Key: "mae", Value: "11"})
			}},
		{name: "delete_version_tag", replies: []*reply{rows(selVersion, versionRowOf("m", 3, registry.StageNone))},
			op: func(ctx context.Context, s *Store) (any, error) { return nil, s.DeleteVersionTag(ctx, "m", 3, "mae") }},
	}
}

func aliasCases() []opCase {
	return []opCase{
		{name: "set_alias", replies: []*reply{rows(selVersion, versionRowOf("m", 3, registry.StageNone))},
			op: func(ctx context.Context, s *Store) (any, error) { return nil, s.SetAlias(ctx, "m", "champion", 3) }},
		{name: "set_alias_deleted_version", replies: []*reply{rows(selVersion, versionRowOf("m", 3, registry.StageDeleted))},
			code: forecast.ENOTFOUND, op: func(ctx context.Context, s *Store) (any, error) { return nil, s.SetAlias(ctx, "m", "champion", 3) }},
		{name: "set_alias_reserved", code: forecast.EINVALID,
			op: func(ctx context.Context, s *Store) (any, error) { return nil, s.SetAlias(ctx, "m", "latest", 3) }},
		{name: "delete_alias", op: func(ctx context.Context, s *Store) (any, error) { return nil, s.DeleteAlias(ctx, "m", "champion") }},
		{name: "delete_alias_missing", replies: []*reply{execN("DELETE FROM registered_model_aliases", 0)}, code: forecast.ENOTFOUND,
			op: func(ctx context.Context, s *Store) (any, error) { return nil, s.DeleteAlias(ctx, "m", "champion") }},
		{name: "version_by_alias", replies: []*reply{
			rows(`SELECT "version" FROM registered_model_aliases`, row("3")),
			rows(selVersion, versionRowOf("m", 3, registry.StageNone)),
			rows("FROM registered_model_aliases WHERE name IN", row("m", "champion", "3")),
		}, op: func(ctx context.Context, s *Store) (any, error) { return s.VersionByAlias(ctx, "m", "champion") }},
		{name: "version_by_alias_missing", code: forecast.ENOTFOUND,
			op: func(ctx context.Context, s *Store) (any, error) { return s.VersionByAlias(ctx, "m", "champion") }},
		{name: "alias_targets", replies: []*reply{rows("FROM registered_model_aliases", row("a", "champion", "2"), row("b", "champion", "7"))},
			op: func(ctx context.Context, s *Store) (any, error) { return s.AliasTargets(ctx) }},
	}
}

func searchCases() []opCase {
	return []opCase{
		{name: "search_models", replies: []*reply{
			rows("FROM registered_models m WHERE", modelRowOf("carbon-forecaster-DE"), modelRowOf("carbon-forecaster-ES")),
		}, op: func(ctx context.Context, s *Store) (any, error) {
			page, more, err := s.SearchModels(ctx, registry.Search{
				Filter: []registry.Clause{
					{Key: "name", Op: "LIKE", Values: []string{"carbon-forecaster-%"}},
					{Key: "tags.zone", Op: "ILIKE", Values: []string{"%e%"}},
					{Key: "tags.signal", Op: "=", Values: []string{"carbon_intensity"}},
				},
				OrderBy:    []registry.Order{{Key: "last_updated_timestamp", Desc: true}},
				MaxResults: 1, Offset: 10,
			})
			return fmt.Sprintf("more=%v page=%+v", more, page), err
		}},
		{name: "search_models_all", op: func(ctx context.Context, s *Store) (any, error) {
			page, more, err := s.SearchModels(ctx, registry.Search{MaxResults: 100})
			return fmt.Sprintf("more=%v page=%+v", more, page), err
		}},
		{name: "search_versions", replies: []*reply{
			rows("FROM model_versions mv", versionRowOf("m", 4, registry.StageNone)),
		}, op: func(ctx context.Context, s *Store) (any, error) {
			page, more, err := s.SearchVersions(ctx, registry.Search{
				Filter: []registry.Clause{
					{Key: "name", Op: "=", Values: []string{"m"}},
					{Key: "run_id", Op: "!=", Values: []string{"r0"}},
					{Key: "source_path", Op: "ILIKE", Values: []string{"S3://%"}},
					{Key: "version_number", Op: "IN", Values: []string{"3", "4"}},
					{Key: "tags.mae", Op: "LIKE", Values: []string{"1%"}},
				},
				OrderBy:    []registry.Order{{Key: "version_number"}},
				MaxResults: 5,
			})
			return fmt.Sprintf("more=%v page=%+v", more, page), err
		}},
		{name: "search_versions_bad_key", code: forecast.EINVALID, op: func(ctx context.Context, s *Store) (any, error) {
			_, _, err := s.SearchVersions(ctx, registry.Search{
				Filter: []registry.Clause{{Key: "name; DROP TABLE model_versions", Op: "=", Values: []string{"x"}}}, MaxResults: 5})
			return nil, err
		}},
	}
}

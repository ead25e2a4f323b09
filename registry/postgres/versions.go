package postgres

import (
	"context"
	"errors"
	"math"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/sqlsearch"
)

// CreateAttempts bounds CreateVersion's retries on a version-number
// conflict (another writer, e.g. an MLflow server, took the number).
const CreateAttempts = 5

// notDeleted excludes soft-deleted versions of alias v.
const notDeleted = ` AND v.current_stage IS DISTINCT FROM '` + registry.StageDeleted + `'`

// The redacted values MLflow writes into a soft-deleted version.
const (
	redactedSource  = "REDACTED-SOURCE-PATH"
	redactedRunID   = "REDACTED-RUN-ID"
	redactedRunLink = "REDACTED-RUN-LINK"
)

func versionCols(l layout) string {
	storage := `''`
	if l.storageLocation {
		storage = `COALESCE(v.storage_location, '')`
	}
	return `v.name, v.version, COALESCE(v.creation_time, 0), COALESCE(v.last_updated_time, 0),
COALESCE(v.description, ''), COALESCE(v.user_id, ''), COALESCE(v.current_stage, '` + registry.StageNone + `'),
COALESCE(v.source, ''), COALESCE(v.run_id, ''), COALESCE(v.run_link, ''),
COALESCE(v.status, '` + registry.StatusReady + `'), COALESCE(v.status_message, ''), ` + storage
}

func scanVersion(row pgx.Row) (registry.ModelVersion, error) {
	var v registry.ModelVersion
	err := row.Scan(&v.Name, &v.Version, &v.CreationTime, &v.LastUpdatedTime, &v.Description, &v.UserID,
		&v.CurrentStage, &v.Source, &v.RunID, &v.RunLink, &v.Status, &v.StatusMessage, &v.StorageLocation)
	return v, err
}

func versionNotFound(name string, version int64) error {
	return forecast.Errorf(forecast.ENOTFOUND, "Model Version (name=%s, version=%d) not found", name, version)
}

// checkVersion: numbers outside model_versions.version's INTEGER range
// name no version.
func checkVersion(name string, version int64) error {
	if version < 1 || version > math.MaxInt32 {
		return versionNotFound(name, version)
	}
	return nil
}

// CreateVersion allocates the next version number under the model's row
// lock (max over all versions, soft-deleted included, + 1), inserts the
// version with its tags and bumps the model's last_updated_time, retrying
// on a unique violation up to CreateAttempts times.
func (s *Store) CreateVersion(ctx context.Context, nv registry.NewVersion) (registry.ModelVersion, error) {
	nv, err := registry.ValidateNewVersion(nv)
	if err != nil {
		return registry.ModelVersion{}, err
	}
	tags, err := validTags(nv.Tags)
	if err != nil {
		return registry.ModelVersion{}, err
	}
	nv.Tags = tags
	var v registry.ModelVersion
	for attempt := 1; ; attempt++ {
		err = s.write(ctx, "create model version", func(ctx context.Context, tx pgx.Tx, l layout) error {
			var err error
			v, err = createVersion(ctx, tx, l, nv, s.millis())
			return err
		})
		if forecast.ErrorCode(err) != forecast.ECONFLICT || ctx.Err() != nil {
			return v, err
		}
		if attempt == CreateAttempts {
			return v, &forecast.Error{Code: forecast.ECONFLICT,
				Message: "Model Version creation error (name=" + nv.Name + "): giving up after conflicting writers", Err: err}
		}
	}
}

func createVersion(ctx context.Context, tx pgx.Tx, l layout, nv registry.NewVersion, now int64) (registry.ModelVersion, error) {
	if err := lockModel(ctx, tx, l, nv.Name); err != nil {
		return registry.ModelVersion{}, err
	}
	var next int64
	if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(v.version), 0) + 1 FROM model_versions v WHERE v.name = $1`+l.ws("v"), nv.Name).Scan(&next); err != nil {
		return registry.ModelVersion{}, err
	}
	_, err := tx.Exec(ctx, `INSERT INTO model_versions (`+l.wsCol()+`name, version, creation_time, last_updated_time,
	description, user_id, current_stage, source, run_id, run_link, status)
VALUES (`+l.wsVal()+`$1, $2, $3, $3, $4, $5, $6, $7, $8, $9, $10)`,
		nv.Name, next, now, nullIfEmpty(nv.Description), nullIfEmpty(nv.UserID), registry.StageNone,
		nv.Source, nullIfEmpty(nv.RunID), nullIfEmpty(nv.RunLink), nv.Status)
	if err != nil {
		return registry.ModelVersion{}, err
	}
	if _, err := tx.Exec(ctx, `UPDATE registered_models m SET last_updated_time = $2 WHERE m.name = $1`+l.ws("m"), nv.Name, now); err != nil {
		return registry.ModelVersion{}, err
	}
	for _, t := range nv.Tags {
		if _, err := upsertVersionTag(ctx, tx, l, nv.Name, next, t); err != nil {
			return registry.ModelVersion{}, err
		}
	}
	return getVersion(ctx, tx, l, nv.Name, next)
}

// GetVersion returns a live version with its tags and aliases.
func (s *Store) GetVersion(ctx context.Context, name string, version int64) (registry.ModelVersion, error) {
	if err := checkVersion(name, version); err != nil {
		return registry.ModelVersion{}, err
	}
	var v registry.ModelVersion
	err := s.read(ctx, "get model version", func(ctx context.Context, q querier, l layout) error {
		var err error
		v, err = getVersion(ctx, q, l, name, version)
		return err
	})
	return v, err
}

func getVersion(ctx context.Context, q querier, l layout, name string, version int64) (registry.ModelVersion, error) {
	v, err := scanVersion(q.QueryRow(ctx, `SELECT `+versionCols(l)+` FROM model_versions v
WHERE v.name = $1 AND v.version = $2`+l.ws("v")+notDeleted, name, version))
	if errors.Is(err, pgx.ErrNoRows) {
		return v, versionNotFound(name, version)
	}
	if err != nil {
		return v, err
	}
	vs := []registry.ModelVersion{v}
	if err := versionExtras(ctx, q, l, vs); err != nil {
		return v, err
	}
	return vs[0], nil
}

// lockVersion takes a live version's row lock; ENOTFOUND if absent.
func lockVersion(ctx context.Context, tx pgx.Tx, l layout, name string, version int64) error {
	if err := checkVersion(name, version); err != nil {
		return err
	}
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM model_versions v WHERE v.name = $1 AND v.version = $2`+l.ws("v")+notDeleted+` FOR UPDATE`,
		name, version).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return versionNotFound(name, version)
	}
	return err
}

// lockModelThenVersion is lockVersion for writes that also update the
// model row: model first, as CreateVersion, RenameModel and DeleteModel
// lock, so concurrent writers queue instead of deadlocking.
func lockModelThenVersion(ctx context.Context, tx pgx.Tx, l layout, name string, version int64) error {
	if err := checkVersion(name, version); err != nil {
		return err
	}
	if err := lockModel(ctx, tx, l, name); err != nil {
		if forecast.ErrorCode(err) == forecast.ENOTFOUND {
			return versionNotFound(name, version)
		}
		return err
	}
	return lockVersion(ctx, tx, l, name, version)
}

type versionKey struct {
	name    string
	version int64
}

// versionExtras fills in the tags and aliases of vs.
func versionExtras(ctx context.Context, q querier, l layout, vs []registry.ModelVersion) error {
	if len(vs) == 0 {
		return nil
	}
	idx := make(map[versionKey]int, len(vs))
	names, nums := make([]string, len(vs)), make([]int64, len(vs))
	for i, v := range vs {
		idx[versionKey{v.Name, v.Version}], names[i], nums[i] = i, v.Name, v.Version
	}
	keys := `(SELECT * FROM unnest($1::text[], $2::int[]))`
	rows, err := q.Query(ctx, `SELECT t.name, t.version, t.key, COALESCE(t.value, '') FROM model_version_tags t
WHERE (t.name, t.version) IN `+keys+l.ws("t")+` ORDER BY t.key`+byteOrder, names, nums)
	if err != nil {
		return err
	}
	var k versionKey
	var t registry.Tag
	if _, err := pgx.ForEachRow(rows, []any{&k.name, &k.version, &t.Key, &t.Value}, func() error {
		vs[idx[k]].Tags = append(vs[idx[k]].Tags, t)
		return nil
	}); err != nil {
		return err
	}
	rows, err = q.Query(ctx, `SELECT a.name, a.version, a.alias FROM registered_model_aliases a
WHERE (a.name, a.version) IN `+keys+l.ws("a")+` ORDER BY a.alias`+byteOrder, names, nums)
	if err != nil {
		return err
	}
	var alias string
	_, err = pgx.ForEachRow(rows, []any{&k.name, &k.version, &alias}, func() error {
		if i, ok := idx[k]; ok {
			vs[i].Aliases = append(vs[i].Aliases, alias)
		}
		return nil
	})
	return err
}

// UpdateVersion sets a live version's description and bumps its
// last_updated_time.
func (s *Store) UpdateVersion(ctx context.Context, name string, version int64, description string) (registry.ModelVersion, error) {
	if err := registry.ValidateDescription(description); err != nil {
		return registry.ModelVersion{}, err
	}
	var v registry.ModelVersion
	err := s.write(ctx, "update model version", func(ctx context.Context, tx pgx.Tx, l layout) error {
		if err := lockVersion(ctx, tx, l, name, version); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE model_versions v SET description = $3, last_updated_time = $4
WHERE v.name = $1 AND v.version = $2`+l.ws("v"), name, version, nullIfEmpty(description), s.millis()); err != nil {
			return err
		}
		var err error
		v, err = getVersion(ctx, tx, l, name, version)
		return err
	})
	return v, err
}

// TransitionStage moves a live version to stage (any case; EINVALID if
// unknown); with archiveExisting (only for Staging and Production, else
// EINVALID, as MLflow) the model's other versions in that stage move to
// Archived. The model's last_updated_time is bumped.
func (s *Store) TransitionStage(ctx context.Context, name string, version int64, stage string, archiveExisting bool) (registry.ModelVersion, error) {
	stage, err := registry.ValidateStage(stage)
	if err != nil {
		return registry.ModelVersion{}, err
	}
	if archiveExisting && stage != registry.StageStaging && stage != registry.StageProduction {
		return registry.ModelVersion{}, forecast.FieldErrorf(forecast.EINVALID, "archive_existing_versions",
			"model version transition cannot archive existing model versions because %q is not an active stage; valid stages are Staging and Production", stage)
	}
	var v registry.ModelVersion
	err = s.write(ctx, "transition model version stage", func(ctx context.Context, tx pgx.Tx, l layout) error {
		if err := lockModelThenVersion(ctx, tx, l, name, version); err != nil {
			return err
		}
		now := s.millis()
		if archiveExisting {
			if _, err := tx.Exec(ctx, `UPDATE model_versions v SET current_stage = $4, last_updated_time = $5
WHERE v.name = $1 AND v.version <> $2 AND v.current_stage = $3`+l.ws("v"), name, version, stage, registry.StageArchived, now); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE model_versions v SET current_stage = $3, last_updated_time = $4
WHERE v.name = $1 AND v.version = $2`+l.ws("v"), name, version, stage, now); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE registered_models m SET last_updated_time = $2 WHERE m.name = $1`+l.ws("m"), name, now); err != nil {
			return err
		}
		var err error
		v, err = getVersion(ctx, tx, l, name, version)
		return err
	})
	return v, err
}

// DeleteVersion soft-deletes as MLflow does: current_stage
// 'Deleted_Internal', description, user and status message cleared,
// source, run id and run link redacted, the version's aliases removed, its
// tags kept; the model's last_updated_time is bumped. The number is never
// reused.
func (s *Store) DeleteVersion(ctx context.Context, name string, version int64) error {
	return s.write(ctx, "delete model version", func(ctx context.Context, tx pgx.Tx, l layout) error {
		if err := lockModelThenVersion(ctx, tx, l, name, version); err != nil {
			return err
		}
		now := s.millis()
		if _, err := tx.Exec(ctx, `UPDATE registered_models m SET last_updated_time = $2 WHERE m.name = $1`+l.ws("m"), name, now); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM registered_model_aliases a WHERE a.name = $1 AND a.version = $2`+l.ws("a"), name, version); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE model_versions v SET current_stage = $3, last_updated_time = $4,
	description = NULL, user_id = NULL, status_message = NULL, source = $5, run_id = $6, run_link = $7
WHERE v.name = $1 AND v.version = $2`+l.ws("v"),
			name, version, registry.StageDeleted, now, redactedSource, redactedRunID, redactedRunLink)
		return err
	})
}

// LatestVersions returns the highest live version per stage, in the order
// of stages (any case, duplicates ignored; all four when empty).
func (s *Store) LatestVersions(ctx context.Context, name string, stages []string) ([]registry.ModelVersion, error) {
	want, err := canonicalStages(stages)
	if err != nil {
		return nil, err
	}
	var out []registry.ModelVersion
	err = s.read(ctx, "get latest versions", func(ctx context.Context, q querier, l layout) error {
		var one int
		if err := q.QueryRow(ctx, `SELECT 1 FROM registered_models m WHERE m.name = $1`+l.ws("m"), name).Scan(&one); errors.Is(err, pgx.ErrNoRows) {
			return modelNotFound(name)
		} else if err != nil {
			return err
		}
		rows, err := q.Query(ctx, `SELECT DISTINCT ON (v.current_stage) `+versionCols(l)+` FROM model_versions v
WHERE v.name = $1 AND v.current_stage = ANY($2)`+l.ws("v")+` ORDER BY v.current_stage, v.version DESC`, name, want)
		if err != nil {
			return err
		}
		vs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (registry.ModelVersion, error) { return scanVersion(r) })
		if err != nil {
			return err
		}
		for _, stage := range want {
			if i := slices.IndexFunc(vs, func(v registry.ModelVersion) bool { return v.CurrentStage == stage }); i >= 0 {
				out = append(out, vs[i])
			}
		}
		return versionExtras(ctx, q, l, out)
	})
	return out, err
}

func canonicalStages(stages []string) ([]string, error) {
	if len(stages) == 0 {
		return []string{registry.StageNone, registry.StageStaging, registry.StageProduction, registry.StageArchived}, nil
	}
	var out []string
	for _, st := range stages {
		c, err := registry.ValidateStage(st)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// SearchVersions returns one page of live versions matching s.Filter
// (name, run_id, source_path, version_number, tags.<key>), ordered by
// s.OrderBy then name ascending, version descending.
func (s *Store) SearchVersions(ctx context.Context, search registry.Search) ([]registry.ModelVersion, bool, error) {
	var page []registry.ModelVersion
	var more bool
	err := s.read(ctx, "search model versions", func(ctx context.Context, q querier, l layout) error {
		var a sqlsearch.Args
		sql, err := dialect.Select(l.versionTarget(), search, versionCols(l),
			append(l.wsPred("v"), "v.current_stage IS DISTINCT FROM '"+registry.StageDeleted+"'"), &a)
		if err != nil {
			return err
		}
		page, more, err = fetchPage(ctx, q, sql, a, search.MaxResults, scanVersion,
			func(p []registry.ModelVersion) error { return versionExtras(ctx, q, l, p) })
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return page, more, nil
}

func upsertVersionTag(ctx context.Context, q querier, l layout, name string, version int64, t registry.Tag) (int64, error) {
	tag, err := q.Exec(ctx, `INSERT INTO model_version_tags (`+l.wsCol()+`key, value, name, version)
SELECT `+l.wsSel("v")+`$1, $2, v.name, v.version FROM model_versions v
WHERE v.name = $3 AND v.version = $4`+l.ws("v")+notDeleted+`
ON CONFLICT `+l.key("key, name, version")+` DO UPDATE SET value = EXCLUDED.value`, t.Key, t.Value, name, version)
	return tag.RowsAffected(), err
}

// SetVersionTag sets (or replaces) a tag of a live version.
func (s *Store) SetVersionTag(ctx context.Context, name string, version int64, tag registry.Tag) error {
	if err := registry.ValidateTag(tag); err != nil {
		return err
	}
	if err := checkVersion(name, version); err != nil {
		return err
	}
	return s.write(ctx, "set model version tag", func(ctx context.Context, tx pgx.Tx, l layout) error {
		n, err := upsertVersionTag(ctx, tx, l, name, version, tag)
		if err == nil && n == 0 {
			err = versionNotFound(name, version)
		}
		return err
	})
}

// DeleteVersionTag removes a tag of a live version; ENOTFOUND if the
// version is absent, nil if only the tag is (as MLflow).
func (s *Store) DeleteVersionTag(ctx context.Context, name string, version int64, key string) error {
	if key == "" {
		return forecast.FieldErrorf(forecast.EINVALID, "key", "missing value for parameter 'key'")
	}
	return s.write(ctx, "delete model version tag", func(ctx context.Context, tx pgx.Tx, l layout) error {
		if err := lockVersion(ctx, tx, l, name, version); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM model_version_tags t WHERE t.name = $1 AND t.version = $2 AND t.key = $3`+l.ws("t"), name, version, key)
		return err
	})
}

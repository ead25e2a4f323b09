package cratedb

import (
	"context"
	"slices"
	"strconv"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/sqlsearch"
)

// TransitionStage sets the stage, then (archiveExisting, Staging or
// Production only) moves the model's other versions in that stage to
// Archived. The new version is promoted first so that a failure part-way
// leaves two versions in the stage, not none: a serving gap is worse than
// a late archive, and LatestVersions still picks the highest.
func (s *Store) TransitionStage(ctx context.Context, name string, version int64, stage string, archiveExisting bool) (registry.ModelVersion, error) {
	if err := checkVersionArgs(name, version); err != nil {
		return registry.ModelVersion{}, err
	}
	stage, err := registry.ValidateStage(stage)
	if err != nil {
		return registry.ModelVersion{}, err
	}
	ctx, cancel := bound(ctx)
	defer cancel()
	now := s.millis()
	setStage := func(_ *versionRow, a *sqlsearch.Args) (string, bool) {
		return "current_stage = " + a.Add(stage) + ", last_updated_time = " + a.Add(now), true
	}
	if err := s.updateVersion(ctx, "transition model version stage", name, version, setStage); err != nil {
		return registry.ModelVersion{}, err
	}
	if err := s.refresh(ctx, tVersions); err != nil {
		return registry.ModelVersion{}, err
	}
	if archiveExisting && (stage == registry.StageStaging || stage == registry.StageProduction) {
		if err := s.archiveOthers(ctx, name, version, stage, now); err != nil {
			return registry.ModelVersion{}, err
		}
	}
	return s.getVersion(ctx, name, version)
}

// archiveOthers moves the other versions in stage to Archived, each only
// if it is still in stage when updated.
func (s *Store) archiveOthers(ctx context.Context, name string, version int64, stage string, now int64) error {
	var others []int64
	err := s.query(ctx, "archive existing versions", func(scan func(...any) error) error {
		var v int64
		err := scan(&v)
		others = append(others, v)
		return err
	}, `SELECT "version" FROM model_versions WHERE name = $1 AND current_stage = $2 AND "version" <> $3 ORDER BY "version"`, name, stage, version)
	if err != nil || len(others) == 0 {
		return err
	}
	archive := func(r *versionRow, a *sqlsearch.Args) (string, bool) {
		if str(r.stage) != stage {
			return "", false
		}
		return "current_stage = " + a.Add(registry.StageArchived) + ", last_updated_time = " + a.Add(now), true
	}
	for _, v := range others {
		err := s.updateVersion(ctx, "archive existing versions", name, v, archive)
		if err != nil && forecast.ErrorCode(err) != forecast.ENOTFOUND {
			return err
		}
	}
	return s.refresh(ctx, tVersions)
}

// DeleteVersion soft-deletes as MLflow does, in the order that leaves
// nothing half-visible: first the aliases that point at the version (so it
// stops serving), then the row itself is marked Deleted_Internal with its
// personal fields redacted (from then on it is invisible), then its tags
// are removed; tags left by a failure at that point belong to an invisible
// version whose number is never reused. The alias and tag deletes filter on
// (name, version), not a full primary key, so each follows a REFRESH TABLE.
func (s *Store) DeleteVersion(ctx context.Context, name string, version int64) error {
	if err := checkVersionArgs(name, version); err != nil {
		return err
	}
	ctx, cancel := bound(ctx)
	defer cancel()
	if _, err := s.liveVersion(ctx, name, version); err != nil {
		return err
	}
	if err := s.refresh(ctx, tAliases); err != nil {
		return err
	}
	if _, err := s.exec(ctx, "delete model version", `DELETE FROM registered_model_aliases WHERE name = $1 AND "version" = $2`, name, strconv.FormatInt(version, 10)); err != nil {
		return err
	}
	now := s.millis()
	err := s.updateVersion(ctx, "delete model version", name, version, func(_ *versionRow, a *sqlsearch.Args) (string, bool) {
		return "current_stage = " + a.Add(registry.StageDeleted) + ", last_updated_time = " + a.Add(now) +
			", description = NULL, user_id = NULL, source = " + a.Add("REDACTED-SOURCE-PATH") +
			", run_id = " + a.Add("REDACTED-RUN-ID") + ", run_link = " + a.Add("REDACTED-RUN-LINK") + ", status_message = NULL", true
	})
	if err != nil {
		return err
	}
	if err := s.refresh(ctx, tVerTag); err != nil {
		return err
	}
	if _, err := s.exec(ctx, "delete model version", `DELETE FROM model_version_tags WHERE name = $1 AND "version" = $2`, name, version); err != nil {
		return err
	}
	if _, err := s.exec(ctx, "delete model version", `UPDATE registered_models SET last_updated_time = $1 WHERE name = $2`, now, name); err != nil {
		return err
	}
	return s.refresh(ctx, tAliases, tVersions, tVerTag, tModels)
}

// LatestVersions runs one query per stage for its highest live version.
func (s *Store) LatestVersions(ctx context.Context, name string, stages []string) ([]registry.ModelVersion, error) {
	if err := registry.ValidateName("name", name); err != nil {
		return nil, err
	}
	want, err := canonicalStages(stages)
	if err != nil {
		return nil, err
	}
	ctx, cancel := bound(ctx)
	defer cancel()
	if _, ok, err := s.modelByName(ctx, name); err != nil {
		return nil, err
	} else if !ok {
		return nil, modelNotFound(name)
	}
	var out []registry.ModelVersion
	for _, stage := range want {
		err := s.query(ctx, "get latest versions", func(scan func(...any) error) error {
			var r versionRow
			if err := scan(r.dest()...); err != nil {
				return err
			}
			out = append(out, r.modelVersion())
			return nil
		}, `SELECT `+versionCols+` FROM model_versions WHERE name = $1 AND current_stage = $2 ORDER BY "version" DESC LIMIT 1`, name, stage)
		if err != nil {
			return nil, err
		}
	}
	if err := s.decorateVersions(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// canonicalStages validates and de-duplicates stages; empty means all.
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

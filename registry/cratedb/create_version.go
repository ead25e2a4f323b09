package cratedb

import (
	"context"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/internal/pgwire"
	"github.com/carbongate/carbongate/registry"
)

const insertVersion = `INSERT INTO model_versions (name, "version", creation_time, last_updated_time, description, user_id, current_stage, source, storage_location, run_id, run_link, status, status_message) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`

// CreateVersion allocates the next version number without a sequence or a
// lock, neither of which CrateDB has:
//
//  1. REFRESH TABLE model_versions, then read max(version) over every row of
//     the model, soft-deleted ones included, so numbers are never reused;
//  2. INSERT the row with max+1 and no ON CONFLICT clause: the primary key
//     (name, version) rejects it with a duplicate-key error when a
//     concurrent writer took the number first (its row may not be visible
//     to step 1 yet, but the primary key check sees it at once);
//  3. on that error try the next number. Every rejection means a concurrent
//     registration took that number, so the numbers stay gap-free and each
//     call ends after at most as many rejections as there are concurrent
//     registrations (MaxVersionInserts bounds a runaway: ECONFLICT). MLflow
//     clients do not retry a failed registration, so the store does.
//
// The version's tags are written after its row, since its number is known
// only then. So that a failure in between does not leave a version that
// looks complete but lacks tags, a version with tags is inserted as
// PENDING_REGISTRATION and set to its final status (READY by default) once
// the tags are in; a failure leaves it pending, as MLflow clients expect of
// an unfinished registration. The model's last_updated_time is bumped last.
func (s *Store) CreateVersion(ctx context.Context, nv registry.NewVersion) (registry.ModelVersion, error) {
	v, err := s.checkNewVersion(nv)
	if err != nil {
		return registry.ModelVersion{}, err
	}
	ctx, cancel := bound(ctx)
	defer cancel()
	if _, ok, err := s.modelByName(ctx, v.Name); err != nil {
		return registry.ModelVersion{}, err
	} else if !ok {
		return registry.ModelVersion{}, modelNotFound(v.Name)
	}
	insertStatus := v.Status
	if len(v.Tags) > 0 {
		insertStatus = registry.StatusPending
	}
	if v.Version, err = s.allocateVersion(ctx, v, insertStatus); err != nil {
		return registry.ModelVersion{}, err
	}
	for _, t := range v.Tags {
		if err := s.upsertVersionTag(ctx, v.Name, v.Version, t); err != nil {
			return registry.ModelVersion{}, err
		}
	}
	if insertStatus != v.Status {
		if _, err := s.exec(ctx, "create model version", `UPDATE model_versions SET status = $1 WHERE name = $2 AND "version" = $3`, v.Status, v.Name, v.Version); err != nil {
			return registry.ModelVersion{}, err
		}
	}
	if _, err := s.exec(ctx, "create model version", `UPDATE registered_models SET last_updated_time = $1 WHERE name = $2`, v.LastUpdatedTime, v.Name); err != nil {
		return registry.ModelVersion{}, err
	}
	touched := []string{tVersions, tModels}
	if len(v.Tags) > 0 {
		touched = append(touched, tVerTag)
	}
	if err := s.refresh(ctx, touched...); err != nil {
		return registry.ModelVersion{}, err
	}
	return v, nil
}

// checkNewVersion validates nv and returns the version to write, without
// its number.
func (s *Store) checkNewVersion(nv registry.NewVersion) (registry.ModelVersion, error) {
	nv, err := registry.ValidateNewVersion(nv)
	if err != nil {
		return registry.ModelVersion{}, err
	}
	now := s.millis()
	return registry.ModelVersion{
		Name: nv.Name, CreationTime: now, LastUpdatedTime: now, Description: nv.Description,
		UserID: nv.UserID, CurrentStage: registry.StageNone, Source: nv.Source, RunID: nv.RunID,
		RunLink: nv.RunLink, Status: nv.Status, Tags: normTags(nv.Tags),
	}, nil
}

// allocateVersion inserts v's row under the first free number after the
// highest existing one and returns that number.
func (s *Store) allocateVersion(ctx context.Context, v registry.ModelVersion, status string) (int64, error) {
	next, err := s.maxVersion(ctx, v.Name)
	if err != nil {
		return 0, err
	}
	for range s.maxInserts {
		next++
		n, err := s.db.Exec(ctx, insertVersion, v.Name, next, v.CreationTime, v.LastUpdatedTime, opt(v.Description),
			opt(v.UserID), v.CurrentStage, v.Source, opt(v.StorageLocation), opt(v.RunID), opt(v.RunLink), status, opt(v.StatusMessage))
		switch {
		case err == nil && n == 1:
			return next, nil
		case err == nil || pgwire.Duplicate(err):
			// Taken by a concurrent writer. (A single-row INSERT reports a
			// duplicate as an error; 0 rows is treated the same way.)
			continue
		default:
			return 0, backend.Classify(ctx, "create model version", err)
		}
	}
	return 0, forecast.Errorf(forecast.ECONFLICT,
		"could not allocate a version number for registered model %s: %d concurrent registrations took the numbers tried; retry", v.Name, s.maxInserts)
}

// maxVersion is the highest version of the model, soft-deleted versions
// included; 0 when it has none. The REFRESH TABLE before it makes every
// insert that has returned visible to the (non-primary-key) aggregate.
func (s *Store) maxVersion(ctx context.Context, name string) (int64, error) {
	if err := s.refresh(ctx, tVersions); err != nil {
		return 0, err
	}
	var highest *int64
	err := s.query(ctx, "create model version", func(scan func(...any) error) error {
		return scan(&highest)
	}, `SELECT max("version") FROM model_versions WHERE name = $1`, name)
	return num(highest), err
}

func (s *Store) upsertVersionTag(ctx context.Context, name string, version int64, t registry.Tag) error {
	_, err := s.exec(ctx, "set model version tag",
		`INSERT INTO model_version_tags (name, "version", "key", "value") VALUES ($1, $2, $3, $4) ON CONFLICT (name, "version", "key") DO UPDATE SET "value" = excluded."value"`,
		name, version, t.Key, t.Value)
	return err
}

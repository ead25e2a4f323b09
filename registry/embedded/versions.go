package embedded

import (
	"context"
	"maps"

	"github.com/carbongate/carbongate/registry"
)

// What MLflow writes over a soft-deleted version's fields.
const (
	redactedSource = "REDACTED-SOURCE-PATH"
	redactedRunID  = "REDACTED-RUN-ID"
	redactedLink   = "REDACTED-RUN-LINK"
)

// CreateVersion implements registry.Store. EINVALID for a Status other
// than the three version statuses.
func (s *Store) CreateVersion(ctx context.Context, nv registry.NewVersion) (registry.ModelVersion, error) {
	nv, err := registry.ValidateNewVersion(nv)
	if err != nil {
		return registry.ModelVersion{}, err
	}
	tm, err := tagMap(nv.Tags)
	if err != nil {
		return registry.ModelVersion{}, err
	}
	var out registry.ModelVersion
	err = s.update(ctx, func(t *tx, now int64) error {
		m, err := t.model(nv.Name)
		if err != nil {
			return err
		}
		v := &version{
			Version: m.nextVersion(), CreationTime: now, LastUpdatedTime: now, Description: nv.Description,
			UserID: nv.UserID, CurrentStage: registry.StageNone, Source: nv.Source, RunID: nv.RunID,
			RunLink: nv.RunLink, Status: nv.Status, Tags: tm,
		}
		m.Versions = append(m.Versions, v)
		m.LastUpdatedTime = now
		out = v.export(m)
		return nil
	})
	return result(out, err)
}

// GetVersion implements registry.Store.
func (s *Store) GetVersion(ctx context.Context, name string, version int64) (registry.ModelVersion, error) {
	var out registry.ModelVersion
	err := s.view(ctx, func(st *state) error {
		m, v, err := st.version(name, version)
		if err == nil {
			out = v.export(m)
		}
		return err
	})
	return result(out, err)
}

// UpdateVersion implements registry.Store.
func (s *Store) UpdateVersion(ctx context.Context, name string, version int64, description string) (registry.ModelVersion, error) {
	if err := registry.ValidateDescription(description); err != nil {
		return registry.ModelVersion{}, err
	}
	var out registry.ModelVersion
	err := s.update(ctx, func(t *tx, now int64) error {
		m, v, err := t.version(name, version)
		if err != nil {
			return err
		}
		v.Description, v.LastUpdatedTime = description, now
		out = v.export(m)
		return nil
	})
	return result(out, err)
}

// TransitionStage implements registry.Store. As in MLflow, the model's and
// every moved version's last_updated_time become now; archiveExisting with
// a stage other than Staging or Production archives nothing.
func (s *Store) TransitionStage(ctx context.Context, name string, version int64, stage string, archiveExisting bool) (registry.ModelVersion, error) {
	stage, err := registry.ValidateStage(stage)
	if err != nil {
		return registry.ModelVersion{}, err
	}
	archive := archiveExisting && (stage == registry.StageStaging || stage == registry.StageProduction)
	var out registry.ModelVersion
	err = s.update(ctx, func(t *tx, now int64) error {
		m, v, err := t.version(name, version)
		if err != nil {
			return err
		}
		if archive {
			for i, o := range m.Versions {
				if o != v && o.CurrentStage == stage {
					o = m.edit(i)
					o.CurrentStage, o.LastUpdatedTime = registry.StageArchived, now
				}
			}
		}
		v.CurrentStage, v.LastUpdatedTime = stage, now
		m.LastUpdatedTime = now
		out = v.export(m)
		return nil
	})
	return result(out, err)
}

// DeleteVersion implements registry.Store. Like MLflow, it also clears the
// version's description, user and status message, redacts its source and
// run, and sets the model's last_updated_time.
func (s *Store) DeleteVersion(ctx context.Context, name string, number int64) error {
	return s.update(ctx, func(t *tx, now int64) error {
		m, v, err := t.version(name, number)
		if err != nil {
			return err
		}
		maps.DeleteFunc(m.Aliases, func(_ string, n int64) bool { return n == number })
		*v = version{
			Version: v.Version, CreationTime: v.CreationTime, LastUpdatedTime: now,
			CurrentStage: registry.StageDeleted, Source: redactedSource, RunID: redactedRunID,
			RunLink: redactedLink, Status: v.Status, StorageLocation: v.StorageLocation,
		}
		m.LastUpdatedTime = now
		return nil
	})
}

// LatestVersions implements registry.Store.
func (s *Store) LatestVersions(ctx context.Context, name string, stages []string) ([]registry.ModelVersion, error) {
	if len(stages) == 0 {
		stages = []string{registry.StageNone, registry.StageStaging, registry.StageProduction, registry.StageArchived}
	}
	canonical := make([]string, len(stages))
	for i, stage := range stages {
		c, err := registry.ValidateStage(stage)
		if err != nil {
			return nil, err
		}
		canonical[i] = c
	}
	var out []registry.ModelVersion
	err := s.view(ctx, func(st *state) error {
		m, err := st.model(name)
		if err != nil {
			return err
		}
		for _, stage := range canonical {
			for i := len(m.Versions) - 1; i >= 0; i-- {
				if v := m.Versions[i]; v.CurrentStage == stage {
					out = append(out, v.export(m))
					break
				}
			}
		}
		return nil
	})
	return result(out, err)
}

// SetVersionTag implements registry.Store: EINVALID (field "tags") when
// the version would hold more tags than registry.ValidateTagTotals allows.
func (s *Store) SetVersionTag(ctx context.Context, name string, version int64, tag registry.Tag) error {
	if err := registry.ValidateTag(tag); err != nil {
		return err
	}
	return s.update(ctx, func(t *tx, _ int64) error {
		_, v, err := t.version(name, version)
		if err != nil {
			return err
		}
		return setTag(&v.Tags, tag)
	})
}

// DeleteVersionTag implements registry.Store; deleting a key that is not
// set is not an error (MLflow's behaviour).
func (s *Store) DeleteVersionTag(ctx context.Context, name string, version int64, key string) error {
	if err := registry.ValidateTag(registry.Tag{Key: key}); err != nil {
		return err
	}
	return s.update(ctx, func(t *tx, _ int64) error {
		_, v, err := t.version(name, version)
		if err == nil {
			delete(v.Tags, key)
		}
		return err
	})
}

package lazy

// Code below delegates every registry.Store method; see lazy.go.

import (
	"context"

	"github.com/carbongate/carbongate/registry"
)

// CreateModel delegates to the backend.
func (l *Store) CreateModel(ctx context.Context, name, description string, tags []registry.Tag) (registry.RegisteredModel, error) {
	b, err := l.get()
	if err != nil {
		return registry.RegisteredModel{}, err
	}
	return b.CreateModel(ctx, name, description, tags)
}

// GetModel delegates to the backend.
func (l *Store) GetModel(ctx context.Context, name string) (registry.RegisteredModel, error) {
	b, err := l.get()
	if err != nil {
		return registry.RegisteredModel{}, err
	}
	return b.GetModel(ctx, name)
}

// RenameModel delegates to the backend.
func (l *Store) RenameModel(ctx context.Context, name, newName string) (registry.RegisteredModel, error) {
	b, err := l.get()
	if err != nil {
		return registry.RegisteredModel{}, err
	}
	return b.RenameModel(ctx, name, newName)
}

// UpdateModel delegates to the backend.
func (l *Store) UpdateModel(ctx context.Context, name, description string) (registry.RegisteredModel, error) {
	b, err := l.get()
	if err != nil {
		return registry.RegisteredModel{}, err
	}
	return b.UpdateModel(ctx, name, description)
}

// DeleteModel delegates to the backend.
func (l *Store) DeleteModel(ctx context.Context, name string) error {
	b, err := l.get()
	if err != nil {
		return err
	}
	return b.DeleteModel(ctx, name)
}

// SearchModels delegates to the backend.
func (l *Store) SearchModels(ctx context.Context, s registry.Search) ([]registry.RegisteredModel, bool, error) {
	b, err := l.get()
	if err != nil {
		return nil, false, err
	}
	return b.SearchModels(ctx, s)
}

// SetModelTag delegates to the backend.
func (l *Store) SetModelTag(ctx context.Context, name string, tag registry.Tag) error {
	b, err := l.get()
	if err != nil {
		return err
	}
	return b.SetModelTag(ctx, name, tag)
}

// DeleteModelTag delegates to the backend.
func (l *Store) DeleteModelTag(ctx context.Context, name, key string) error {
	b, err := l.get()
	if err != nil {
		return err
	}
	return b.DeleteModelTag(ctx, name, key)
}

// SetAlias delegates to the backend.
func (l *Store) SetAlias(ctx context.Context, name, alias string, version int64) error {
	b, err := l.get()
	if err != nil {
		return err
	}
	return b.SetAlias(ctx, name, alias, version)
}

// DeleteAlias delegates to the backend.
func (l *Store) DeleteAlias(ctx context.Context, name, alias string) error {
	b, err := l.get()
	if err != nil {
		return err
	}
	return b.DeleteAlias(ctx, name, alias)
}

// VersionByAlias delegates to the backend.
func (l *Store) VersionByAlias(ctx context.Context, name, alias string) (registry.ModelVersion, error) {
	b, err := l.get()
	if err != nil {
		return registry.ModelVersion{}, err
	}
	return b.VersionByAlias(ctx, name, alias)
}

// AliasTargets delegates to the backend.
func (l *Store) AliasTargets(ctx context.Context) ([]registry.AliasTarget, error) {
	b, err := l.get()
	if err != nil {
		return nil, err
	}
	return b.AliasTargets(ctx)
}

// CreateVersion delegates to the backend.
func (l *Store) CreateVersion(ctx context.Context, v registry.NewVersion) (registry.ModelVersion, error) {
	b, err := l.get()
	if err != nil {
		return registry.ModelVersion{}, err
	}
	return b.CreateVersion(ctx, v)
}

// GetVersion delegates to the backend.
func (l *Store) GetVersion(ctx context.Context, name string, version int64) (registry.ModelVersion, error) {
	b, err := l.get()
	if err != nil {
		return registry.ModelVersion{}, err
	}
	return b.GetVersion(ctx, name, version)
}

// UpdateVersion delegates to the backend.
func (l *Store) UpdateVersion(ctx context.Context, name string, version int64, description string) (registry.ModelVersion, error) {
	b, err := l.get()
	if err != nil {
		return registry.ModelVersion{}, err
	}
	return b.UpdateVersion(ctx, name, version, description)
}

// TransitionStage delegates to the backend.
func (l *Store) TransitionStage(ctx context.Context, name string, version int64, stage string, archiveExisting bool) (registry.ModelVersion, error) {
	b, err := l.get()
	if err != nil {
		return registry.ModelVersion{}, err
	}
	return b.TransitionStage(ctx, name, version, stage, archiveExisting)
}

// DeleteVersion delegates to the backend.
func (l *Store) DeleteVersion(ctx context.Context, name string, version int64) error {
	b, err := l.get()
	if err != nil {
		return err
	}
	return b.DeleteVersion(ctx, name, version)
}

// LatestVersions delegates to the backend.
func (l *Store) LatestVersions(ctx context.Context, name string, stages []string) ([]registry.ModelVersion, error) {
	b, err := l.get()
	if err != nil {
		return nil, err
	}
	return b.LatestVersions(ctx, name, stages)
}

// SearchVersions delegates to the backend.
func (l *Store) SearchVersions(ctx context.Context, s registry.Search) ([]registry.ModelVersion, bool, error) {
	b, err := l.get()
	if err != nil {
		return nil, false, err
	}
	return b.SearchVersions(ctx, s)
}

// SetVersionTag delegates to the backend.
func (l *Store) SetVersionTag(ctx context.Context, name string, version int64, tag registry.Tag) error {
	b, err := l.get()
	if err != nil {
		return err
	}
	return b.SetVersionTag(ctx, name, version, tag)
}

// DeleteVersionTag delegates to the backend.
func (l *Store) DeleteVersionTag(ctx context.Context, name string, version int64, key string) error {
	b, err := l.get()
	if err != nil {
		return err
	}
	return b.DeleteVersionTag(ctx, name, version, key)
}

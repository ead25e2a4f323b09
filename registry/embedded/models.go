package embedded

import (
	"context"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

// CreateModel implements registry.Store.
func (s *Store) CreateModel(ctx context.Context, name, description string, tags []registry.Tag) (registry.RegisteredModel, error) {
	if err := registry.ValidateName("name", name); err != nil {
		return registry.RegisteredModel{}, err
	}
	if err := registry.ValidateDescription(description); err != nil {
		return registry.RegisteredModel{}, err
	}
	tm, err := tagMap(tags)
	if err != nil {
		return registry.RegisteredModel{}, err
	}
	var out registry.RegisteredModel
	err = s.update(ctx, func(t *tx, now int64) error {
		if t.exists(name) {
			return forecast.Errorf(forecast.ECONFLICT, "Registered Model (name=%s) already exists.", name)
		}
		m := &model{Name: name, CreationTime: now, LastUpdatedTime: now, Description: description, Tags: tm}
		t.put(m)
		out = m.export()
		return nil
	})
	return result(out, err)
}

// GetModel implements registry.Store.
func (s *Store) GetModel(ctx context.Context, name string) (registry.RegisteredModel, error) {
	var out registry.RegisteredModel
	err := s.view(ctx, func(st *state) error {
		m, err := st.model(name)
		if err == nil {
			out = m.export()
		}
		return err
	})
	return result(out, err)
}

// RenameModel implements registry.Store: the model keeps its versions
// (soft-deleted ones too), tags and aliases, and its and its versions'
// last_updated_time become now, as in MLflow.
func (s *Store) RenameModel(ctx context.Context, name, newName string) (registry.RegisteredModel, error) {
	if err := registry.ValidateName("new_name", newName); err != nil {
		return registry.RegisteredModel{}, err
	}
	var out registry.RegisteredModel
	err := s.update(ctx, func(t *tx, now int64) error {
		m, err := t.model(name)
		if err != nil {
			return err
		}
		if t.exists(newName) {
			return forecast.Errorf(forecast.ECONFLICT, "Registered Model (name=%s) already exists.", newName)
		}
		t.remove(name)
		m.Name, m.LastUpdatedTime = newName, now
		for i := range m.Versions {
			m.edit(i).LastUpdatedTime = now
		}
		t.put(m)
		out = m.export()
		return nil
	})
	return result(out, err)
}

// UpdateModel implements registry.Store.
func (s *Store) UpdateModel(ctx context.Context, name, description string) (registry.RegisteredModel, error) {
	if err := registry.ValidateDescription(description); err != nil {
		return registry.RegisteredModel{}, err
	}
	var out registry.RegisteredModel
	err := s.update(ctx, func(t *tx, now int64) error {
		m, err := t.model(name)
		if err != nil {
			return err
		}
		m.Description, m.LastUpdatedTime = description, now
		out = m.export()
		return nil
	})
	return result(out, err)
}

// DeleteModel implements registry.Store.
func (s *Store) DeleteModel(ctx context.Context, name string) error {
	return s.update(ctx, func(t *tx, _ int64) error {
		if !t.exists(name) {
			return modelNotFound(name)
		}
		t.remove(name)
		return nil
	})
}

// SetModelTag implements registry.Store. Like MLflow, it leaves
// last_updated_time alone. EINVALID (field "tags") when the model would
// hold more tags than registry.ValidateTagTotals allows.
func (s *Store) SetModelTag(ctx context.Context, name string, tag registry.Tag) error {
	if err := registry.ValidateTag(tag); err != nil {
		return err
	}
	return s.update(ctx, func(t *tx, _ int64) error {
		m, err := t.model(name)
		if err != nil {
			return err
		}
		return setTag(&m.Tags, tag)
	})
}

// DeleteModelTag implements registry.Store; deleting a key that is not set
// is not an error (MLflow's behaviour).
func (s *Store) DeleteModelTag(ctx context.Context, name, key string) error {
	if err := registry.ValidateTag(registry.Tag{Key: key}); err != nil {
		return err
	}
	return s.update(ctx, func(t *tx, _ int64) error {
		m, err := t.model(name)
		if err == nil {
			delete(m.Tags, key)
		}
		return err
	})
}

// SetAlias implements registry.Store.
func (s *Store) SetAlias(ctx context.Context, name, alias string, version int64) error {
	if err := registry.ValidateAlias(alias); err != nil {
		return err
	}
	return s.update(ctx, func(t *tx, _ int64) error {
		m, _, err := t.version(name, version)
		if err != nil {
			return err
		}
		if m.Aliases == nil {
			m.Aliases = map[string]int64{}
		}
		m.Aliases[alias] = version
		return nil
	})
}

// DeleteAlias implements registry.Store.
func (s *Store) DeleteAlias(ctx context.Context, name, alias string) error {
	return s.update(ctx, func(t *tx, _ int64) error {
		m, err := t.model(name)
		if err != nil {
			return err
		}
		if _, ok := m.Aliases[alias]; !ok {
			return forecast.Errorf(forecast.ENOTFOUND, "Registered model alias %s not found.", alias)
		}
		delete(m.Aliases, alias)
		return nil
	})
}

// VersionByAlias implements registry.Store.
func (s *Store) VersionByAlias(ctx context.Context, name, alias string) (registry.ModelVersion, error) {
	var out registry.ModelVersion
	err := s.view(ctx, func(st *state) error {
		m, err := st.model(name)
		if err != nil {
			return err
		}
		n, ok := m.Aliases[alias]
		if !ok {
			return forecast.Errorf(forecast.ENOTFOUND, "Registered model alias %s not found.", alias)
		}
		_, v, err := st.version(name, n)
		if err == nil {
			out = v.export(m)
		}
		return err
	})
	return result(out, err)
}

// AliasTargets implements registry.Store.
func (s *Store) AliasTargets(ctx context.Context) ([]registry.AliasTarget, error) {
	var out []registry.AliasTarget
	err := s.view(ctx, func(st *state) error {
		out = st.aliasTargets()
		return nil
	})
	return result(out, err)
}

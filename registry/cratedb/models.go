package cratedb

import (
	"context"
	"slices"
	"strings"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/sqlsearch"
)

const modelCols = `name, creation_time, last_updated_time, description`

// modelRow is one row of registered_models; nullable columns are pointers
// because rows written by other MLflow clients may leave them NULL.
type modelRow struct {
	name             string
	created, updated *int64
	description      *string
}

func (r *modelRow) dest() []any { return []any{&r.name, &r.created, &r.updated, &r.description} }

func (r *modelRow) model() registry.RegisteredModel {
	return registry.RegisteredModel{Name: r.name, CreationTime: num(r.created), LastUpdatedTime: num(r.updated), Description: str(r.description)}
}

// CreateModel inserts the registered_models row first, without ON
// CONFLICT: the primary key makes that insert the claim on the name, and a
// duplicate is ECONFLICT with nothing else written. The tags follow. They
// are not written first because, when the name is taken, they would
// overwrite the tags of the existing model, and tags left by a failed call
// would attach themselves to the next model of that name. A failure after
// the claim leaves the model visible with some of its tags missing;
// SetModelTag completes it.
func (s *Store) CreateModel(ctx context.Context, name, description string, tags []registry.Tag) (registry.RegisteredModel, error) {
	if err := registry.ValidateName("name", name); err != nil {
		return registry.RegisteredModel{}, err
	}
	if err := registry.ValidateDescription(description); err != nil {
		return registry.RegisteredModel{}, err
	}
	for _, t := range tags {
		if err := registry.ValidateTag(t); err != nil {
			return registry.RegisteredModel{}, err
		}
	}
	ctx, cancel := bound(ctx)
	defer cancel()
	now := s.millis()
	if err := s.claimModel(ctx, "create registered model", name, now, now, opt(description)); err != nil {
		return registry.RegisteredModel{}, err
	}
	tags = normTags(tags)
	for _, t := range tags {
		if err := s.upsertModelTag(ctx, name, t); err != nil {
			return registry.RegisteredModel{}, err
		}
	}
	touched := []string{tModels}
	if len(tags) > 0 {
		touched = append(touched, tModelTag)
	}
	if err := s.refresh(ctx, touched...); err != nil {
		return registry.RegisteredModel{}, err
	}
	return registry.RegisteredModel{Name: name, CreationTime: now, LastUpdatedTime: now, Description: description, Tags: tags}, nil
}

// GetModel reads the model by primary key, then its tags and aliases.
func (s *Store) GetModel(ctx context.Context, name string) (registry.RegisteredModel, error) {
	if err := registry.ValidateName("name", name); err != nil {
		return registry.RegisteredModel{}, err
	}
	ctx, cancel := bound(ctx)
	defer cancel()
	return s.getModel(ctx, name)
}

func (s *Store) getModel(ctx context.Context, name string) (registry.RegisteredModel, error) {
	r, ok, err := s.modelByName(ctx, name)
	if err != nil {
		return registry.RegisteredModel{}, err
	}
	if !ok {
		return registry.RegisteredModel{}, modelNotFound(name)
	}
	ms := []registry.RegisteredModel{r.model()}
	if err := s.decorateModels(ctx, ms); err != nil {
		return registry.RegisteredModel{}, err
	}
	return ms[0], nil
}

// modelByName is a lookup by the full primary key: it sees writes that no
// REFRESH TABLE has made visible yet.
func (s *Store) modelByName(ctx context.Context, name string) (modelRow, bool, error) {
	var r modelRow
	found := false
	err := s.query(ctx, "get registered model", func(scan func(...any) error) error {
		found = true
		return scan(r.dest()...)
	}, `SELECT `+modelCols+` FROM registered_models WHERE name = $1`, name)
	return r, found, err
}

// UpdateModel sets the description by primary key and reads the model
// back by primary key.
func (s *Store) UpdateModel(ctx context.Context, name, description string) (registry.RegisteredModel, error) {
	if err := registry.ValidateName("name", name); err != nil {
		return registry.RegisteredModel{}, err
	}
	if err := registry.ValidateDescription(description); err != nil {
		return registry.RegisteredModel{}, err
	}
	ctx, cancel := bound(ctx)
	defer cancel()
	n, err := s.exec(ctx, "update registered model",
		`UPDATE registered_models SET description = $1, last_updated_time = $2 WHERE name = $3`,
		description, s.millis(), name)
	if err != nil {
		return registry.RegisteredModel{}, err
	}
	if n == 0 {
		return registry.RegisteredModel{}, modelNotFound(name)
	}
	if err := s.refresh(ctx, tModels); err != nil {
		return registry.RegisteredModel{}, err
	}
	return s.getModel(ctx, name)
}

// DeleteModel removes the model's aliases first (so nothing serves it any
// more), then version tags, versions, model tags and last the
// registered_models row. A failure part-way leaves the model visible with
// part of its contents gone, and calling DeleteModel again finishes the
// job; deleting the row first instead would leave orphaned versions and
// aliases that a later model of the same name would inherit. The child
// deletes filter on name only, not a full primary key, so they are
// preceded by REFRESH TABLE: without it they would miss recent rows.
func (s *Store) DeleteModel(ctx context.Context, name string) error {
	if err := registry.ValidateName("name", name); err != nil {
		return err
	}
	ctx, cancel := bound(ctx)
	defer cancel()
	if _, ok, err := s.modelByName(ctx, name); err != nil {
		return err
	} else if !ok {
		return modelNotFound(name)
	}
	return s.deleteModelRows(ctx, "delete registered model", name, tAliases, tVerTag, tVersions, tModelTag, tModels)
}

// deleteModelRows deletes the rows of name from tables, in that order, and
// refreshes them. The DELETEs search by name, so the tables are refreshed
// first, except registered_models, whose primary key the name is.
func (s *Store) deleteModelRows(ctx context.Context, what, name string, tables ...string) error {
	searched := slices.DeleteFunc(slices.Clone(tables), func(t string) bool { return t == tModels })
	if err := s.refresh(ctx, searched...); err != nil {
		return err
	}
	for _, t := range tables {
		if _, err := s.exec(ctx, what, `DELETE FROM `+t+` WHERE name = $1`, name); err != nil {
			return err
		}
	}
	return s.refresh(ctx, tables...)
}

// claimModel inserts the registered_models row without ON CONFLICT: the
// primary key makes the insert the claim on the name. A taken name is
// ECONFLICT with nothing written.
func (s *Store) claimModel(ctx context.Context, what, name string, created, updated int64, description any) error {
	n, err := s.exec(ctx, what,
		`INSERT INTO registered_models (name, creation_time, last_updated_time, description) VALUES ($1, $2, $3, $4)`,
		name, created, updated, description)
	if err == nil && n == 0 {
		err = &forecast.Error{Code: forecast.ECONFLICT, Message: "cratedb " + what + ": already exists"}
	}
	if forecast.ErrorCode(err) == forecast.ECONFLICT {
		return modelExists(name, err)
	}
	return err
}

func modelExists(name string, err error) error {
	return &forecast.Error{Code: forecast.ECONFLICT, Message: "registered model (name=" + name + ") already exists", Err: err}
}

// SetModelTag upserts the tag (ON CONFLICT on its primary key).
func (s *Store) SetModelTag(ctx context.Context, name string, tag registry.Tag) error {
	if err := registry.ValidateName("name", name); err != nil {
		return err
	}
	if err := registry.ValidateTag(tag); err != nil {
		return err
	}
	ctx, cancel := bound(ctx)
	defer cancel()
	if _, ok, err := s.modelByName(ctx, name); err != nil {
		return err
	} else if !ok {
		return modelNotFound(name)
	}
	if err := s.upsertModelTag(ctx, name, tag); err != nil {
		return err
	}
	return s.refresh(ctx, tModelTag)
}

// DeleteModelTag deletes the tag by primary key; a missing tag is not an
// error (MLflow's behaviour), a missing model is ENOTFOUND.
func (s *Store) DeleteModelTag(ctx context.Context, name, key string) error {
	if err := registry.ValidateName("name", name); err != nil {
		return err
	}
	if key == "" {
		return forecast.FieldErrorf(forecast.EINVALID, "key", "missing value for parameter 'key'")
	}
	ctx, cancel := bound(ctx)
	defer cancel()
	if _, ok, err := s.modelByName(ctx, name); err != nil {
		return err
	} else if !ok {
		return modelNotFound(name)
	}
	if _, err := s.exec(ctx, "delete registered model tag", `DELETE FROM registered_model_tags WHERE name = $1 AND "key" = $2`, name, key); err != nil {
		return err
	}
	return s.refresh(ctx, tModelTag)
}

func (s *Store) upsertModelTag(ctx context.Context, name string, t registry.Tag) error {
	_, err := s.exec(ctx, "set registered model tag",
		`INSERT INTO registered_model_tags (name, "key", "value") VALUES ($1, $2, $3) ON CONFLICT (name, "key") DO UPDATE SET "value" = excluded."value"`,
		name, t.Key, t.Value)
	return err
}

// decorateModels fills in the tags and aliases of ms with one query each.
func (s *Store) decorateModels(ctx context.Context, ms []registry.RegisteredModel) error {
	if len(ms) == 0 {
		return nil
	}
	idx := make(map[string]int, len(ms))
	var a sqlsearch.Args
	in := make([]string, len(ms))
	for i, m := range ms {
		idx[m.Name] = i
		in[i] = a.Add(m.Name)
	}
	list := strings.Join(in, ", ")
	err := s.query(ctx, "get registered model tags", func(scan func(...any) error) error {
		var name, key string
		var value *string
		if err := scan(&name, &key, &value); err != nil {
			return err
		}
		if i, ok := idx[name]; ok {
			ms[i].Tags = append(ms[i].Tags, registry.Tag{Key: key, Value: str(value)})
		}
		return nil
	}, `SELECT name, "key", "value" FROM registered_model_tags WHERE name IN (`+list+`) ORDER BY name, "key"`, a...)
	if err != nil {
		return err
	}
	return s.query(ctx, "get registered model aliases", func(scan func(...any) error) error {
		var name, alias, version string
		if err := scan(&name, &alias, &version); err != nil {
			return err
		}
		v, err := aliasVersion(name, alias, version)
		if err != nil {
			return err
		}
		if i, ok := idx[name]; ok {
			ms[i].Aliases = append(ms[i].Aliases, registry.Alias{Alias: alias, Version: v})
		}
		return nil
	}, `SELECT name, "alias", "version" FROM registered_model_aliases WHERE name IN (`+list+`) ORDER BY name, "alias"`, a...)
}

// normTags keeps the last value of each key and sorts by key.
func normTags(tags []registry.Tag) []registry.Tag {
	if len(tags) == 0 {
		return nil
	}
	byKey := make(map[string]string, len(tags))
	for _, t := range tags {
		byKey[t.Key] = t.Value
	}
	out := make([]registry.Tag, 0, len(byKey))
	for k, v := range byKey {
		out = append(out, registry.Tag{Key: k, Value: v})
	}
	slices.SortFunc(out, func(a, b registry.Tag) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// args collects statement arguments and returns their placeholders.

package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/sqlsearch"
)

// byteOrder sorts names, keys and aliases by their bytes, whatever the
// database's collation, so every backend pages and lists alike.
const byteOrder = ` COLLATE "C"`

const modelCols = `m.name, COALESCE(m.creation_time, 0), COALESCE(m.last_updated_time, 0), COALESCE(m.description, '')`

func scanModel(row pgx.Row) (registry.RegisteredModel, error) {
	var m registry.RegisteredModel
	err := row.Scan(&m.Name, &m.CreationTime, &m.LastUpdatedTime, &m.Description)
	return m, err
}

func modelNotFound(name string) error {
	return forecast.Errorf(forecast.ENOTFOUND, "Registered Model with name=%s not found", name)
}

func isUnique(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

func (s *Store) millis() int64 { return s.now().UnixMilli() }

// validTags checks tags and drops all but the last value of a repeated key.
func validTags(tags []registry.Tag) ([]registry.Tag, error) {
	last := map[string]int{}
	for i, t := range tags {
		if err := registry.ValidateTag(t); err != nil {
			return nil, err
		}
		last[t.Key] = i
	}
	var out []registry.Tag
	for i, t := range tags {
		if last[t.Key] == i {
			out = append(out, t)
		}
	}
	return out, nil
}

// CreateModel inserts a registered model with its tags. ECONFLICT when the
// name exists.
func (s *Store) CreateModel(ctx context.Context, name, description string, tags []registry.Tag) (registry.RegisteredModel, error) {
	if err := registry.ValidateName("name", name); err != nil {
		return registry.RegisteredModel{}, err
	}
	if err := registry.ValidateDescription(description); err != nil {
		return registry.RegisteredModel{}, err
	}
	tags, err := validTags(tags)
	if err != nil {
		return registry.RegisteredModel{}, err
	}
	var m registry.RegisteredModel
	err = s.write(ctx, "create registered model", func(ctx context.Context, tx pgx.Tx, l layout) error {
		_, err := tx.Exec(ctx, `INSERT INTO registered_models (`+l.wsCol()+`name, creation_time, last_updated_time, description)
VALUES (`+l.wsVal()+`$1, $2, $2, $3)`, name, s.millis(), nullIfEmpty(description))
		if isUnique(err) {
			return forecast.Errorf(forecast.ECONFLICT, "Registered Model (name=%s) already exists.", name)
		}
		if err != nil {
			return err
		}
		for _, t := range tags {
			if _, err := upsertModelTag(ctx, tx, l, name, t); err != nil {
				return err
			}
		}
		m, err = getModel(ctx, tx, l, name)
		return err
	})
	return m, err
}

// GetModel returns the model with its tags and aliases; ENOTFOUND if
// absent.
func (s *Store) GetModel(ctx context.Context, name string) (registry.RegisteredModel, error) {
	var m registry.RegisteredModel
	err := s.read(ctx, "get registered model", func(ctx context.Context, q querier, l layout) error {
		var err error
		m, err = getModel(ctx, q, l, name)
		return err
	})
	return m, err
}

func getModel(ctx context.Context, q querier, l layout, name string) (registry.RegisteredModel, error) {
	m, err := scanModel(q.QueryRow(ctx, `SELECT `+modelCols+` FROM registered_models m WHERE m.name = $1`+l.ws("m"), name))
	if errors.Is(err, pgx.ErrNoRows) {
		return m, modelNotFound(name)
	}
	if err != nil {
		return m, err
	}
	ms := []registry.RegisteredModel{m}
	if err := modelExtras(ctx, q, l, ms); err != nil {
		return m, err
	}
	return ms[0], nil
}

// lockModel takes the model's row lock for the transaction; ENOTFOUND if
// absent.
func lockModel(ctx context.Context, tx pgx.Tx, l layout, name string) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM registered_models m WHERE m.name = $1`+l.ws("m")+` FOR UPDATE`, name).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return modelNotFound(name)
	}
	return err
}

// modelExtras fills in the tags and aliases of ms.
func modelExtras(ctx context.Context, q querier, l layout, ms []registry.RegisteredModel) error {
	if len(ms) == 0 {
		return nil
	}
	idx := make(map[string]int, len(ms))
	names := make([]string, len(ms))
	for i, m := range ms {
		idx[m.Name], names[i] = i, m.Name
	}
	rows, err := q.Query(ctx, `SELECT t.name, t.key, COALESCE(t.value, '') FROM registered_model_tags t
WHERE t.name = ANY($1)`+l.ws("t")+` ORDER BY t.key`+byteOrder, names)
	if err != nil {
		return err
	}
	var name string
	var t registry.Tag
	if _, err := pgx.ForEachRow(rows, []any{&name, &t.Key, &t.Value}, func() error {
		ms[idx[name]].Tags = append(ms[idx[name]].Tags, t)
		return nil
	}); err != nil {
		return err
	}
	rows, err = q.Query(ctx, `SELECT a.name, a.alias, a.version FROM registered_model_aliases a
WHERE a.name = ANY($1)`+l.ws("a")+` ORDER BY a.alias`+byteOrder, names)
	if err != nil {
		return err
	}
	var a registry.Alias
	_, err = pgx.ForEachRow(rows, []any{&name, &a.Alias, &a.Version}, func() error {
		ms[idx[name]].Aliases = append(ms[idx[name]].Aliases, a)
		return nil
	})
	return err
}

// RenameModel renames the model; ON UPDATE CASCADE carries the name to its
// versions, tags and aliases. Like MLflow it bumps last_updated_time of the
// model and of every version. ECONFLICT if newName exists.
func (s *Store) RenameModel(ctx context.Context, name, newName string) (registry.RegisteredModel, error) {
	if err := registry.ValidateName("new_name", newName); err != nil {
		return registry.RegisteredModel{}, err
	}
	var m registry.RegisteredModel
	err := s.write(ctx, "rename registered model", func(ctx context.Context, tx pgx.Tx, l layout) error {
		now := s.millis()
		tag, err := tx.Exec(ctx, `UPDATE registered_models m SET name = $2, last_updated_time = $3 WHERE m.name = $1`+l.ws("m"), name, newName, now)
		if isUnique(err) {
			return forecast.Errorf(forecast.ECONFLICT, "Registered Model (name=%s) already exists.", newName)
		}
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return modelNotFound(name)
		}
		if _, err := tx.Exec(ctx, `UPDATE model_versions v SET last_updated_time = $2 WHERE v.name = $1`+l.ws("v"), newName, now); err != nil {
			return err
		}
		m, err = getModel(ctx, tx, l, newName)
		return err
	})
	return m, err
}

// UpdateModel sets the description and bumps last_updated_time.
func (s *Store) UpdateModel(ctx context.Context, name, description string) (registry.RegisteredModel, error) {
	if err := registry.ValidateDescription(description); err != nil {
		return registry.RegisteredModel{}, err
	}
	var m registry.RegisteredModel
	err := s.write(ctx, "update registered model", func(ctx context.Context, tx pgx.Tx, l layout) error {
		tag, err := tx.Exec(ctx, `UPDATE registered_models m SET description = $2, last_updated_time = $3 WHERE m.name = $1`+l.ws("m"),
			name, nullIfEmpty(description), s.millis())
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return modelNotFound(name)
		}
		m, err = getModel(ctx, tx, l, name)
		return err
	})
	return m, err
}

// DeleteModel deletes the model and everything it owns, children first
// (databases of MLflow 2.3 lack ON DELETE CASCADE on the alias table).
func (s *Store) DeleteModel(ctx context.Context, name string) error {
	return s.write(ctx, "delete registered model", func(ctx context.Context, tx pgx.Tx, l layout) error {
		if err := lockModel(ctx, tx, l, name); err != nil {
			return err
		}
		for _, table := range []string{"model_version_tags", "registered_model_aliases", "model_versions", "registered_model_tags", "registered_models"} {
			if _, err := tx.Exec(ctx, `DELETE FROM `+table+` x WHERE x.name = $1`+l.ws("x"), name); err != nil {
				return err
			}
		}
		return nil
	})
}

// SearchModels returns one page of models matching s.Filter (name and
// tags.<key>; =, !=, LIKE, ILIKE), ordered by s.OrderBy then name.
func (s *Store) SearchModels(ctx context.Context, search registry.Search) ([]registry.RegisteredModel, bool, error) {
	var page []registry.RegisteredModel
	var more bool
	err := s.read(ctx, "search registered models", func(ctx context.Context, q querier, l layout) error {
		var a sqlsearch.Args
		sql, err := dialect.Select(l.modelTarget(), search, modelCols, l.wsPred("m"), &a)
		if err != nil {
			return err
		}
		page, more, err = fetchPage(ctx, q, sql, a, search.MaxResults, scanModel,
			func(p []registry.RegisteredModel) error { return modelExtras(ctx, q, l, p) })
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return page, more, nil
}

func upsertModelTag(ctx context.Context, q querier, l layout, name string, t registry.Tag) (int64, error) {
	tag, err := q.Exec(ctx, `INSERT INTO registered_model_tags (`+l.wsCol()+`key, value, name)
SELECT `+l.wsSel("m")+`$1, $2, m.name FROM registered_models m WHERE m.name = $3`+l.ws("m")+`
ON CONFLICT `+l.key("key, name")+` DO UPDATE SET value = EXCLUDED.value`, t.Key, t.Value, name)
	return tag.RowsAffected(), err
}

// SetModelTag sets (or replaces) a tag; ENOTFOUND if the model is absent.
func (s *Store) SetModelTag(ctx context.Context, name string, tag registry.Tag) error {
	if err := registry.ValidateTag(tag); err != nil {
		return err
	}
	return s.write(ctx, "set registered model tag", func(ctx context.Context, tx pgx.Tx, l layout) error {
		n, err := upsertModelTag(ctx, tx, l, name, tag)
		if err == nil && n == 0 {
			err = modelNotFound(name)
		}
		return err
	})
}

// DeleteModelTag removes a tag; ENOTFOUND if the model is absent, nil if
// only the tag is (as MLflow).
func (s *Store) DeleteModelTag(ctx context.Context, name, key string) error {
	if key == "" {
		return forecast.FieldErrorf(forecast.EINVALID, "key", "missing value for parameter 'key'")
	}
	return s.write(ctx, "delete registered model tag", func(ctx context.Context, tx pgx.Tx, l layout) error {
		if err := lockModel(ctx, tx, l, name); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM registered_model_tags t WHERE t.name = $1 AND t.key = $2`+l.ws("t"), name, key)
		return err
	})
}

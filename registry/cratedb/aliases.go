package cratedb

import (
	"context"
	"strconv"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

// SetAlias checks the version by primary key and upserts the alias (ON
// CONFLICT on (name, alias)). The version is stored as text, the column
// type mlflow-cratedb gives registered_model_aliases.version.
func (s *Store) SetAlias(ctx context.Context, name, alias string, version int64) error {
	if err := checkVersionArgs(name, version); err != nil {
		return err
	}
	if err := registry.ValidateAlias(alias); err != nil {
		return err
	}
	ctx, cancel := bound(ctx)
	defer cancel()
	if _, err := s.liveVersion(ctx, name, version); err != nil {
		return err
	}
	if _, err := s.exec(ctx, "set registered model alias",
		`INSERT INTO registered_model_aliases (name, "alias", "version") VALUES ($1, $2, $3) ON CONFLICT (name, "alias") DO UPDATE SET "version" = excluded."version"`,
		name, alias, strconv.FormatInt(version, 10)); err != nil {
		return err
	}
	return s.refresh(ctx, tAliases)
}

// DeleteAlias deletes by primary key: ENOTFOUND when no row was deleted.
func (s *Store) DeleteAlias(ctx context.Context, name, alias string) error {
	if err := registry.ValidateName("name", name); err != nil {
		return err
	}
	ctx, cancel := bound(ctx)
	defer cancel()
	n, err := s.exec(ctx, "delete registered model alias", `DELETE FROM registered_model_aliases WHERE name = $1 AND "alias" = $2`, name, alias)
	if err != nil {
		return err
	}
	if n == 0 {
		return aliasNotFound(name, alias)
	}
	return s.refresh(ctx, tAliases)
}

// VersionByAlias looks the alias up by primary key, then the version by
// primary key. ENOTFOUND when either is missing, or the version has been
// deleted (an alias can outlive its version only if a SetAlias raced a
// DeleteVersion).
func (s *Store) VersionByAlias(ctx context.Context, name, alias string) (registry.ModelVersion, error) {
	if err := registry.ValidateName("name", name); err != nil {
		return registry.ModelVersion{}, err
	}
	ctx, cancel := bound(ctx)
	defer cancel()
	var target *string
	err := s.query(ctx, "get registered model alias", func(scan func(...any) error) error {
		return scan(&target)
	}, `SELECT "version" FROM registered_model_aliases WHERE name = $1 AND "alias" = $2`, name, alias)
	if err != nil {
		return registry.ModelVersion{}, err
	}
	if target == nil {
		return registry.ModelVersion{}, aliasNotFound(name, alias)
	}
	v, err := aliasVersion(name, alias, *target)
	if err != nil {
		return registry.ModelVersion{}, err
	}
	return s.getVersion(ctx, name, v)
}

// AliasTargets scans registered_model_aliases. It issues no REFRESH TABLE:
// every write of this package refreshes the table after writing, and
// other writers' rows appear within the table's refresh interval (1 s by
// default), which a poller can wait for.
func (s *Store) AliasTargets(ctx context.Context) ([]registry.AliasTarget, error) {
	ctx, cancel := bound(ctx)
	defer cancel()
	var out []registry.AliasTarget
	err := s.query(ctx, "list registered model aliases", func(scan func(...any) error) error {
		var t registry.AliasTarget
		var version string
		if err := scan(&t.Name, &t.Alias, &version); err != nil {
			return err
		}
		v, err := aliasVersion(t.Name, t.Alias, version)
		if err != nil {
			return err
		}
		t.Version = v
		out = append(out, t)
		return nil
	}, `SELECT name, "alias", "version" FROM registered_model_aliases ORDER BY name, "alias"`)
	return out, err
}

func aliasNotFound(name, alias string) error {
	return forecast.Errorf(forecast.ENOTFOUND, "registered model alias %s not found for model %s", alias, name)
}

// aliasVersion parses registered_model_aliases.version, a TEXT column.
func aliasVersion(name, alias, text string) (int64, error) {
	v, err := strconv.ParseInt(text, 10, 64)
	if err != nil || v < 1 {
		return 0, forecast.Errorf(forecast.EINTERNAL, "alias %s@%s points at version %q, not a version number", name, alias, text)
	}
	return v, nil
}

package cratedb

import (
	"context"

	"github.com/carbongate/carbongate/registry"
)

// renameCopies copy a model's rows to the new name ($1) from the old
// one ($2), versions before what refers to them; aliases come last, so
// none points at a version not yet copied. $3 is the new
// last_updated_time of every version (MLflow bumps it on a rename).
var renameCopies = []struct{ table, sql string }{
	{tVersions, `INSERT INTO model_versions (name, "version", creation_time, last_updated_time, description, user_id, current_stage, source, storage_location, run_id, run_link, status, status_message) ` +
		`SELECT $1::TEXT, "version", creation_time, $3::BIGINT, description, user_id, current_stage, source, storage_location, run_id, run_link, status, status_message FROM model_versions WHERE name = $2`},
	{tVerTag, `INSERT INTO model_version_tags (name, "version", "key", "value") SELECT $1::TEXT, "version", "key", "value" FROM model_version_tags WHERE name = $2`},
	{tModelTag, `INSERT INTO registered_model_tags (name, "key", "value", creation_time, last_update_time, description) SELECT $1::TEXT, "key", "value", creation_time, last_update_time, description FROM registered_model_tags WHERE name = $2`},
	{tAliases, `INSERT INTO registered_model_aliases (name, alias, "version") SELECT $1::TEXT, alias, "version" FROM registered_model_aliases WHERE name = $2`},
}

// RenameModel moves the model to newName. CrateDB cannot update a primary
// key, and the name is part of every registry table's, so the rows are
// copied under the new name, then the old ones deleted:
//
//  1. the old model is read by primary key: ENOTFOUND when it is missing,
//     whether or not newName is taken (MLflow and the PostgreSQL store
//     answer so too). Renaming a model to its own name only bumps the
//     times, as there;
//  2. the new registered_models row is inserted without ON CONFLICT, with
//     the old creation time and description: the claim on newName, a
//     duplicate key is ECONFLICT with nothing written;
//  3. rows already under newName in the other tables, orphans of a model
//     that no longer exists (an interrupted DeleteModel or rename), are
//     deleted so the renamed model inherits nothing;
//  4. versions (soft-deleted ones too, so numbers are not reused; each
//     version's last_updated_time bumped, as MLflow does), version tags,
//     model tags and aliases are copied with INSERT ... SELECT;
//  5. the old rows are deleted in DeleteModel's order.
//
// A failure before step 5 leaves both models: the old one whole, the new
// one possibly missing rows. A rerun is then ECONFLICT; DeleteModel(newName)
// and renaming again finishes it. A failure during step 5 leaves the new
// model whole and the old one partly deleted; DeleteModel(name) finishes
// it. Writes to the old model while it is copied (a CreateVersion, a tag)
// can be lost with it: there are no transactions to exclude them.
func (s *Store) RenameModel(ctx context.Context, name, newName string) (registry.RegisteredModel, error) {
	if err := registry.ValidateName("name", name); err != nil {
		return registry.RegisteredModel{}, err
	}
	if err := registry.ValidateName("new_name", newName); err != nil {
		return registry.RegisteredModel{}, err
	}
	ctx, cancel := bound(ctx)
	defer cancel()
	const what = "rename registered model"
	old, ok, err := s.modelByName(ctx, name)
	if err != nil {
		return registry.RegisteredModel{}, err
	}
	if !ok {
		return registry.RegisteredModel{}, modelNotFound(name)
	}
	now := s.millis()
	if newName == name {
		return s.touchModel(ctx, what, name, now)
	}
	if err := s.claimModel(ctx, what, newName, num(old.created), now, opt(str(old.description))); err != nil {
		return registry.RegisteredModel{}, err
	}
	// Its REFRESH also makes the old rows visible to the copies' SELECTs.
	children := []string{tAliases, tVerTag, tVersions, tModelTag}
	if err := s.deleteModelRows(ctx, what, newName, children...); err != nil {
		return registry.RegisteredModel{}, err
	}
	for _, c := range renameCopies {
		args := []any{newName, name}
		if c.table == tVersions {
			args = append(args, now)
		}
		if _, err := s.exec(ctx, what, c.sql, args...); err != nil {
			return registry.RegisteredModel{}, err
		}
	}
	// deleteModelRows refreshes the copies before it deletes the originals.
	if err := s.deleteModelRows(ctx, what, name, append(children, tModels)...); err != nil {
		return registry.RegisteredModel{}, err
	}
	return s.GetModel(ctx, newName)
}

// touchModel sets last_updated_time of the model and of all its versions
// to now, what a rename to the same name does in MLflow, and returns the
// model.
func (s *Store) touchModel(ctx context.Context, what, name string, now int64) (registry.RegisteredModel, error) {
	if _, err := s.exec(ctx, what, `UPDATE registered_models SET last_updated_time = $1 WHERE name = $2`, now, name); err != nil {
		return registry.RegisteredModel{}, err
	}
	if err := s.refresh(ctx, tVersions); err != nil {
		return registry.RegisteredModel{}, err
	}
	if _, err := s.exec(ctx, what, `UPDATE model_versions SET last_updated_time = $1 WHERE name = $2`, now, name); err != nil {
		return registry.RegisteredModel{}, err
	}
	if err := s.refresh(ctx, tModels, tVersions); err != nil {
		return registry.RegisteredModel{}, err
	}
	return s.GetModel(ctx, name)
}

package cratedb

import (
	"context"
	"slices"
	"strings"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/sqlsearch"
)

const versionCols = `name, "version", creation_time, last_updated_time, description, user_id, current_stage, source, storage_location, run_id, run_link, status, status_message`

// versionRow is one row of model_versions; nullable columns are pointers.
type versionRow struct {
	name                                                                string
	version                                                             int64
	created, updated                                                    *int64
	description, userID, stage, source, storage, runID, runLink, status *string
	statusMessage                                                       *string
}

func (r *versionRow) dest() []any {
	return []any{&r.name, &r.version, &r.created, &r.updated, &r.description, &r.userID, &r.stage,
		&r.source, &r.storage, &r.runID, &r.runLink, &r.status, &r.statusMessage}
}

func (r *versionRow) deleted() bool { return str(r.stage) == registry.StageDeleted }

func (r *versionRow) modelVersion() registry.ModelVersion {
	return registry.ModelVersion{
		Name: r.name, Version: r.version, CreationTime: num(r.created), LastUpdatedTime: num(r.updated),
		Description: str(r.description), UserID: str(r.userID), CurrentStage: str(r.stage),
		Source: str(r.source), StorageLocation: str(r.storage), RunID: str(r.runID),
		RunLink: str(r.runLink), Status: str(r.status), StatusMessage: str(r.statusMessage),
	}
}

// GetVersion reads the version by primary key, then its tags and aliases.
func (s *Store) GetVersion(ctx context.Context, name string, version int64) (registry.ModelVersion, error) {
	if err := checkVersionArgs(name, version); err != nil {
		return registry.ModelVersion{}, err
	}
	ctx, cancel := bound(ctx)
	defer cancel()
	return s.getVersion(ctx, name, version)
}

func (s *Store) getVersion(ctx context.Context, name string, version int64) (registry.ModelVersion, error) {
	r, err := s.liveVersion(ctx, name, version)
	if err != nil {
		return registry.ModelVersion{}, err
	}
	vs := []registry.ModelVersion{r.modelVersion()}
	if err := s.decorateVersions(ctx, vs); err != nil {
		return registry.ModelVersion{}, err
	}
	return vs[0], nil
}

// liveVersion looks the version up by its full primary key (so it sees
// writes not yet refreshed): ENOTFOUND when missing or soft-deleted.
func (s *Store) liveVersion(ctx context.Context, name string, version int64) (versionRow, error) {
	var r versionRow
	found := false
	err := s.query(ctx, "get model version", func(scan func(...any) error) error {
		found = true
		return scan(r.dest()...)
	}, `SELECT `+versionCols+` FROM model_versions WHERE name = $1 AND "version" = $2`, name, version)
	if err != nil {
		return versionRow{}, err
	}
	if !found || r.deleted() {
		return versionRow{}, versionNotFound(name, version)
	}
	return r, nil
}

// UpdateVersion sets the description (an optimistic update, see
// updateVersion) and reads the version back by primary key.
func (s *Store) UpdateVersion(ctx context.Context, name string, version int64, description string) (registry.ModelVersion, error) {
	if err := checkVersionArgs(name, version); err != nil {
		return registry.ModelVersion{}, err
	}
	if err := registry.ValidateDescription(description); err != nil {
		return registry.ModelVersion{}, err
	}
	ctx, cancel := bound(ctx)
	defer cancel()
	now := s.millis()
	err := s.updateVersion(ctx, "update model version", name, version, func(_ *versionRow, a *sqlsearch.Args) (string, bool) {
		return "description = " + a.Add(description) + ", last_updated_time = " + a.Add(now), true
	})
	if err != nil {
		return registry.ModelVersion{}, err
	}
	if err := s.refresh(ctx, tVersions); err != nil {
		return registry.ModelVersion{}, err
	}
	return s.getVersion(ctx, name, version)
}

// change returns the SET list of an update of r, adding its arguments to
// a; ok false means r needs no update.
type change func(r *versionRow, a *sqlsearch.Args) (set string, ok bool)

// updateVersion applies ch to the live version with CrateDB's optimistic
// concurrency control: the row is read by primary key with its _seq_no
// and _primary_term, and the UPDATE matches on both, so it changes nothing
// (0 rows) when another writer got in between, for example a DeleteVersion
// that an update of the stage would otherwise undo. It then reads again and
// retries, MaxVersionAttempts times at most (then ECONFLICT). ENOTFOUND when
// the version is missing or soft-deleted.
func (s *Store) updateVersion(ctx context.Context, what, name string, version int64, ch change) error {
	for range MaxVersionAttempts {
		r, seq, term, err := s.versionForUpdate(ctx, what, name, version)
		if err != nil {
			return err
		}
		var a sqlsearch.Args
		set, ok := ch(&r, &a)
		if !ok {
			return nil
		}
		sql := `UPDATE model_versions SET ` + set + ` WHERE name = ` + a.Add(name) + ` AND "version" = ` + a.Add(version) +
			` AND "_seq_no" = ` + a.Add(seq) + ` AND "_primary_term" = ` + a.Add(term)
		n, err := s.exec(ctx, what, sql, a...)
		if err != nil {
			return err
		}
		if n == 1 {
			return nil
		}
	}
	return forecast.Errorf(forecast.ECONFLICT, "model version (name=%s, version=%d) kept changing under %s; retry", name, version, what)
}

func (s *Store) versionForUpdate(ctx context.Context, what, name string, version int64) (r versionRow, seq, term int64, err error) {
	found := false
	err = s.query(ctx, what, func(scan func(...any) error) error {
		found = true
		return scan(append(r.dest(), &seq, &term)...)
	}, `SELECT `+versionCols+`, "_seq_no", "_primary_term" FROM model_versions WHERE name = $1 AND "version" = $2`, name, version)
	if err == nil && (!found || r.deleted()) {
		err = versionNotFound(name, version)
	}
	return r, seq, term, err
}

// SetVersionTag upserts the tag of a live version.
func (s *Store) SetVersionTag(ctx context.Context, name string, version int64, tag registry.Tag) error {
	if err := checkVersionArgs(name, version); err != nil {
		return err
	}
	if err := registry.ValidateTag(tag); err != nil {
		return err
	}
	ctx, cancel := bound(ctx)
	defer cancel()
	if _, err := s.liveVersion(ctx, name, version); err != nil {
		return err
	}
	if err := s.upsertVersionTag(ctx, name, version, tag); err != nil {
		return err
	}
	return s.refresh(ctx, tVerTag)
}

// DeleteVersionTag deletes the tag of a live version by primary key; a
// missing tag is not an error.
func (s *Store) DeleteVersionTag(ctx context.Context, name string, version int64, key string) error {
	if err := checkVersionArgs(name, version); err != nil {
		return err
	}
	if key == "" {
		return forecast.FieldErrorf(forecast.EINVALID, "key", "missing value for parameter 'key'")
	}
	ctx, cancel := bound(ctx)
	defer cancel()
	if _, err := s.liveVersion(ctx, name, version); err != nil {
		return err
	}
	if _, err := s.exec(ctx, "delete model version tag", `DELETE FROM model_version_tags WHERE name = $1 AND "version" = $2 AND "key" = $3`, name, version, key); err != nil {
		return err
	}
	return s.refresh(ctx, tVerTag)
}

func checkVersionArgs(name string, version int64) error {
	if err := registry.ValidateName("name", name); err != nil {
		return err
	}
	return validVersion(version)
}

// decorateVersions fills in the tags and aliases of vs with one query each.
func (s *Store) decorateVersions(ctx context.Context, vs []registry.ModelVersion) error {
	if len(vs) == 0 {
		return nil
	}
	type key struct {
		name    string
		version int64
	}
	idx := make(map[key]int, len(vs))
	var ta, aa sqlsearch.Args
	pairs := make([]string, len(vs))
	var names []string
	for i, v := range vs {
		idx[key{v.Name, v.Version}] = i
		pairs[i] = "(name = " + ta.Add(v.Name) + ` AND "version" = ` + ta.Add(v.Version) + ")"
		if !slices.Contains(names, v.Name) {
			names = append(names, v.Name)
		}
	}
	in := make([]string, len(names))
	for i, n := range names {
		in[i] = aa.Add(n)
	}
	err := s.query(ctx, "get model version tags", func(scan func(...any) error) error {
		var k key
		var tk string
		var value *string
		if err := scan(&k.name, &k.version, &tk, &value); err != nil {
			return err
		}
		if i, ok := idx[k]; ok {
			vs[i].Tags = append(vs[i].Tags, registry.Tag{Key: tk, Value: str(value)})
		}
		return nil
	}, `SELECT name, "version", "key", "value" FROM model_version_tags WHERE `+strings.Join(pairs, " OR ")+` ORDER BY name, "version", "key"`, ta...)
	if err != nil {
		return err
	}
	return s.query(ctx, "get model version aliases", func(scan func(...any) error) error {
		var name, alias, version string
		if err := scan(&name, &alias, &version); err != nil {
			return err
		}
		v, err := aliasVersion(name, alias, version)
		if err != nil {
			return err
		}
		if i, ok := idx[key{name, v}]; ok {
			vs[i].Aliases = append(vs[i].Aliases, alias)
		}
		return nil
	}, `SELECT name, "alias", "version" FROM registered_model_aliases WHERE name IN (`+strings.Join(in, ", ")+`) ORDER BY name, "alias"`, aa...)
}

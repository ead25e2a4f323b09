package embedded

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

// The snapshot format: a JSON object naming the format and its version,
// with the models sorted by name. A reader refuses any other format, a
// newer version and any field it does not know, so an older build never
// drops data a newer one wrote. Version 2 is version 1 with a journal
// next to it (journal.go): a build that reads version 1 only would miss
// the journal, so it must refuse the file.
const (
	formatName    = "carbongate-registry"
	formatVersion = 2
)

type fileHeader struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
}

type fileV1 struct {
	fileHeader
	Models []*model `json:"models"`
}

func encode(st *state) ([]byte, error) {
	f := fileV1{fileHeader: fileHeader{Format: formatName, Version: formatVersion}, Models: []*model{}}
	for _, name := range slices.Sorted(maps.Keys(st.models)) {
		f.Models = append(f.Models, st.models[name])
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

func invalidFile(path, format string, args ...any) error {
	return forecast.Errorf(forecast.EINVALID, "embedded: %s is not a registry file this version can read: %s", path, fmt.Sprintf(format, args...))
}

// decode parses and checks a snapshot and returns it with its format
// version; EINVALID for anything this version does not understand.
func decode(path string, data []byte) (*state, int, error) {
	var h fileHeader
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, 0, invalidFile(path, "%v", err)
	}
	if h.Format != formatName {
		return nil, 0, invalidFile(path, "format %q, want %q", h.Format, formatName)
	}
	if h.Version < 1 || h.Version > formatVersion {
		return nil, 0, invalidFile(path, "format version %d, this version reads 1 to %d", h.Version, formatVersion)
	}
	// json.Unmarshal above has checked that data is one JSON value.
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f fileV1
	if err := dec.Decode(&f); err != nil {
		return nil, 0, invalidFile(path, "%v", err)
	}
	st := newState()
	for _, m := range f.Models {
		if m == nil {
			return nil, 0, invalidFile(path, "a null model")
		}
		if _, dup := st.models[m.Name]; dup {
			return nil, 0, invalidFile(path, "model %q appears twice", m.Name)
		}
		st.models[m.Name] = m
	}
	return st, h.Version, checkState(path, st)
}

// checkState checks every model of st (a snapshot, or a snapshot with the
// journal replayed).
func checkState(path string, st *state) error {
	for _, name := range slices.Sorted(maps.Keys(st.models)) {
		if err := checkModel(st.models[name]); err != nil {
			return invalidFile(path, "model %q: %v", name, err)
		}
	}
	return nil
}

// checkModel checks the invariants the store relies on.
func checkModel(m *model) error {
	if err := registry.ValidateName("name", m.Name); err != nil {
		return err
	}
	for i, v := range m.Versions {
		if v == nil || v.Version < 1 || (i > 0 && v.Version <= m.Versions[i-1].Version) {
			return fmt.Errorf("versions are not positive and ascending at index %d", i)
		}
		if _, err := registry.ValidateStage(v.CurrentStage); err != nil && v.CurrentStage != registry.StageDeleted {
			return fmt.Errorf("version %d: %w", v.Version, err)
		}
		if err := checkTags(v.Tags); err != nil {
			return fmt.Errorf("version %d: %w", v.Version, err)
		}
	}
	for a, n := range m.Aliases {
		if err := registry.ValidateAlias(a); err != nil {
			return err
		}
		if v := m.find(n); v == nil || v.CurrentStage == registry.StageDeleted {
			return fmt.Errorf("alias %q points at version %d, which does not exist", a, n)
		}
	}
	return checkTags(m.Tags)
}

func checkTags(tags map[string]string) error {
	for k, v := range tags {
		if err := registry.ValidateTag(registry.Tag{Key: k, Value: v}); err != nil {
			return err
		}
	}
	return nil
}

// dirSyncError reports a failure after the rename: the file holds the new
// state but the rename may not survive a crash.
type dirSyncError struct{ err error }

func (e *dirSyncError) Error() string { return "sync directory: " + e.err.Error() }
func (e *dirSyncError) Unwrap() error { return e.err }

// tempPattern names the temporary files of path (os.CreateTemp pattern).
func tempPattern(path string) string { return "." + filepath.Base(path) + ".tmp-*" }

// saveFile replaces path with data atomically and durably: a temporary file
// in the same directory is written and synced, renamed over path, and the
// directory is synced. Until the rename, path is untouched; a failure after
// it is a *dirSyncError.
func saveFile(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, tempPattern(path))
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	if serr := syncDir(dir); serr != nil {
		return &dirSyncError{err: serr}
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// removeTemps deletes temporary files a crashed process left next to path.
// The caller holds the lock, so no save is in progress.
func removeTemps(path string) {
	dir := filepath.Dir(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	prefix := strings.TrimSuffix(tempPattern(path), "*")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

package embedded

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
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
// the journal, so it must refuse the file. Version 3 adds "checksum", the
// CRC-32C of the models as compact JSON, so that a changed byte is
// refused rather than read as another name or number; versions 1 and 2
// (without it) are read and rewritten as version 3 at Open.
const (
	formatName    = "carbongate-registry"
	formatVersion = 3
	// checksumVersion is the first version with a checksum.
	checksumVersion = 3
)

type fileHeader struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
}

type file struct {
	fileHeader
	Checksum string          `json:"checksum,omitempty"`
	Models   json.RawMessage `json:"models"`
}

// modelsChecksum is the checksum field of models (compact JSON).
func modelsChecksum(compact []byte) string {
	return fmt.Sprintf("crc32c:%08x", crc32.Checksum(compact, castagnoli))
}

func encode(st *state) ([]byte, error) {
	list := []*model{}
	for _, name := range slices.Sorted(maps.Keys(st.models)) {
		list = append(list, st.models[name])
	}
	models, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}
	f := file{fileHeader: fileHeader{Format: formatName, Version: formatVersion}, Checksum: modelsChecksum(models), Models: models}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

func invalidFile(path, format string, args ...any) error {
	return forecast.Errorf(forecast.EINVALID, "embedded: %s is not a registry file this version can read: %s", path, fmt.Sprintf(format, args...))
}

// jsonError describes a decoding error, with its offset when JSON has one.
func jsonError(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("at byte %d: %v", syn.Offset, err)
	case errors.As(err, &typ):
		return fmt.Sprintf("at byte %d: %v", typ.Offset, err)
	}
	return err.Error()
}

// decode parses and checks a snapshot and returns it with its format
// version; EINVALID for anything this version does not understand or a
// checksum that does not match.
func decode(path string, data []byte) (*state, int, error) {
	var h fileHeader
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, 0, invalidFile(path, "%s", jsonError(err))
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
	var f file
	if err := dec.Decode(&f); err != nil {
		return nil, 0, invalidFile(path, "%s", jsonError(err))
	}
	if err := checkSum(f); err != nil {
		return nil, 0, forecast.Errorf(forecast.EINVALID, "embedded: %s is damaged: %v; the registry is not opened", path, err)
	}
	var list []*model
	if len(f.Models) == 0 {
		f.Models = []byte("[]") // versions 1 and 2 (checkSum requires models from version 3)
	}
	dec = json.NewDecoder(bytes.NewReader(f.Models))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&list); err != nil {
		return nil, 0, invalidFile(path, "models: %s", jsonError(err))
	}
	st := newState()
	for _, m := range list {
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

// checkSum checks f's checksum: required from checksumVersion on, absent
// before.
func checkSum(f file) error {
	if f.Version < checksumVersion {
		if f.Checksum != "" {
			return fmt.Errorf("format version %d has no checksum", f.Version)
		}
		return nil
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, f.Models); err != nil {
		return err
	}
	if got := modelsChecksum(compact.Bytes()); got != f.Checksum {
		return fmt.Errorf("the checksum of its models is %s, the file says %q", got, f.Checksum)
	}
	return nil
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

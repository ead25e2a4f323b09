package embedded

import (
	"cmp"
	"maps"
	"slices"
	"sort"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

// state is the whole registry. Readers share it under the store's read
// lock; a write (tx) changes clones of the models it touches and installs
// them only once the write is in the journal.
type state struct {
	models map[string]*model
}

// model is one registered model with its versions (soft-deleted ones
// included, ascending by number), tags and aliases.
type model struct {
	Name            string            `json:"name"`
	CreationTime    int64             `json:"creation_time"`
	LastUpdatedTime int64             `json:"last_updated_time"`
	Description     string            `json:"description,omitempty"`
	Tags            map[string]string `json:"tags,omitempty"`
	Aliases         map[string]int64  `json:"aliases,omitempty"`
	Versions        []*version        `json:"versions,omitempty"`
}

// version is one model version; Name is its model's.
type version struct {
	Version         int64             `json:"version"`
	CreationTime    int64             `json:"creation_time"`
	LastUpdatedTime int64             `json:"last_updated_time"`
	Description     string            `json:"description,omitempty"`
	UserID          string            `json:"user_id,omitempty"`
	CurrentStage    string            `json:"current_stage"`
	Source          string            `json:"source,omitempty"`
	RunID           string            `json:"run_id,omitempty"`
	RunLink         string            `json:"run_link,omitempty"`
	Status          string            `json:"status"`
	StatusMessage   string            `json:"status_message,omitempty"`
	StorageLocation string            `json:"storage_location,omitempty"`
	Tags            map[string]string `json:"tags,omitempty"`
}

func newState() *state { return &state{models: map[string]*model{}} }

// clone returns a copy of m that shares its versions: a write changes a
// version only through edit, which copies it first.
func (m *model) clone() *model {
	c := *m
	c.Tags = maps.Clone(m.Tags)
	c.Aliases = maps.Clone(m.Aliases)
	c.Versions = slices.Clone(m.Versions)
	return &c
}

// edit replaces the i-th version of m (a clone) by a copy and returns it.
func (m *model) edit(i int) *version {
	c := *m.Versions[i]
	c.Tags = maps.Clone(c.Tags)
	m.Versions[i] = &c
	return &c
}

// tx is one write: the models it touched, as clones (nil: deleted), over
// the state it started from, which it never changes.
type tx struct {
	st      *state
	touched map[string]*model
}

func newTx(st *state) *tx { return &tx{st: st, touched: map[string]*model{}} }

// exists reports whether the model name exists as of this write.
func (t *tx) exists(name string) bool {
	if m, ok := t.touched[name]; ok {
		return m != nil
	}
	_, ok := t.st.models[name]
	return ok
}

// model returns the write's clone of the named model, or ENOTFOUND.
func (t *tx) model(name string) (*model, error) {
	if m, ok := t.touched[name]; ok && m != nil {
		return m, nil
	} else if ok {
		return nil, modelNotFound(name)
	}
	m, err := t.st.model(name)
	if err != nil {
		return nil, err
	}
	c := m.clone()
	t.touched[name] = c
	return c, nil
}

// version returns the write's clones of the named model and of its live
// version number, or ENOTFOUND.
func (t *tx) version(name string, number int64) (*model, *version, error) {
	m, err := t.model(name)
	if err != nil {
		return nil, nil, err
	}
	if i, ok := m.index(number); ok && m.Versions[i].CurrentStage != registry.StageDeleted {
		return m, m.edit(i), nil
	}
	return nil, nil, versionNotFound(name, number)
}

// put adds m (a new model or a renamed one) to the write.
func (t *tx) put(m *model) { t.touched[m.Name] = m }

// remove deletes the named model in this write.
func (t *tx) remove(name string) { t.touched[name] = nil }

// aliasesChanged reports whether the write moves, adds or removes an
// alias.
func (t *tx) aliasesChanged() bool {
	for name, m := range t.touched {
		var before, after map[string]int64
		if b := t.st.models[name]; b != nil {
			before = b.Aliases
		}
		if m != nil {
			after = m.Aliases
		}
		if !maps.Equal(before, after) {
			return true
		}
	}
	return false
}

// commit installs the write's models into its state. The caller holds the
// store's write lock, so no reader sees a half-installed write.
func (t *tx) commit() {
	for name, m := range t.touched {
		if m == nil {
			delete(t.st.models, name)
		} else {
			t.st.models[name] = m
		}
	}
}

func modelNotFound(name string) error {
	return forecast.Errorf(forecast.ENOTFOUND, "Registered Model with name=%s not found", name)
}

func versionNotFound(name string, number int64) error {
	return forecast.Errorf(forecast.ENOTFOUND, "Model Version (name=%s, version=%d) not found", name, number)
}

// model returns the named model or ENOTFOUND.
func (st *state) model(name string) (*model, error) {
	m, ok := st.models[name]
	if !ok {
		return nil, modelNotFound(name)
	}
	return m, nil
}

// version returns a live (not soft-deleted) version of the named model or
// ENOTFOUND.
func (st *state) version(name string, number int64) (*model, *version, error) {
	m, err := st.model(name)
	if err != nil {
		return nil, nil, err
	}
	if v := m.find(number); v != nil && v.CurrentStage != registry.StageDeleted {
		return m, v, nil
	}
	return nil, nil, versionNotFound(name, number)
}

// find returns version number of m, deleted or not, or nil.
func (m *model) find(number int64) *version {
	if i, ok := m.index(number); ok {
		return m.Versions[i]
	}
	return nil
}

// index is where version number is, or would be, in m.Versions.
func (m *model) index(number int64) (int, bool) {
	return slices.BinarySearchFunc(m.Versions, number, func(v *version, n int64) int { return cmp.Compare(v.Version, n) })
}

// nextVersion is the highest version number ever allocated, plus one.
func (m *model) nextVersion() int64 {
	if len(m.Versions) == 0 {
		return 1
	}
	return m.Versions[len(m.Versions)-1].Version + 1
}

// aliasTargets lists every alias sorted by model name, then alias.
func (st *state) aliasTargets() []registry.AliasTarget {
	var out []registry.AliasTarget
	for _, name := range slices.Sorted(maps.Keys(st.models)) {
		m := st.models[name]
		for _, a := range slices.Sorted(maps.Keys(m.Aliases)) {
			out = append(out, registry.AliasTarget{Name: name, Alias: a, Version: m.Aliases[a]})
		}
	}
	return out
}

// export returns m as the API shows it.
func (m *model) export() registry.RegisteredModel {
	out := registry.RegisteredModel{
		Name: m.Name, CreationTime: m.CreationTime, LastUpdatedTime: m.LastUpdatedTime,
		Description: m.Description, Tags: exportTags(m.Tags),
	}
	for _, a := range slices.Sorted(maps.Keys(m.Aliases)) {
		out.Aliases = append(out.Aliases, registry.Alias{Alias: a, Version: m.Aliases[a]})
	}
	return out
}

// export returns v of model m as the API shows it.
func (v *version) export(m *model) registry.ModelVersion {
	out := registry.ModelVersion{
		Name: m.Name, Version: v.Version, CreationTime: v.CreationTime, LastUpdatedTime: v.LastUpdatedTime,
		Description: v.Description, UserID: v.UserID, CurrentStage: v.CurrentStage, Source: v.Source,
		RunID: v.RunID, RunLink: v.RunLink, Status: v.Status, StatusMessage: v.StatusMessage,
		StorageLocation: v.StorageLocation, Tags: exportTags(v.Tags),
	}
	for a, n := range m.Aliases {
		if n == v.Version {
			out.Aliases = append(out.Aliases, a)
		}
	}
	sort.Strings(out.Aliases)
	return out
}

func exportTags(tags map[string]string) []registry.Tag {
	var out []registry.Tag
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		out = append(out, registry.Tag{Key: k, Value: tags[k]})
	}
	return out
}

// tagMap validates tags, each and in all (registry.ValidateTagTotals),
// and returns them as a map (the last value of a key wins), or nil when
// there are none.
func tagMap(tags []registry.Tag) (map[string]string, error) {
	if len(tags) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(tags))
	for _, t := range tags {
		if err := registry.ValidateTag(t); err != nil {
			return nil, err
		}
		out[t.Key] = t.Value
	}
	return out, checkTagTotals(out)
}

// setTag sets key in *tags (a write's copy, which the write discards when
// it fails), allocating the map when needed; EINVALID when that takes the
// tags over registry.ValidateTagTotals' limits.
func setTag(tags *map[string]string, t registry.Tag) error {
	if *tags == nil {
		*tags = map[string]string{}
	}
	(*tags)[t.Key] = t.Value
	return checkTagTotals(*tags)
}

// checkTagTotals checks tags against registry.ValidateTagTotals.
func checkTagTotals(tags map[string]string) error {
	size := 0
	for k, v := range tags {
		size += len(k) + len(v)
	}
	return registry.ValidateTagTotals(len(tags), size)
}

package embedded

import (
	"cmp"
	"maps"
	"slices"
	"sort"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

// state is the whole registry. A state that is current is never modified:
// writes change a clone.
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

// clone returns a deep copy of st.
func (st *state) clone() *state {
	out := &state{models: make(map[string]*model, len(st.models))}
	for name, m := range st.models {
		c := *m
		c.Tags = maps.Clone(m.Tags)
		c.Aliases = maps.Clone(m.Aliases)
		c.Versions = make([]*version, len(m.Versions))
		for i, v := range m.Versions {
			vc := *v
			vc.Tags = maps.Clone(v.Tags)
			c.Versions[i] = &vc
		}
		out.models[name] = &c
	}
	return out
}

// model returns the named model or ENOTFOUND.
func (st *state) model(name string) (*model, error) {
	m, ok := st.models[name]
	if !ok {
		return nil, forecast.Errorf(forecast.ENOTFOUND, "Registered Model with name=%s not found", name)
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
	return nil, nil, forecast.Errorf(forecast.ENOTFOUND, "Model Version (name=%s, version=%d) not found", name, number)
}

// find returns version number of m, deleted or not, or nil.
func (m *model) find(number int64) *version {
	i, ok := slices.BinarySearchFunc(m.Versions, number, func(v *version, n int64) int { return cmp.Compare(v.Version, n) })
	if !ok {
		return nil
	}
	return m.Versions[i]
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

// tagMap validates tags and returns them as a map (the last value of a key
// wins), or nil when there are none.
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
	return out, nil
}

// setTag sets key in *tags, allocating the map when needed.
func setTag(tags *map[string]string, t registry.Tag) {
	if *tags == nil {
		*tags = map[string]string{}
	}
	(*tags)[t.Key] = t.Value
}

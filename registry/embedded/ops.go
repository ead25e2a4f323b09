package embedded

import (
	"fmt"
	"maps"
	"slices"
)

// op is one change of a journal record. Delete removes a model. Patch
// changes one, creating it when absent: it sets the model's own fields
// and, of its versions, the fields of those it lists, and sets and
// deletes only the tags and aliases that changed, so a write appends what
// it changed, not the whole model or version. Put, which format 2 wrote,
// is read only: it sets a model's fields and tags whole and replaces the
// versions it lists.
type op struct {
	Delete string      `json:"delete,omitempty"`
	Put    *model      `json:"put,omitempty"`
	Patch  *modelPatch `json:"patch,omitempty"`
}

// modelPatch is a model's own fields (the embedded model, whose Tags,
// Aliases and Versions the fields below shadow in JSON and leave unused)
// with the changes of its tags, aliases and versions.
type modelPatch struct {
	model
	Tags     *delta[string]  `json:"tags,omitempty"`
	Aliases  *delta[int64]   `json:"aliases,omitempty"`
	Versions []*versionPatch `json:"versions,omitempty"`
}

// versionPatch is a version's own fields (its Tags shadowed and unused)
// with the changes of its tags.
type versionPatch struct {
	version
	Tags *delta[string] `json:"tags,omitempty"`
}

// delta is what changed in a map: keys set to new values, keys deleted.
type delta[V comparable] struct {
	Set map[string]V `json:"set,omitempty"`
	Del []string     `json:"del,omitempty"`
}

// diff is what changed from before to after, or nil when nothing did.
func diff[V comparable](before, after map[string]V) *delta[V] {
	var d delta[V]
	for k, v := range after {
		if old, ok := before[k]; !ok || old != v {
			if d.Set == nil {
				d.Set = map[string]V{}
			}
			d.Set[k] = v
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			d.Del = append(d.Del, k)
		}
	}
	if d.Set == nil && d.Del == nil {
		return nil
	}
	slices.Sort(d.Del)
	return &d
}

// applyTo returns m (which the caller owns) with d applied, or nil when
// that leaves it empty.
func (d *delta[V]) applyTo(m map[string]V) map[string]V {
	if d == nil {
		return m
	}
	for _, k := range d.Del {
		delete(m, k)
	}
	if len(d.Set) > 0 && m == nil {
		m = make(map[string]V, len(d.Set))
	}
	maps.Copy(m, d.Set)
	if len(m) == 0 {
		return nil
	}
	return m
}

// ops are the write's changes: deletions first, then a patch of each
// touched model against the state the write started from, by name.
func (t *tx) ops() []op {
	var dels, patches []op
	for _, name := range slices.Sorted(maps.Keys(t.touched)) {
		m, base := t.touched[name], t.st.models[name]
		if m == nil {
			dels = append(dels, op{Delete: name})
			continue
		}
		if base == nil {
			base = &model{}
		}
		p := &modelPatch{model: *m, Tags: diff(base.Tags, m.Tags), Aliases: diff(base.Aliases, m.Aliases)}
		p.model.Tags, p.model.Aliases, p.model.Versions = nil, nil, nil
		for i, v := range m.Versions {
			if i < len(base.Versions) && base.Versions[i] == v {
				continue // versions are only appended: the same index is the same version
			}
			var before map[string]string
			if old := base.find(v.Version); old != nil {
				before = old.Tags
			}
			vp := &versionPatch{version: *v, Tags: diff(before, v.Tags)}
			vp.version.Tags = nil
			p.Versions = append(p.Versions, vp)
		}
		patches = append(patches, op{Patch: p})
	}
	return append(dels, patches...)
}

// apply replays ops (a journal record) onto st. Every op sets fields and
// keys to their new values, so replaying a record st already holds
// changes nothing, and a journal may be replayed onto a snapshot that
// holds some of it.
func (st *state) apply(ops []op) error {
	for _, o := range ops {
		switch {
		case o.Delete != "" && o.Put == nil && o.Patch == nil:
			delete(st.models, o.Delete)
		case o.Put != nil && o.Delete == "" && o.Patch == nil:
			st.put(o.Put)
		case o.Patch != nil && o.Delete == "" && o.Put == nil:
			st.patch(o.Patch)
		default:
			return fmt.Errorf("an operation must delete, put or patch exactly one model")
		}
	}
	return nil
}

// put sets p's fields on the model of its name (created when absent) and
// inserts or replaces the versions p lists.
func (st *state) put(p *model) {
	m := &model{}
	if old := st.models[p.Name]; old != nil {
		m = old.clone()
	}
	versions := m.Versions
	*m = *p
	m.Versions = versions
	for _, v := range p.Versions {
		m.setVersion(v)
	}
	st.models[p.Name] = m
}

// patch applies p to the model of its name (created when absent).
func (st *state) patch(p *modelPatch) {
	m := &model{}
	if old := st.models[p.Name]; old != nil {
		m = old.clone()
	}
	tags, aliases, versions := p.Tags.applyTo(m.Tags), p.Aliases.applyTo(m.Aliases), m.Versions
	*m = p.model
	m.Tags, m.Aliases, m.Versions = tags, aliases, versions
	for _, vp := range p.Versions {
		var tags map[string]string
		if old := m.find(vp.Version); old != nil {
			tags = maps.Clone(old.Tags)
		}
		v := vp.version
		v.Tags = vp.Tags.applyTo(tags)
		m.setVersion(&v)
	}
	st.models[p.Name] = m
}

// setVersion inserts v into m (a clone) or replaces the version of its
// number.
func (m *model) setVersion(v *version) {
	if i, ok := m.index(v.Version); ok {
		m.Versions[i] = v
	} else {
		m.Versions = slices.Insert(m.Versions, i, v)
	}
}

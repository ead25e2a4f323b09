// Package storetest is the conformance suite of registry.Store. Every
// backend (registry/embedded, registry/postgres, registry/cratedb) runs it
// from its own tests with a function that opens a fresh, empty store:
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, o registry.Options) registry.Store {
//			s, err := embedded.Open(filepath.Join(t.TempDir(), "registry.json"), o)
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		}, storetest.Options{})
//	}
//
// The suite asserts the contract of registry.Store (MLflow's semantics)
// plus these choices where MLflow or the contract leave room:
//   - invalid input is EINVALID with Field naming the request field: "name"
//     (CreateModel, CreateVersion), "new_name" (RenameModel), "alias",
//     "key" and "value" (tags), "stage"; an unknown filter key or operator
//     is EINVALID (field "filter"), an unknown order_by key too; a
//     description, source or run_link longer than MLflow's columns is
//     EINVALID naming that field;
//   - LIKE and ILIKE are SQL's: % any run, _ one character, a backslash
//     escapes the next character; values, tag keys included, are matched
//     literally, never spliced into SQL;
//   - pages are ordered by OrderBy, then name ascending, then (versions)
//     version descending: MLflow's tiebreak and default order;
//   - SetAlias bumps no timestamp (MLflow keeps none for aliases);
//   - a fault of the database (closed store, tables never created, server
//     unreachable) is EUNAVAILABLE on every backend, never ENOTFOUND,
//     credentials the server refuses are EUNAUTHORIZED, and Close may be
//     called more than once (see Options.Unmigrated, Options.Unreachable
//     and Options.Unauthorized);
//   - the tags of one model or version are capped by
//     registry.ValidateTagTotals (EINVALID naming "tags"): MLflow has no
//     such cap, so a backend that does not enforce it says so in Except;
//   - deleting a tag that is not set is nil or ENOTFOUND and changes
//     nothing; TransitionStage with archiveExisting to None or Archived
//     either archives nothing or is EINVALID and changes nothing.
//
// Assertions on order use lowercase ASCII names, keys and aliases only, so
// that byte order and database collations agree.
package storetest

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

// Options describe what a backend cannot do.
type Options struct {
	// NoRename: the backend refuses RenameModel with EINVALID and changes
	// nothing (for a backend that cannot move rows to a new key).
	NoRename bool
	// Except names subtests not to run, each with the reason (e.g. a remote
	// MLflow server that behaves differently on purpose). The reasons are
	// logged, so the report says what was left out and why.
	Except map[string]string
	// Unmigrated opens a store on a database whose tables were never
	// created (migrate not run); it returns Open's error, if any, and the
	// suite closes the store. Either Open or every call must fail with
	// EUNAVAILABLE whose message says to migrate. Nil for a backend
	// without tables: the case is logged as not run.
	Unmigrated func(t *testing.T, o registry.Options) (registry.Store, error)
	// Unreachable opens a store on a server that refuses connections:
	// either Open or every call must fail with EUNAVAILABLE. Nil for a
	// backend without a server: the case is logged as not run.
	Unreachable func(t *testing.T, o registry.Options) (registry.Store, error)
	// Unauthorized opens a store with credentials the server refuses (a
	// user it does not know): either Open or every call must fail with
	// EUNAUTHORIZED. Nil for a backend without credentials: the case is
	// logged as not run.
	Unauthorized func(t *testing.T, o registry.Options) (registry.Store, error)
}

// startMillis is where every subtest's fake clock starts (2023-11-14).
const startMillis = 1_700_000_000_000

// Run runs the suite. open must return a fresh, empty store that uses o
// (its Now is the suite's fake clock); the suite closes it when the
// subtest ends, before the cleanups open registered. Subtests run in
// parallel, each on its own store.
func Run(t *testing.T, open func(t *testing.T, o registry.Options) registry.Store, opts Options) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"CreateGetModel", testCreateGetModel},
		{"CreateModelConflict", testCreateModelConflict},
		{"CreateModelRace", testCreateModelRace},
		{"ModelNames", testModelNames},
		{"NotFound", testNotFound},
		{"UpdateModel", testUpdateModel},
		{"DeleteModel", testDeleteModel},
		{"RenameModel", testRenameModel},
		{"ModelTags", testModelTags},
		{"SortedSlices", testSortedSlices},
		{"SlicesNotShared", testSlicesNotShared},
		{"ContextCanceled", testContextCanceled},
		{"CreateGetVersion", testCreateGetVersion},
		{"VersionSequence", testVersionSequence},
		{"VersionRace", testVersionRace},
		{"UpdateVersion", testUpdateVersion},
		{"TextLimits", testTextLimits},
		{"DeleteVersion", testDeleteVersion},
		{"TransitionStage", testTransitionStage},
		{"LatestVersions", testLatestVersions},
		{"VersionTags", testVersionTags},
		{"TagLimits", testTagLimits},
		{"Aliases", testAliases},
		{"InvalidAliases", testInvalidAliases},
		{"SearchModelsFilter", testSearchModelsFilter},
		{"SearchVersionsFilter", testSearchVersionsFilter},
		{"SearchModelsOrder", testSearchModelsOrder},
		{"SearchVersionsOrder", testSearchVersionsOrder},
		{"SearchInvalid", testSearchInvalid},
		{"Closed", testClosed},
	}
	faults := []struct {
		name, code, fault, hint string
		open                    func(t *testing.T, o registry.Options) (registry.Store, error)
	}{
		{"Unmigrated", forecast.EUNAVAILABLE, "on a database never migrated", "migrate", opts.Unmigrated},
		{"Unreachable", forecast.EUNAVAILABLE, "with the server unreachable", "", opts.Unreachable},
		{"Unauthorized", forecast.EUNAUTHORIZED, "with credentials the server refuses", "", opts.Unauthorized},
	}
	for _, f := range faults {
		if why, ok := opts.Except[f.name]; ok || f.open == nil {
			if !ok {
				why = "the backend has no opener for it"
			}
			t.Logf("storetest: %s not run: %s", f.name, why)
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			testOpenFault(t, f.open, f.code, f.fault, f.hint)
		})
	}
	for _, tc := range tests {
		if why, ok := opts.Except[tc.name]; ok {
			t.Logf("storetest: %s not run: %s", tc.name, why)
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newEnv(t, open, opts))
		})
	}
}

// clock is a fake clock in whole milliseconds, safe for concurrent use.
type clock struct {
	mu sync.Mutex
	ms int64
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.UnixMilli(c.ms)
}

// advance moves the clock forward by d and returns the new time in ms.
func (c *clock) advance(d time.Duration) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ms += d.Milliseconds()
	return c.ms
}

// env is one subtest's store, clock and context.
type env struct {
	s    registry.Store
	clk  *clock
	ctx  context.Context
	opts Options
}

func newEnv(t *testing.T, open func(t *testing.T, o registry.Options) registry.Store, opts Options) *env {
	t.Helper()
	clk := &clock{ms: startMillis}
	s := open(t, registry.Options{Now: clk.Now})
	if s == nil {
		t.Fatal("open returned a nil store")
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return &env{s: s, clk: clk, ctx: ctx, opts: opts}
}

// tick advances the clock by one second and returns the new time in ms.
func (e *env) tick() int64 { return e.clk.advance(time.Second) }

func (e *env) createModel(t testing.TB, name string, tags ...registry.Tag) registry.RegisteredModel {
	t.Helper()
	m, err := e.s.CreateModel(e.ctx, name, "", tags)
	if err != nil {
		t.Fatalf("CreateModel(%q): %v", name, err)
	}
	return m
}

func (e *env) getModel(t testing.TB, name string) registry.RegisteredModel {
	t.Helper()
	m, err := e.s.GetModel(e.ctx, name)
	if err != nil {
		t.Fatalf("GetModel(%q): %v", name, err)
	}
	return m
}

func (e *env) createVersion(t testing.TB, nv registry.NewVersion) registry.ModelVersion {
	t.Helper()
	v, err := e.s.CreateVersion(e.ctx, nv)
	if err != nil {
		t.Fatalf("CreateVersion(%q): %v", nv.Name, err)
	}
	return v
}

// newVersion creates a version of name with a source and nothing else.
func (e *env) newVersion(t testing.TB, name string) registry.ModelVersion {
	t.Helper()
	return e.createVersion(t, registry.NewVersion{Name: name, Source: "s3://models/" + name})
}

func (e *env) getVersion(t testing.TB, name string, version int64) registry.ModelVersion {
	t.Helper()
	v, err := e.s.GetVersion(e.ctx, name, version)
	if err != nil {
		t.Fatalf("GetVersion(%q, %d): %v", name, version, err)
	}
	return v
}

func (e *env) setAlias(t testing.TB, name, alias string, version int64) {
	t.Helper()
	if err := e.s.SetAlias(e.ctx, name, alias, version); err != nil {
		t.Fatalf("SetAlias(%q, %q, %d): %v", name, alias, version, err)
	}
}

func (e *env) transition(t testing.TB, name string, version int64, stage string) {
	t.Helper()
	if _, err := e.s.TransitionStage(e.ctx, name, version, stage, false); err != nil {
		t.Fatalf("TransitionStage(%q, %d, %q): %v", name, version, stage, err)
	}
}

func (e *env) deleteVersion(t testing.TB, name string, version int64) {
	t.Helper()
	if err := e.s.DeleteVersion(e.ctx, name, version); err != nil {
		t.Fatalf("DeleteVersion(%q, %d): %v", name, version, err)
	}
}

func (e *env) aliasTargets(t testing.TB) []registry.AliasTarget {
	t.Helper()
	got, err := e.s.AliasTargets(e.ctx)
	if err != nil {
		t.Fatalf("AliasTargets: %v", err)
	}
	return got
}

func tag(key, value string) registry.Tag { return registry.Tag{Key: key, Value: value} }

func alias(name string, version int64) registry.Alias {
	return registry.Alias{Alias: name, Version: version}
}

func target(name, alias string, version int64) registry.AliasTarget {
	return registry.AliasTarget{Name: name, Alias: alias, Version: version}
}

// wantErr fails t unless err is a *forecast.Error with code and, when field
// is not empty, that field.
func wantErr(t testing.TB, what string, err error, code, field string) {
	t.Helper()
	if got := forecast.ErrorCode(err); got != code {
		t.Fatalf("%s: error %v (code %q), want code %q", what, err, got, code)
	}
	if field != "" {
		if got := forecast.ErrorField(err); got != field {
			t.Fatalf("%s: error %v names field %q, want %q", what, err, got, field)
		}
	}
}

// wantNoErrOrNotFound accepts nil and ENOTFOUND, the two answers the
// contract leaves open (e.g. deleting a tag that is not set).
func wantNoErrOrNotFound(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil && forecast.ErrorCode(err) != forecast.ENOTFOUND {
		t.Fatalf("%s: %v, want nil or ENOTFOUND", what, err)
	}
}

// normModel makes empty and nil slices compare equal.
func normModel(m registry.RegisteredModel) registry.RegisteredModel {
	if len(m.Tags) == 0 {
		m.Tags = nil
	}
	if len(m.Aliases) == 0 {
		m.Aliases = nil
	}
	return m
}

// normVersion makes empty and nil slices compare equal and compares the
// artifact location instead of StorageLocation (MLflow may copy Source
// into it).
func normVersion(v registry.ModelVersion) registry.ModelVersion {
	if len(v.Tags) == 0 {
		v.Tags = nil
	}
	if len(v.Aliases) == 0 {
		v.Aliases = nil
	}
	v.StorageLocation = v.ArtifactLocation()
	return v
}

func sameModel(t testing.TB, what string, got, want registry.RegisteredModel) {
	t.Helper()
	if g, w := normModel(got), normModel(want); !reflect.DeepEqual(g, w) {
		t.Fatalf("%s:\n got %+v\nwant %+v", what, g, w)
	}
}

func sameVersion(t testing.TB, what string, got, want registry.ModelVersion) {
	t.Helper()
	if g, w := normVersion(got), normVersion(want); !reflect.DeepEqual(g, w) {
		t.Fatalf("%s:\n got %+v\nwant %+v", what, g, w)
	}
}

func sameTags(t testing.TB, what string, got, want []registry.Tag) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: tags %v, want %v", what, got, want)
	}
}

func sameStrings(t testing.TB, what string, got, want []string) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: %q, want %q", what, got, want)
	}
}

// versionKey names a version as "name/version" in messages and lists.
func versionKey(v registry.ModelVersion) string {
	return v.Name + "/" + strconv.FormatInt(v.Version, 10)
}

func clause(key, op string, values ...string) registry.Clause {
	return registry.Clause{Key: key, Op: op, Values: values}
}

// big is a page size that holds every row a test creates.
const big = 1000

func describe(s registry.Search) string { return fmt.Sprintf("%+v", s) }

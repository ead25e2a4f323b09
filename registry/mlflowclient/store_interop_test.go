//go:build interop

package mlflowclient_test

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/mlflowclient"
	"github.com/carbongate/carbongate/registry/storetest"
	"github.com/carbongate/carbongate/test/services"
)

// startMLflow starts a real MLflow server (PostgreSQL backend store,
// SeaweedFS artifacts) for tb.
func startMLflow(tb testing.TB) *services.MLflow {
	tb.Helper()
	s3 := services.StartWeed(tb)
	db := services.StartPostgres(tb).Database(tb)
	return services.StartMLflow(tb, services.MLflowOpts{BackendURI: db, S3: s3, Bucket: s3.Bucket(tb), Prefix: "mlartifacts"})
}

func newClient(tb testing.TB, baseURL string) *mlflowclient.Client {
	tb.Helper()
	c, err := mlflowclient.New(baseURL, mlflowclient.Options{Timeout: 30 * time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// divergences are the storetest subtests a real MLflow server (3.17.2)
// does not pass, with the reason: each is a difference between
// carbongate's registry contract and MLflow's REST API or server, pinned
// by testDivergences.
var divergences = map[string]string{
	"CreateGetVersion":   "CreateModelVersion has no user_id (nor status): the version's UserID is the caller's, not NewVersion.UserID",
	"SearchModelsFilter": `tag keys may only hold alphanumerics, "_", "-", ".", " ", ":" and "/": the suite's tag "o'k" is refused`,
	"Aliases":            "deleting an alias that does not exist succeeds (the contract says ENOTFOUND)",
	"NotFound":           "DeleteAlias of a missing alias of an existing model succeeds (the contract says ENOTFOUND)",
	"SortedSlices":       "model-versions/search answers versions without their aliases",
	"SearchModelsOrder":  "registered-models/search refuses order_by creation_timestamp (valid: name, timestamp, last_updated_timestamp); and ties of the suite's fake clock are distinct server times",
	"SearchVersionsOrder": "model-versions/search orders by last_updated_timestamp DESC, name, version DESC by default, not name, version DESC; " +
		"and ties of the suite's fake clock are distinct server times",
	"Closed":     "an HTTP client holds no connection to the database: calls after Close still reach the server",
	"Unmigrated": "the server creates and owns its tables",
	"TagLimits":  "MLflow has no cap on the tags of a model or version (nor on the tags of one create request)",
}

// TestAgainstMLflow starts one real MLflow server and runs, through the
// client, the registry.Store conformance suite (Store), the pinned
// differences between MLflow and that suite (Divergences), and searches
// the suite cannot run against MLflow (Filters, Pages).
func TestAgainstMLflow(t *testing.T) {
	mf := startMLflow(t)
	t.Run("Store", func(t *testing.T) { testStore(t, mf.URL) })
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, c *mlflowclient.Client)
	}{
		{"Divergences", testDivergences},
		{"Filters", testFilters},
		{"Pages", testPages},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, mf.URL)
			wipe(t, c)
			tc.fn(t, c)
		})
	}
}

// testStore runs the conformance suite. Its subtests take turns (a lock
// held from open to the end of the subtest) and each starts by deleting
// every registered model, so each sees an empty registry with the names
// the suite chose. Two things of the suite's own making are translated
// (see harness): its fake clock, which cannot drive the server's, and its
// placeholder sources without a path ("s3://m"), which MLflow refuses.
func testStore(t *testing.T, baseURL string) {
	var turn sync.Mutex
	storetest.Run(t, func(t *testing.T, o registry.Options) registry.Store {
		turn.Lock()
		t.Cleanup(turn.Unlock) // after the suite's Close, which it registers later
		c := newClient(t, baseURL)
		wipe(t, c)
		return &harness{Store: c, now: o.Now, times: map[int64]int64{}, sources: map[string]string{}}
	}, storetest.Options{Except: divergences, Unreachable: func(*testing.T, registry.Options) (registry.Store, error) {
		return mlflowclient.New("http://127.0.0.1:1", mlflowclient.Options{})
	}})
}

// wipe deletes every registered model (with its versions, tags and
// aliases).
func wipe(tb testing.TB, s registry.Store) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		page, _, err := s.SearchModels(ctx, registry.Search{MaxResults: 1000})
		if err != nil {
			tb.Fatalf("wipe: %v", err)
		}
		if len(page) == 0 {
			return
		}
		for _, m := range page {
			if err := s.DeleteModel(ctx, m.Name); err != nil {
				tb.Fatalf("wipe: DeleteModel(%q): %v", m.Name, err)
			}
		}
	}
}

// harness adapts the suite to a remote server in two ways, neither of
// which is under test:
//   - the server's timestamps are shown on the suite's clock: each
//     timestamp a write answers is mapped to the suite's Now at that
//     moment, and reads translate mapped timestamps back (timestamps the
//     client never saw written stay as the server wrote them);
//   - a source URI without a path (s3://m), which MLflow refuses, is sent
//     with one (s3://m/model) and shown as the suite wrote it.
type harness struct {
	registry.Store
	now func() time.Time

	mu      sync.Mutex
	times   map[int64]int64   // server ms → fake ms
	sources map[string]string // sent → as the suite wrote it
}

// placeholderPath is appended to sources without a path.
const placeholderPath = "/model"

func (f *harness) source(nv registry.NewVersion) registry.NewVersion {
	u, err := url.Parse(nv.Source)
	if err != nil || u.Scheme == "" || strings.Trim(u.Path, "/") != "" {
		return nv
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	sent := strings.TrimRight(nv.Source, "/") + placeholderPath
	f.sources[sent] = nv.Source
	nv.Source = sent
	return nv
}

func (f *harness) learn(server ...int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fake := f.now().UnixMilli()
	for _, ms := range server {
		if _, ok := f.times[ms]; !ok && ms > 0 {
			f.times[ms] = fake
		}
	}
}

func (f *harness) fake(ms int64) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if v, ok := f.times[ms]; ok {
		return v
	}
	return ms
}

func (f *harness) model(m registry.RegisteredModel, err error) (registry.RegisteredModel, error) {
	m.CreationTime, m.LastUpdatedTime = f.fake(m.CreationTime), f.fake(m.LastUpdatedTime)
	return m, err
}

func (f *harness) version(v registry.ModelVersion, err error) (registry.ModelVersion, error) {
	v.CreationTime, v.LastUpdatedTime = f.fake(v.CreationTime), f.fake(v.LastUpdatedTime)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, loc := range []*string{&v.Source, &v.StorageLocation} {
		if orig, ok := f.sources[*loc]; ok {
			*loc = orig
		}
	}
	return v, err
}

func (f *harness) wroteModel(m registry.RegisteredModel, err error) (registry.RegisteredModel, error) {
	if err == nil {
		f.learn(m.CreationTime, m.LastUpdatedTime)
	}
	return f.model(m, err)
}

func (f *harness) wroteVersion(v registry.ModelVersion, err error) (registry.ModelVersion, error) {
	if err == nil {
		f.learn(v.CreationTime, v.LastUpdatedTime)
	}
	return f.version(v, err)
}

func (f *harness) CreateModel(ctx context.Context, name, description string, tags []registry.Tag) (registry.RegisteredModel, error) {
	return f.wroteModel(f.Store.CreateModel(ctx, name, description, tags))
}

func (f *harness) RenameModel(ctx context.Context, name, newName string) (registry.RegisteredModel, error) {
	return f.wroteModel(f.Store.RenameModel(ctx, name, newName))
}

func (f *harness) UpdateModel(ctx context.Context, name, description string) (registry.RegisteredModel, error) {
	return f.wroteModel(f.Store.UpdateModel(ctx, name, description))
}

func (f *harness) CreateVersion(ctx context.Context, nv registry.NewVersion) (registry.ModelVersion, error) {
	return f.wroteVersion(f.Store.CreateVersion(ctx, f.source(nv)))
}

func (f *harness) UpdateVersion(ctx context.Context, name string, v int64, description string) (registry.ModelVersion, error) {
	return f.wroteVersion(f.Store.UpdateVersion(ctx, name, v, description))
}

func (f *harness) TransitionStage(ctx context.Context, name string, v int64, stage string, archive bool) (registry.ModelVersion, error) {
	return f.wroteVersion(f.Store.TransitionStage(ctx, name, v, stage, archive))
}

func (f *harness) GetModel(ctx context.Context, name string) (registry.RegisteredModel, error) {
	return f.model(f.Store.GetModel(ctx, name))
}

func (f *harness) GetVersion(ctx context.Context, name string, v int64) (registry.ModelVersion, error) {
	return f.version(f.Store.GetVersion(ctx, name, v))
}

func (f *harness) VersionByAlias(ctx context.Context, name, alias string) (registry.ModelVersion, error) {
	return f.version(f.Store.VersionByAlias(ctx, name, alias))
}

func (f *harness) LatestVersions(ctx context.Context, name string, stages []string) ([]registry.ModelVersion, error) {
	vs, err := f.Store.LatestVersions(ctx, name, stages)
	for i := range vs {
		vs[i], _ = f.version(vs[i], nil)
	}
	return vs, err
}

func (f *harness) SearchModels(ctx context.Context, s registry.Search) ([]registry.RegisteredModel, bool, error) {
	ms, more, err := f.Store.SearchModels(ctx, s)
	for i := range ms {
		ms[i], _ = f.model(ms[i], nil)
	}
	return ms, more, err
}

func (f *harness) SearchVersions(ctx context.Context, s registry.Search) ([]registry.ModelVersion, bool, error) {
	vs, more, err := f.Store.SearchVersions(ctx, s)
	for i := range vs {
		vs[i], _ = f.version(vs[i], nil)
	}
	return vs, more, err
}

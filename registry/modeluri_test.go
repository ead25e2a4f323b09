package registry_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

func TestParseModelURI(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want registry.ModelRef
		str  string // String(), when it differs from in
	}{
		{in: "models:/m/1", want: registry.ModelRef{Name: "m", Version: 1}},
		{in: "models:/m/007", want: registry.ModelRef{Name: "m", Version: 7}, str: "models:/m/7"},
		{in: "models:/carbon-forecaster-DE/latest", want: registry.ModelRef{Name: "carbon-forecaster-DE", Latest: true}},
		{in: "models:/m/LATEST", want: registry.ModelRef{Name: "m", Latest: true}, str: "models:/m/latest"},
		{in: "models:/m/Production", want: registry.ModelRef{Name: "m", Stage: "Production"}},
		{in: "models:/m/staging", want: registry.ModelRef{Name: "m", Stage: "Staging"}, str: "models:/m/Staging"},
		{in: "models:/m@champion", want: registry.ModelRef{Name: "m", Alias: "champion"}},
		{in: "models:/a@b@c", want: registry.ModelRef{Name: "a@b", Alias: "c"}},
		{in: "models:/my model/2", want: registry.ModelRef{Name: "my model", Version: 2}},
	}
	for _, tt := range tests {
		got, err := registry.ParseModelURI(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseModelURI(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			continue
		}
		str := tt.str
		if str == "" {
			str = tt.in
		}
		if got.String() != str {
			t.Errorf("%+v.String() = %q, want %q", got, got.String(), str)
		}
	}
}

func TestParseModelURIErrors(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"", "m/1", "models:m/1", "runs:/abc/model", "models:/", "models:/m", "models:/m/", "models:/m/1/x",
		"models:///m/1", "models://profile@databricks/m/1", "models:/m/1?x=y", "models:/m/0",
		"models:/m/99999999999999999999", "models:/m/Deleted_Internal", "models:/m/Prod", "models:/m@",
		"models:/m@latest", "models:/m@v3", "models:/m@bad alias", "models:/@champion", "models:/ /1",
		"models:/m:x/1",
	} {
		_, err := registry.ParseModelURI(in)
		if forecast.ErrorCode(err) != forecast.EINVALID || forecast.ErrorField(err) != "uri" {
			t.Errorf("ParseModelURI(%q) error = %v, want EINVALID uri", in, err)
		}
	}
}

// fakeStore implements the three Store methods Resolve uses.
type fakeStore struct {
	registry.Store
	versions []registry.ModelVersion
	aliases  map[string]int64
}

func (f *fakeStore) GetVersion(_ context.Context, name string, version int64) (registry.ModelVersion, error) {
	for _, v := range f.versions {
		if v.Name == name && v.Version == version && v.CurrentStage != registry.StageDeleted {
			return v, nil
		}
	}
	return registry.ModelVersion{}, forecast.Errorf(forecast.ENOTFOUND, "no version %s/%d", name, version)
}

func (f *fakeStore) VersionByAlias(ctx context.Context, name, alias string) (registry.ModelVersion, error) {
	v, ok := f.aliases[name+"@"+alias]
	if !ok {
		return registry.ModelVersion{}, forecast.Errorf(forecast.ENOTFOUND, "no alias %s@%s", name, alias)
	}
	return f.GetVersion(ctx, name, v)
}

func (f *fakeStore) LatestVersions(_ context.Context, name string, stages []string) ([]registry.ModelVersion, error) {
	if len(stages) == 0 {
		stages = []string{registry.StageNone, registry.StageStaging, registry.StageProduction, registry.StageArchived}
	}
	var out []registry.ModelVersion
	for _, st := range stages {
		var best *registry.ModelVersion
		for i, v := range f.versions {
			if v.Name == name && v.CurrentStage == st && (best == nil || v.Version > best.Version) {
				best = &f.versions[i]
			}
		}
		if best != nil {
			out = append(out, *best)
		}
	}
	return out, nil
}

func TestResolve(t *testing.T) {
	t.Parallel()
	mv := func(v int64, stage string) registry.ModelVersion {
		return registry.ModelVersion{Name: "m", Version: v, CurrentStage: stage}
	}
	s := &fakeStore{
		versions: []registry.ModelVersion{
			mv(1, registry.StageArchived), mv(2, registry.StageProduction), mv(3, registry.StageStaging),
			mv(4, registry.StageNone), mv(5, registry.StageDeleted), mv(6, registry.StageProduction),
		},
		aliases: map[string]int64{"m@champion": 2},
	}
	tests := []struct {
		uri  string
		want int64
		code string
	}{
		{uri: "models:/m/3", want: 3},
		{uri: "models:/m/latest", want: 6},
		{uri: "models:/m/Production", want: 6},
		{uri: "models:/m/staging", want: 3},
		{uri: "models:/m@champion", want: 2},
		{uri: "models:/m/5", code: forecast.ENOTFOUND},
		{uri: "models:/m@challenger", code: forecast.ENOTFOUND},
		{uri: "models:/other/latest", code: forecast.ENOTFOUND},
	}
	for _, tt := range tests {
		ref, err := registry.ParseModelURI(tt.uri)
		if err != nil {
			t.Fatal(err)
		}
		got, err := registry.Resolve(context.Background(), s, ref)
		if tt.code != "" {
			if forecast.ErrorCode(err) != tt.code {
				t.Errorf("Resolve(%s) = %v, %v; want %s", tt.uri, got.Version, err, tt.code)
			}
			continue
		}
		if err != nil || got.Version != tt.want {
			t.Errorf("Resolve(%s) = %d, %v; want %d", tt.uri, got.Version, err, tt.want)
		}
	}
	_, err := registry.Resolve(context.Background(), s, registry.ModelRef{Name: "m"})
	if err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("Resolve(empty ref) = %v", err)
	}
}

func ExampleParseModelURI() {
	ref, err := registry.ParseModelURI("models:/carbon-forecaster-DE@champion")
	fmt.Println(ref.Name, ref.Alias, err)
	ref, err = registry.ParseModelURI("models:/carbon-forecaster-DE/production")
	fmt.Println(ref, err)
	// Output:
	// carbon-forecaster-DE champion <nil>
	// models:/carbon-forecaster-DE/Production <nil>
}

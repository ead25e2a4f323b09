package mlflowjson_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/mlflowjson"
)

// What the server writes the client reads back unchanged (sorted tags and
// aliases, as the registry returns them).
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	v := registry.ModelVersion{
		Name: "m", Version: 3, CreationTime: 1, LastUpdatedTime: 2, UserID: "u", CurrentStage: registry.StageStaging,
		Description: "d", Source: "s3://b/m/3", RunID: "r", Status: registry.StatusReady, StatusMessage: "ok",
		Tags: []registry.Tag{{Key: "a", Value: "1"}, {Key: "b", Value: "2"}}, RunLink: "l", Aliases: []string{"champion", "x"},
	}
	m := registry.RegisteredModel{Name: "m", CreationTime: 1, LastUpdatedTime: 2, Description: "d",
		Tags: []registry.Tag{{Key: "k", Value: "v"}}, Aliases: []registry.Alias{{Alias: "champion", Version: 3}}}
	b, err := json.Marshal(mlflowjson.ModelResponse{RegisteredModel: new(mlflowjson.FromModel(m, []registry.ModelVersion{v}))})
	if err != nil {
		t.Fatal(err)
	}
	var back mlflowjson.ModelResponse
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	gotM, err := back.Decode()
	if err != nil || !reflect.DeepEqual(gotM, m) {
		t.Fatalf("model: got %+v, %v; want %+v", gotM, err, m)
	}
	gotV, err := mlflowjson.Versions(back.RegisteredModel.LatestVersions)
	if err != nil || len(gotV) != 1 || !reflect.DeepEqual(gotV[0], v) {
		t.Fatalf("latest versions: got %+v, %v; want %+v", gotV, err, v)
	}
}

// Unset fields are omitted and timestamps are numbers; a client also takes
// protobuf's decimal-string timestamps.
func TestWireShape(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(mlflowjson.FromVersion(registry.ModelVersion{Name: "m", Version: 1, CreationTime: 5}))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"name":"m","version":"1","creation_timestamp":5}`; string(b) != want {
		t.Fatalf("got %s, want %s", b, want)
	}
	var v mlflowjson.Version
	if err := json.Unmarshal([]byte(`{"name":"m","version":"2","creation_timestamp":"7","last_updated_timestamp":null}`), &v); err != nil {
		t.Fatal(err)
	}
	if v.CreationTimestamp != 7 || v.LastUpdatedTimestamp != 0 {
		t.Fatalf("timestamps: %+v", v)
	}
}

// A malformed answer is the server's failure (EUNAVAILABLE), not the caller's.
func TestMalformedAnswer(t *testing.T) {
	t.Parallel()
	for name, decode := range map[string]func() error{
		"no model":    func() error { _, err := mlflowjson.ModelResponse{}.Decode(); return err },
		"no version":  func() error { _, err := mlflowjson.VersionResponse{}.Decode(); return err },
		"bad version": func() error { _, err := mlflowjson.Version{Name: "m", Version: "x"}.Registry(); return err },
		"alias version0": func() error {
			_, err := mlflowjson.Model{Name: "m", Aliases: []mlflowjson.Alias{{Alias: "a", Version: "0"}}}.Registry()
			return err
		},
	} {
		if err := decode(); forecast.ErrorCode(err) != forecast.EUNAVAILABLE {
			t.Errorf("%s: got %v, want EUNAVAILABLE", name, err)
		}
	}
}

package embedded_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/embedded"
)

func ExampleOpen() {
	dir, err := os.MkdirTemp("", "registry")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	s, err := embedded.Open(filepath.Join(dir, "registry.json"), registry.Options{})
	if err != nil {
		panic(err)
	}
	defer s.Close()

	ctx := context.Background()
	name := models.ZoneModelName("DE")
	if _, err := s.CreateModel(ctx, name, "", nil); err != nil {
		panic(err)
	}
	v, err := s.CreateVersion(ctx, registry.NewVersion{Name: name, Source: "s3://models/DE/1"})
	if err != nil {
		panic(err)
	}
	if err := s.SetAlias(ctx, name, registry.ChampionAlias, v.Version); err != nil {
		panic(err)
	}
	champion, err := s.VersionByAlias(ctx, name, registry.ChampionAlias)
	if err != nil {
		panic(err)
	}
	fmt.Println(champion.Name, champion.Version, champion.ArtifactLocation(), champion.Aliases)

	// A second Open of the same file, here or in another process, is refused.
	_, err = embedded.Open(filepath.Join(dir, "registry.json"), registry.Options{})
	fmt.Println(err != nil)
	// Output:
	// carbon-forecaster-DE 1 s3://models/DE/1 [champion]
	// true
}

package cratedb_test

import (
	"context"
	"fmt"
	"log"

	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/cratedb"
)

// Creating the tables once, then opening the store. It needs a CrateDB
// server, so it is compiled but not run.
func ExampleOpen() {
	ctx := context.Background()
	url := "postgres://crate@localhost:5432/doc"

	db, err := cratedb.Connect(ctx, url)
	if err != nil {
		log.Fatal(err)
	}
	err = cratedb.Migrate(ctx, db) // what `carbonctl registry migrate` runs
	db.Close()
	if err != nil {
		log.Fatal(err)
	}

	store, err := cratedb.Open(ctx, url, registry.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	v, err := store.CreateVersion(ctx, registry.NewVersion{Name: models.ZoneModelName("DE"), Source: "s3://models/DE/7"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(v.Version)
}

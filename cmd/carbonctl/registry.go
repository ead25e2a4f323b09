package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/internal/retry"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/artifact"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/connect"
	"github.com/carbongate/carbongate/registry/crateblob"
	"github.com/carbongate/carbongate/registry/fetch"
	"github.com/carbongate/carbongate/registry/s3"
)

// registryFlag is the --registry flag shared by the registry commands.
const registryHelp = "registry: postgres://…, crate://…, http(s)://… (an MLflow-compatible server such as carbongate; token from $MLFLOW_TRACKING_TOKEN), file:PATH or PATH (the embedded store)"

// registryTimeout bounds one registry command.
const registryTimeout = 5 * time.Minute

func runRegistry(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		args = []string{"migrate", "-h"}
	}
	if len(args) == 0 || args[0] != "migrate" {
		return usagef("want a subcommand: carbonctl registry migrate --registry URI [--artifacts crate+blob://host:4200/TABLE]")
	}
	fs := newFlags("registry migrate", stdout)
	uri := fs.String("registry", "", registryHelp)
	arts := fs.String("artifacts", "", "also create the artifact store: crate+blob://host:4200/TABLE creates that CrateDB blob table unless it exists (one shard, replicas '0-1')")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	var table crateblob.Location
	if *arts != "" {
		l, err := crateblob.ParseURI(*arts)
		if err != nil {
			return usagef("--artifacts: %s", forecast.ErrorMessage(err))
		}
		table = l.TableLocation()
	}
	ctx, cancel := context.WithTimeout(ctx, registryTimeout)
	defer cancel()
	kind, err := connect.Migrate(ctx, *uri)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "registry schema ready (%s)\n", kind)
	if table.Table != "" {
		c := crateblob.New(crateblob.Config{})
		defer c.Close()
		if err := c.CreateTable(ctx, table); err != nil {
			return fmt.Errorf("--artifacts: %w", err)
		}
		fmt.Fprintf(stdout, "blob table ready (%s)\n", table)
	}
	return nil
}

// registerResult is what register prints, one JSON object.
type registerResult struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Source  string `json:"source"`
	Alias   string `json:"alias,omitempty"`
}

func runRegister(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("register", stdout)
	uri := fs.String("registry", "", registryHelp)
	zone := fs.String("zone", "", "zone of the model (e.g. DE), or generic")
	dir := fs.String("model-dir", "", "MLflow model directory written by carbonctl train (<out>/<signal>/<ZONE>)")
	arts := fs.String("artifacts", "", "where to store the files: s3://bucket/prefix (S3 settings from AWS_ENDPOINT_URL or S3_ENDPOINT, AWS_ACCESS_KEY_ID, ...), crate+blob://host:4200/TABLE (a CrateDB blob table; crate+blobs:// for HTTPS) or a local directory; default: artifacts/ next to an embedded registry file")
	maxBytes := fs.Int64("artifact-max-bytes", fetch.DefaultMaxBytes, "largest model directory stored in a CrateDB blob table, in bytes (the servers' --artifact-max-bytes default)")
	alias := fs.String("alias", "", "also point this alias (e.g. champion) at the new version")
	desc := fs.String("description", "", "version description")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *zone == "" || *dir == "" {
		return usagef("--zone and --model-dir are required")
	}
	name := models.ZoneModelName(forecast.Zone(*zone))
	if *zone == "generic" {
		name = models.GenericName
	} else if _, err := forecast.ParseZone(*zone); err != nil {
		return usagef("--zone: %s", forecast.ErrorMessage(err))
	}
	if *alias != "" {
		if err := registry.ValidateAlias(*alias); err != nil {
			return usagef("--alias: %s", forecast.ErrorMessage(err))
		}
	}
	m, err := artifact.Load(*dir)
	if err != nil {
		return fmt.Errorf("--model-dir: %w", err)
	}
	meta := m.Meta()
	if wantZone := forecast.Zone(*zone); (*zone == "generic") != (meta.Zone == "") || (*zone != "generic" && meta.Zone != wantZone) {
		return usagef("--model-dir holds a model of zone %q, not %s", meta.Zone, *zone)
	}
	base, err := artifactBase(*uri, *arts)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, registryTimeout)
	defer cancel()
	store, _, err := connect.Open(ctx, *uri, registry.Options{})
	if err != nil {
		return err
	}
	defer store.Close()
	// Files first: if the store cannot take them, nothing is registered.
	up, err := storeArtifacts(ctx, *dir, base, name, *maxBytes)
	if err != nil {
		return err
	}
	if err := ensureModel(ctx, store, name, meta.Zone, meta.Signal); err != nil {
		up.undo()
		return err
	}
	v, err := store.CreateVersion(ctx, registry.NewVersion{
		Name: name, Source: up.location, Description: *desc,
		Tags: []registry.Tag{
			{Key: "zone", Value: zoneTag(meta.Zone)}, {Key: "signal", Value: string(meta.Signal)},
			{Key: "family", Value: meta.Family},
			{Key: "lookback", Value: strconv.Itoa(meta.Lookback)}, {Key: "horizon", Value: strconv.Itoa(meta.Horizon)},
		},
	})
	if err != nil {
		up.undo() // no version points at the files: remove them
		return err
	}
	res := registerResult{Name: name, Version: strconv.FormatInt(v.Version, 10), Source: v.Source}
	if *alias != "" {
		if err := store.SetAlias(ctx, name, *alias, v.Version); err != nil {
			return fmt.Errorf("version %d registered, alias not set: %w", v.Version, err)
		}
		res.Alias = *alias
	}
	return json.NewEncoder(stdout).Encode(res)
}

func zoneTag(z forecast.Zone) string {
	if z == "" {
		return "generic"
	}
	return string(z)
}

// ensureModel creates the registered model unless it exists.
func ensureModel(ctx context.Context, s registry.Store, name string, zone forecast.Zone, sig forecast.Signal) error {
	_, err := s.GetModel(ctx, name)
	if forecast.ErrorCode(err) != forecast.ENOTFOUND {
		return err
	}
	_, err = s.CreateModel(ctx, name, "carbon-intensity forecaster for "+zoneTag(zone),
		[]registry.Tag{{Key: "zone", Value: zoneTag(zone)}, {Key: "signal", Value: string(sig)}})
	if forecast.ErrorCode(err) == forecast.ECONFLICT {
		return nil // created concurrently
	}
	return err
}

// artifactBase is where register stores files: --artifacts, else
// artifacts/ next to an embedded registry file.
func artifactBase(uri, arts string) (string, error) {
	if arts != "" {
		return arts, nil
	}
	kind, addr, err := connect.Parse(uri)
	if err != nil {
		return "", err
	}
	if kind != connect.Embedded {
		return "", usagef("--artifacts is required with a %s registry", kind)
	}
	return filepath.Join(filepath.Dir(addr), "artifacts"), nil
}

// uploaded is a stored artifact directory and how to take it back.
type uploaded struct {
	location string
	undo     func()
}

// storeArtifacts copies dir to a fresh location under base:
// <base>/<name>/<time>-<random>/, or, for a CrateDB blob table, to the
// table's content-addressed blobs (at most maxBytes).
func storeArtifacts(ctx context.Context, dir, base, name string, maxBytes int64) (uploaded, error) {
	if crateblob.IsURI(base) {
		return storeBlobs(ctx, dir, base, maxBytes)
	}
	var rnd [4]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return uploaded{}, err
	}
	leaf := time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(rnd[:])
	if !s3.IsURI(base) {
		abs, err := filepath.Abs(filepath.Join(base, name, leaf))
		if err != nil {
			return uploaded{}, err
		}
		if err := (fetch.Fetcher{Sources: []string{dir}}).Fetch(ctx, dir, abs); err != nil {
			return uploaded{}, err
		}
		return uploaded{location: abs, undo: func() { os.RemoveAll(abs) }}, nil
	}
	c, err := s3.NewClient(s3.ConfigFromEnv(os.Getenv))
	if err != nil {
		return uploaded{}, err
	}
	loc := base
	if loc[len(loc)-1] != '/' {
		loc += "/"
	}
	loc += name + "/" + leaf
	keys, err := s3.Upload(ctx, c, dir, loc)
	if err != nil {
		return uploaded{}, err
	}
	return uploaded{location: loc, undo: func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = s3.Remove(ctx, c, loc, keys)
	}}, nil
}

// storeBlobs uploads dir into the blob table base names; undo removes
// the blobs the upload created (not those another version shares).
func storeBlobs(ctx context.Context, dir, base string, maxBytes int64) (uploaded, error) {
	table, err := crateblob.ParseURI(base)
	if err != nil {
		return uploaded{}, usagef("--artifacts: %s", forecast.ErrorMessage(err))
	}
	if table.Digest != "" {
		return uploaded{}, usagef("--artifacts: %s names a blob, not a table (crate+blob://host:port/TABLE)", base)
	}
	c := crateblob.New(crateblob.Config{})
	up, err := c.Upload(ctx, dir, table, maxBytes)
	if err != nil {
		c.Close()
		if forecast.ErrorCode(err) == forecast.EINVALID {
			return uploaded{}, fmt.Errorf("--model-dir: %w", err)
		}
		return uploaded{}, err
	}
	return uploaded{location: up.Location.String(), undo: func() {
		defer c.Close()
		_ = c.Remove(table, up.Created)
	}}, nil
}

// whileUnavailable calls fn until it succeeds, fails for a reason other
// than EUNAVAILABLE (a database restarting, CrateDB shards still
// recovering) or ctx ends, with backoff; each retry is said on stderr.
func whileUnavailable(ctx context.Context, stderr io.Writer, fn func(context.Context) error) error {
	p := retry.Policy{
		Base: 500 * time.Millisecond, Cap: 5 * time.Second,
		Retryable: func(err error) bool { return forecast.ErrorCode(err) == forecast.EUNAVAILABLE },
		OnRetry: func(_ int, pause time.Duration, err error) {
			fmt.Fprintf(stderr, "carbonctl: registry unavailable, retrying in %v: %s\n", pause.Round(time.Millisecond), forecast.ErrorSummary(err))
		},
	}
	return p.Do(ctx, fn)
}

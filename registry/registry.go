// Package registry is carbongate's MLflow-compatible model registry: the
// domain types (registered models, versions, aliases, tags), the Store
// interface its backends implement (registry/postgres, registry/cratedb,
// registry/embedded) and the rules every backend shares (names, aliases,
// stages, version allocation, soft delete), following MLflow's semantics so
// that a real MLflow server and carbongate can share one database.
//
// Errors are *forecast.Error values: EINVALID (MLflow
// INVALID_PARAMETER_VALUE) with Field naming the parameter, ENOTFOUND
// (RESOURCE_DOES_NOT_EXIST), ECONFLICT (RESOURCE_ALREADY_EXISTS),
// EUNAVAILABLE when the database cannot be reached; context errors stay in
// the chain.
package registry

import (
	"context"
	"log/slog"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// Tag is a key/value pair on a registered model or a model version.
type Tag struct {
	Key   string
	Value string
}

// Alias points a name (e.g. "champion") at one version of a registered
// model.
type Alias struct {
	Alias   string
	Version int64
}

// RegisteredModel is one row of registered_models with its tags and
// aliases. Times are Unix milliseconds, as MLflow stores them.
type RegisteredModel struct {
	Name            string
	CreationTime    int64
	LastUpdatedTime int64
	Description     string
	Tags            []Tag   // sorted by key
	Aliases         []Alias // sorted by alias
}

// ModelVersion is one row of model_versions with its tags and aliases.
type ModelVersion struct {
	Name            string
	Version         int64
	CreationTime    int64
	LastUpdatedTime int64
	Description     string
	UserID          string
	CurrentStage    string // one of Stages, or StageDeleted for soft-deleted rows
	Source          string
	RunID           string
	RunLink         string
	Status          string // READY, PENDING_REGISTRATION or FAILED_REGISTRATION
	StatusMessage   string
	StorageLocation string
	Tags            []Tag    // sorted by key
	Aliases         []string // sorted
}

// ArtifactLocation is where the version's files are: StorageLocation when
// set, else Source (MLflow's rule).
func (v ModelVersion) ArtifactLocation() string {
	if v.StorageLocation != "" {
		return v.StorageLocation
	}
	return v.Source
}

// Stages MLflow accepts (deprecated since MLflow 2.9, still served).
const (
	StageNone       = "None"
	StageStaging    = "Staging"
	StageProduction = "Production"
	StageArchived   = "Archived"
	// StageDeleted marks a soft-deleted version; such rows are never
	// returned, but their numbers are never reused.
	StageDeleted = "Deleted_Internal"
)

// Version statuses.
const (
	StatusReady   = "READY"
	StatusPending = "PENDING_REGISTRATION"
	StatusFailed  = "FAILED_REGISTRATION"
)

// NewVersion is the input of CreateVersion.
type NewVersion struct {
	Name        string
	Source      string
	RunID       string
	RunLink     string
	Description string
	UserID      string
	Tags        []Tag
	// Status defaults to StatusReady.
	Status string
}

// Search is a page request for SearchModels and SearchVersions.
type Search struct {
	// Filter is the parsed MLflow filter string (registry/filter); an empty
	// slice matches everything. Clauses are AND-joined.
	Filter []Clause
	// OrderBy, e.g. {Key: "name"}, {Key: "last_updated_timestamp", Desc:
	// true}. Backends append a unique tiebreak (name, then version) so pages
	// are stable. Empty: name ascending (models), name ascending then
	// version descending (versions).
	OrderBy []Order
	// MaxResults is the page size, 1..1000 (the API layer applies MLflow's
	// defaults and limits).
	MaxResults int
	// Offset is the decoded page_token.
	Offset int
}

// Clause is one comparison of an MLflow filter string: Key is "name",
// "run_id", "source_path", "version_number" or "tags.<key>"; Op is one of
// "=", "!=", "LIKE", "ILIKE", "IN"; Values has one element except for IN.
type Clause struct {
	Key    string
	Op     string
	Values []string
}

// Order is one order_by term: Key is "name", "version_number",
// "creation_timestamp" or "last_updated_timestamp".
type Order struct {
	Key  string
	Desc bool
}

// AliasTarget is one row of registered_model_aliases: model Name's Alias
// points at Version. Watchers compare snapshots of these.
type AliasTarget struct {
	Name    string
	Alias   string
	Version int64
}

// Store is the registry's storage. Every method is safe for concurrent use.
// Writes are atomic on PostgreSQL and the embedded store: on error nothing
// is visible. CrateDB has no transactions; registry/cratedb orders its
// writes so a failure part-way leaves a documented, repairable state (see
// its README). Lookups by name are exact
// (case-sensitive), as in MLflow.
type Store interface {
	// CreateModel: ECONFLICT if name exists, EINVALID if the name is not
	// valid (ValidateName).
	CreateModel(ctx context.Context, name, description string, tags []Tag) (RegisteredModel, error)
	GetModel(ctx context.Context, name string) (RegisteredModel, error)
	// RenameModel renames the model, its versions, tags and aliases.
	// ECONFLICT if newName exists; EINVALID where the backend cannot rename
	// (CrateDB).
	RenameModel(ctx context.Context, name, newName string) (RegisteredModel, error)
	UpdateModel(ctx context.Context, name, description string) (RegisteredModel, error)
	// DeleteModel removes the model with all its versions, tags and aliases.
	DeleteModel(ctx context.Context, name string) error
	// SearchModels returns one page and whether more rows follow.
	SearchModels(ctx context.Context, s Search) (page []RegisteredModel, more bool, err error)
	// SetModelTag and SetVersionTag: EINVALID naming "key" or "value"
	// (ValidateTag); a store that keeps an entity's tags together may also
	// refuse, with EINVALID naming "tags", a write that takes them over
	// ValidateTagTotals' limits (the embedded store does).
	SetModelTag(ctx context.Context, name string, tag Tag) error
	DeleteModelTag(ctx context.Context, name, key string) error

	// SetAlias points alias at version (which must exist and not be
	// deleted), replacing any previous target. EINVALID for a reserved or
	// malformed alias (ValidateAlias).
	SetAlias(ctx context.Context, name, alias string, version int64) error
	// DeleteAlias: ENOTFOUND when the alias does not exist.
	DeleteAlias(ctx context.Context, name, alias string) error
	// VersionByAlias: ENOTFOUND when the model or the alias does not exist.
	VersionByAlias(ctx context.Context, name, alias string) (ModelVersion, error)
	// AliasTargets lists every alias of every model, sorted by name then
	// alias.
	AliasTargets(ctx context.Context) ([]AliasTarget, error)

	// CreateVersion allocates the next version number (highest existing,
	// soft-deleted included, + 1) race-free and bumps the model's
	// last_updated_time. ENOTFOUND if the model does not exist.
	CreateVersion(ctx context.Context, v NewVersion) (ModelVersion, error)
	// GetVersion: ENOTFOUND for missing and soft-deleted versions.
	GetVersion(ctx context.Context, name string, version int64) (ModelVersion, error)
	UpdateVersion(ctx context.Context, name string, version int64, description string) (ModelVersion, error)
	// TransitionStage sets current_stage; with archiveExisting, other
	// versions in that stage (Staging or Production only) move to Archived.
	TransitionStage(ctx context.Context, name string, version int64, stage string, archiveExisting bool) (ModelVersion, error)
	// DeleteVersion soft-deletes as MLflow does: current_stage =
	// StageDeleted, its aliases removed (MLflow keeps the row's tags); the
	// number is never reused.
	DeleteVersion(ctx context.Context, name string, version int64) error
	// LatestVersions returns, per stage in stages (all stages when empty),
	// the highest non-deleted version in that stage, ordered by stage as
	// given (or None, Staging, Production, Archived).
	LatestVersions(ctx context.Context, name string, stages []string) ([]ModelVersion, error)
	SearchVersions(ctx context.Context, s Search) (page []ModelVersion, more bool, err error)
	SetVersionTag(ctx context.Context, name string, version int64, tag Tag) error
	DeleteVersionTag(ctx context.Context, name string, version int64, key string) error

	Close() error
}

// Notifier is implemented by stores that can push alias changes (PostgreSQL
// LISTEN/NOTIFY on a trigger carbongate installs next to MLflow's tables).
// WatchAliases returns a channel that receives a value (coalesced, never
// blocking the sender) after any change to registered_model_aliases, and is
// closed when ctx ends or the connection is lost; ENOTFOUND when the trigger
// is not installed, so the caller falls back to polling.
type Notifier interface {
	WatchAliases(ctx context.Context) (<-chan struct{}, error)
}

// ErrCannotNotify is the ENOTFOUND of a WatchAliases whose store can
// never notify (a wrapper over a backend without notifications, such as
// CrateDB, which has no LISTEN/NOTIFY): the caller polls and need not ask
// again.
var ErrCannotNotify = forecast.Errorf(forecast.ENOTFOUND, "the registry backend cannot notify")

// Options are shared by every Store constructor.
type Options struct {
	// Now is the clock for creation and update times; time.Now if nil.
	Now func() time.Time
	// Logger receives what a store repairs on its own and the operator
	// should know (the embedded store's torn last journal record);
	// slog.Default() if nil.
	Logger *slog.Logger
}

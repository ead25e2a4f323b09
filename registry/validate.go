package registry

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/carbongate/carbongate/forecast"
)

// Limits from MLflow's schema (VARCHAR sizes) and validation.
const (
	MaxNameLen     = 256
	MaxAliasLen    = 255
	MaxTagKeyLen   = 250
	MaxTagValueLen = 5000
)

// Limits on the tags of one registered model or one version, carbongate's
// own: MLflow has none (its SQL stores keep a row per tag, and its 100 tags
// per request, MAX_PARAMS_TAGS_PER_BATCH, bound a run's log-batch only).
// A store that keeps a model's tags together (the embedded file) enforces
// them, so that one client cannot make it hold, and write, megabytes per
// version: MaxTags tags of MaxTagKeyLen+MaxTagValueLen bytes would be 525
// KB, MaxTagBytes bounds keys plus values below that.
const (
	MaxTags     = 100
	MaxTagBytes = 256 << 10
)

// Limits of the free-text fields: the widths of MLflow's own columns,
// which its SQL stores enforce (mlflow/store/model_registry/dbmodels/
// models.py, MLflow 3.17.2: registered_models.description and
// model_versions.description String(5000), model_versions.source and
// run_link String(500)). They count characters, as Python's len and
// PostgreSQL's VARCHAR(n) do, not bytes.
const (
	MaxDescriptionLen = 5000
	MaxSourceLen      = 500
	MaxRunLinkLen     = 500
)

var (
	aliasRe    = regexp.MustCompile(`^[\w-]+$`)
	versionRe  = regexp.MustCompile(`(?i)^v\d+$`)
	versionNum = regexp.MustCompile(`^[0-9]+$`)
)

// ValidateName checks a registered model name: non-empty, at most
// MaxNameLen bytes, no '/', ':' or control characters (they would make
// models:/ URIs ambiguous). field is the request field to name in the error.
func ValidateName(field, name string) error {
	switch {
	case name == "":
		return forecast.FieldErrorf(forecast.EINVALID, field, "missing value for parameter '%s'", field)
	case len(name) > MaxNameLen:
		return forecast.FieldErrorf(forecast.EINVALID, field, "%s is %d bytes long, the limit is %d", field, len(name), MaxNameLen)
	case strings.ContainsAny(name, "/:"):
		return forecast.FieldErrorf(forecast.EINVALID, field, "%s %q may not contain '/' or ':'", field, name)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return forecast.FieldErrorf(forecast.EINVALID, field, "%s %q contains a control character", field, name)
	}
	return nil
}

// ValidateAlias checks an alias name as MLflow does: [\w-]+, at most
// MaxAliasLen bytes, neither "latest" nor v<digits> (both are reserved for
// version references), case-insensitively.
func ValidateAlias(alias string) error {
	switch {
	case alias == "":
		return forecast.FieldErrorf(forecast.EINVALID, "alias", "missing value for parameter 'alias'")
	case len(alias) > MaxAliasLen:
		return forecast.FieldErrorf(forecast.EINVALID, "alias", "alias is %d bytes long, the limit is %d", len(alias), MaxAliasLen)
	case !aliasRe.MatchString(alias):
		return forecast.FieldErrorf(forecast.EINVALID, "alias", "alias %q must match [\\w-]+", alias)
	case strings.EqualFold(alias, "latest") || versionRe.MatchString(alias):
		return forecast.FieldErrorf(forecast.EINVALID, "alias", "alias %q is reserved: 'latest' and v<number> name versions", alias)
	}
	return nil
}

// ValidateTag checks a tag key and value against MLflow's limits.
func ValidateTag(t Tag) error {
	switch {
	case t.Key == "":
		return forecast.FieldErrorf(forecast.EINVALID, "key", "missing value for parameter 'key'")
	case len(t.Key) > MaxTagKeyLen:
		return forecast.FieldErrorf(forecast.EINVALID, "key", "tag key is %d bytes long, the limit is %d", len(t.Key), MaxTagKeyLen)
	case len(t.Value) > MaxTagValueLen:
		return forecast.FieldErrorf(forecast.EINVALID, "value", "tag value is %d bytes long, the limit is %d", len(t.Value), MaxTagValueLen)
	}
	return nil
}

// ValidateTagTotals checks the tags one model or version would hold after
// a write, n of them with keys and values of size bytes in all, against
// MaxTags and MaxTagBytes: EINVALID naming "tags".
func ValidateTagTotals(n, size int) error {
	switch {
	case n > MaxTags:
		return forecast.FieldErrorf(forecast.EINVALID, "tags", "%d tags, the limit is %d per registered model or version", n, MaxTags)
	case size > MaxTagBytes:
		return forecast.FieldErrorf(forecast.EINVALID, "tags", "the tags' keys and values would be %d bytes, the limit is %d per registered model or version", size, MaxTagBytes)
	}
	return nil
}

// ValidateDescription checks a registered model's or a version's
// description against MaxDescriptionLen.
func ValidateDescription(description string) error {
	return validateLength("description", description, MaxDescriptionLen)
}

// ValidateNewVersion checks CreateVersion's input once for every backend:
// the name, the tags, the lengths of description, source and run_link, and
// the status. It returns nv with Status defaulted (ValidateStatus).
func ValidateNewVersion(nv NewVersion) (NewVersion, error) {
	if err := ValidateName("name", nv.Name); err != nil {
		return nv, err
	}
	for _, t := range nv.Tags {
		if err := ValidateTag(t); err != nil {
			return nv, err
		}
	}
	for _, f := range []struct {
		field, value string
		limit        int
	}{
		{"description", nv.Description, MaxDescriptionLen},
		{"source", nv.Source, MaxSourceLen},
		{"run_link", nv.RunLink, MaxRunLinkLen},
	} {
		if err := validateLength(f.field, f.value, f.limit); err != nil {
			return nv, err
		}
	}
	var err error
	nv.Status, err = ValidateStatus(nv.Status)
	return nv, err
}

// validateLength: EINVALID naming field when value has more than limit
// characters.
func validateLength(field, value string, limit int) error {
	if len(value) <= limit {
		return nil // fewer bytes than the limit: fewer characters too
	}
	if n := utf8.RuneCountInString(value); n > limit {
		return forecast.FieldErrorf(forecast.EINVALID, field, "%s is %d characters long, the limit is %d", field, n, limit)
	}
	return nil
}

// ValidateStage returns the canonical spelling of a stage given in any case
// ("production" → "Production"), or EINVALID.
func ValidateStage(stage string) (string, error) {
	for _, s := range []string{StageNone, StageStaging, StageProduction, StageArchived} {
		if strings.EqualFold(stage, s) {
			return s, nil
		}
	}
	return "", forecast.FieldErrorf(forecast.EINVALID, "stage", "invalid model version stage %q; one of None, Staging, Production, Archived", stage)
}

// ParseVersion parses a version number as MLflow sends it (a decimal
// string); field names the request field in the error.
func ParseVersion(field, s string) (int64, error) {
	if !versionNum.MatchString(s) {
		return 0, forecast.FieldErrorf(forecast.EINVALID, field, "%s %q is not a version number", field, s)
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 1 {
		return 0, forecast.FieldErrorf(forecast.EINVALID, field, "%s %q is not a version number", field, s)
	}
	return v, nil
}

// ChampionAlias is the alias that serves, a convention of carbongate's
// registry use. Registered models are named by models.ZoneModelName and
// models.GenericName.
const ChampionAlias = "champion"

// ValidateStatus returns the status a new version is created with: status,
// or StatusReady when empty; EINVALID for anything but the three version
// statuses.
func ValidateStatus(status string) (string, error) {
	switch status {
	case "":
		return StatusReady, nil
	case StatusReady, StatusPending, StatusFailed:
		return status, nil
	}
	return "", forecast.FieldErrorf(forecast.EINVALID, "status", "invalid model version status %q", status)
}

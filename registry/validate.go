package registry

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/carbongate/carbongate/forecast"
)

// Limits from MLflow's schema (VARCHAR sizes) and validation.
const (
	MaxNameLen     = 256
	MaxAliasLen    = 255
	MaxTagKeyLen   = 250
	MaxTagValueLen = 5000
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

// Conventions of carbongate's registry use.
const (
	// ChampionAlias is the alias that serves.
	ChampionAlias = "champion"
	// ModelPrefix + zone (or "generic") is a registered model's name.
	ModelPrefix = "carbon-forecaster-"
)

// ModelName is the registered model name for zone ("" means generic).
func ModelName(zone string) string {
	if zone == "" {
		return ModelPrefix + "generic"
	}
	return ModelPrefix + zone
}

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

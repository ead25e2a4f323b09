package registry

import (
	"context"
	"strconv"
	"strings"

	"github.com/carbongate/carbongate/forecast"
)

// ModelRef is a parsed models:/ URI. Exactly one of Version, Alias, Stage
// and Latest is set.
type ModelRef struct {
	Name    string
	Version int64  // models:/name/3
	Alias   string // models:/name@champion
	Stage   string // models:/name/Production (canonical spelling)
	Latest  bool   // models:/name/latest
}

// String returns the canonical models:/ URI of r.
func (r ModelRef) String() string {
	switch {
	case r.Alias != "":
		return "models:/" + r.Name + "@" + r.Alias
	case r.Stage != "":
		return "models:/" + r.Name + "/" + r.Stage
	case r.Latest:
		return "models:/" + r.Name + "/latest"
	}
	return "models:/" + r.Name + "/" + strconv.FormatInt(r.Version, 10)
}

// ParseModelURI parses the model-registry URIs MLflow accepts:
// models:/<name>/<version>, models:/<name>/latest (any case),
// models:/<name>/<stage> (any case, canonicalised) and
// models:/<name>@<alias> (split at the last '@'). It rejects what carbongate
// cannot resolve: models:/<model_id> (MLflow 3 logged models), a remote
// registry (models://profile@host/...) and query strings. Errors are
// EINVALID with Field "uri".
func ParseModelURI(s string) (ModelRef, error) {
	bad := func(why string) (ModelRef, error) {
		return ModelRef{}, forecast.FieldErrorf(forecast.EINVALID, "uri",
			"%q is not a models:/ URI (%s); use models:/<name>/<version>, models:/<name>/latest, models:/<name>/<stage> or models:/<name>@<alias>", s, why)
	}
	path, ok := strings.CutPrefix(s, "models:/")
	switch {
	case !ok:
		return bad("wrong scheme")
	case strings.HasPrefix(path, "/"):
		return bad("remote registries are not supported")
	case strings.ContainsAny(path, "?"):
		return bad("query strings are not supported")
	}
	parts := strings.Split(path, "/")
	if len(parts) > 2 || strings.TrimSpace(parts[0]) == "" {
		return bad("expected a name and one suffix")
	}
	if len(parts) == 1 {
		i := strings.LastIndexByte(path, '@')
		if i < 0 {
			return bad("model IDs are not supported")
		}
		ref := ModelRef{Name: path[:i], Alias: path[i+1:]}
		if err := ValidateAlias(ref.Alias); err != nil {
			return ModelRef{}, forecast.FieldErrorf(forecast.EINVALID, "uri", "%q: %s", s, forecast.ErrorMessage(err))
		}
		return ref, checkRefName(s, ref)
	}
	ref := ModelRef{Name: parts[0]}
	suffix := parts[1]
	switch {
	case strings.TrimSpace(suffix) == "":
		return bad("empty suffix")
	case isDigits(suffix):
		v, err := strconv.ParseInt(suffix, 10, 64)
		if err != nil || v < 1 {
			return bad("version numbers start at 1")
		}
		ref.Version = v
	case strings.EqualFold(suffix, "latest"):
		ref.Latest = true
	default:
		stage, err := ValidateStage(suffix)
		if err != nil {
			return ModelRef{}, forecast.FieldErrorf(forecast.EINVALID, "uri", "%q: %s", s, forecast.ErrorMessage(err))
		}
		ref.Stage = stage
	}
	return ref, checkRefName(s, ref)
}

func checkRefName(uri string, ref ModelRef) error {
	if err := ValidateName("name", ref.Name); err != nil {
		return forecast.FieldErrorf(forecast.EINVALID, "uri", "%q: %s", uri, forecast.ErrorMessage(err))
	}
	return nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// Resolve returns the version ref names: the version itself, the version
// its alias points at, the highest non-deleted version (Latest), or the
// highest non-deleted version in Stage. ENOTFOUND when the model, version
// or alias does not exist or no version matches; store errors otherwise.
func Resolve(ctx context.Context, s Store, ref ModelRef) (ModelVersion, error) {
	switch {
	case ref.Alias != "":
		return s.VersionByAlias(ctx, ref.Name, ref.Alias)
	case ref.Version > 0:
		return s.GetVersion(ctx, ref.Name, ref.Version)
	case ref.Latest || ref.Stage != "":
		var stages []string
		if ref.Stage != "" {
			stages = []string{ref.Stage}
		}
		vs, err := s.LatestVersions(ctx, ref.Name, stages)
		if err != nil {
			return ModelVersion{}, err
		}
		var best ModelVersion
		for _, v := range vs {
			if v.Version > best.Version && (ref.Stage == "" || v.CurrentStage == ref.Stage) {
				best = v
			}
		}
		if best.Version == 0 {
			return ModelVersion{}, forecast.Errorf(forecast.ENOTFOUND, "%s: no version matches", ref)
		}
		return best, nil
	}
	return ModelVersion{}, forecast.FieldErrorf(forecast.EINVALID, "uri", "empty model reference")
}

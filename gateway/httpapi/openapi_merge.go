package httpapi

import (
	"encoding/json"
	"fmt"
)

// mergeOpenAPI adds extra's paths and components (a fragment of an OpenAPI
// document: {"paths": {...}, "components": {"schemas": {...}, ...}}) to
// base. A path or component that base already has is an error: optional
// routes describe only themselves.
func mergeOpenAPI(base, extra []byte) ([]byte, error) {
	if len(extra) == 0 {
		return base, nil
	}
	var doc, frag map[string]json.RawMessage
	if err := json.Unmarshal(base, &doc); err != nil {
		return nil, fmt.Errorf("httpapi: OpenAPI document: %w", err)
	}
	if err := json.Unmarshal(extra, &frag); err != nil {
		return nil, fmt.Errorf("httpapi: OpenAPI fragment: %w", err)
	}
	for k := range frag {
		if k != "paths" && k != "components" {
			return nil, fmt.Errorf("httpapi: OpenAPI fragment: only paths and components may be added, not %q", k)
		}
	}
	paths, err := mergeObject(doc["paths"], frag["paths"], "paths")
	if err != nil {
		return nil, err
	}
	doc["paths"] = paths
	if frag["components"] != nil {
		var base, add map[string]json.RawMessage
		if err := json.Unmarshal(doc["components"], &base); err != nil {
			return nil, fmt.Errorf("httpapi: OpenAPI components: %w", err)
		}
		if err := json.Unmarshal(frag["components"], &add); err != nil {
			return nil, fmt.Errorf("httpapi: OpenAPI fragment components: %w", err)
		}
		for kind, objs := range add {
			merged, err := mergeObject(base[kind], objs, "components."+kind)
			if err != nil {
				return nil, err
			}
			base[kind] = merged
		}
		if doc["components"], err = json.Marshal(base); err != nil {
			return nil, err
		}
	}
	return json.MarshalIndent(doc, "", "  ")
}

// mergeObject adds add's keys to base (two JSON objects); a key in both is
// an error naming where.
func mergeObject(base, add json.RawMessage, where string) (json.RawMessage, error) {
	b := map[string]json.RawMessage{}
	if len(base) > 0 {
		if err := json.Unmarshal(base, &b); err != nil {
			return nil, fmt.Errorf("httpapi: OpenAPI %s: %w", where, err)
		}
	}
	if len(add) > 0 {
		var a map[string]json.RawMessage
		if err := json.Unmarshal(add, &a); err != nil {
			return nil, fmt.Errorf("httpapi: OpenAPI fragment %s: %w", where, err)
		}
		for k, v := range a {
			if _, dup := b[k]; dup {
				return nil, fmt.Errorf("httpapi: OpenAPI fragment: %s.%s is already in the document", where, k)
			}
			b[k] = v
		}
	}
	return json.Marshal(b)
}

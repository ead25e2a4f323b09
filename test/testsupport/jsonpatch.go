package testsupport

import (
	"encoding/json"

	jsonpatch "github.com/evanphx/json-patch/v5"
)

// ApplyPatch applies the JSONPatch ops (anything that encodes as an RFC
// 6902 array) to doc: a remove needs its member, an add its parent, as on
// the API server.
func ApplyPatch(doc []byte, ops any) ([]byte, error) {
	b, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	p, err := jsonpatch.DecodePatch(b)
	if err != nil {
		return nil, err
	}
	return p.Apply(doc)
}

package mlflowapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/internal/strictjson"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/mlflowjson"
)

// input is one request's parameters: its query and its body.
type input struct {
	method string
	query  url.Values
	body   []byte
}

// decode fills dst, a pointer to a request struct with json tags, from the
// query or the JSON body: GET reads the query unless it is empty, DELETE
// reads the body unless it is empty, POST and PATCH read the body. Then
// every string must be valid UTF-8 without NUL characters.
func (in *input) decode(dst any) error {
	useQuery := (in.method == http.MethodGet && len(in.query) > 0) ||
		(in.method == http.MethodDelete && len(bytes.TrimSpace(in.body)) == 0)
	var err error
	if useQuery {
		err = decodeQuery(in.query, dst)
	} else {
		err = decodeJSON(in.body, dst)
	}
	if err != nil {
		return err
	}
	return checkText(reflect.ValueOf(dst).Elem(), "")
}

// decodeJSON decodes body strictly: unknown fields and trailing data are
// errors, as are type mismatches, each naming the field. An empty body or
// null is {}; a JSON string holding the object (what old MLflow clients
// send) is decoded once more.
func decodeJSON(body []byte, dst any) error {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || string(body) == "null" {
		return nil
	}
	if body[0] == '"' {
		var inner string
		if err := json.Unmarshal(body, &inner); err != nil {
			return jsonError(err)
		}
		body = bytes.TrimSpace([]byte(inner))
		if len(body) == 0 || body[0] == '"' {
			return invalid("", "malformed request body: expected a JSON object")
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return invalid("", "malformed request body: data after the JSON object")
	}
	if p, dup := strictjson.Duplicate(body); dup {
		return invalid(p, "parameter '%s' is given twice: give it once", p)
	}
	return nil
}

// jsonError turns a decoding error into EINVALID naming the field.
func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	var fe *forecast.Error
	switch {
	case errors.As(err, &fe):
		return fe
	case errors.As(err, &te) && te.Field != "":
		want := te.Type.Kind().String()
		if te.Type.Kind() == reflect.Slice {
			want = "array"
		} else if te.Type.Kind() == reflect.Struct {
			want = "object"
		}
		return invalid(te.Field, "invalid value for parameter '%s': expected %s, got %s", te.Field, want, te.Value)
	case errors.As(err, &te):
		return invalid("", "malformed request body: expected a JSON object, got %s", te.Value)
	case errors.As(err, &se):
		return invalid("", "malformed request body: %v (at offset %d)", err, se.Offset)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field, _ := strconv.Unquote(strings.TrimPrefix(err.Error(), "json: unknown field "))
		return invalid(field, "unknown parameter '%s'", field)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalid("", "malformed request body: unexpected end of JSON")
	}
	return invalid("", "malformed request body: %v", err)
}

// decodeQuery fills dst's string, []string, bool and optInt fields from
// the query parameters of the same names (lists from repeated keys).
// Parameters dst does not have are ignored, as MLflow ignores them.
func decodeQuery(q url.Values, dst any) error {
	v := reflect.ValueOf(dst).Elem()
	t := v.Type()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		vals, ok := q[name]
		if !ok || len(vals) == 0 {
			continue
		}
		f := v.Field(i)
		switch p := f.Addr().Interface().(type) {
		case *string:
			*p = vals[0]
		case *[]string:
			*p = vals
		case *bool:
			b, err := strconv.ParseBool(vals[0])
			if err != nil {
				return invalid(name, "invalid value for parameter '%s': expected true or false, got %q", name, vals[0])
			}
			*p = b
		case *optInt:
			if err := p.parse(name, vals[0]); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkText rejects strings that are not valid UTF-8 or hold NUL, in any
// field of v (structs and slices walked), naming the field.
func checkText(v reflect.Value, field string) error {
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		if !utf8.ValidString(s) {
			return invalid(field, "parameter '%s' is not valid UTF-8", field)
		}
		if strings.IndexByte(s, 0) >= 0 {
			return invalid(field, "parameter '%s' contains a NUL character", field)
		}
	case reflect.Slice:
		for i := range v.Len() {
			if err := checkText(v.Index(i), field); err != nil {
				return err
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			if name == "" || !t.Field(i).IsExported() {
				continue
			}
			if field != "" {
				name = field + "." + name
			}
			if err := checkText(v.Field(i), name); err != nil {
				return err
			}
		}
	}
	return nil
}

// optInt is an optional integer parameter (max_results): a JSON number or
// a decimal string, as protobuf's JSON mapping of int64 allows.
type optInt struct {
	set bool
	v   int64
}

func (o *optInt) UnmarshalJSON(b []byte) error {
	s := string(b)
	if u, err := strconv.Unquote(s); err == nil {
		s = u
	}
	return o.parse("max_results", s)
}

func (o *optInt) parse(name, s string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return invalid(name, "invalid value for parameter '%s': expected an integer, got %q", name, s)
	}
	*o = optInt{set: true, v: n}
	return nil
}

// required returns EINVALID for an empty required parameter, in MLflow's
// words.
func required(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			return invalid(pairs[i], "Missing value for required parameter '%s'.", pairs[i])
		}
	}
	return nil
}

// version parses a required version parameter.
func version(s string) (int64, error) {
	if err := required("version", s); err != nil {
		return 0, err
	}
	return registry.ParseVersion("version", s)
}

// tags converts and validates request tags.
func tags(in []mlflowjson.Tag) ([]registry.Tag, error) {
	out := make([]registry.Tag, 0, len(in))
	for _, t := range in {
		tag := registry.Tag{Key: t.Key, Value: t.Value}
		if err := registry.ValidateTag(tag); err != nil {
			return nil, err
		}
		out = append(out, tag)
	}
	return out, nil
}

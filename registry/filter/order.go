package filter

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

// Order keys of registry.Order.
const (
	OrderName           = "name"
	OrderVersion        = "version_number"
	OrderCreation       = "creation_timestamp"
	OrderLastUpdated    = "last_updated_timestamp"
	orderTimestampAlias = "timestamp"
)

// ParseOrderBy parses order_by terms such as "name", "name ASC",
// "last_updated_timestamp DESC" (direction in any case, ASC by default; the
// key may be quoted with backticks). Keys for registered models: name,
// creation_timestamp, last_updated_timestamp and its MLflow alias
// timestamp; for model versions (versions true): name, version_number,
// creation_timestamp, last_updated_timestamp, optionally prefixed with
// "attribute.". A key may appear once. EINVALID with Field "order_by".
func ParseOrderBy(terms []string, versions bool) ([]registry.Order, error) {
	var out []registry.Order
	seen := map[string]bool{}
	for _, term := range terms {
		o, err := parseOrderTerm(term, versions)
		if err != nil {
			return nil, err
		}
		if seen[o.Key] {
			return nil, forecast.FieldErrorf(forecast.EINVALID, "order_by", "order_by names %s twice", o.Key)
		}
		seen[o.Key] = true
		out = append(out, o)
	}
	return out, nil
}

func parseOrderTerm(term string, versions bool) (registry.Order, error) {
	fields := strings.Fields(term)
	if len(fields) == 0 || len(fields) > 2 {
		return registry.Order{}, forecast.FieldErrorf(forecast.EINVALID, "order_by", "invalid order_by clause %q: expected <key> [ASC|DESC]", term)
	}
	key := fields[0]
	if len(key) >= 2 && key[0] == '`' && key[len(key)-1] == '`' {
		key = key[1 : len(key)-1]
	}
	if versions {
		key = strings.TrimPrefix(key, "attribute.")
	}
	o := registry.Order{Key: key}
	switch {
	case versions && (key == OrderName || key == OrderVersion || key == OrderCreation || key == OrderLastUpdated):
	case !versions && (key == OrderName || key == OrderCreation || key == OrderLastUpdated):
	case !versions && key == orderTimestampAlias:
		o.Key = OrderLastUpdated // as MLflow's SQL store reads it
	default:
		valid := "name, timestamp, creation_timestamp, last_updated_timestamp"
		if versions {
			valid = "name, version_number, creation_timestamp, last_updated_timestamp"
		}
		return registry.Order{}, forecast.FieldErrorf(forecast.EINVALID, "order_by", "invalid order_by key %q; valid keys are %s", fields[0], valid)
	}
	if len(fields) == 2 {
		switch strings.ToUpper(fields[1]) {
		case "ASC":
		case "DESC":
			o.Desc = true
		default:
			return registry.Order{}, forecast.FieldErrorf(forecast.EINVALID, "order_by", "invalid ordering %q in order_by clause %q: use ASC or DESC", fields[1], term)
		}
	}
	return o, nil
}

// MaxOffset bounds the offset a page token may carry.
const MaxOffset = math.MaxInt32

// EncodePageToken returns MLflow's page token for offset: base64 of
// {"offset": N}, byte for byte as MLflow writes it, so tokens are
// interchangeable with a real MLflow server's.
func EncodePageToken(offset int) string {
	return base64.StdEncoding.EncodeToString([]byte(`{"offset": ` + strconv.Itoa(offset) + `}`))
}

// DecodePageToken returns the offset of a page token; "" is offset 0.
// EINVALID with Field "page_token" for anything that is not base64 of a
// JSON object with a non-negative integer "offset" (a number or a decimal
// string, as MLflow accepts) of at most MaxOffset.
func DecodePageToken(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		if raw, err = base64.RawStdEncoding.DecodeString(s); err != nil {
			return 0, forecast.FieldErrorf(forecast.EINVALID, "page_token", "invalid page token: could not base64-decode it")
		}
	}
	var tok struct {
		Offset json.RawMessage `json:"offset"`
	}
	if err := json.Unmarshal(raw, &tok); err != nil || len(tok.Offset) == 0 {
		return 0, forecast.FieldErrorf(forecast.EINVALID, "page_token", "invalid page token: not an offset")
	}
	num := string(tok.Offset)
	if unq, err := strconv.Unquote(num); err == nil {
		num = unq
	}
	off, err := strconv.Atoi(num)
	if err != nil || off < 0 || off > MaxOffset {
		return 0, forecast.FieldErrorf(forecast.EINVALID, "page_token", "invalid page token: offset %s is not an integer in 0..%d", strconv.Quote(truncate(num, 32)), MaxOffset)
	}
	return off, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

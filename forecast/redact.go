package forecast

import "net/url"

// RedactURI returns uri fit for an error message or a log: scheme, host and
// path only. Credentials can sit in the user info or the query (postgres
// URLs take ?password=), so both go; a string that does not parse as a URL
// with a scheme (a key=value DSN, say) is not shown at all.
func RedactURI(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme == "" {
		return "(not shown: not a URL)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

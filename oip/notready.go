package oip

import "strings"

// NotReadyText reports whether a server's error text says the model or
// server is not ready yet. Servers signal this differently (KServe 503,
// MLServer 400 over REST and InvalidArgument over gRPC), so clients look at
// the text as well as the status.
func NotReadyText(text string) bool {
	t := strings.ToLower(text)
	return strings.Contains(t, "not ready") || strings.Contains(t, "not yet ready")
}

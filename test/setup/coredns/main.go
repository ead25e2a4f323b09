// Command coredns is CoreDNS with only the plugins the test cluster's DNS
// needs: the kubernetes plugin answering for the cluster's domain and
// reverse zones from the API server, forward for every other name (the
// host's resolver), cache, errors, bind (one address) and ready (the
// readiness probe the cluster waits on). Everything else of CoreDNS's
// default build (cloud DNS providers, dnstap, tracing, …) stays out.
package main

import (
	"fmt"
	"os"
	"slices"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	// The plugins, each registering its directive with CoreDNS.
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

// plugins are the directives of the plugins imported above.
var plugins = []string{"bind", "cache", "errors", "forward", "kubernetes", "ready"}

func main() {
	// CoreDNS runs a server block's plugins in the order of
	// dnsserver.Directives (generated from its plugin.cfg): keep that
	// order, with only the plugins linked in, as CoreDNS's own embedding
	// example sets it before the first server starts.
	directives := slices.DeleteFunc(slices.Clone(dnsserver.Directives), func(d string) bool { return !slices.Contains(plugins, d) })
	if len(directives) != len(plugins) {
		fmt.Fprintf(os.Stderr, "coredns: directives %v, want all of %v: CoreDNS renamed a plugin\n", directives, plugins)
		os.Exit(2)
	}
	dnsserver.Directives = directives
	coremain.Run()
}

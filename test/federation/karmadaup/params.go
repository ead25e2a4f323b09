package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/carbongate/carbongate/forecast/regions"
	"github.com/carbongate/carbongate/gateway/admission"
	"github.com/carbongate/carbongate/test/federation"
)

// params are what the printed lines name: flags, the federation's files
// and figures.
type params struct {
	Bin, Models, ReplayStart string
	ReplaySpeed              int

	Port                                   int    // carbongate's, on 127.0.0.1
	TLSCert, TLSKey, ClientCA, DecisionKey string // carbongate's files
	Webhook                                string // the webhook registration for Karmada's API server
	Karmada                                string // Karmada's API server's admin kubeconfig
	Host, HostKubeconfig                   string // carbongate's own cluster (a member)
	Members                                []member
	KubectlDir                             string // test/setup/kube.sh's, holding kubectl
	Startup                                time.Duration
	Processes                              int
	RSSMiB                                 float64
}

type member struct {
	Name, Provider, Region, Kubeconfig string
}

// webhookURL is where Karmada's API server calls carbongate.
func (p *params) webhookURL() string {
	return fmt.Sprintf("https://127.0.0.1:%d%s", p.Port, admission.Path)
}

// carbongateArgs is carbongate's command line: its admission webhook over
// TLS (requiring the client certificate of Karmada's API server), placing
// Karmada's ResourceBindings, and its controller (holding them, with its
// Lease on its own cluster), on the replay clock.
func (p *params) carbongateArgs() []string {
	return []string{
		filepath.Join(p.Bin, "carbongate"), "--addr", "127.0.0.1:" + strconv.Itoa(p.Port), "--models", p.Models,
		"--clock", "replay", "--replay-start", p.ReplayStart, "--replay-speed", strconv.Itoa(p.ReplaySpeed), "--drain-delay", "0s",
		"--admission", "--tls-cert", p.TLSCert, "--tls-key", p.TLSKey, "--admission-client-ca", p.ClientCA,
		"--karmada-kubeconfig", p.Karmada,
		"--controller", "--kubeconfig", p.HostKubeconfig, "--controller-namespace", "default", "--decision-key-file", p.DecisionKey,
	}
}

// webhookYAML is the registration of carbongate's binding webhook at url,
// trusting ca (PEM), for Karmada's API server.
func webhookYAML(url string, ca []byte) ([]byte, error) {
	return yaml.Marshal(federation.BindingWebhook("carbongate-bindings", url, ca))
}

// instructions are the lines printed once everything is up.
func (p *params) instructions() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nA Karmada federation is up (%d processes, RSS %.0f MiB, set up in %v): Karmada v1.18.2's control plane\n",
		p.Processes, p.RSSMiB, p.Startup.Round(100*time.Millisecond))
	b.WriteString("and three member clusters in Push mode (API servers only: workloads arrive as objects, no pod runs):\n\n")
	for _, m := range p.Members {
		zone := "?"
		if t, err := regions.Default(); err == nil {
			if r, err := t.Lookup(m.Provider, m.Region); err == nil {
				zone = string(r.Zone)
			}
		}
		fmt.Fprintf(&b, "  %-10s %s %s (grid zone %s)  kubeconfig %s\n", m.Name, m.Provider, m.Region, zone, m.Kubeconfig)
	}
	path := ""
	if p.KubectlDir != "" {
		path = fmt.Sprintf("  export PATH=%s:$PATH   # the kubectl test/setup/kube.sh built\n", p.KubectlDir)
	}
	fmt.Fprintf(&b, `
Karmada's API server (Clusters, PropagationPolicies, workloads, ResourceBindings):

%s  export KUBECONFIG=%s
  kubectl get clusters

Try carbongate against it. In another terminal, run it as the webhook of Karmada's ResourceBindings and
as the controller (its own cluster, for its Lease, is %s; replay clock %d times as fast as the wall):

  %s

then register its webhook on Karmada's API server (CREATE and UPDATE of resourcebindings, failurePolicy Fail)
and propagate a Job to all three members through a PropagationPolicy; carbongate narrows its binding to
the member in the decided grid zone:

  kubectl apply -f %s
  kubectl apply -f deploy/local/karmada-job.yaml
  kubectl get resourcebinding -n batch -o custom-columns='NAME:.metadata.name,CLUSTER:.metadata.annotations.carbongate\.io/scheduling-cluster,START:.metadata.annotations.carbongate\.io/scheduling-time,HOLD:.metadata.labels.carbongate\.io/hold,SCHEDULING-HELD:.spec.suspension.scheduling,DISPATCH-HELD:.spec.suspension.dispatching'
  for m in %s; do kubectl --kubeconfig "$m" get jobs -n batch; done

Stop everything with Ctrl-C (nothing is left running, its files are removed).

`, path, p.Karmada, p.Host, p.ReplaySpeed, commandLine(p.carbongateArgs()), p.Webhook, p.memberKubeconfigs())
	return b.String()
}

// commandLine joins args for a shell, each flag with its value, a line
// continued before it would pass 100 characters.
func commandLine(args []string) string {
	var words []string
	for i := 0; i < len(args); i++ {
		w := args[i]
		if strings.HasPrefix(w, "--") && i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
			i++
			w += " " + args[i]
		}
		words = append(words, w)
	}
	var b strings.Builder
	line := 0
	for i, w := range words {
		if i > 0 && line+1+len(w) > 100 {
			b.WriteString(" \\\n    ")
			line = 4
		} else if i > 0 {
			b.WriteString(" ")
			line++
		}
		b.WriteString(w)
		line += len(w)
	}
	return b.String()
}

func (p *params) memberKubeconfigs() string {
	var out []string
	for _, m := range p.Members {
		out = append(out, m.Kubeconfig)
	}
	return strings.Join(out, " ")
}

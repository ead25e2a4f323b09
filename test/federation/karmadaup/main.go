// Command karmadaup holds up a local Karmada federation for make
// karmada-up: the control plane of package federation (Karmada v1.18.2's
// API server, aggregated API server, controller-manager, scheduler and
// webhook, a kube-controller-manager) and three member clusters in Push
// mode in three regions of two clouds and three grid zones (the tests'
// federation.ThreeRegions). It writes what carbongate needs to serve the
// binding webhook (a serving certificate, the client CA of Karmada's API
// server, a decision key, the webhook's registration), prints the
// kubeconfigs and the exact carbongate command line, and runs until SIGINT
// or SIGTERM (Ctrl-C), then stops every process and removes its files.
//
//	karmadaup -bin DIR -models DIR [-replay-start T] [-replay-speed N]
//
// It needs the binaries of test/setup/kube.sh, node.sh and karmada.sh
// (KUBEBUILDER_ASSETS, CARBONGATE_NODE_DIR, CARBONGATE_KARMADA_DIR; the
// Makefile sets them). Nothing needs root.
package main

import (
	"crypto/rand"
	"encoding/base64"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/carbongate/carbongate/test/federation"
	"github.com/carbongate/carbongate/test/services"
)

func main() {
	log.SetFlags(log.Ltime)
	log.SetPrefix("karmada-up: ")
	var p params
	flag.StringVar(&p.Bin, "bin", "bin", "the directory holding carbongate (make build)")
	flag.StringVar(&p.Models, "models", "", "the trained models carbongate serves (as make run uses)")
	flag.StringVar(&p.ReplayStart, "replay-start", "2021-06-01T00:00:00Z", "carbongate's replay clock")
	flag.IntVar(&p.ReplaySpeed, "replay-speed", 360, "how many times as fast as the wall the replay clock runs")
	flag.Parse()
	if p.Models == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: karmadaup -bin DIR -models DIR [-replay-start T] [-replay-speed N]")
		os.Exit(2)
	}
	os.Exit(run(p))
}

// run sets the federation up, prints how to use it and waits for a
// signal; then it runs the cleanups (every process, the state directory).
func run(p params) int {
	tmp, err := os.MkdirTemp("", "karmada-up-")
	if err != nil {
		log.Print(err)
		return 1
	}
	tb := services.NewRunner("karmada-up", tmp)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	begin := time.Now()
	ok := tb.Run(func() {
		f := federation.Start(tb, federation.ThreeRegions)
		p.Startup = time.Since(begin)
		p.prepare(tb, f)
		p.Processes, p.RSSMiB = f.RSSMiB()
		p.Processes++ // and this one
		p.RSSMiB += float64(services.ProcStatus(tb, os.Getpid(), "VmRSS")) / 1024
	})
	if ok {
		select {
		case sig := <-stop: // during the set-up
			log.Printf("%v: stopping everything", sig)
		default:
			fmt.Print(p.instructions())
			log.Printf("%v: stopping everything", <-stop)
		}
	}
	signal.Stop(stop)
	if !tb.Close() || !ok {
		return 1
	}
	log.Print("stopped; nothing of it runs any more")
	return 0
}

// prepare fills p from the running federation f and writes carbongate's
// files into f's state (removed with it): its serving certificate for
// 127.0.0.1 on a free port, the CA Karmada's API server's client
// certificate is signed with, a decision key, the webhook registration.
// carbongate's own cluster (--kubeconfig: its controller's Lease) is the
// first member, with the VmTemplate CRD its controller watches.
func (p *params) prepare(tb *services.Runner, f *federation.Federation) {
	p.Port = services.FreePort(tb)
	ca := services.NewCA(tb, "karmada-up carbongate serving CA")
	cert, key := ca.Issue(tb, "127.0.0.1", false, time.Now().Add(-time.Hour), time.Now().Add(23*time.Hour))
	p.TLSCert = f.WriteFile("carbongate/tls.crt", cert)
	p.TLSKey = f.WriteFile("carbongate/tls.key", key)
	p.ClientCA = f.WriteFile("carbongate/karmada-webhook-client-ca.crt", f.Karmada.WebhookCA.PEM)
	secret := make([]byte, 48)
	if _, err := rand.Read(secret); err != nil {
		tb.Fatal(err)
	}
	p.DecisionKey = f.WriteFile("carbongate/decision.key", []byte(base64.StdEncoding.EncodeToString(secret)+"\n"))
	hook, err := webhookYAML(p.webhookURL(), ca.PEM)
	if err != nil {
		tb.Fatal(err)
	}
	p.Webhook = f.WriteFile("carbongate/webhook.yaml", hook)
	p.Karmada = f.Karmada.Kubeconfig
	host := f.Members[0]
	crd, err := os.ReadFile(filepath.Join(services.RepoRoot(tb), "deploy", "crd", "vmtemplate.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	f.Apply(host.APIServer, crd)
	p.Host = host.Name
	p.HostKubeconfig = host.Kubeconfig
	for _, m := range f.Members {
		p.Members = append(p.Members, member{Name: m.Name, Provider: m.Provider, Region: m.Region, Kubeconfig: m.Kubeconfig})
	}
	p.KubectlDir = os.Getenv("KUBEBUILDER_ASSETS")
}

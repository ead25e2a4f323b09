// Command kubeup holds up the real cluster of package cluster for make
// kube-up: the same set-up as TestCluster (two real nodes in westeurope
// and swedencentral, a kwok node in polandcentral, the project's images
// loaded, the chart installed with carbongate as webhook and controller),
// run until SIGTERM or SIGINT, then drained and torn down.
//
//	kubeup up -state DIR [-replay-speed N]   set up, write DIR/up, wait
//	kubeup down                              tear down what a cluster left
//
// up writes DIR/kubeconfig (cluster admin), DIR/kubectl-dir (the directory
// of the kubectl the cluster was set up with) and DIR/up once everything
// is Ready; a set-up failure tears down what was started and exits 1.
// down takes the host lock (waiting while a running cluster holds it) and
// removes whatever a cluster left on the host, also after a killed up.
// Both need root.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/carbongate/carbongate/test/cluster"
	"github.com/carbongate/carbongate/test/services"
)

func main() {
	log.SetFlags(log.Ltime)
	log.SetPrefix("kubeup: ")
	if len(os.Args) < 2 {
		usage()
	}
	if os.Geteuid() != 0 {
		log.Fatal("a real cluster needs root (kubelet, containerd, bridges, cgroups)")
	}
	switch os.Args[1] {
	case "up":
		fs := flag.NewFlagSet("up", flag.ExitOnError)
		state := fs.String("state", "", "the directory make kube-up keeps its state in")
		speed := fs.Int("replay-speed", 360, "how many times as fast as the wall the replay clock runs")
		fs.Parse(os.Args[2:])
		if *state == "" {
			usage()
		}
		os.Exit(up(*state, *speed))
	case "down":
		if err := cluster.Clean(log.Printf, 5*time.Minute); err != nil {
			log.Fatal(err)
		}
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: kubeup up -state DIR [-replay-speed N] | kubeup down")
	os.Exit(2)
}

// up sets the cluster up, writes its files into state and waits for a
// signal; then it runs the cleanups (drain, processes, teardown).
func up(state string, speed int) int {
	tb := services.NewRunner("kube-up", filepath.Join(state, "tmp"))
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	begin := time.Now()
	ok := tb.Run(func() {
		archives, _ := cluster.ProjectImages(tb)
		c := cluster.Start(tb, cluster.Options{
			Regions: []string{"westeurope", "swedencentral"}, KwokRegions: []string{"polandcentral"}, Images: archives})
		cluster.InstallChart(tb, c, speed)
		kubeconfig, err := os.ReadFile(c.Kubeconfig)
		if err == nil {
			err = errors.Join(os.WriteFile(filepath.Join(state, "kubeconfig"), kubeconfig, 0o600),
				os.WriteFile(filepath.Join(state, "kubectl-dir"), []byte(filepath.Dir(c.KubectlPath())+"\n"), 0o644))
		}
		if err != nil {
			tb.Fatal(err)
		}
	})
	if ok {
		if err := os.WriteFile(filepath.Join(state, "up"), nil, 0o644); err != nil {
			log.Print(err)
			ok = false
		}
	}
	if ok {
		log.Printf("up after %v; stop it with SIGTERM (make kube-down)", time.Since(begin).Round(time.Second))
		sig := <-stop
		log.Printf("%v: tearing down", sig)
	}
	signal.Stop(stop)
	os.Remove(filepath.Join(state, "up"))
	if !tb.Close() || !ok {
		return 1
	}
	return 0
}

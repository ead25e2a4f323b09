package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Teardown removes everything a test cluster put on the host, whether its
// run ended, failed or was killed: it stops the cluster's processes (those
// whose command line names StateDir, and every process in the nodes'
// cgroups), lets kube-proxy clean its rules (kubeProxy: its binary, or ""),
// deletes the CNI networks' rules and chains, unmounts everything under
// StateDir, deletes the bridges and veths, the nodes' cgroups, the
// kubelets' and CNI's files at fixed paths, puts back the sysctls saved at
// start and removes StateDir. The caller holds the host lock.
func Teardown(logf func(string, ...any), kubeProxy string) error {
	start := time.Now()
	var errs []error
	if err := killOurs(logf, 10*time.Second); err != nil {
		errs = append(errs, err)
	}
	if err := cleanIPTables(logf, kubeProxy); err != nil {
		errs = append(errs, err)
	}
	if err := unmountOurs(logf); err != nil {
		errs = append(errs, err)
	}
	if err := deleteLinks(logf); err != nil {
		errs = append(errs, err)
	}
	if err := removeCgroups(); err != nil {
		errs = append(errs, err)
	}
	removeFixedPaths()
	if err := restoreSysctls(logf); err != nil {
		errs = append(errs, err)
	}
	if ms, err := ourMounts(); err != nil || len(ms) > 0 {
		// Never remove files under a live mount: it could reach the host's.
		errs = append(errs, fmt.Errorf("not removing %s: mounts left %v (%v)", StateDir, ms, err))
	} else if err := os.RemoveAll(StateDir); err != nil {
		errs = append(errs, err)
	}
	logf("teardown: done in %v", time.Since(start).Round(time.Millisecond))
	return errors.Join(errs...)
}

// Clean takes the host lock, waiting up to wait while a running cluster
// holds it, and runs Teardown: what make kube-down does after the process
// that held a cluster up has stopped or was killed.
func Clean(logf func(string, ...any), wait time.Duration) error {
	release, err := lockHost(wait)
	if err != nil {
		return err
	}
	defer release()
	kubeProxy := ""
	if node := os.Getenv("CARBONGATE_NODE_DIR"); node != "" {
		kubeProxy = filepath.Join(node, "bin", "kube-proxy")
	}
	return Teardown(logf, kubeProxy)
}

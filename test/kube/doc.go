//go:build interop

// Package kube runs carbongate against a real Kubernetes API server
// (kube-apiserver and etcd built by test/setup/kube.sh, started by envtest):
// carbongate, and OPA with carbongate's policy bundle, as the VmTemplate
// admission webhook called over TLS with a client certificate, the shared
// admission fixtures replayed as API operations through both, KServe
// discovery over real InferenceService objects, and the manifests carbonctl
// renders applied server-side; and make kube-up / make kube-down
// (deploy/local/kube.sh), which start the same binaries without envtest,
// run as a user would. No kubelet, scheduler or controller runs: what is
// tested is what the API server itself does.
package kube

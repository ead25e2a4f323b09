// Package layers holds the test that enforces carbongate's layers: the
// table of which layer may import which (the README's layout, lowest
// first), checked over every package of the module, and the packages that
// must not pull in the Kubernetes and KServe libraries. It has no code.
package layers

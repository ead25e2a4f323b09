package cluster

import (
	"slices"
	"testing"
)

// The teardown deletes rules by feeding iptables -S lines back to
// iptables -D: quoted comments must come back as one argument each.
func TestShellFields(t *testing.T) {
	line := `-A POSTROUTING -s 10.213.0.5/32 -m comment --comment "name: \"carbongate-node-a\" id: \"abc\"" -j CNI-0123`
	got := shellFields(line)
	want := []string{"-A", "POSTROUTING", "-s", "10.213.0.5/32", "-m", "comment", "--comment",
		`name: "carbongate-node-a" id: "abc"`, "-j", "CNI-0123"}
	if !slices.Equal(got, want) {
		t.Fatalf("shellFields:\n got %q\nwant %q", got, want)
	}
	if tg := target(got); tg != "CNI-0123" {
		t.Errorf("target %q, want CNI-0123", tg)
	}
}

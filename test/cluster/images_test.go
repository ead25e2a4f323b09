package cluster

import "testing"

// A pod's image name is looked up in containerd under its full name:
// Docker Hub's for a repository that names no registry.
func TestImageName(t *testing.T) {
	for _, tc := range []struct{ repo, want string }{
		{"openpolicyagent/opa", "docker.io/openpolicyagent/opa:1.22.2-static"},
		{"opa", "docker.io/library/opa:1.22.2-static"},
		{"ghcr.io/carbongate/carbongate", "ghcr.io/carbongate/carbongate:1.22.2-static"},
		{"localhost/opa", "localhost/opa:1.22.2-static"},
		{"registry:5000/opa", "registry:5000/opa:1.22.2-static"},
	} {
		if got := imageName(tc.repo, "1.22.2-static"); got != tc.want {
			t.Errorf("imageName(%s) = %s, want %s", tc.repo, got, tc.want)
		}
	}
}

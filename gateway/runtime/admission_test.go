package runtime

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/test/services"
	"github.com/carbongate/carbongate/test/testsupport"
)

// TestCertificateReload: a renewed certificate is served without a
// restart; a half-written renewal keeps the previous one.
func TestCertificateReload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := services.NewCA(t, "ca")
	now := time.Now()
	c1, k1 := ca.Issue(t, "first", false, now.Add(-time.Hour), now.Add(time.Hour))
	c2, k2 := ca.Issue(t, "second", false, now.Add(-time.Hour), now.Add(2*time.Hour))
	certF, keyF := testsupport.WriteFile(t, dir, "tls.crt", c1), testsupport.WriteFile(t, dir, "tls.key", k1)
	clock := now
	a := admissionPart{Admission: &Admission{TLSCert: certF, TLSKey: keyF, Now: func() time.Time { return clock }}}
	if err := a.load(slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	served := func() string {
		t.Helper()
		c, err := a.tls.GetCertificate(nil)
		if err != nil {
			t.Fatal(err)
		}
		return c.Leaf.Subject.CommonName
	}
	testsupport.WriteFile(t, dir, "tls.crt", c2) // the key is not written yet
	clock = clock.Add(2 * reloadEvery)
	if got := served(); got != "first" {
		t.Fatalf("served %s during a half-written renewal, want first", got)
	}
	testsupport.WriteFile(t, dir, "tls.key", k2)
	if got := served(); got != "first" {
		t.Fatalf("served %s before the next check, want first", got)
	}
	clock = clock.Add(2 * reloadEvery)
	if got := served(); got != "second" {
		t.Fatalf("served %s after the renewal, want second", got)
	}
}

// TestKarmadaNeedsAdmission: --karmada-kubeconfig without --admission is
// refused at startup, naming both flags.
func TestKarmadaNeedsAdmission(t *testing.T) {
	t.Parallel()
	a := admissionPart{Admission: &Admission{KarmadaKubeconfig: "karmada.kubeconfig"}}
	err := a.load(slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "--karmada-kubeconfig") || !strings.Contains(err.Error(), "--admission") {
		t.Fatalf("got %v, want an error naming --karmada-kubeconfig and --admission", err)
	}
}

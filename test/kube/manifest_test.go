//go:build interop

package kube

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carbongate/carbongate/gateway/admission"
	"github.com/carbongate/carbongate/test/services"
)

// testWebhookManifest applies deploy/webhook's configuration the ways a
// user would: the file as shipped is refused (its ${CA_BUNDLE} is not
// base64); `carbonctl deploy render --webhook --ca-bundle` output is
// accepted and live (with the Service form, which no process backs here,
// failurePolicy Fail refuses VmTemplates); with --url pointing at a running
// carbongate, VmTemplates are stored scheduled.
func testWebhookManifest(t *testing.T, c *cluster, bin string) {
	ctx := context.Background()
	tf := newTLSFiles(t, c)
	caFile := c.write(t, "webhook-ca.crt", tf.serverCA.PEM)
	mwcs := c.kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	spec := map[string]any{"duration": "PT3H", "maxLatencyMs": int64(40), "originRegion": "westeurope", "residency": "EU",
		"deadline": "2021-06-03T00:00:00Z"}

	raw, err := os.ReadFile(filepath.Join(services.RepoRoot(t), "deploy", "webhook", "mutatingwebhookconfiguration.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.apply(t, raw, "", true); err == nil || !strings.Contains(err.Error(), "base64") {
		t.Errorf("the file as shipped, --dry-run=server: %v, want refused for its ${CA_BUNDLE}", err)
	}

	t.Run("service", func(t *testing.T) {
		out := carbonctl(t, bin, "deploy", "render", "--webhook", "--ca-bundle", caFile)
		objs, err := c.apply(t, out, "", false)
		if err != nil {
			t.Fatalf("carbonctl deploy render --webhook | kubectl apply --server-side: %v", err)
		}
		name := objs[0].GetName()
		t.Cleanup(func() { _ = mwcs.Delete(context.Background(), name, metav1.DeleteOptions{}) })
		stored, err := mwcs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if w := stored.Webhooks[0]; !bytes.Equal(w.ClientConfig.CABundle, tf.serverCA.PEM) || w.ClientConfig.Service == nil {
			t.Errorf("stored clientConfig %+v, want the carbongate Service and the CA as caBundle", w.ClientConfig)
		}
		c.namespace(t, "manifest-service", nil)
		eventually(t, 30*time.Second, "the rendered webhook called", func() error {
			_, err := c.vmtemplates("manifest-service").Create(ctx, vmTemplate("manifest-service", "batch", spec), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			var se *apierrors.StatusError
			if !errors.As(err, &se) || !strings.Contains(se.ErrStatus.Message, `failed calling webhook "schedule.vmtemplates.carbongate.io"`) {
				return errors.New("create: " + errString(err) + `; want refused: failed calling webhook "schedule.vmtemplates.carbongate.io" (no carbongate Service here)`)
			}
			return nil
		})
		if err := mwcs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("url", func(t *testing.T) {
		g := startGate(t, bin, &tf, "--admission")
		out := carbonctl(t, bin, "deploy", "render", "--webhook", "--ca-bundle", caFile, "--url", g.URL+admission.Path)
		objs, err := c.apply(t, out, "", false)
		if err != nil {
			t.Fatalf("carbonctl deploy render --webhook --url | kubectl apply --server-side: %v", err)
		}
		name := objs[0].GetName()
		t.Cleanup(func() { _ = mwcs.Delete(context.Background(), name, metav1.DeleteOptions{}) })
		c.namespace(t, "manifest-url", nil)
		eventually(t, 30*time.Second, "a VmTemplate scheduled by the rendered webhook", func() error {
			o, err := c.vmtemplates("manifest-url").Create(ctx, vmTemplate("manifest-url", "batch", spec), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				return err
			}
			if o.GetAnnotations()[admission.AnnotationProvenance] == "" {
				return errors.New("stored without provenance")
			}
			return nil
		})
		o, err := c.vmtemplates("manifest-url").Create(ctx, vmTemplate("manifest-url", "batch", spec), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s, _ := o.Object["spec"].(map[string]any)
		if s["schedulingRegion"] == nil || s["schedulingTime"] == nil || o.GetAnnotations()[admission.AnnotationProvenance] == "" {
			t.Errorf("stored %v with annotations %v, want it scheduled", s, o.GetAnnotations())
		}
		t.Logf("scheduled through the rendered webhook: %v at %v", s["schedulingRegion"], s["schedulingTime"])
		if err := mwcs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	})
}

func errString(err error) string {
	if err == nil {
		return "admitted"
	}
	return err.Error()
}

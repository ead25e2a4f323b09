//go:build interop

package federation

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/hold"
	"github.com/carbongate/carbongate/test/cluster"
)

// testDispatchWave is testHoldingWave's reference, with no carbongate at
// all: waveJobs Jobs under a PropagationPolicy that suspends their
// dispatching (Karmada's own `spec.suspension.dispatching`), so that
// Karmada schedules every binding into one member and creates its Works
// suspended — the state carbongate stages a held binding in — then every
// binding's dispatching cleared by its own patch, all issued at once. The
// figures are the lag from the first patch to each Job in its member:
// what Karmada itself takes to dispatch a wave of that size here, the
// floor under the release lag of testHoldingWave, whatever carbongate does.
// With wave, testHoldingWave's figures in the same run, it gives their
// ratio and says whether the goal was missed.
func testDispatchWave(t *testing.T, f *Federation, wave waveFigures) {
	const ns = "dispatch"
	member := f.Member("member-se")
	createNamespace(t, f, ns)
	createSuspendedPolicy(t, f, ns, member.Name)
	seen := watchJobs(t, f, ns)
	parallel(t, 8, waveJobs, func(i int) error {
		return newJob(f, ns, fmt.Sprintf("dispatch-%03d", i), nil)
	})
	cluster.Eventually(t, 2*time.Minute, fmt.Sprintf("%d bindings scheduled into %s, their Works suspended", waveJobs, member.Name), func(ctx context.Context) error {
		return dispatchStaged(ctx, f, ns, member.Name)
	})
	if n := seen.count(); n != 0 {
		t.Fatalf("%d Jobs in members before their dispatching was cleared", n)
	}

	bindings := f.Karmada.Dynamic.Resource(ResourceBindingResource).Namespace(ns)
	patch := []byte(`{"spec":{"suspension":{"dispatching":false}}}`)
	cpu := f.CPU()
	start := time.Now()
	parallel(t, 32, waveJobs, func(i int) error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := bindings.Patch(ctx, fmt.Sprintf("dispatch-%03d-job", i), types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	issued := time.Since(start)
	cluster.Eventually(t, 3*time.Minute, fmt.Sprintf("%d Jobs in %s", waveJobs, member.Name), func(context.Context) error {
		if n := seen.count(); n < waveJobs {
			return fmt.Errorf("%d of %d", n, waveJobs)
		}
		return nil
	})
	took := time.Since(start)
	cpu = spent(cpu, f.CPU())
	var lags []float64
	for i := range waveJobs {
		s, _ := seen.get(fmt.Sprintf("dispatch-%03d", i))
		if s.member != member.Name {
			t.Fatalf("Job dispatch-%03d in %s, want %s", i, s.member, member.Name)
		}
		lags = append(lags, s.at.Sub(start).Seconds())
	}
	t.Logf("figures: Karmada alone (no carbongate): %d staged bindings dispatched by clearing their dispatching, %d patches issued in %v; "+
		"first patch → the Job in its member p50 %.2f s, p99 %.2f s, max %.2f s",
		waveJobs, waveJobs, issued.Round(time.Millisecond), forecast.Quantile(lags, 0.5), forecast.Quantile(lags, 0.99), slices.Max(lags))
	t.Logf("figures: CPU of the federation's processes over those %v (2 cores: %.0f s at most): %s", took.Round(time.Second), 2*took.Seconds(), topCPU(cpu, 6))
	if wave.p99 == 0 {
		return // HoldingWave did not run
	}
	alone := waveFigures{p50: forecast.Quantile(lags, 0.5), p99: forecast.Quantile(lags, 0.99)}
	t.Logf("figures: release wave through carbongate against Karmada alone, same run: p50 %.2f/%.2f s (%.2fx), p99 %.2f/%.2f s (%.2fx)",
		wave.p50, alone.p50, wave.p50/alone.p50, wave.p99, alone.p99, wave.p99/alone.p99)
	if wave.p99 >= waveGoal {
		t.Logf("goal missed: release lag p99 %.2f s for %d Jobs released at the same second, goal < %.0f s; Karmada alone dispatching the same wave: p99 %.2f s",
			wave.p99, waveJobs, waveGoal, alone.p99)
	}
}

// spent is the CPU each process used between two readings of
// Federation.CPU.
func spent(before, after map[string]time.Duration) map[string]time.Duration {
	out := map[string]time.Duration{}
	for k, v := range after {
		out[k] = v - before[k]
	}
	return out
}

// topCPU lists the n largest of cpu, largest first, and the rest's sum.
func topCPU(cpu map[string]time.Duration, n int) string {
	keys := slices.SortedFunc(maps.Keys(cpu), func(a, b string) int { return cmp.Compare(cpu[b], cpu[a]) })
	var parts []string
	var rest time.Duration
	for i, k := range keys {
		if i < n {
			parts = append(parts, fmt.Sprintf("%s %.1f s", k, cpu[k].Seconds()))
		} else {
			rest += cpu[k]
		}
	}
	return strings.Join(append(parts, fmt.Sprintf("the other %d %.1f s", max(len(keys)-n, 0), rest.Seconds())), ", ")
}

// createSuspendedPolicy creates a PropagationPolicy placing the Jobs of ns
// into member alone with their dispatching suspended.
func createSuspendedPolicy(t *testing.T, f *Federation, ns, member string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pp := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
		"metadata": map[string]any{"name": "suspended", "namespace": ns},
		"spec": map[string]any{
			"resourceSelectors": []any{map[string]any{"apiVersion": "batch/v1", "kind": "Job"}},
			"placement":         map[string]any{"clusterAffinity": map[string]any{"clusterNames": []any{member}}},
			"suspension":        map[string]any{"dispatching": true},
		},
	}}
	if _, err := f.Karmada.Dynamic.Resource(PropagationPolicyResource).Namespace(ns).Create(ctx, pp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// dispatchStaged says why the waveJobs bindings of ns are not all
// scheduled into member with their dispatching suspended and a suspended
// Work each in member's execution namespace.
func dispatchStaged(ctx context.Context, f *Federation, ns, member string) error {
	l, err := f.Karmada.Dynamic.Resource(ResourceBindingResource).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	staged := 0
	for _, b := range l.Items {
		if disp, _, _ := unstructured.NestedBool(b.Object, hold.BindingDispatching...); disp && isScheduledTo(&b, member) == nil {
			staged++
		}
	}
	works, err := f.Karmada.Dynamic.Resource(WorkResource).Namespace("karmada-es-"+member).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	suspended := 0
	for _, w := range works.Items {
		ms, _, _ := unstructured.NestedSlice(w.Object, "spec", "workload", "manifests")
		susp, _, _ := unstructured.NestedBool(w.Object, "spec", "suspendDispatching")
		if len(ms) == 1 && susp {
			if m, ok := ms[0].(map[string]any); ok && (&unstructured.Unstructured{Object: m}).GetNamespace() == ns {
				suspended++
			}
		}
	}
	if staged < waveJobs || suspended < waveJobs {
		return fmt.Errorf("%d of %d bindings scheduled with their dispatching suspended, %d suspended Works", staged, waveJobs, suspended)
	}
	return nil
}

package admission

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/carbongate/carbongate/forecast"
)

// members are the member clusters of the federation tests: three with a
// grid zone (NL, DE, GB), one without (swiss), one of an unknown provider,
// one tainted and one with availability zones.
func members() []MemberCluster {
	return []MemberCluster{
		{Name: "m1", Provider: "azure", Region: "westeurope", Labels: map[string]string{"env": "prod"}},
		{Name: "m2", Provider: "Microsoft Azure", Region: "germanywc", Labels: map[string]string{"env": "prod"}, Zones: []string{"dwc-1"}},
		{Name: "m3", Provider: "aws", Region: "eu-west-2"},
		{Name: "m4", Provider: "azure", Region: "swiss"},
		{Name: "m5", Provider: "on-prem", Region: "westeurope"},
		{Name: "m6", Provider: "aws", Region: "eu-central-1", Taints: []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}},
	}
}

func placement(t *testing.T, js string) *bindingPlacement {
	t.Helper()
	if js == "" {
		return nil
	}
	var p bindingPlacement
	if err := json.Unmarshal([]byte(js), &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

func TestBindingCandidates(t *testing.T) {
	t.Parallel()
	w := newWebhook(t, &fakeScheduler{}, false, 0)
	for _, c := range []struct {
		name, placement string
		want            map[forecast.Zone]string // zone → its clusters, by name, comma-separated
		why             string                   // substring of why, when none
	}{
		{name: "no placement", want: map[forecast.Zone]string{"NL": "m1", "DE": "m2", "GB": "m3"}},
		{name: "names", placement: `{"clusterAffinity":{"clusterNames":["m1","m3","m6"]}}`, want: map[forecast.Zone]string{"NL": "m1", "GB": "m3"}},
		{name: "exclude", placement: `{"clusterAffinity":{"exclude":["m1"]}}`, want: map[forecast.Zone]string{"DE": "m2", "GB": "m3"}},
		{name: "labels", placement: `{"clusterAffinity":{"labelSelector":{"matchLabels":{"env":"prod"}}}}`, want: map[forecast.Zone]string{"NL": "m1", "DE": "m2"}},
		{name: "region field", placement: `{"clusterAffinity":{"fieldSelector":{"matchExpressions":[{"key":"region","operator":"In","values":["germanywc","eu-west-2"]}]}}}`,
			want: map[forecast.Zone]string{"DE": "m2", "GB": "m3"}},
		{name: "provider field", placement: `{"clusterAffinity":{"fieldSelector":{"matchExpressions":[{"key":"provider","operator":"NotIn","values":["aws"]}]}}}`,
			want: map[forecast.Zone]string{"NL": "m1", "DE": "m2"}},
		{name: "zone field", placement: `{"clusterAffinity":{"fieldSelector":{"matchExpressions":[{"key":"zone","operator":"Exists"}]}}}`,
			want: map[forecast.Zone]string{"DE": "m2"}},
		{name: "selectors and names are ANDed", placement: `{"clusterAffinity":{"clusterNames":["m1","m3"],"labelSelector":{"matchLabels":{"env":"prod"}}}}`,
			want: map[forecast.Zone]string{"NL": "m1"}},
		{name: "tolerated taint", placement: `{"clusterTolerations":[{"key":"dedicated","operator":"Exists","effect":"NoSchedule"}]}`,
			want: map[forecast.Zone]string{"NL": "m1", "DE": "m2,m6", "GB": "m3"}}, // m6 is DE's too
		{name: "tolerated taint only", placement: `{"clusterAffinity":{"clusterNames":["m6"]},"clusterTolerations":[{"key":"dedicated","operator":"Equal","value":"gpu"}]}`,
			want: map[forecast.Zone]string{"DE": "m6"}},
		{name: "untolerated taint", placement: `{"clusterAffinity":{"clusterNames":["m6"]}}`, why: "admit no member cluster"},
		{name: "no grid zone", placement: `{"clusterAffinity":{"clusterNames":["m4","m5"]}}`,
			why: `cluster m4 is not a candidate: region "swiss" of azure has no grid zone; cluster m5 is not a candidate: spec.provider "on-prem" is not a known cloud provider`},
		{name: "invalid selector", placement: `{"clusterAffinity":{"labelSelector":{"matchExpressions":[{"key":"env","operator":"Bad"}]}}}`, why: "admit no member cluster"},
		// clusterAffinities: the first group that admits a cluster.
		{name: "first group", placement: `{"clusterAffinities":[{"affinityName":"a","clusterNames":["m1","m3"]},{"affinityName":"b"}]}`,
			want: map[forecast.Zone]string{"NL": "m1", "GB": "m3"}},
		{name: "first group admits none: the second", placement: `{"clusterAffinities":[{"affinityName":"a","clusterNames":["m6"]},{"affinityName":"b","labelSelector":{"matchLabels":{"env":"prod"}}}]}`,
			want: map[forecast.Zone]string{"NL": "m1", "DE": "m2"}}, // m6's taint is not tolerated
		{name: "group tolerations", placement: `{"clusterAffinities":[{"affinityName":"a","clusterNames":["m6"]},{"affinityName":"b"}],"clusterTolerations":[{"key":"dedicated","operator":"Exists"}]}`,
			want: map[forecast.Zone]string{"DE": "m6"}},
		{name: "group selectors", placement: `{"clusterAffinities":[{"affinityName":"a","exclude":["m3"],"fieldSelector":{"matchExpressions":[{"key":"provider","operator":"In","values":["aws"]}]}},{"affinityName":"b"}],"clusterTolerations":[{"key":"dedicated","operator":"Exists"}]}`,
			want: map[forecast.Zone]string{"DE": "m6"}},
		{name: "first group without a grid zone is not passed over", placement: `{"clusterAffinities":[{"affinityName":"a","clusterNames":["m4"]},{"affinityName":"b"}]}`,
			why: `no candidate cluster in group "a", the first of clusterAffinities that admits a member cluster: cluster m4 is not a candidate: region "swiss"`},
		{name: "no group admits", placement: `{"clusterAffinities":[{"affinityName":"a","clusterNames":["m6"]},{"affinityName":"b","exclude":["m1","m2","m3","m4","m5","m6"]}]}`,
			why: `no group of clusterAffinities ("a", "b") admits a member cluster`},
		{name: "carbongate's group name", placement: `{"clusterAffinities":[{"affinityName":"a","clusterNames":["m1"]},{"affinityName":"carbongate"}]}`,
			why: "a group named carbongate"},
	} {
		got := w.bindingCandidates(placement(t, c.placement), members())
		if c.why != "" {
			if len(got.zones) > 0 || !strings.Contains(got.why, c.why) {
				t.Errorf("%s: zones %v, why %q; want none, why containing %q", c.name, got.zones, got.why, c.why)
			}
			continue
		}
		clusters := map[forecast.Zone]string{}
		for z, ms := range got.members {
			for _, m := range ms {
				clusters[z] = strings.TrimPrefix(clusters[z]+","+m.Name, ",")
			}
		}
		if !slices.IsSorted(got.zones) || len(got.zones) != len(c.want) || !maps.Equal(clusters, c.want) {
			t.Errorf("%s: zones %v clusters %v, want %v", c.name, got.zones, clusters, c.want)
		}
	}
}

// notReady is members() with m2 not Ready: tainted by Karmada
// cluster.karmada.io/not-ready:NoSchedule.
func notReady() []MemberCluster {
	ms := members()
	ms[1].Taints = []corev1.Taint{{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoSchedule}}
	return ms
}

// TestCandidatesNow: a decision that may wait looks past a cluster's
// condition taints (m2 not Ready stays a candidate: it may be back by
// then); one that runs at once does not, unless the binding tolerates
// them or no cluster is without them.
func TestCandidatesNow(t *testing.T) {
	t.Parallel()
	w := newWebhook(t, &fakeScheduler{}, false, 0)
	if got := w.bindingCandidates(nil, notReady()); len(got.members["DE"]) != 1 || got.members["DE"][0].Name != "m2" {
		t.Errorf("candidates %v, want m2 for DE though not Ready", got.members)
	}
	names := func(ms []MemberCluster) []string {
		var n []string
		for _, m := range ms {
			n = append(n, m.Name)
		}
		return n
	}
	if got := names(takingNow(notReady(), nil)); slices.Contains(got, "m2") || len(got) != 5 {
		t.Errorf("taking now %v, want all but m2", got)
	}
	if got := names(takingNow(notReady(), placement(t, `{"clusterTolerations":[{"key":"cluster.karmada.io/not-ready","operator":"Exists"}]}`))); len(got) != 6 {
		t.Errorf("taking now, tolerated %v, want all six", got)
	}
	all := notReady()[1:2]
	if got := names(takingNow(all, nil)); !slices.Equal(got, []string{"m2"}) {
		t.Errorf("taking now of m2 alone %v, want m2 (it waits for it)", got)
	}
}

// TestBindingCandidatesSaySkipped: a cluster the placement allows whose
// region has no grid zone is named among the skipped, beside candidates.
func TestBindingCandidatesSaySkipped(t *testing.T) {
	t.Parallel()
	w := newWebhook(t, &fakeScheduler{}, false, 0)
	got := w.bindingCandidates(nil, append(members(), MemberCluster{Name: "m7", Provider: "gcp"}))
	want := []string{
		`cluster m4 is not a candidate: region "swiss" of azure has no grid zone`,
		`cluster m5 is not a candidate: spec.provider "on-prem" is not a known cloud provider (aws, gcp, azure, oracle)`,
		`cluster m7 is not a candidate: no spec.region`,
	}
	if !slices.Equal(got.skipped, want) {
		t.Fatalf("skipped %q, want %q", got.skipped, want)
	}
}

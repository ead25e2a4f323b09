package hold

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"
	"time"
)

func signedDecision(t *testing.T, g *Signer, s Subject) map[string]string {
	t.Helper()
	d := Decision{Region: "swedencentral", Zone: "SE", Start: time.Date(2021, 6, 1, 21, 0, 0, 0, time.UTC), ReleaseBy: time.Date(2021, 6, 2, 0, 0, 0, 0, time.UTC)}
	a := d.Annotations()
	a[AnnotationAvoidedGrams] = "120.5"
	a[AnnotationSignature] = g.Sign(s, a)
	return a
}

func TestSignVerify(t *testing.T) {
	t.Parallel()
	g, err := NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewSigner([]byte("fedcba9876543210fedcba9876543210"))
	job := Subject{Kind: "Job", Namespace: "batch", Name: "train"}
	a := signedDecision(t, g, job)
	if err := g.Verify(job, a); err != nil {
		t.Fatalf("own signature: %v", err)
	}
	if err := g.Verify(Subject{Kind: "job", Namespace: "batch", Name: "train"}, a); err != nil {
		t.Fatalf("kind in lower case: %v", err)
	}
	for _, tc := range []struct {
		name string
		s    Subject
		edit func(map[string]string)
		g    *Signer
	}{
		{"credit raised", job, func(a map[string]string) { a[AnnotationAvoidedGrams] = "+Inf" }, g},
		{"start moved", job, func(a map[string]string) { a[AnnotationStart] = "2021-06-01T01:00:00Z" }, g},
		{"region changed", job, func(a map[string]string) { a[AnnotationRegion] = "eastus" }, g},
		{"a signed field added", job, func(a map[string]string) { a[AnnotationSavingsPct] = "99" }, g},
		{"a signed field removed", job, func(a map[string]string) { delete(a, AnnotationAvoidedGrams) }, g},
		{"no signature", job, func(a map[string]string) { delete(a, AnnotationSignature) }, g},
		{"garbage signature", job, func(a map[string]string) { a[AnnotationSignature] = "not base64!" }, g},
		{"copied to another name", Subject{Kind: "Job", Namespace: "batch", Name: "other"}, func(map[string]string) {}, g},
		{"copied to another namespace", Subject{Kind: "Job", Namespace: "web", Name: "train"}, func(map[string]string) {}, g},
		{"copied to a Pod", Subject{Kind: "Pod", Namespace: "batch", Name: "train"}, func(map[string]string) {}, g},
		{"another key", job, func(map[string]string) {}, other},
	} {
		b := signedDecision(t, g, job)
		tc.edit(b)
		if err := tc.g.Verify(tc.s, b); !errors.Is(err, ErrUnsigned) {
			t.Errorf("%s: Verify = %v, want ErrUnsigned", tc.name, err)
		}
	}
	// generateName: signed for the prefix, verified for the given name.
	gen := signedDecision(t, g, Subject{Kind: "Pod", Namespace: "batch", GenerateName: "render-"})
	if err := g.Verify(Subject{Kind: "Pod", Namespace: "batch", Name: "render-x7k2p", GenerateName: "render-"}, gen); err != nil {
		t.Errorf("generated name: %v", err)
	}
	if err := g.Verify(Subject{Kind: "Pod", Namespace: "batch", Name: "other-x7k2p", GenerateName: "other-"}, gen); err == nil {
		t.Error("another prefix verified")
	}
	if _, err := NewSigner([]byte("short")); err == nil {
		t.Error("a 5-byte key accepted")
	}
}

func TestAvoidedGrams(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]bool{
		"120.5": true, "1e8": true, "0": false, "-5": false, "+Inf": false, "Inf": false, "NaN": false,
		"1e308": false, "1.0000001e8": false, "": false, "many": false, strconv.FormatFloat(math.MaxFloat64, 'g', -1, 64): false,
	} {
		if _, ok := AvoidedGrams(map[string]string{AnnotationAvoidedGrams: v}); ok != want {
			t.Errorf("AvoidedGrams(%q) ok=%v, want %v", v, ok, want)
		}
	}
	if _, ok := AvoidedGrams(nil); ok {
		t.Error("absent: ok")
	}
}

// TestSignCandidates: a decision with candidates is signed with them and
// the binding's member cluster, so that neither can be edited, and
// removing them (or adding them to a decision signed without) leaves a
// decision that does not verify.
func TestSignCandidates(t *testing.T) {
	t.Parallel()
	g, err := NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	job := Subject{Kind: "Job", Namespace: "batch", Name: "train"}
	cands := FormatCandidates([]Candidate{{Zone: "SE", Region: "swedencentral"}, {Zone: "PL", Region: "polandcentral"}})
	withCandidates := func() map[string]string {
		a := signedDecision(t, g, job)
		a[AnnotationCandidates] = cands
		a[AnnotationCluster] = "m1"
		a[AnnotationSignature] = g.Sign(job, a)
		return a
	}
	if err := g.Verify(job, withCandidates()); err != nil {
		t.Fatalf("own signature with candidates: %v", err)
	}
	if got := SignedKeys(withCandidates()); !slices.Contains(got, AnnotationCandidates) || !slices.Contains(got, AnnotationCluster) || !slices.Contains(got, AnnotationSignature) {
		t.Errorf("SignedKeys with candidates = %v, want the candidates, the cluster and the signature", got)
	}
	if got := SignedKeys(signedDecision(t, g, job)); slices.Contains(got, AnnotationCandidates) || slices.Contains(got, AnnotationCluster) {
		t.Errorf("SignedKeys without candidates = %v, want neither candidates nor cluster", got)
	}
	for _, tc := range []struct {
		name string
		edit func(map[string]string)
	}{
		{"a candidate added", func(a map[string]string) {
			a[AnnotationCandidates] = FormatCandidates([]Candidate{{Zone: "SE", Region: "swedencentral"}, {Zone: "PL", Region: "polandcentral"}, {Zone: "FR", Region: "francecentral"}})
		}},
		{"a candidate's region changed", func(a map[string]string) {
			a[AnnotationCandidates] = FormatCandidates([]Candidate{{Zone: "SE", Region: "swedencentral"}, {Zone: "PL", Region: "eastus"}})
		}},
		{"the candidates removed", func(a map[string]string) { delete(a, AnnotationCandidates) }},
		{"the cluster changed", func(a map[string]string) { a[AnnotationCluster] = "m2" }},
		{"the cluster removed", func(a map[string]string) { delete(a, AnnotationCluster) }},
	} {
		a := withCandidates()
		tc.edit(a)
		if err := g.Verify(job, a); !errors.Is(err, ErrUnsigned) {
			t.Errorf("%s: Verify = %v, want ErrUnsigned", tc.name, err)
		}
	}
	a := signedDecision(t, g, job)
	a[AnnotationCandidates] = cands
	if err := g.Verify(job, a); !errors.Is(err, ErrUnsigned) {
		t.Errorf("candidates added to a decision signed without: Verify = %v, want ErrUnsigned", err)
	}
}

func TestCandidates(t *testing.T) {
	t.Parallel()
	cs := []Candidate{{Zone: "SE", Region: "swedencentral"}, {Zone: "PL", Cluster: "m3"}}
	v := FormatCandidates(cs)
	got, ok, err := ParseCandidates(map[string]string{AnnotationCandidates: v})
	if err != nil || !ok || len(got) != 2 || got[0].Zone != "PL" || got[1].Region != "swedencentral" {
		t.Fatalf("ParseCandidates(%s) = %v %v %v, want PL then SE", v, got, ok, err)
	}
	if c, ok := Find(got, "SE", "ns/a", Candidate{}); !ok || c.Region != "swedencentral" {
		t.Errorf("Find SE = %v %v", c, ok)
	}
	if _, ok := Find(got, "DE", "ns/a", Candidate{}); ok {
		t.Error("Find DE found one")
	}
	if FormatCandidates(cs[:1]) != "" {
		t.Error("one candidate formatted: nothing to move between")
	}
	if _, ok, err := ParseCandidates(map[string]string{}); ok || err != nil {
		t.Errorf("absent: ok %v err %v", ok, err)
	}
	for _, bad := range []string{"not json", `[{"zone":""}]`, `[{"zone":"SE"},{"zone":"SE"}]`, `{}`,
		`[{"zone":"SE","region":"a"},{"zone":"SE","region":"b"}]`, `[{"zone":"SE","cluster":"m1"},{"zone":"PL","cluster":"m1"}]`} {
		if _, _, err := ParseCandidates(map[string]string{AnnotationCandidates: bad}); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestCandidatesOfOneZone: a zone may have several member clusters; Find
// keeps a workload where it is pinned when that is of the zone, and
// otherwise spreads workloads over the zone's clusters, each always to the
// same one, and removing a cluster moves only the workloads it had.
func TestCandidatesOfOneZone(t *testing.T) {
	t.Parallel()
	cs := []Candidate{{Zone: "SE", Cluster: "se-b"}, {Zone: "PL", Cluster: "pl"}, {Zone: "SE", Cluster: "se-a"}, {Zone: "SE", Cluster: "se-c"}}
	v := FormatCandidates(cs)
	got, ok, err := ParseCandidates(map[string]string{AnnotationCandidates: v})
	if err != nil || !ok || len(got) != 4 {
		t.Fatalf("ParseCandidates(%s) = %v %v %v", v, got, ok, err)
	}
	if want := []string{"pl", "se-a", "se-b", "se-c"}; !slices.Equal([]string{got[0].Cluster, got[1].Cluster, got[2].Cluster, got[3].Cluster}, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	if z := Zones(got); !slices.Equal(z, []string{"PL", "SE"}) {
		t.Errorf("Zones = %v, want PL SE once each", z)
	}
	if c, _ := Find(got, "SE", "ns/x", Candidate{Zone: "SE", Cluster: "se-c"}); c.Cluster != "se-c" {
		t.Errorf("Find from se-c = %v, want it kept", c)
	}
	count := map[string]int{}
	without := slices.DeleteFunc(slices.Clone(got), func(c Candidate) bool { return c.Cluster == "se-b" })
	for i := range 3000 {
		key := WorkloadKey("ns", fmt.Sprintf("job-%d", i))
		c, ok := Find(got, "SE", key, Candidate{Zone: "PL", Cluster: "pl"})
		if again, _ := Find(got, "SE", key, Candidate{}); !ok || c.Zone != "SE" || again != c {
			t.Fatalf("Find(%s) = %v %v, then %v", key, c, ok, again)
		}
		count[c.Cluster]++
		if d, _ := Find(without, "SE", key, Candidate{}); c.Cluster != "se-b" && d != c {
			t.Fatalf("%s moved from %s to %s when se-b went", key, c.Cluster, d.Cluster)
		}
	}
	for _, n := range []string{"se-a", "se-b", "se-c"} {
		if count[n] < 900 || count[n] > 1100 {
			t.Errorf("%s got %d of 3000 workloads, want about 1000 (%v)", n, count[n], count)
		}
	}
}

// TestSignV3: the promise's baseline zone and an estimated power are
// signed with the decision, with or without candidates: editing, removing
// or adding either, or the candidates beside them, leaves a decision that
// does not verify.
func TestSignV3(t *testing.T) {
	t.Parallel()
	g, err := NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	job := Subject{Kind: "Job", Namespace: "batch", Name: "train"}
	cands := FormatCandidates([]Candidate{{Zone: "SE", Region: "swedencentral"}, {Zone: "PL", Region: "polandcentral"}})
	for _, key := range []string{AnnotationBaselineZone, AnnotationEstimatedPower} {
		other := map[string]string{AnnotationBaselineZone: AnnotationEstimatedPower, AnnotationEstimatedPower: AnnotationBaselineZone}[key]
		for _, withCands := range []bool{false, true} {
			signedWith := func(v3 bool) map[string]string {
				a := signedDecision(t, g, job)
				if withCands {
					a[AnnotationCandidates] = cands
				}
				if v3 {
					a[key] = "PL"
				}
				a[AnnotationSignature] = g.Sign(job, a)
				return a
			}
			if err := g.Verify(job, signedWith(true)); err != nil {
				t.Fatalf("%s, candidates %v: own signature: %v", key, withCands, err)
			}
			if !slices.Contains(SignedKeys(signedWith(true)), key) || slices.Contains(SignedKeys(signedWith(false)), key) {
				t.Errorf("%s, candidates %v: SignedKeys lists it only when present: %v, %v", key, withCands, SignedKeys(signedWith(true)), SignedKeys(signedWith(false)))
			}
			for _, tc := range []struct {
				name string
				v3   bool
				edit func(map[string]string)
			}{
				{"changed", true, func(a map[string]string) { a[key] = "DE" }},
				{"removed", true, func(a map[string]string) { delete(a, key) }},
				{"added", false, func(a map[string]string) { a[key] = "PL" }},
				{"the other added", true, func(a map[string]string) { a[other] = "1" }},
				{"the candidates flipped", true, func(a map[string]string) {
					if _, ok := a[AnnotationCandidates]; ok {
						delete(a, AnnotationCandidates)
					} else {
						a[AnnotationCandidates] = cands
					}
				}},
			} {
				a := signedWith(tc.v3)
				tc.edit(a)
				if err := g.Verify(job, a); !errors.Is(err, ErrUnsigned) {
					t.Errorf("%s %s, candidates %v: Verify = %v, want ErrUnsigned", key, tc.name, withCands, err)
				}
			}
		}
	}
}

//go:build interop

package cluster

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carbongate/carbongate/test/services"
)

// The backfill's release and what it backfills: two zones, three daily
// issue times (from and to inclusive), a day ahead each.
const (
	backfillNS      = "carbongate-backfill"
	backfillCronJob = "carbongate-backfill" // the chart's name for it in release carbongate
	backfillFrom    = "2021-03-01"
	backfillTo      = "2021-03-03"
	backfillIssues  = 3
	backfillHorizon = 24 // hours
)

var backfillZones = []string{"DE", "SE"}

// testBackfill runs the chart's backfill CronJob as a user would: a real
// PostgreSQL on the host holds the forecast store (its tables created and
// the observed history loaded by carbonctl ingest --migrate) and the model
// registry (carbonctl registry migrate, then each zone's model trained on
// 2020 and registered as champion with its files in S3, a SeaweedFS on the
// host); the pods reach both through Services without selectors. The
// chart, a release of its own in backfillNS (no gateway replica: the test
// is the CronJob's), takes the store's and the registry's URLs and the S3
// keys from Secrets; the CronJob is triggered at once (kubectl create job
// --from). Its one pod must run on a real node with the chart's security
// context and succeed the first time, and the store then hold exactly the
// planned forecasts: zones × issue times units, each with one row per hour
// of the horizon, from the zone's champion. Triggered again, a new pod
// finds every unit done and writes nothing.
func testBackfill(t *testing.T, c *Cluster, bin string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	pg := services.StartPostgres(t)
	db := pg.Database(t)
	w := services.StartWeed(t)
	bucket := w.Bucket(t)
	seedBackfill(t, filepath.Join(bin, "carbonctl"), db, w, bucket)

	if out, err := c.Kubectl(ctx, "create", "namespace", backfillNS); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	pgAddr := hostService(t, c, backfillNS, "postgres", 5432, net.JoinHostPort(pg.Host, strconv.Itoa(pg.Port)))
	s3Addr := hostService(t, c, backfillNS, "s3", 8333, w.Host)
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = pgAddr
	for _, args := range [][]string{
		{"create", "secret", "generic", "carbongate-store", "--from-literal=uri=" + u.String()},
		{"create", "secret", "generic", "carbongate-registry", "--from-literal=uri=" + u.String()},
		{"create", "secret", "generic", "carbongate-s3", "--from-literal=AWS_ACCESS_KEY_ID=" + w.AccessKey,
			"--from-literal=AWS_SECRET_ACCESS_KEY=" + w.SecretKey},
	} {
		if out, err := c.Kubectl(ctx, append(args, "-n", backfillNS)...); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	installBackfill(t, ctx, c, "http://"+s3Addr, w.Region, bucket)

	units := len(backfillZones) * backfillIssues
	pod, log, took := runBackfillJob(t, ctx, c, "backfill-now")
	if want := fmt.Sprintf("backfill: %d units written, 0 skipped, 0 failed, 0 already done;", units); !strings.Contains(log, want) {
		t.Errorf("backfill's log has no %q:\n%s", want, log)
	}
	rows := checkBackfilled(t, ctx, db)
	t.Logf("figures: backfill Job created -> Complete %v (pod on %s); %d units, %d rows in the store; %s",
		took.Round(100*time.Millisecond), pod.Spec.NodeName, units, rows, summaryLine(log))

	// The same plan again, in a new pod: every unit is recorded as done
	// (the job key does not depend on the pod), nothing is written twice.
	pod, log, took = runBackfillJob(t, ctx, c, "backfill-again")
	if want := fmt.Sprintf("backfill: 0 units written, 0 skipped, 0 failed, %d already done;", units); !strings.Contains(log, want) {
		t.Errorf("rerun's log has no %q:\n%s", want, log)
	}
	if again := checkBackfilled(t, ctx, db); again != rows {
		t.Errorf("after the rerun %d rows, want the %d of the first run", again, rows)
	}
	t.Logf("figures: rerun Job created -> Complete %v (pod on %s); %s",
		took.Round(100*time.Millisecond), pod.Spec.NodeName, summaryLine(log))
}

// runBackfillJob triggers the CronJob at once as a user does (kubectl
// create job --from), waits until Job name is Complete, checks its pod
// (backfillPod) and returns it, its log and the time from the Job's
// creation to Complete. At a failure the cleanup shows the Job's log and
// the namespace's pods and events.
func runBackfillJob(t *testing.T, ctx context.Context, c *Cluster, name string) (*corev1.Pod, string, time.Duration) {
	t.Helper()
	created := time.Now()
	if out, err := c.Kubectl(ctx, "create", "job", name, "--from=cronjob/"+backfillCronJob, "-n", backfillNS); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := c.Kubectl(context.Background(), "logs", "-n", backfillNS, "job/"+name, "--tail=40")
			pods, _ := c.Kubectl(context.Background(), "get", "pods,events", "-n", backfillNS, "-o", "wide")
			t.Logf("Job %s's log:\n%s\n%s", name, out, pods)
		}
	})
	job := waitJobComplete(t, c, backfillNS, name)
	took := time.Since(created)
	pod := backfillPod(t, c, job)
	log, err := c.Kubectl(ctx, "logs", "-n", backfillNS, "pod/"+pod.Name)
	if err != nil {
		t.Fatal(err)
	}
	return pod, log, took
}

// seedBackfill prepares db as an operator would before the first
// backfill (docs/production.md): the store's tables and the zones'
// observed history (carbonctl ingest --migrate, the bundled files), the
// registry's tables, and each zone's model trained on data before 2021
// and registered as champion with its files in bucket of w.
func seedBackfill(t *testing.T, ctl, db string, w *services.S3, bucket string) {
	t.Helper()
	env := []string{"AWS_ENDPOINT_URL=" + w.Endpoint, "AWS_ACCESS_KEY_ID=" + w.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + w.SecretKey, "AWS_REGION=" + w.Region}
	data := filepath.Join(services.RepoRoot(t), "forecast", "dataset", "bundled", "data")
	ingest := []string{"ingest", "--store", db, "--migrate"}
	for _, z := range backfillZones {
		ingest = append(ingest, filepath.Join(data, z+".csv.gz"))
	}
	models := t.TempDir()
	runCtl(t, ctl, env, ingest...)
	runCtl(t, ctl, env, "registry", "migrate", "--registry", db)
	runCtl(t, ctl, env, "train", "--data", "bundled", "--until", "2021-01-01", "--signal", "lifecycle",
		"--zones", strings.Join(backfillZones, ","), "--out", models)
	for _, z := range backfillZones {
		runCtl(t, ctl, env, "register", "--registry", db, "--zone", z, "--model-dir", filepath.Join(models, "lifecycle", z),
			"--artifacts", "s3://"+bucket+"/registry", "--alias", "champion")
	}
}

// runCtl runs carbonctl with args and env added and fails t when it fails.
func runCtl(t *testing.T, ctl string, env []string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ctl, args...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("carbonctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// installBackfill installs the chart as release carbongate in backfillNS
// with the backfill on, configured as docs/production.md and the values'
// comments say: the store's and the registry's URLs from their Secrets,
// the artifacts from S3 (endpoint s3URL, keys from a Secret) under the
// bucket's registry/ prefix, the default model URI and signal, the
// default security context; the store's tables are not migrated by the
// backfill (store.migrate false: they exist). It uninstalls the release
// and deletes the namespace at cleanup.
func installBackfill(t *testing.T, ctx context.Context, c *Cluster, s3URL, region, bucket string) {
	t.Helper()
	r := newChartRelease(t, c, backfillNS, fmt.Sprintf(`image: {pullPolicy: Never}
gateway: {replicas: 0} # the test is the CronJob's
store: {enabled: true, uriSecret: {name: carbongate-store}}
registry:
  enabled: true
  uriSecret: {name: carbongate-registry}
  artifactSources: ["s3://%s/registry"]
s3:
  enabled: true
  endpoint: %q
  region: %q
  credentialsSecret: {name: carbongate-s3}
backfill:
  enabled: true
  image: {pullPolicy: Never}
  zones: [%s]
  from: %q
  to: %q
  horizon: %dh
`, bucket, s3URL, region, strings.Join(backfillZones, ", "), backfillFrom, backfillTo, backfillHorizon))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		r.run(t, ctx, "uninstall", "carbongate", "--ignore-not-found", "--wait", "--timeout", "90s")
		if out, err := c.Kubectl(ctx, "delete", "namespace", backfillNS, "--timeout=90s"); err != nil {
			t.Errorf("%v\n%s", err, out)
		}
	})
	start := time.Now()
	// --skip-crds: the chart's release in chartNS installed them.
	r.run(t, ctx, "install", "carbongate", r.chart, "-f", r.values, "--skip-crds", "--wait", "--timeout", "2m")
	t.Logf("figures: helm install (backfill CronJob, no gateway replica) %v", time.Since(start).Round(100*time.Millisecond))
}

// waitJobComplete waits for Job name in ns to be Complete and returns it;
// a Failed Job fails t at once.
func waitJobComplete(t *testing.T, c *Cluster, ns, name string) *batchv1.Job {
	t.Helper()
	var job *batchv1.Job
	Eventually(t, 5*time.Minute, "Job "+name+" Complete", func(ctx context.Context) error {
		j, err := c.Kube.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cond := range j.Status.Conditions {
			if cond.Status != corev1.ConditionTrue {
				continue
			}
			switch cond.Type {
			case batchv1.JobComplete:
				job = j
				return nil
			case batchv1.JobFailed:
				t.Fatalf("Job %s failed: %s %s", name, cond.Reason, cond.Message)
			}
		}
		return fmt.Errorf("active %d, failed %d, conditions %v", j.Status.Active, j.Status.Failed, j.Status.Conditions)
	})
	return job
}

// backfillPod checks that job succeeded with its first and only pod, which
// ran on a real node with the chart's security context (pod and
// container) and every credential from a Secret, and returns the pod.
func backfillPod(t *testing.T, c *Cluster, job *batchv1.Job) *corev1.Pod {
	t.Helper()
	if job.Status.Succeeded != 1 || job.Status.Failed != 0 {
		t.Errorf("Job %s: %d succeeded, %d failed; want the first pod to succeed", job.Name, job.Status.Succeeded, job.Status.Failed)
	}
	pods, err := c.Kube.CoreV1().Pods(job.Namespace).List(context.Background(), metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + job.Name})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("Job %s has %d pods, want 1", job.Name, len(pods.Items))
	}
	p := &pods.Items[0]
	if p.Status.Phase != corev1.PodSucceeded || !slices.Contains(c.Nodes, p.Spec.NodeName) {
		t.Errorf("pod %s: phase %s on %q, want Succeeded on a real node %v", p.Name, p.Status.Phase, p.Spec.NodeName, c.Nodes)
	}
	checkShippedSecurity(t, p)
	if sc := p.Spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		t.Errorf("pod %s: pod security context %+v, want the chart's (non-root user)", p.Name, sc)
	}
	for _, e := range p.Spec.Containers[0].Env {
		switch e.Name {
		case "CARBONGATE_STORE", "CARBONGATE_REGISTRY", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY":
			if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				t.Errorf("pod %s: $%s is not from a Secret", p.Name, e.Name)
			}
		}
	}
	return p
}

// checkBackfilled checks the forecasts the backfill wrote into db: per
// zone, the zone's champion (version 1), backfillIssues issue times from
// backfillFrom, backfillHorizon rows each from the issue time on, positive
// values; one checkpoint per unit, all of one job. It returns the rows.
func checkBackfilled(t *testing.T, ctx context.Context, db string) int {
	t.Helper()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	q, err := conn.Query(ctx, `SELECT zone, signal, model_name, model_version, count(*), count(DISTINCT issued_at),
		min(issued_at), max(issued_at),
		count(*) FILTER (WHERE target_time < issued_at OR target_time >= issued_at + make_interval(hours => $1)),
		count(*) FILTER (WHERE NOT value > 0)
		FROM forecasts GROUP BY 1, 2, 3, 4 ORDER BY 1`, backfillHorizon)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := time.Parse(time.DateOnly, backfillFrom)
	last, _ := time.Parse(time.DateOnly, backfillTo)
	var zones []string
	total := 0
	for q.Next() {
		var zone, signal, model, version string
		var rows, issues, outside, bad int
		var lo, hi time.Time
		if err := q.Scan(&zone, &signal, &model, &version, &rows, &issues, &lo, &hi, &outside, &bad); err != nil {
			t.Fatal(err)
		}
		zones, total = append(zones, zone), total+rows
		if want := "carbon-forecaster-" + zone; signal != "lifecycle" || model != want || version != "1" {
			t.Errorf("zone %s: forecasts of %s %s@%s, want lifecycle %s@1 (the champion)", zone, signal, model, version, want)
		}
		if rows != backfillIssues*backfillHorizon || issues != backfillIssues || !lo.Equal(first) || !hi.Equal(last) || outside != 0 || bad != 0 {
			t.Errorf("zone %s: %d rows over %d issue times %s..%s (%d outside the horizon, %d not positive); want %d over %d, %s..%s",
				zone, rows, issues, lo.UTC().Format(time.RFC3339), hi.UTC().Format(time.RFC3339), outside, bad,
				backfillIssues*backfillHorizon, backfillIssues, backfillFrom, backfillTo)
		}
	}
	if err := q.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(zones, backfillZones) {
		t.Errorf("forecasts of zones %v, want %v", zones, backfillZones)
	}
	var units, jobs int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT job) FROM backfill_checkpoints`).Scan(&units, &jobs); err != nil {
		t.Fatal(err)
	}
	if want := len(backfillZones) * backfillIssues; units != want || jobs != 1 {
		t.Errorf("%d checkpoints of %d jobs, want %d units of one job", units, jobs, want)
	}
	return total
}

// summaryLine is the line of log that sums the run up ("backfill: N
// units written, …"); kubectl interleaves stdout and the progress lines on
// stderr in no fixed order.
func summaryLine(log string) string {
	for line := range strings.Lines(log) {
		if strings.Contains(line, " units written, ") {
			return strings.TrimSpace(line)
		}
	}
	return "(no summary line)"
}

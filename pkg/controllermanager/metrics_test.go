package controllermanager

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/workqueue"
)

// find returns the HELP text of family name and its series whose labels
// include want, or nil.
func find(t *testing.T, m *managerMetrics, name string, want map[string]string) (string, *dto.Metric) {
	t.Helper()
	families, err := m.registry.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			matched := 0
			for _, l := range s.GetLabel() {
				if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
					matched++
				}
			}
			if matched == len(want) {
				return f.GetHelp(), s
			}
		}
	}
	return "", nil
}

func TestMetricsFor_ClientGoAndTheCronJobControllerRecordIntoTheRegistry(t *testing.T) {
	m, err := metricsFor("")
	if err != nil {
		t.Fatal(err)
	}
	if again, err := metricsFor(""); err != nil || again != m {
		t.Fatalf("second call: %p, %v; want the process's %p", again, err, m)
	}

	// A retry an hour away: counted, never added.
	q := workqueue.NewNamedRateLimitingQueue(workqueue.NewItemExponentialFailureRateLimiter(time.Hour, time.Hour), "test_queue")
	q.Add("a")
	q.AddRateLimited("b")
	item, _ := q.Get()
	q.Done(item)
	q.ShutDown()

	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	defer api.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: api.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = client.CoreV1().Namespaces().Get(context.Background(), "x", metav1.GetOptions{})
	host := strings.TrimPrefix(api.URL, "http://")

	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, "kube-system", "test-lease", nil, fake.NewSimpleClientset().CoordinationV1(), resourcelock.ResourceLockConfig{Identity: "me"})
	if err != nil {
		t.Fatal(err)
	}
	// A new elector reports itself a standby.
	if _, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, Name: "test-lease", LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) {}, OnStoppedLeading: func() {}},
	}); err != nil {
		t.Fatal(err)
	}

	m.cronJobSkew.Observe(3)
	m.ttlDeletionDuration.Observe(0.5)

	counter := func(s *dto.Metric) float64 { return s.GetCounter().GetValue() }
	gauge := func(s *dto.Metric) float64 { return s.GetGauge().GetValue() }
	count := func(s *dto.Metric) float64 { return float64(s.GetHistogram().GetSampleCount()) }
	for _, tc := range []struct {
		name      string
		labels    map[string]string
		stability string
		value     func(*dto.Metric) float64
		want      float64
	}{
		{"workqueue_adds_total", map[string]string{"name": "test_queue"}, "ALPHA", counter, 1},
		{"workqueue_retries_total", map[string]string{"name": "test_queue"}, "ALPHA", counter, 1},
		{"workqueue_depth", map[string]string{"name": "test_queue"}, "ALPHA", gauge, 0},
		{"workqueue_queue_duration_seconds", map[string]string{"name": "test_queue"}, "ALPHA", count, 1},
		{"workqueue_work_duration_seconds", map[string]string{"name": "test_queue"}, "ALPHA", count, 1},
		{"workqueue_unfinished_work_seconds", map[string]string{"name": "test_queue"}, "ALPHA", gauge, 0},
		{"workqueue_longest_running_processor_seconds", map[string]string{"name": "test_queue"}, "ALPHA", gauge, 0},
		{"rest_client_requests_total", map[string]string{"code": "418", "method": "GET", "host": host}, "ALPHA", counter, 1},
		{"rest_client_request_duration_seconds", map[string]string{"verb": "GET", "host": host}, "ALPHA", count, 1},
		{"leader_election_master_status", map[string]string{"name": "test-lease"}, "ALPHA", gauge, 0},
		{"cronjob_controller_job_creation_skew_duration_seconds", nil, "STABLE", count, 1},
		{"ttl_after_finished_controller_job_deletion_duration_seconds", nil, "ALPHA", count, 1},
	} {
		help, s := find(t, m, tc.name, tc.labels)
		if s == nil {
			t.Errorf("%s%v: not served", tc.name, tc.labels)
			continue
		}
		if got := tc.value(s); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
		if !strings.HasPrefix(help, "["+tc.stability+"] ") {
			t.Errorf("%s: HELP %q, want stability %s", tc.name, help, tc.stability)
		}
	}
}

func TestMetricsFor_ShowHiddenMetricsForVersion(t *testing.T) {
	for _, tc := range []struct {
		version string
		ok      bool
	}{
		{"", true},
		{"1.28", true},
		{"1.27", false},
		{"1.29", false},
		{"two", false},
	} {
		if _, err := metricsFor(tc.version); (err == nil) != tc.ok {
			t.Errorf("--show-hidden-metrics-for-version=%q: error %v, want accepted=%v", tc.version, err, tc.ok)
		}
	}
}

package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/cronplane/cronplane/pkg/controllermanager"
)

// parseMetrics reads the controller-manager's /metrics, as the admin, in
// the Prometheus text format.
func parseMetrics(get func(path, token string) (int, string)) (map[string]*dto.MetricFamily, error) {
	code, body := get("/metrics", srv.AdminToken)
	if code != 200 {
		return nil, fmt.Errorf("/metrics: %d", code)
	}
	var p expfmt.TextParser
	return p.TextToMetricFamilies(strings.NewReader(body))
}

// value is the value of the series of family name whose labels include
// want: a counter's or gauge's value, a histogram's sample count; -1 when
// there is no such series.
func value(families map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	for _, s := range families[name].GetMetric() {
		matched := 0
		for _, l := range s.GetLabel() {
			if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
				matched++
			}
		}
		if matched != len(want) {
			continue
		}
		switch families[name].GetType() {
		case dto.MetricType_COUNTER:
			return s.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			return s.GetGauge().GetValue()
		case dto.MetricType_HISTOGRAM:
			return float64(s.GetHistogram().GetSampleCount())
		}
	}
	return -1
}

const skewMetric = "cronjob_controller_job_creation_skew_duration_seconds"

// metricsAfterACronJob runs a controller-manager with the cronjob
// controller and leader election (named id in the Lease), creates a
// CronJob that is due at once, and returns the metrics once its Job is
// created. The metrics are the test process's, shared with the other
// tests' managers, so it waits for the counts to grow.
func metricsAfterACronJob(t *testing.T, id string) map[string]*dto.MetricFamily {
	t.Helper()
	get, _ := runServingWith(t, srv.ControllerManagerKubeconfigPath, func(opts *controllermanager.Options) {
		opts.Controllers = []string{"cronjob"}
		opts.LeaderElect = true
		opts.Identity = id
		opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = 3*time.Second, 2*time.Second, 500*time.Millisecond
	})
	var before map[string]*dto.MetricFamily
	waitFor(t, "/metrics", func() (bool, error) {
		var err error
		before, err = parseMetrics(get)
		return err == nil, nil
	})
	cronjobQueue := map[string]string{"name": "cronjob"}
	skewBefore, addsBefore := value(before, skewMetric, nil), value(before, "workqueue_adds_total", cronjobQueue)

	ns := newNamespace(t, "metrics")
	createCronJob(t, ns, "every-minute")
	waitFor(t, "the CronJob's Job", func() (bool, error) { return len(jobsOf(t, ns)) > 0, nil })
	var after map[string]*dto.MetricFamily
	waitFor(t, "the Job's skew and the queue's adds recorded, and the lease held", func() (bool, error) {
		var err error
		if after, err = parseMetrics(get); err != nil {
			return false, nil
		}
		return value(after, skewMetric, nil) > skewBefore &&
			value(after, "workqueue_adds_total", cronjobQueue) > addsBefore &&
			value(after, "leader_election_master_status", map[string]string{"name": "kube-controller-manager"}) == 1, nil
	})
	return after
}

func TestControllerManagerMetrics_AfterACronJobProducedAJob(t *testing.T) {
	families := metricsAfterACronJob(t, "metrics")
	for _, tc := range []struct {
		name      string
		labels    map[string]string
		stability string
	}{
		{"workqueue_depth", map[string]string{"name": "cronjob"}, "ALPHA"},
		{"workqueue_adds_total", map[string]string{"name": "cronjob"}, "ALPHA"},
		{"workqueue_queue_duration_seconds", map[string]string{"name": "cronjob"}, "ALPHA"},
		{"workqueue_work_duration_seconds", map[string]string{"name": "cronjob"}, "ALPHA"},
		{"workqueue_retries_total", map[string]string{"name": "cronjob"}, "ALPHA"},
		{"workqueue_unfinished_work_seconds", map[string]string{"name": "cronjob"}, "ALPHA"},
		{"workqueue_longest_running_processor_seconds", map[string]string{"name": "cronjob"}, "ALPHA"},
		// The Job's creation.
		{"rest_client_requests_total", map[string]string{"code": "201", "method": "POST"}, "ALPHA"},
		{"rest_client_request_duration_seconds", map[string]string{"verb": "POST"}, "ALPHA"},
		{"leader_election_master_status", nil, "ALPHA"},
		{skewMetric, nil, "STABLE"},
		{"go_goroutines", nil, ""},
		{"process_resident_memory_bytes", nil, ""},
	} {
		if value(families, tc.name, tc.labels) < 0 {
			t.Errorf("%s%v: not served", tc.name, tc.labels)
			continue
		}
		if help := families[tc.name].GetHelp(); tc.stability != "" && !strings.HasPrefix(help, "["+tc.stability+"] ") {
			t.Errorf("%s: HELP %q, want stability %s", tc.name, help, tc.stability)
		}
	}
	var bounds []float64
	for _, b := range families[skewMetric].GetMetric()[0].GetHistogram().GetBucket() {
		bounds = append(bounds, b.GetUpperBound())
	}
	if got := fmt.Sprint(bounds); got != "[1 2 4 8 16 32 64 128 256 512 +Inf]" {
		t.Errorf("%s buckets %s, want kube's 1, 2, 4 … 512", skewMetric, got)
	}
}

var (
	stringLiteral = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	labelMatchers = regexp.MustCompile(`\{[^}]*\}`)
	rangeSelector = regexp.MustCompile(`\[[^\]]*\]`)
	grouping      = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	identifier    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promKeywords  = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "group_left": true, "group_right": true}
)

// metricNames returns the metric names a PromQL expression selects: its
// identifiers once strings, label matchers, ranges and groupings are
// removed, less function calls, keywords and number exponents.
func metricNames(expr string) []string {
	for _, re := range []*regexp.Regexp{stringLiteral, labelMatchers, rangeSelector, grouping} {
		expr = re.ReplaceAllString(expr, " ")
	}
	var out []string
	for _, loc := range identifier.FindAllStringIndex(expr, -1) {
		name := expr[loc[0]:loc[1]]
		if loc[0] > 0 && strings.ContainsAny(expr[loc[0]-1:loc[0]], "0123456789.") {
			continue
		}
		if strings.HasPrefix(strings.TrimLeft(expr[loc[1]:], " \t\n"), "(") || promKeywords[name] {
			continue
		}
		out = append(out, name)
	}
	return out
}

func TestMetricNames_OfPromQLExpressions(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		{`sum by (verb, resource) (rate(apiserver_request_total{code="429", verb=~"GET|LIST"}[$__rate_interval]))`, "[apiserver_request_total]"},
		{`histogram_quantile(0.99, sum by (le, name) (rate(workqueue_queue_duration_seconds_bucket[5m])))`, "[workqueue_queue_duration_seconds_bucket]"},
		{`max by (instance, name) (leader_election_master_status) or on (name) up * 1e3`, "[leader_election_master_status up]"},
		{`rate(a_total[1m]) / ignoring (code) group_left rate(b_total{x="sum(c)"}[1m]) offset 5m`, "[a_total b_total]"},
	} {
		if got := fmt.Sprint(metricNames(tc.expr)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.expr, got, tc.want)
		}
	}
}

type grafanaDatasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type grafanaPanel struct {
	ID         int                `json:"id"`
	Type       string             `json:"type"`
	Title      string             `json:"title"`
	Datasource *grafanaDatasource `json:"datasource"`
	GridPos    struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		RefID      string             `json:"refId"`
		Expr       string             `json:"expr"`
		Datasource *grafanaDatasource `json:"datasource"`
	} `json:"targets"`
	// Panels are those of a collapsed row.
	Panels []grafanaPanel `json:"panels"`
}

type grafanaDashboard struct {
	UID           string `json:"uid"`
	Title         string `json:"title"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query string `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []grafanaPanel `json:"panels"`
}

// dashboardExprs checks the dashboard's form (what Grafana needs to import
// it, every query on the datasource variable) and returns each panel's
// expressions by panel title.
func dashboardExprs(t *testing.T, path string) map[string][]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 36 {
		t.Fatalf("uid %q, title %q, schemaVersion %d: want both set and a schema of Grafana 9 or later (36)", d.UID, d.Title, d.SchemaVersion)
	}
	variable := ""
	for _, v := range d.Templating.List {
		if v.Type == "datasource" && v.Query == "prometheus" {
			variable = "${" + v.Name + "}"
		}
	}
	if variable == "" {
		t.Fatal("no Prometheus datasource variable")
	}
	ids := map[int]bool{}
	exprs := map[string][]string{}
	var walk func([]grafanaPanel)
	walk = func(panels []grafanaPanel) {
		for _, p := range panels {
			if ids[p.ID] {
				t.Errorf("panel %q: id %d used twice", p.Title, p.ID)
			}
			ids[p.ID] = true
			if g := p.GridPos; g.W < 1 || g.H < 1 || g.X < 0 || g.X+g.W > 24 {
				t.Errorf("panel %q: gridPos %+v outside the 24 columns", p.Title, g)
			}
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			if p.Datasource == nil || p.Datasource.UID != variable || len(p.Targets) == 0 {
				t.Errorf("panel %q: datasource %+v, %d queries; want queries on %s", p.Title, p.Datasource, len(p.Targets), variable)
			}
			refs := map[string]bool{}
			for _, q := range p.Targets {
				if q.Expr == "" || q.RefID == "" || refs[q.RefID] || q.Datasource == nil || q.Datasource.UID != variable {
					t.Errorf("panel %q: query %q (refId %q, datasource %+v): want an expression, a refId of its own, %s", p.Title, q.Expr, q.RefID, q.Datasource, variable)
				}
				refs[q.RefID] = true
				exprs[p.Title] = append(exprs[p.Title], q.Expr)
			}
		}
	}
	walk(d.Panels)
	return exprs
}

func TestGrafanaDashboard_QueriesOnlyMetricsTheBinariesExport(t *testing.T) {
	exprs := dashboardExprs(t, "../../deploy/grafana/cronplane-dashboard.json")
	exported := map[string]bool{}
	// Every metric the apiserver registers, with a value yet or not.
	for _, n := range srv.Metrics.Names() {
		exported[n] = true
	}
	for n := range metricsAfterACronJob(t, "dashboard") {
		exported[n] = true
	}
	used := map[string]bool{}
	for title, list := range exprs {
		for _, expr := range list {
			names := metricNames(expr)
			if len(names) == 0 {
				t.Errorf("panel %q: %q selects no metric", title, expr)
			}
			for _, n := range names {
				family := n
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if base, ok := strings.CutSuffix(n, suffix); ok && exported[base] {
						family = base
					}
				}
				if !exported[family] {
					t.Errorf("panel %q: %s is not exported by the apiserver or the controller-manager", title, n)
				}
				used[family] = true
			}
		}
	}
	// The panels issue 18 asks for.
	for _, n := range []string{
		"apiserver_request_total", "apiserver_request_duration_seconds", "apiserver_current_inflight_requests",
		"apiserver_registered_watchers", "etcd_request_duration_seconds", "apiserver_dropped_requests_total",
		"workqueue_depth", "workqueue_queue_duration_seconds", skewMetric, "leader_election_master_status", "rest_client_requests_total",
	} {
		if !used[n] {
			t.Errorf("no panel shows %s", n)
		}
	}
}

package apiserver_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/apiserver"
	"github.com/cronplane/cronplane/pkg/apiserver/apiservertest"
)

// available mixes maturities, which the built-in resources (all GA) do not.
var available = []schema.GroupVersionResource{
	{Version: "v1", Resource: "namespaces"},
	{Version: "v1", Resource: "events"},
	{Group: "batch", Version: "v1", Resource: "cronjobs"},
	{Group: "batch", Version: "v1", Resource: "jobs"},
	{Group: "batch", Version: "v1beta1", Resource: "cronjobs"},
	{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"},
	{Group: "example.io", Version: "v1alpha1", Resource: "widgets"},
}

func gvrKey(gvr schema.GroupVersionResource) string {
	return gvr.GroupVersion().String() + "/" + gvr.Resource
}

// servedKeys lists served resources as group/version/resource, sorted.
func servedKeys(served map[schema.GroupVersionResource]bool) string {
	var out []string
	for gvr, on := range served {
		if on {
			out = append(out, gvrKey(gvr))
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// allBut lists every available resource except those named.
func allBut(except ...string) string {
	skip := map[string]bool{}
	for _, e := range except {
		skip[e] = true
	}
	var out []string
	for _, gvr := range available {
		if !skip[gvrKey(gvr)] {
			out = append(out, gvrKey(gvr))
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func TestRuntimeConfig_KeysApplyFromBroadestToNarrowest(t *testing.T) {
	core := "v1/events v1/namespaces"
	cases := []struct {
		name   string
		config map[string]string
		want   string
	}{
		{"nothing set serves everything", nil, allBut()},
		{"group version off", map[string]string{"batch/v1": "false"}, allBut("batch/v1/cronjobs", "batch/v1/jobs")},
		{"empty value means true", map[string]string{"batch/v1": "", "api/all": "true"}, allBut()},
		{"api/all off, core back on", map[string]string{"api/all": "false", "api/v1": "true"}, core},
		{"group version beats api/all", map[string]string{"api/all": "false", "v1": "true", "batch/v1": "true"}, "batch/v1/cronjobs batch/v1/jobs " + core},
		{"api/legacy names the core group", map[string]string{"api/all": "false", "api/legacy": "true"}, core},
		{"api/beta off", map[string]string{"api/beta": "false"}, allBut("batch/v1beta1/cronjobs")},
		{"api/alpha off", map[string]string{"api/alpha": "false"}, allBut("example.io/v1alpha1/widgets")},
		{"api/ga applies after api/all", map[string]string{"api/ga": "true", "api/all": "false"}, allBut("batch/v1beta1/cronjobs", "example.io/v1alpha1/widgets")},
		{"api/ga off, core back on", map[string]string{"api/ga": "false", "api/v1": "true"}, "batch/v1beta1/cronjobs example.io/v1alpha1/widgets " + core},
		{"maturity key beats nothing narrower", map[string]string{"api/beta": "false", "batch/v1beta1": "true"}, allBut()},
		{"resource off", map[string]string{"batch/v1/jobs": "false"}, allBut("batch/v1/jobs")},
		{"resource beats its group version", map[string]string{"batch/v1": "false", "batch/v1/jobs": "true"}, allBut("batch/v1/cronjobs")},
		{"core resource as api/v1/<resource>", map[string]string{"api/v1/events": "false"}, allBut("v1/events")},
		{"core resource as v1/<resource>", map[string]string{"api/all": "false", "v1/namespaces": "true"}, "v1/namespaces"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			served, err := apiserver.ResolveRuntimeConfig(tc.config, available)
			if err != nil {
				t.Fatal(err)
			}
			if got := servedKeys(served); got != tc.want {
				t.Fatalf("served\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestRuntimeConfig_InvalidConfigIsRefused(t *testing.T) {
	cases := []struct {
		name   string
		config map[string]string
		want   string
	}{
		{"unknown version", map[string]string{"batch/v9": "false"}, "unknown api groups, versions or resources batch/v9 "},
		{"unknown group and resource, all named", map[string]string{"nothing.io/v1": "true", "batch/v1/pods": "false"}, "batch/v1/pods, nothing.io/v1 "},
		{"unknown core resource", map[string]string{"api/v1/pods": "false"}, "unknown api groups, versions or resources api/v1/pods "},
		{"value not a bool", map[string]string{"batch/v1": "off"}, "invalid value batch/v1=off: want true or false"},
		{"maturity value not a bool", map[string]string{"api/all": "yes"}, "invalid value api/all=yes"},
		{"key without version", map[string]string{"batch": "false"}, `invalid key "batch"`},
		{"key too long", map[string]string{"batch/v1/jobs/status": "false"}, `invalid key "batch/v1/jobs/status"`},
		{"core off", map[string]string{"api/v1": "false"}, "the core group version v1 cannot be disabled"},
		{"everything off", map[string]string{"api/all": "false"}, "the core group version v1 cannot be disabled"},
		{"namespaces off", map[string]string{"v1/namespaces": "false"}, "v1/namespaces cannot be disabled"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			served, err := apiserver.ResolveRuntimeConfig(tc.config, available)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want error containing %q, got %v (served %s)", tc.want, err, servedKeys(served))
			}
		})
	}
}

func TestRuntimeConfig_DisabledGroupVersionIsNotServed(t *testing.T) {
	var mu sync.Mutex
	var logs []string
	s := apiservertest.Start(t, func(o *apiserver.Options) {
		o.RuntimeConfig = map[string]string{"batch/v1": "false"}
		o.Logger = funcr.New(func(_, args string) {
			mu.Lock()
			defer mu.Unlock()
			logs = append(logs, args)
		}, funcr.Options{})
	})
	disc := s.Client.Discovery()

	groups, err := disc.ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, g := range groups.Groups {
		names[g.Name] = true
	}
	if names["batch"] || !names["coordination.k8s.io"] || !names["events.k8s.io"] {
		t.Fatalf("groups served: %v", names)
	}
	if _, err := disc.ServerResourcesForGroupVersion("batch/v1"); !apierrors.IsNotFound(err) {
		t.Fatalf("batch/v1 discovery: want NotFound, got %v", err)
	}
	leases, err := disc.ServerResourcesForGroupVersion("coordination.k8s.io/v1")
	if err != nil || len(leases.APIResources) == 0 || leases.APIResources[0].Name != "leases" {
		t.Fatalf("coordination.k8s.io/v1 discovery: %v %+v", err, leases)
	}

	get := func(path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", s.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+s.AdminToken)
		resp, err := s.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, path := range []string{"/apis/batch/v1/namespaces/default/cronjobs", "/apis/batch/v1", "/apis/batch", "/openapi/v3/apis/batch/v1"} {
		if code, body := get(path); code != http.StatusNotFound {
			t.Errorf("GET %s: want 404, got %d %s", path, code, body)
		}
	}
	code, body := get("/openapi/v3")
	var index struct{ Paths map[string]json.RawMessage }
	if err := json.Unmarshal([]byte(body), &index); code != http.StatusOK || err != nil {
		t.Fatalf("/openapi/v3: %d %v", code, err)
	}
	if _, ok := index.Paths["apis/batch/v1"]; ok {
		t.Errorf("/openapi/v3 lists apis/batch/v1")
	}
	if _, ok := index.Paths["apis/coordination.k8s.io/v1"]; !ok {
		t.Errorf("/openapi/v3 lacks apis/coordination.k8s.io/v1")
	}

	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "still-served"}}
	if _, err := s.Client.CoordinationV1().Leases("default").Create(ctx(t), lease, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a lease: %v", err)
	}

	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(logs, `"level"=0 "msg"="Not serving (--runtime-config)" "resources"=["batch/v1"]`) {
		t.Errorf("start log does not name batch/v1 alone:\n%s", strings.Join(logs, "\n"))
	}
}

func TestRuntimeConfig_InvalidConfigFailsStart(t *testing.T) {
	for _, config := range []map[string]string{{"batch/v9": "false"}, {"api/v1": "false"}, {"batch/v1": "maybe"}} {
		s, err := apiservertest.New(func(o *apiserver.Options) { o.RuntimeConfig = config })
		if err == nil {
			s.Stop()
			t.Fatalf("%v: server started", config)
		}
		if !strings.Contains(err.Error(), "--runtime-config") {
			t.Fatalf("%v: %v", config, err)
		}
	}
}

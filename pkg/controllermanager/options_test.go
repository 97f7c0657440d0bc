package controllermanager

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
)

func TestEnabled_ControllersFlag(t *testing.T) {
	cases := []struct {
		flag []string
		want string
	}{
		{[]string{"*"}, "[cronjob-controller job-controller garbage-collector-controller namespace-controller node-lifecycle-controller pod-garbage-collector-controller clusterrole-aggregation-controller serviceaccount-controller root-ca-certificate-publisher-controller ttl-after-finished-controller scheduler]"},
		{[]string{"*", "-namespace"}, "[cronjob-controller job-controller garbage-collector-controller node-lifecycle-controller pod-garbage-collector-controller clusterrole-aggregation-controller serviceaccount-controller root-ca-certificate-publisher-controller ttl-after-finished-controller scheduler]"},
		{[]string{"*", "-namespace-controller", "-ttl-after-finished"}, "[cronjob-controller job-controller garbage-collector-controller node-lifecycle-controller pod-garbage-collector-controller clusterrole-aggregation-controller serviceaccount-controller root-ca-certificate-publisher-controller scheduler]"},
		{[]string{"root-ca-cert-publisher"}, "[root-ca-certificate-publisher-controller]"},
		{[]string{"ttl-after-finished"}, "[ttl-after-finished-controller]"},
		{[]string{"serviceaccount"}, "[serviceaccount-controller]"},
		{[]string{"*", "-scheduler"}, "[cronjob-controller job-controller garbage-collector-controller namespace-controller node-lifecycle-controller pod-garbage-collector-controller clusterrole-aggregation-controller serviceaccount-controller root-ca-certificate-publisher-controller ttl-after-finished-controller]"},
		{[]string{"clusterrole-aggregation"}, "[clusterrole-aggregation-controller]"},
		{[]string{"namespace"}, "[namespace-controller]"},
		{[]string{"job"}, "[job-controller]"},
		{[]string{"podgc"}, "[pod-garbage-collector-controller]"},
		{[]string{"nodelifecycle"}, "[node-lifecycle-controller]"},
		{[]string{"*", "-job"}, "[cronjob-controller garbage-collector-controller namespace-controller node-lifecycle-controller pod-garbage-collector-controller clusterrole-aggregation-controller serviceaccount-controller root-ca-certificate-publisher-controller ttl-after-finished-controller scheduler]"},
		{[]string{"cronjob-controller", "garbagecollector"}, "[cronjob-controller garbage-collector-controller]"},
		{[]string{"bogus"}, "error"},
		{[]string{"*", "-bogus"}, "error"},
	}
	for _, tc := range cases {
		on, err := enabled(Controllers(), tc.flag)
		got := "error"
		if err == nil {
			var names []string
			for _, d := range on {
				names = append(names, d.Name)
			}
			got = fmt.Sprint(names)
		}
		if got != tc.want {
			t.Errorf("--controllers=%v: %s, want %s", tc.flag, got, tc.want)
		}
	}
}

func TestUnserved_DisablesControllersWhoseResourcesAreNotServed(t *testing.T) {
	client := fake.NewSimpleClientset()
	client.Resources = []*metav1.APIResourceList{{
		GroupVersion: "v1",
		APIResources: []metav1.APIResource{{Name: "namespaces"}},
	}}
	cronjobs, namespaces := cronJobController().Requires, namespaceController().Requires
	if got, err := unserved(client.Discovery(), cronjobs); err != nil || got == nil || got.String() != "batch/v1, Resource=cronjobs" {
		t.Fatalf("cronjob with batch/v1 off: %v %v", got, err)
	}
	if got, err := unserved(client.Discovery(), namespaces); got != nil || err != nil {
		t.Fatalf("namespace: %v %v", got, err)
	}
	client.Resources = append(client.Resources, &metav1.APIResourceList{
		GroupVersion: "batch/v1",
		APIResources: []metav1.APIResource{{Name: "cronjobs"}, {Name: "jobs"}},
	})
	if got, err := unserved(client.Discovery(), cronjobs); got != nil || err != nil {
		t.Fatalf("cronjob with batch/v1 served: %v %v", got, err)
	}
	// The Job controller needs pods too.
	if got, err := unserved(client.Discovery(), jobController().Requires); err != nil || got == nil || got.String() != "/v1, Resource=pods" {
		t.Fatalf("job without pods served: %v %v", got, err)
	}
}

// Discovery that cannot answer says nothing about what is served: the
// error comes back, and no resource is named unserved.
func TestDefaultOptions_JobAndPodGCFlagsAsKube(t *testing.T) {
	o := DefaultOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if o.ConcurrentJobSyncs != 5 || o.TerminatedPodGCThreshold != 12500 {
		t.Fatalf("defaults --concurrent-job-syncs %d, --terminated-pod-gc-threshold %d; want kube's 5, 12500", o.ConcurrentJobSyncs, o.TerminatedPodGCThreshold)
	}
	if err := fs.Parse([]string{"--concurrent-job-syncs=9", "--terminated-pod-gc-threshold=3"}); err != nil || o.ConcurrentJobSyncs != 9 || o.TerminatedPodGCThreshold != 3 {
		t.Fatalf("flags: %d %d, %v", o.ConcurrentJobSyncs, o.TerminatedPodGCThreshold, err)
	}
}

func TestDefaultOptions_NodeMonitorFlagsAsKube(t *testing.T) {
	o := DefaultOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if o.NodeMonitorPeriod != 5*time.Second || o.NodeMonitorGracePeriod != 40*time.Second || o.NodeStartupGracePeriod != time.Minute {
		t.Fatalf("defaults --node-monitor-period %v, --node-monitor-grace-period %v, --node-startup-grace-period %v; want kube's 5s, 40s, 1m", o.NodeMonitorPeriod, o.NodeMonitorGracePeriod, o.NodeStartupGracePeriod)
	}
	if err := fs.Parse([]string{"--node-monitor-period=1s", "--node-monitor-grace-period=7s"}); err != nil || o.NodeMonitorPeriod != time.Second || o.NodeMonitorGracePeriod != 7*time.Second {
		t.Fatalf("flags: %v %v, %v", o.NodeMonitorPeriod, o.NodeMonitorGracePeriod, err)
	}
}

func TestUnserved_DiscoveryErrorIsNotAnAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"forbidden: User \"system:kube-controller-manager\" cannot get path \"%s\"","reason":"Forbidden","code":403}`, r.URL.Path)
	}))
	defer srv.Close()
	disc := discovery.NewDiscoveryClientForConfigOrDie(&rest.Config{Host: srv.URL})
	if got, err := unserved(disc, cronJobController().Requires); got != nil || !apierrors.IsForbidden(err) {
		t.Fatalf("forbidden discovery: %v %v", got, err)
	}
}

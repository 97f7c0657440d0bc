package controllermanager

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestEnabled_ControllersFlag(t *testing.T) {
	cases := []struct {
		flag []string
		want string
	}{
		{[]string{"*"}, "[cronjob-controller garbage-collector-controller namespace-controller clusterrole-aggregation-controller serviceaccount-controller]"},
		{[]string{"*", "-namespace"}, "[cronjob-controller garbage-collector-controller clusterrole-aggregation-controller serviceaccount-controller]"},
		{[]string{"*", "-namespace-controller"}, "[cronjob-controller garbage-collector-controller clusterrole-aggregation-controller serviceaccount-controller]"},
		{[]string{"serviceaccount"}, "[serviceaccount-controller]"},
		{[]string{"clusterrole-aggregation"}, "[clusterrole-aggregation-controller]"},
		{[]string{"namespace"}, "[namespace-controller]"},
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
	if got := unserved(client.Discovery(), cronjobs); got == nil || got.String() != "batch/v1, Resource=cronjobs" {
		t.Fatalf("cronjob with batch/v1 off: %v", got)
	}
	if got := unserved(client.Discovery(), namespaces); got != nil {
		t.Fatalf("namespace: %v", got)
	}
	client.Resources = append(client.Resources, &metav1.APIResourceList{
		GroupVersion: "batch/v1",
		APIResources: []metav1.APIResource{{Name: "cronjobs"}, {Name: "jobs"}},
	})
	if got := unserved(client.Discovery(), cronjobs); got != nil {
		t.Fatalf("cronjob with batch/v1 served: %v", got)
	}
}

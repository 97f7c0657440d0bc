package controllermanager

import (
	"fmt"
	"sort"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestEnabled_ControllersFlag(t *testing.T) {
	cases := []struct {
		flag []string
		want string
	}{
		{[]string{"*"}, "[cronjob garbagecollector namespace]"},
		{[]string{"*", "-namespace"}, "[cronjob garbagecollector]"},
		{[]string{"namespace"}, "[namespace]"},
		{[]string{"bogus"}, "error"},
		{[]string{"*", "-bogus"}, "error"},
	}
	for _, tc := range cases {
		on, err := enabled(tc.flag)
		got := "error"
		if err == nil {
			var names []string
			for n := range on {
				names = append(names, n)
			}
			sort.Strings(names)
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
	if got := unserved(client, known["cronjob"]); got != "batch/v1/cronjobs" {
		t.Fatalf("cronjob with batch/v1 off: %q", got)
	}
	if got := unserved(client, known["namespace"]); got != "" {
		t.Fatalf("namespace: %q", got)
	}
	client.Resources = append(client.Resources, &metav1.APIResourceList{
		GroupVersion: "batch/v1",
		APIResources: []metav1.APIResource{{Name: "cronjobs"}, {Name: "jobs"}},
	})
	if got := unserved(client, known["cronjob"]); got != "" {
		t.Fatalf("cronjob with batch/v1 served: %q", got)
	}
}

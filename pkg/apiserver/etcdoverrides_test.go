package apiserver

import (
	"strings"
	"testing"

	apiextensionsregistry "github.com/cronplane/cronplane/pkg/registry/apiextensions"
	"github.com/cronplane/cronplane/pkg/registry/batch"
	"github.com/cronplane/cronplane/pkg/registry/core"
	"github.com/cronplane/cronplane/pkg/registry/events"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/readonly"
)

func TestEtcdOverrides_MalformedEntriesAreRefusedAsKubeDoes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value []string
		want  string
	}{
		{"no servers part", []string{"/events"}, errOverrideFormat.Error()},
		{"slash instead of hash (kube's own example)", []string{"/events/http://127.0.0.1:4002"}, errOverrideFormat.Error()},
		{"two hashes", []string{"/events#http://a:2379#http://b:2379"}, errOverrideFormat.Error()},
		{"no group separator", []string{"events#http://a:2379"}, errOverrideFormat.Error()},
		{"group, version and resource", []string{"apps/v1/deployments#http://a:2379"}, errOverrideFormat.Error()},
		{"empty servers", []string{"/events#"}, `--etcd-servers-overrides "/events#": an empty etcd server URL`},
		{"empty server between semicolons", []string{"/events#http://a:2379;;http://b:2379"}, "an empty etcd server URL"},
		{"one bad among good", []string{"/events#http://a:2379", "/pods"}, errOverrideFormat.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseEtcdOverrides(tc.value)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("parse %q: %v, want an error with %q", tc.value, err, tc.want)
			}
			o := EtcdOptions{EtcdServersOverrides: tc.value}
			if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate %q: %v, want an error with %q", tc.value, err, tc.want)
			}
		})
	}
}

func TestEtcdOverrides_ResourcesMapToTheirClusters(t *testing.T) {
	o, err := parseEtcdOverrides([]string{
		"/events#http://e1:2379;http://e2:2379",
		"apps/*#http://apps:2379",
		"apps/deployments#http://deploy:2379",
		// The same servers in another order: the same cluster.
		"batch/jobs#http://e2:2379;http://e1:2379",
		"events.k8s.io/events#http://ignored:2379",
		"apiextensions.k8s.io/customresourcedefinitions#http://ignored:2379",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.clusters) != 4 {
		t.Fatalf("clusters %v, want 4 distinct server sets", o.clusters)
	}
	byName := map[string]*generic.Resource{}
	resources := append(core.WorkloadResources(nil), batch.Resources()...)
	resources = append(resources, events.Resources()...)
	resources = append(resources, readonly.Resources()...)
	for _, res := range append(resources, core.EventResource(), core.ConfigMapResource(), apiextensionsregistry.Resource(nil, false)) {
		byName[res.GroupVersionResource().String()] = res
	}
	for _, tc := range []struct {
		gvr     string
		cluster int
		ok      bool
	}{
		{"/v1, Resource=events", 0, true},
		// Stored as core Events: with them, whatever names events.k8s.io.
		{"events.k8s.io/v1, Resource=events", 0, true},
		{"apps/v1, Resource=deployments", 2, true},
		{"apps/v1, Resource=statefulsets", 1, true},
		{"batch/v1, Resource=jobs", 0, true},
		{"batch/v1, Resource=cronjobs", 0, false},
		{"/v1, Resource=configmaps", 0, false},
		// As kube's apiextensions-apiserver, on --etcd-servers only.
		{"apiextensions.k8s.io/v1, Resource=customresourcedefinitions", 0, false},
	} {
		res, found := byName[tc.gvr]
		if !found {
			t.Fatalf("no built-in resource %s", tc.gvr)
		}
		i, ok := o.clusterOf(res)
		if ok != tc.ok || (ok && i != tc.cluster) {
			t.Errorf("%s: cluster %d, %v; want %d, %v", tc.gvr, i, ok, tc.cluster, tc.ok)
		}
	}
}

func TestEtcdOverrides_LastEntryForAResourceWins(t *testing.T) {
	o, err := parseEtcdOverrides([]string{"/events#http://a:2379", "/events#http://b:2379"})
	if err != nil {
		t.Fatal(err)
	}
	i, ok := o.clusterOf(core.EventResource())
	if !ok || o.clusters[i][0] != "http://b:2379" {
		t.Fatalf("events in %v, want http://b:2379", o.clusters)
	}
}

func TestEtcdOverrides_NoneChangeNothing(t *testing.T) {
	o, err := parseEtcdOverrides(nil)
	if err != nil || len(o.clusters) != 0 {
		t.Fatalf("no overrides: %v, %v", o.clusters, err)
	}
	if _, ok := o.clusterOf(core.EventResource()); ok {
		t.Fatal("events overridden without an override")
	}
}

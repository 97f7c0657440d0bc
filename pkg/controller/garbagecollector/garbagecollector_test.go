package garbagecollector

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
)

var (
	cronJobs   = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "cronjobs"}
	jobs       = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

func object(gvr schema.GroupVersionResource, kind, ns, name, uid string, owners ...metav1.OwnerReference) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: gvr.GroupVersion().String(), Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), OwnerReferences: owners},
	}
}

func ref(apiVersion, kind, name, uid string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid)}
}

// A collector over fake clients without informers: every owner is read
// live, which is the path every decision ends on.
func collector(objects ...runtime.Object) (*Collector, *metadatafake.FakeMetadataClient) {
	scheme := runtime.NewScheme()
	_ = metav1.AddMetaToScheme(scheme)
	client := metadatafake.NewSimpleMetadataClient(scheme, objects...)
	disc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "namespaces", Kind: "Namespace", Namespaced: false, Verbs: []string{"list", "watch", "delete"}}}},
		{GroupVersion: "batch/v1", APIResources: []metav1.APIResource{
			{Name: "cronjobs", Kind: "CronJob", Namespaced: true, Verbs: []string{"list", "watch", "delete"}},
			{Name: "jobs", Kind: "Job", Namespaced: true, Verbs: []string{"list", "watch", "delete"}},
		}},
	}}}
	return New(client, disc), client
}

func TestProcess_DecidesFromOwnersReadLive(t *testing.T) {
	owner := object(cronJobs, "CronJob", "ns", "owner", "owner-uid")
	ns := object(namespaces, "Namespace", "", "ns", "ns-uid")
	for _, tc := range []struct {
		name    string
		item    *metav1.PartialObjectMetadata
		objects []runtime.Object
		want    string // the write the collector makes: "delete", "patch" or ""
		wantErr bool
	}{
		{"owner present", object(jobs, "Job", "ns", "j", "j-uid", ref("batch/v1", "CronJob", "owner", "owner-uid")), []runtime.Object{owner}, "", false},
		{"owner gone", object(jobs, "Job", "ns", "j", "j-uid", ref("batch/v1", "CronJob", "owner", "owner-uid")), nil, "delete", false},
		{"owner replaced by another of the same name", object(jobs, "Job", "ns", "j", "j-uid", ref("batch/v1", "CronJob", "owner", "old-uid")), []runtime.Object{owner}, "delete", false},
		{"one owner of two gone", object(jobs, "Job", "ns", "j", "j-uid", ref("batch/v1", "CronJob", "owner", "owner-uid"), ref("batch/v1", "CronJob", "gone", "gone-uid")), []runtime.Object{owner}, "patch", false},
		{"cluster-scoped owner", object(jobs, "Job", "ns", "j", "j-uid", ref("v1", "Namespace", "ns", "ns-uid")), []runtime.Object{ns}, "", false},
		{"namespaced owner of a cluster-scoped object is never there", object(namespaces, "Namespace", "", "other", "other-uid", ref("batch/v1", "CronJob", "owner", "owner-uid")), []runtime.Object{owner}, "delete", false},
		{"owner kind not served: kept, tried again", object(jobs, "Job", "ns", "j", "j-uid", ref("example.com/v1", "Widget", "w", "w-uid")), nil, "", true},
		{"no owners", object(jobs, "Job", "ns", "j", "j-uid"), nil, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, client := collector(append(tc.objects, tc.item)...)
			gvr := jobs
			if tc.item.Kind == "Namespace" {
				gvr = namespaces
			}
			client.ClearActions()
			err := c.process(context.Background(), itemOf(gvr, tc.item))
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			got := ""
			for _, a := range client.Actions() {
				if v := a.GetVerb(); v == "delete" || v == "patch" {
					got = v
				}
			}
			if got != tc.want {
				t.Fatalf("write %q, want %q (actions %v)", got, tc.want, client.Actions())
			}
		})
	}
}

package garbagecollector

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
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
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "namespaces", Kind: "Namespace", Namespaced: false, Verbs: []string{"list", "watch", "delete"}},
			{Name: "pods", Kind: "Pod", Namespaced: true, Verbs: []string{"list", "watch", "delete"}},
		}},
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

var pods = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// cached puts objects in the collector's informer cache for gvr, as if its
// informer had listed them.
func cached(t *testing.T, c *Collector, gvr schema.GroupVersionResource, objs ...*metav1.PartialObjectMetadata) {
	t.Helper()
	inf := c.factory.ForResource(gvr).Informer()
	if err := inf.AddIndexers(cache.Indexers{byUID: indexUID, byOwner: indexOwners}); err != nil {
		t.Fatal(err)
	}
	c.informers[gvr] = inf
	for _, o := range objs {
		if err := inf.GetIndexer().Add(o); err != nil {
			t.Fatal(err)
		}
	}
}

func blockingPodRef(name string) metav1.OwnerReference {
	r := ref("v1", "Pod", name, name+"-uid")
	yes := true
	r.Controller, r.BlockOwnerDeletion = &yes, &yes
	return r
}

// foregroundDeleting marks an object as deleted with the foreground policy.
func foregroundDeleting(o *metav1.PartialObjectMetadata) *metav1.PartialObjectMetadata {
	now := metav1.Now()
	o.DeletionTimestamp = &now
	o.Finalizers = []string{metav1.FinalizerDeleteDependents}
	return o
}

// Pods p1 → p3 → p2 → p1 (each owned by the next), p1 deleted in the
// foreground, then p2: p3's owner waits for it and p3's dependent p1 waits
// for its own dependents, so p3 must stop blocking p2 before it is deleted,
// or each waits for the next forever.
func TestProcess_BreaksAnOwnerCircleInForegroundDeletion(t *testing.T) {
	for _, tc := range []struct {
		name        string
		p1Deleting  bool
		wantUnblock bool
	}{
		{"dependent waiting for its own dependents: unblocked, then deleted", true, true},
		{"dependent not being deleted: deleted as it is", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p1 := object(pods, "Pod", "ns", "p1", "p1-uid", blockingPodRef("p3"))
			if tc.p1Deleting {
				p1 = foregroundDeleting(p1)
			}
			p2 := foregroundDeleting(object(pods, "Pod", "ns", "p2", "p2-uid", blockingPodRef("p1")))
			p3 := object(pods, "Pod", "ns", "p3", "p3-uid", blockingPodRef("p2"))
			c, client := collector(p1, p2, p3)
			cached(t, c, pods, p1, p2, p3)
			client.ClearActions()
			if err := c.process(context.Background(), itemOf(pods, p3)); err != nil {
				t.Fatal(err)
			}
			var verbs []string
			for _, a := range client.Actions() {
				if v := a.GetVerb(); v == "patch" || v == "delete" {
					verbs = append(verbs, v)
				}
				if p, ok := a.(clienttesting.PatchAction); ok && !strings.Contains(string(p.GetPatch()), `"blockOwnerDeletion":false`) {
					t.Errorf("patch %s does not unblock the owner", p.GetPatch())
				}
			}
			want := []string{"delete"}
			if tc.wantUnblock {
				want = []string{"patch", "delete"}
			}
			if strings.Join(verbs, ",") != strings.Join(want, ",") {
				t.Fatalf("writes %v, want %v", verbs, want)
			}
		})
	}
}

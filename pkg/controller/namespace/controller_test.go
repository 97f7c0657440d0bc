package namespace

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

var (
	configmaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	cronjobs   = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "cronjobs"}
	allVerbs   = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	served     = []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: allVerbs}}},
		{GroupVersion: "batch/v1", APIResources: []metav1.APIResource{{Name: "cronjobs", Namespaced: true, Kind: "CronJob", Verbs: allVerbs}}},
	}
)

// fakeDiscovery answers ServerPreferredNamespacedResources, which
// client-go's fake discovery leaves empty.
type fakeDiscovery struct {
	discovery.DiscoveryInterface
	lists []*metav1.APIResourceList
	err   error
}

func (f fakeDiscovery) ServerPreferredNamespacedResources() ([]*metav1.APIResourceList, error) {
	return f.lists, f.err
}

func object(gvr schema.GroupVersionResource, kind, name string, finalizers ...string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(gvr.GroupVersion().String())
	u.SetKind(kind)
	u.SetNamespace("doomed")
	u.SetName(name)
	u.SetFinalizers(finalizers)
	return u
}

func terminating(conditions ...corev1.NamespaceCondition) *corev1.Namespace {
	deleted := metav1.NewTime(time.Now().Add(-time.Minute))
	return &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "doomed", UID: "ns-uid", DeletionTimestamp: &deleted},
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating, Conditions: conditions},
	}
}

type fixture struct {
	c       *Controller
	client  *fake.Clientset
	dynamic *dynamicfake.FakeDynamicClient
}

// newFixture builds a controller over fake clients whose deletes, like the
// apiserver's, only mark objects that have finalizers.
func newFixture(t *testing.T, ns *corev1.Namespace, disc fakeDiscovery, objs ...runtime.Object) fixture {
	t.Helper()
	client := fake.NewSimpleClientset(ns)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{configmaps: "ConfigMapList", cronjobs: "CronJobList"}, objs...)
	dyn.PrependReactor("delete", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		d := a.(k8stesting.DeleteAction)
		obj, err := dyn.Tracker().Get(d.GetResource(), d.GetNamespace(), d.GetName())
		if err != nil {
			return false, nil, nil
		}
		u := obj.(*unstructured.Unstructured)
		if len(u.GetFinalizers()) == 0 {
			return false, nil, nil
		}
		now := metav1.Now()
		u.SetDeletionTimestamp(&now)
		return true, nil, dyn.Tracker().Update(d.GetResource(), u, d.GetNamespace())
	})
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := indexer.Add(ns); err != nil {
		t.Fatal(err)
	}
	disc.DiscoveryInterface = client.Discovery()
	return fixture{
		c:       &Controller{client: client, dynamic: dyn, discovery: disc, namespaces: corelisters.NewNamespaceLister(indexer)},
		client:  client,
		dynamic: dyn,
	}
}

func (f fixture) namespace(t *testing.T) *corev1.Namespace {
	t.Helper()
	ns, err := f.client.CoreV1().Namespaces().Get(context.Background(), "doomed", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

func (f fixture) left(t *testing.T, gvr schema.GroupVersionResource) int {
	t.Helper()
	list, err := f.dynamic.Resource(gvr).Namespace("doomed").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

func summary(conditions []corev1.NamespaceCondition) []string {
	var out []string
	for _, c := range conditions {
		out = append(out, fmt.Sprintf("%s|%s|%s|%s", c.Type, c.Status, c.Reason, c.Message))
	}
	return out
}

// The healthy forms kube reports, in its order.
const (
	discovered  = "NamespaceDeletionDiscoveryFailure|False|ResourcesDiscovered|All resources successfully discovered"
	parsed      = "NamespaceDeletionGroupVersionParsingFailure|False|ParsedGroupVersions|All legacy kube types successfully parsed"
	deleted     = "NamespaceDeletionContentFailure|False|ContentDeleted|All content successfully deleted, may be waiting on finalization"
	removed     = "NamespaceContentRemaining|False|ContentRemoved|All content successfully removed"
	noFinalizer = "NamespaceFinalizersRemaining|False|ContentHasNoFinalizers|All content-preserving finalizers finished"
)

func TestSync_ReportsKubesFiveDeletionConditions(t *testing.T) {
	held := []runtime.Object{
		object(cronjobs, "CronJob", "held", "example.com/hold"),
		object(configmaps, "ConfigMap", "held", "example.com/hold", "example.com/other"),
		object(configmaps, "ConfigMap", "free"),
	}
	refuseCronJobs := func(dyn *dynamicfake.FakeDynamicClient) {
		dyn.PrependReactor("delete", "cronjobs", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "batch", Resource: "cronjobs"}, "held", errors.New("nope"))
		})
	}
	ignoreConfigMapDeletes := func(dyn *dynamicfake.FakeDynamicClient) {
		dyn.PrependReactor("delete", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
	}
	cases := []struct {
		name      string
		objs      []runtime.Object
		discovery fakeDiscovery
		react     func(*dynamicfake.FakeDynamicClient)
		want      []string
		remaining bool
		wantErr   bool
		finalized bool
		// leftConfigMaps is how many ConfigMaps the pass leaves.
		leftConfigMaps int
	}{
		{
			name: "content held by finalizers: what remains and what holds it", objs: held, discovery: fakeDiscovery{lists: served},
			want: []string{discovered, parsed, deleted,
				// kube names a core resource with a trailing dot.
				"NamespaceContentRemaining|True|SomeResourcesRemain|Some resources are remaining: configmaps. has 1 resource instances, cronjobs.batch has 1 resource instances",
				"NamespaceFinalizersRemaining|True|SomeFinalizersRemain|Some content in the namespace has finalizers remaining: example.com/hold in 2 resource instances, example.com/other in 1 resource instances",
			},
			remaining: true, leftConfigMaps: 1,
		},
		{
			name: "content gone: every condition healthy, then finalized", objs: []runtime.Object{object(configmaps, "ConfigMap", "free")}, discovery: fakeDiscovery{lists: served},
			want: []string{discovered, parsed, deleted, removed, noFinalizer}, finalized: true,
		},
		{
			name: "a group fails discovery: reported, the others still emptied", objs: []runtime.Object{object(configmaps, "ConfigMap", "free")},
			discovery: fakeDiscovery{lists: served, err: &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{{Group: "metrics.k8s.io", Version: "v1beta1"}: errors.New("boom")}}},
			want: []string{
				"NamespaceDeletionDiscoveryFailure|True|DiscoveryFailed|Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: boom",
				parsed, deleted, removed, noFinalizer,
			},
			wantErr: true,
		},
		{
			name: "a group version that does not parse: reported, nothing deleted", objs: []runtime.Object{object(configmaps, "ConfigMap", "free")},
			discovery: fakeDiscovery{lists: append([]*metav1.APIResourceList{{GroupVersion: "a/b/c", APIResources: []metav1.APIResource{{Name: "things", Namespaced: true, Verbs: allVerbs}}}}, served...)},
			want: []string{discovered,
				"NamespaceDeletionGroupVersionParsingFailure|True|GroupVersionParsingFailed|unexpected GroupVersion string: a/b/c",
				deleted, removed, noFinalizer,
			},
			wantErr: true, leftConfigMaps: 1,
		},
		{
			name: "a delete refused: the server's error, counted", objs: held, discovery: fakeDiscovery{lists: served}, react: refuseCronJobs,
			want: []string{discovered, parsed,
				`NamespaceDeletionContentFailure|True|ContentDeletionFailed|Failed to delete all resource types, 1 remaining: cronjobs.batch "held" is forbidden: nope`,
				"NamespaceContentRemaining|True|SomeResourcesRemain|Some resources are remaining: configmaps. has 1 resource instances",
				"NamespaceFinalizersRemaining|True|SomeFinalizersRemain|Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances, example.com/other in 1 resource instances",
			},
			wantErr: true, leftConfigMaps: 1,
		},
		{
			name: "objects left without finalizers: a content failure", objs: []runtime.Object{object(configmaps, "ConfigMap", "stuck")}, discovery: fakeDiscovery{lists: served}, react: ignoreConfigMapDeletes,
			want: []string{discovered, parsed,
				"NamespaceDeletionContentFailure|True|ContentDeletionFailed|Failed to delete all resource types, 1 remaining: unexpected items still remain in namespace: doomed for gvr: /v1, Resource=configmaps",
				"NamespaceContentRemaining|True|SomeResourcesRemain|Some resources are remaining: configmaps. has 1 resource instances",
				noFinalizer,
			},
			wantErr: true, leftConfigMaps: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, terminating(), tc.discovery, tc.objs...)
			if tc.react != nil {
				tc.react(f.dynamic)
			}
			remaining, err := f.c.sync(context.Background(), "doomed")
			if remaining != tc.remaining || (err != nil) != tc.wantErr {
				t.Fatalf("sync: remaining %v, err %v; want remaining %v, error %v", remaining, err, tc.remaining, tc.wantErr)
			}
			ns := f.namespace(t)
			if got := summary(ns.Status.Conditions); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("conditions:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if finalized := len(ns.Spec.Finalizers) == 0; finalized != tc.finalized {
				t.Fatalf("finalizers %v, want finalized %v", ns.Spec.Finalizers, tc.finalized)
			}
			if n := f.left(t, configmaps); n != tc.leftConfigMaps {
				t.Fatalf("%d ConfigMaps left, want %d", n, tc.leftConfigMaps)
			}
		})
	}
}

func TestSync_ConditionsKeepPlaceAndTransitionTimeUntilStatusFlips(t *testing.T) {
	old := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	ns := terminating(
		corev1.NamespaceCondition{Type: "Example", Status: corev1.ConditionTrue, Reason: "Other", LastTransitionTime: old},
		corev1.NamespaceCondition{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionTrue, Reason: "SomeResourcesRemain", Message: "Some resources are remaining: configmaps. has 3 resource instances", LastTransitionTime: old},
		corev1.NamespaceCondition{Type: corev1.NamespaceDeletionDiscoveryFailure, Status: corev1.ConditionFalse, Reason: "ResourcesDiscovered", Message: "stale wording", LastTransitionTime: old},
	)
	f := newFixture(t, ns, fakeDiscovery{lists: served})
	if _, err := f.c.sync(context.Background(), "doomed"); err != nil {
		t.Fatal(err)
	}
	got := f.namespace(t).Status.Conditions
	want := []string{"Example|True|Other|", removed, discovered, parsed, deleted, noFinalizer}
	if s := summary(got); strings.Join(s, "\n") != strings.Join(want, "\n") {
		t.Fatalf("conditions:\n%s\nwant:\n%s", strings.Join(s, "\n"), strings.Join(want, "\n"))
	}
	// Only a change of status moves the transition time.
	keepsTime := map[corev1.NamespaceConditionType]bool{"Example": true, corev1.NamespaceDeletionDiscoveryFailure: true, corev1.NamespaceContentRemaining: false}
	for _, c := range got {
		if want, ok := keepsTime[c.Type]; ok && c.LastTransitionTime.Equal(&old) != want {
			t.Errorf("%s: lastTransitionTime %v, was %v; want kept %v", c.Type, c.LastTransitionTime, old, want)
		}
	}
}

func TestSync_UnchangedConditionsAreNotWrittenAgain(t *testing.T) {
	f := newFixture(t, terminating(), fakeDiscovery{lists: served}, object(cronjobs, "CronJob", "held", "example.com/hold"))
	statusWrites := func() int {
		n := 0
		for _, a := range f.client.Actions() {
			if a.GetVerb() == "update" && a.GetSubresource() == "status" {
				n++
			}
		}
		return n
	}
	for pass := 1; pass <= 2; pass++ {
		if remaining, err := f.c.sync(context.Background(), "doomed"); !remaining || err != nil {
			t.Fatalf("pass %d: remaining %v err %v", pass, remaining, err)
		}
		if n := statusWrites(); n != 1 {
			t.Fatalf("after pass %d: %d status writes, want 1", pass, n)
		}
	}
}

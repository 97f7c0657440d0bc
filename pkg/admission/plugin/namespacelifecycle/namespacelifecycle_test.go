package namespacelifecycle

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/admission"
)

type namespaces map[string]*corev1.Namespace

func (n namespaces) GetNamespace(_ context.Context, name string, _ bool) (*corev1.Namespace, error) {
	if ns, ok := n[name]; ok {
		return ns, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("namespaces"), name)
}

func TestPlugin_KeepsObjectsInLiveNamespacesAndTheBuiltInNamespacesAlive(t *testing.T) {
	now := metav1.Now()
	p := New(namespaces{
		"live":     {ObjectMeta: metav1.ObjectMeta{Name: "live"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
		"going":    {ObjectMeta: metav1.ObjectMeta{Name: "going"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}},
		"deleting": {ObjectMeta: metav1.ObjectMeta{Name: "deleting", DeletionTimestamp: &now}},
	})
	cronjobs := schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "cronjobs"}
	nsResource := corev1.SchemeGroupVersion.WithResource("namespaces")
	for _, tc := range []struct {
		name      string
		a         admission.Attributes
		wantCode  int32
		wantCause metav1.CauseType
	}{
		{"create in a live namespace", admission.Attributes{Operation: admission.Create, Resource: cronjobs, Namespace: "live", Name: "c"}, 0, ""},
		{"create in a missing namespace", admission.Attributes{Operation: admission.Create, Resource: cronjobs, Namespace: "nope", Name: "c"}, 404, ""},
		{"create in a terminating namespace", admission.Attributes{Operation: admission.Create, Resource: cronjobs, Namespace: "going", Name: "c"}, 403, corev1.NamespaceTerminatingCause},
		{"create in a namespace with a deletionTimestamp", admission.Attributes{Operation: admission.Create, Resource: cronjobs, Namespace: "deleting", Name: "c"}, 403, corev1.NamespaceTerminatingCause},
		{"update in a terminating namespace", admission.Attributes{Operation: admission.Update, Resource: cronjobs, Namespace: "going", Name: "c"}, 0, ""},
		{"delete in a missing namespace", admission.Attributes{Operation: admission.Delete, Resource: cronjobs, Namespace: "nope", Name: "c"}, 0, ""},
		{"a cluster-scoped create", admission.Attributes{Operation: admission.Create, Resource: nsResource, Name: "new"}, 0, ""},
		{"delete of default", admission.Attributes{Operation: admission.Delete, Resource: nsResource, Name: "default"}, 403, ""},
		{"delete of kube-system", admission.Attributes{Operation: admission.Delete, Resource: nsResource, Name: "kube-system"}, 403, ""},
		{"delete of kube-public", admission.Attributes{Operation: admission.Delete, Resource: nsResource, Name: "kube-public"}, 403, ""},
		{"finalize of default", admission.Attributes{Operation: admission.Delete, Resource: nsResource, Subresource: "finalize", Name: "default"}, 0, ""},
		{"delete of another namespace", admission.Attributes{Operation: admission.Delete, Resource: nsResource, Name: "live"}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !p.Handles(tc.a.Operation) {
				if tc.wantCode != 0 {
					t.Fatalf("%s is not handled", tc.a.Operation)
				}
				return
			}
			err := p.Admit(context.Background(), &tc.a)
			if tc.wantCode == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			se, ok := err.(apierrors.APIStatus)
			if !ok || se.Status().Code != tc.wantCode {
				t.Fatalf("got %v, want code %d", err, tc.wantCode)
			}
			if tc.wantCause != "" {
				causes := se.Status().Details.Causes
				if len(causes) != 1 || causes[0].Type != tc.wantCause || causes[0].Field != "metadata.namespace" {
					t.Fatalf("causes %+v", causes)
				}
			}
		})
	}
}

// twoViews answers from the cache or from etcd, counting the etcd reads.
type twoViews struct {
	cache, live namespaces
	liveReads   int
}

func (v *twoViews) GetNamespace(ctx context.Context, name string, live bool) (*corev1.Namespace, error) {
	if live {
		v.liveReads++
		return v.live.GetNamespace(ctx, name, live)
	}
	return v.cache.GetNamespace(ctx, name, live)
}

func TestPlugin_ReadsEtcdOnlyWhenTheCacheMayBeBehind(t *testing.T) {
	active := func(name string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	}
	terminatingNS := func(name string) *corev1.Namespace {
		ns := active(name)
		ns.Status.Phase = corev1.NamespaceTerminating
		return ns
	}
	cronjobs := schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "cronjobs"}
	create := func(ns string) *admission.Attributes {
		return &admission.Attributes{Operation: admission.Create, Resource: cronjobs, Namespace: ns, Name: "c"}
	}
	deleteNS := &admission.Attributes{Operation: admission.Delete, Resource: corev1.SchemeGroupVersion.WithResource("namespaces"), Name: "old"}
	for _, tc := range []struct {
		name          string
		cache, live   namespaces
		deleteFirst   bool
		after         time.Duration
		wantCode      int32
		wantLiveReads int
	}{
		{"in the cache and active", namespaces{"ns": active("ns")}, namespaces{"ns": active("ns")}, false, 0, 0, 0},
		{"not in the cache yet", namespaces{}, namespaces{"ns": active("ns")}, false, 0, 0, 1},
		{"in neither", namespaces{}, namespaces{}, false, 0, 404, 1},
		{"terminating in the cache", namespaces{"ns": terminatingNS("ns")}, namespaces{"ns": active("ns")}, false, 0, 403, 0},
		{"deletion admitted here, cache still active", namespaces{"old": active("old")}, namespaces{"old": terminatingNS("old")}, true, 0, 403, 1},
		{"deletion admitted long ago", namespaces{"old": active("old")}, namespaces{"old": terminatingNS("old")}, true, liveLookupTTL + time.Second, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &twoViews{cache: tc.cache, live: tc.live}
			p := New(v)
			now := time.Unix(1000, 0)
			p.now = func() time.Time { return now }
			if tc.deleteFirst {
				if err := p.Admit(context.Background(), deleteNS); err != nil {
					t.Fatal(err)
				}
			}
			now = now.Add(tc.after)
			ns := "ns"
			if tc.deleteFirst {
				ns = "old"
			}
			err := p.Admit(context.Background(), create(ns))
			var code int32
			if se, ok := err.(apierrors.APIStatus); ok {
				code = se.Status().Code
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.wantCode || v.liveReads != tc.wantLiveReads {
				t.Fatalf("code %d after %d etcd reads, want %d after %d", code, v.liveReads, tc.wantCode, tc.wantLiveReads)
			}
		})
	}
}

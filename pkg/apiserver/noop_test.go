package apiserver_test

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// TestWrites_NoChangeStoresNothing repeats writes that change nothing,
// more than a second apart so that a managedFields time would differ: the
// object keeps its resourceVersion, watchers see no event, and kubectl
// says "(no change)", as with kube.
func TestWrites_NoChangeStoresNothing(t *testing.T) {
	ns := namespace(t)
	cjs := srv.Client.BatchV1().CronJobs(ns)
	applied, err := apply(t, ns, "same", "ops", applyBody("same", "*/5 * * * *", ""), false)
	if err != nil {
		t.Fatal(err)
	}
	w, err := cjs.Watch(ctx(t), metav1.ListOptions{ResourceVersion: applied.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	time.Sleep(1100 * time.Millisecond)

	again, err := apply(t, ns, "same", "ops", applyBody("same", "*/5 * * * *", ""), false)
	if err != nil || again.ResourceVersion != applied.ResourceVersion {
		t.Fatalf("repeated apply: %v, resourceVersion %s then %s", err, applied.ResourceVersion, again.ResourceVersion)
	}
	patched, err := cjs.Patch(ctx(t), "same", types.MergePatchType, []byte(`{"spec":{"schedule":"*/5 * * * *"}}`), metav1.PatchOptions{})
	if err != nil || patched.ResourceVersion != applied.ResourceVersion {
		t.Fatalf("no-op merge patch: %v, resourceVersion %s then %s", err, applied.ResourceVersion, patched.ResourceVersion)
	}
	out := mustKubectl(t, "-n", ns, "patch", "cronjob", "same", "--type=merge", "-p", `{"spec":{"suspend":false}}`)
	if !strings.Contains(out, "patched (no change)") {
		t.Fatalf("kubectl patch: %s", out)
	}
	select {
	case e := <-w.ResultChan():
		t.Fatalf("a write that changed nothing sent %s", e.Type)
	case <-time.After(300 * time.Millisecond):
	}
	// A real change still writes, and only the writer's entry gets a
	// new time.
	changed, err := cjs.Patch(ctx(t), "same", types.MergePatchType, []byte(`{"spec":{"suspend":true}}`), metav1.PatchOptions{FieldManager: "suspender"})
	if err != nil || changed.ResourceVersion == applied.ResourceVersion {
		t.Fatalf("real patch: %v", err)
	}
	if e := <-w.ResultChan(); e.Type != watch.Modified {
		t.Fatalf("after a real change: %s", e.Type)
	}
	for _, e := range changed.ManagedFields {
		for _, old := range applied.ManagedFields {
			if e.Manager == old.Manager && !e.Time.Equal(old.Time) {
				t.Fatalf("entry of %s got a new time though it did not write", e.Manager)
			}
		}
	}
}

// TestUpdate_SameSpecWithoutDefaultsKeepsGeneration PUTs back the
// manifest a user wrote (no defaulted fields) with one more label: the
// spec compares equal once defaulted, so generation stays 1.
func TestUpdate_SameSpecWithoutDefaultsKeepsGeneration(t *testing.T) {
	ns := namespace(t)
	path := "/apis/batch/v1/namespaces/" + ns + "/cronjobs"
	if resp, body := raw(t, "POST", path, srv.AdminToken, "application/json", cronJobBody("gen", "")); resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	resp, body := raw(t, "PUT", path+"/gen", srv.AdminToken, "application/json", cronJobBody("gen", `"labels":{"new":"label"}`))
	if resp.StatusCode != 200 {
		t.Fatalf("put: %d %s", resp.StatusCode, body)
	}
	got, err := srv.Client.BatchV1().CronJobs(ns).Get(ctx(t), "gen", metav1.GetOptions{})
	if err != nil || got.Generation != 1 || got.Labels["new"] != "label" {
		t.Fatalf("after PUT of the same spec: %v generation %d labels %v", err, got.Generation, got.Labels)
	}
}

// TestGeneration_OnlyKindsThatTrackTheirSpec checks metadata.generation
// per kind as kube sets it: none for namespaces, events and leases; 1 for
// CronJobs and Jobs, bumped when their deletion starts.
func TestGeneration_OnlyKindsThatTrackTheirSpec(t *testing.T) {
	ns := namespace(t)
	nsObj, err := srv.Client.CoreV1().Namespaces().Get(ctx(t), ns, metav1.GetOptions{})
	if err != nil || nsObj.Generation != 0 {
		t.Fatalf("namespace generation %d (%v), want none", nsObj.Generation, err)
	}
	lease, err := srv.Client.CoordinationV1().Leases(ns).Create(ctx(t), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l"}}, metav1.CreateOptions{})
	if err != nil || lease.Generation != 0 {
		t.Fatalf("lease generation %d (%v), want none", lease.Generation, err)
	}
	ev, err := srv.Client.CoreV1().Events(ns).Create(ctx(t), &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e"}, InvolvedObject: corev1.ObjectReference{Namespace: ns}}, metav1.CreateOptions{})
	if err != nil || ev.Generation != 0 {
		t.Fatalf("event generation %d (%v), want none", ev.Generation, err)
	}
	cj := cronJob("held")
	cj.Finalizers = []string{"example.com/hold"}
	created, err := srv.Client.BatchV1().CronJobs(ns).Create(ctx(t), cj, metav1.CreateOptions{})
	if err != nil || created.Generation != 1 {
		t.Fatalf("cronjob generation %d (%v), want 1", created.Generation, err)
	}
	if err := srv.Client.BatchV1().CronJobs(ns).Delete(ctx(t), "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleting, err := srv.Client.BatchV1().CronJobs(ns).Get(ctx(t), "held", metav1.GetOptions{})
	if err != nil || deleting.Generation != 2 || deleting.DeletionGracePeriodSeconds == nil || *deleting.DeletionGracePeriodSeconds != 0 {
		t.Fatalf("deleting cronjob: generation %d grace %v (%v), want 2 and 0", deleting.Generation, deleting.DeletionGracePeriodSeconds, err)
	}
	deleting.Finalizers = nil
	if _, err := srv.Client.BatchV1().CronJobs(ns).Update(ctx(t), deleting, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

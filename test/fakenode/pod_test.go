package fakenode

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// A pod that runs and succeeds costs the kubelet's three status writes
// (ContainerCreating, Running, Succeeded) and no read, although the watch
// never shows the node its own writes.
func TestPodWorker_WritesEachChangeOnceWithoutConflicts(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1", ResourceVersion: "1"},
		Spec:       corev1.PodSpec{NodeName: "n", RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	client := fake.NewSimpleClientset(pod)
	// The fake tracker keeps no versions: count them, and refuse a write
	// from a version that is not the latest, as the apiserver does.
	rv := 1
	client.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.UpdateAction).GetObject().(*corev1.Pod).DeepCopy()
		if p.ResourceVersion != strconv.Itoa(rv) {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, p.Name, errors.New("stale"))
		}
		rv++
		p.ResourceVersion = strconv.Itoa(rv)
		return true, p, nil
	})
	n := New(client, Config{Name: "n", Dir: t.TempDir(), Runner: Fixed{}})
	w := newPodWorker(n, pod)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.run(ctx)
	}()
	succeeded := func() bool {
		w.writeMu.Lock()
		defer w.writeMu.Unlock()
		return w.written != nil && w.written.Status.Phase == corev1.PodSucceeded
	}
	for !succeeded() {
		select {
		case <-ctx.Done():
			t.Fatal("the pod did not succeed within 10s")
		case <-time.After(10 * time.Millisecond):
		}
	}
	w.gone()
	<-done
	var writes, reads int
	for _, a := range client.Actions() {
		switch {
		case a.GetVerb() == "update" && a.GetSubresource() == "status":
			writes++
		case a.GetVerb() == "get":
			reads++
		}
	}
	if writes != 3 || reads != 0 {
		t.Fatalf("%d status writes and %d reads, want 3 and 0", writes, reads)
	}
}

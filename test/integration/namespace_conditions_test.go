package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
)

// The conditions kube-controller-manager v1.29 writes on a namespace whose
// content holds it (a CronJob and a ConfigMap with finalizers of their
// own), then once that content is gone; read from a reference cluster.
var (
	heldConditions = []string{
		"NamespaceDeletionDiscoveryFailure|False|ResourcesDiscovered|All resources successfully discovered",
		"NamespaceDeletionGroupVersionParsingFailure|False|ParsedGroupVersions|All legacy kube types successfully parsed",
		"NamespaceDeletionContentFailure|False|ContentDeleted|All content successfully deleted, may be waiting on finalization",
		"NamespaceContentRemaining|True|SomeResourcesRemain|Some resources are remaining: configmaps. has 1 resource instances, cronjobs.batch has 1 resource instances",
		"NamespaceFinalizersRemaining|True|SomeFinalizersRemain|Some content in the namespace has finalizers remaining: example.com/hold in 2 resource instances, example.com/other in 1 resource instances",
	}
	releasedConditions = []string{
		"NamespaceDeletionDiscoveryFailure|False|ResourcesDiscovered|All resources successfully discovered",
		"NamespaceDeletionGroupVersionParsingFailure|False|ParsedGroupVersions|All legacy kube types successfully parsed",
		"NamespaceDeletionContentFailure|False|ContentDeleted|All content successfully deleted, may be waiting on finalization",
		"NamespaceContentRemaining|False|ContentRemoved|All content successfully removed",
		"NamespaceFinalizersRemaining|False|ContentHasNoFinalizers|All content-preserving finalizers finished",
	}
)

func namespaceConditions(t *testing.T, name string) (*corev1.Namespace, string) {
	t.Helper()
	ns, err := srv.Client.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, c := range ns.Status.Conditions {
		lines = append(lines, fmt.Sprintf("%s|%s|%s|%s", c.Type, c.Status, c.Reason, c.Message))
	}
	return ns, strings.Join(lines, "\n")
}

func TestNamespaceController_ReportsDeletionConditionsLikeKube(t *testing.T) {
	ctx := context.Background()
	// A finalizer of the namespace's own keeps it after the controller
	// finalizes it, so that its last conditions can be read.
	name := "conditions-" + rand.String(5)
	ns := &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes, "example.com/ns-hold"}},
	}
	if _, err := srv.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if ns, err := srv.Client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); err == nil {
			ns.Spec.Finalizers = nil
			_, _ = srv.Client.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
		}
	})
	start(t, "ns-conditions", false)
	createSuspendedCronJob(t, ns.Name, "held")
	hold := []byte(`{"metadata":{"finalizers":["example.com/hold"]}}`)
	if _, err := srv.Client.BatchV1().CronJobs(name).Patch(ctx, "held", types.MergePatchType, hold, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold", "example.com/other"}}}
	if _, err := srv.Client.CoreV1().ConfigMaps(name).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Client.CoreV1().ConfigMaps(name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "free"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	var got string
	defer func() {
		if t.Failed() {
			t.Logf("last conditions seen:\n%s", got)
		}
	}()
	waitFor(t, "the conditions of held content", func() (bool, error) {
		_, got = namespaceConditions(t, name)
		return got == strings.Join(heldConditions, "\n"), nil
	})
	if _, err := srv.Client.CoreV1().ConfigMaps(name).Get(ctx, "free", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the ConfigMap without finalizers is still there: %v", err)
	}

	release := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := srv.Client.BatchV1().CronJobs(name).Patch(ctx, "held", types.MergePatchType, release, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Client.CoreV1().ConfigMaps(name).Patch(ctx, "held", types.MergePatchType, release, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	var last *corev1.Namespace
	waitFor(t, "the conditions of emptied content and the finalizer removed", func() (bool, error) {
		last, got = namespaceConditions(t, name)
		return got == strings.Join(releasedConditions, "\n") && len(last.Spec.Finalizers) == 1, nil
	})
	if last.Spec.Finalizers[0] != "example.com/ns-hold" || last.Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("namespace after finalization: %+v %+v", last.Spec, last.Status)
	}
	// A terminating namespace has a deletionTimestamp and, unlike other
	// kinds waiting for finalizers, no deletionGracePeriodSeconds.
	if last.DeletionTimestamp == nil || last.DeletionGracePeriodSeconds != nil {
		t.Fatalf("namespace deletion fields: timestamp %v, grace period %v", last.DeletionTimestamp, last.DeletionGracePeriodSeconds)
	}
}

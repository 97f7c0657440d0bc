package integration

import (
	"context"
	"path/filepath"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cronplane/cronplane/pkg/certs"
)

// nodeClient is a client with a certificate of the server's CA for the
// node name (user system:node:<name> in system:nodes), as a kubelet has.
func nodeClient(t *testing.T, name string) kubernetes.Interface {
	t.Helper()
	f, err := certs.EnsureClient(filepath.Join(srv.DataDir(), "certs"), "test-"+name, "system:node:"+name, []string{"system:nodes"})
	if err != nil {
		t.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: srv.CAData, CertFile: f.CertFile, KeyFile: f.KeyFile}})
}

// wantRefusal checks a 403 with kube's message.
func wantRefusal(t *testing.T, what string, err error, message string) {
	t.Helper()
	status, ok := err.(apierrors.APIStatus)
	if !ok || !apierrors.IsForbidden(err) || status.Status().Message != message {
		t.Errorf("%s: got %v, want 403 %q", what, err, message)
	}
}

func TestNodeAuthorization_NodeReachesOnlyWhatItsPodsNeed(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "nodeauthz")
	a, b := "node-a-"+ns, "node-b-"+ns
	for _, n := range []string{a, b} {
		if _, err := srv.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Client.CoreV1().Nodes().Delete(context.Background(), n, metav1.DeleteOptions{}) })
	}
	if _, err := srv.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	pods := map[string]*corev1.Pod{}
	for _, p := range []struct{ pod, node, secret string }{{"pa", a, "sa"}, {"pb", b, "sb"}} {
		if _, err := srv.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: p.secret}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod, err := srv.Client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: p.pod},
			Spec: corev1.PodSpec{NodeName: p.node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
				Volumes: []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: p.secret}}}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods[p.pod] = pod
	}
	kubelet := nodeClient(t, a)

	// Reads: its pod's secret (once the graph has seen the pod), not the
	// other node's pod's.
	waitFor(t, "the secret of its pod readable", func() (bool, error) {
		_, err := kubelet.CoreV1().Secrets(ns).Get(ctx, "sa", metav1.GetOptions{})
		return err == nil, nil
	})
	_, err := kubelet.CoreV1().Secrets(ns).Get(ctx, "sb", metav1.GetOptions{})
	wantRefusal(t, "the other pod's secret", err,
		`secrets "sb" is forbidden: User "system:node:`+a+`" cannot get resource "secrets" in API group "" in the namespace "`+ns+`": no relationship found between node '`+a+`' and this object`)
	_, err = kubelet.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	wantRefusal(t, "all secrets", err,
		`secrets is forbidden: User "system:node:`+a+`" cannot list resource "secrets" in API group "" in the namespace "`+ns+`": No Object name found`)

	// Its node's status, not the other's.
	node, err := kubelet.CoreV1().Nodes().Get(ctx, a, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if _, err := kubelet.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Errorf("its node's status: %v", err)
	}
	other, err := kubelet.CoreV1().Nodes().Get(ctx, b, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = kubelet.CoreV1().Nodes().UpdateStatus(ctx, other, metav1.UpdateOptions{})
	wantRefusal(t, "the other node's status", err, `nodes "`+b+`" is forbidden: node "`+a+`" is not allowed to modify node "`+b+`"`)

	// Its pod's status, not the other node's pod's.
	for name, want := range map[string]string{"pa": "", "pb": `pods "pb" is forbidden: node "` + a + `" can only update pod status for pods with spec.nodeName set to itself`} {
		pod := pods[name].DeepCopy()
		pod.Status.Phase = corev1.PodRunning
		_, err := kubelet.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		if want == "" && err != nil {
			t.Errorf("its pod's status: %v", err)
		}
		if want != "" {
			wantRefusal(t, "the other node's pod's status", err, want)
		}
	}

	// Its lease in kube-node-lease, not another's.
	lease, err := kubelet.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: a}}, metav1.CreateOptions{})
	if err != nil {
		t.Errorf("its lease: %v", err)
	} else {
		t.Cleanup(func() {
			_ = srv.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(context.Background(), lease.Name, metav1.DeleteOptions{})
		})
	}
	_, err = kubelet.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: b}}, metav1.CreateOptions{})
	wantRefusal(t, "another node's lease", err, `leases.coordination.k8s.io "`+b+`" is forbidden: can only access node lease with the same name as the requesting node`)

	// A token for its pod's account, bound to that pod; not one bound to
	// the other node's pod.
	for name, want := range map[string]string{"pa": "", "pb": `serviceaccounts "default" is forbidden: node requested token bound to a pod scheduled on a different node`} {
		_, err := kubelet.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "default", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: name, UID: pods[name].UID},
		}}, metav1.CreateOptions{})
		if want == "" && err != nil {
			t.Errorf("a token bound to its pod: %v", err)
		}
		if want != "" {
			wantRefusal(t, "a token bound to the other node's pod", err, want)
		}
	}

	// Deleting its pod, not the other node's.
	err = kubelet.CoreV1().Pods(ns).Delete(ctx, "pb", metav1.DeleteOptions{})
	wantRefusal(t, "a delete of the other node's pod", err, `pods "pb" is forbidden: node "`+a+`" can only delete pods with spec.nodeName set to itself`)
	if err := kubelet.CoreV1().Pods(ns).Delete(ctx, "pa", *metav1.NewDeleteOptions(0)); err != nil {
		t.Errorf("a delete of its pod: %v", err)
	}
	// Once its pod is gone, so is the secret's relation to the node.
	waitFor(t, "the secret of its deleted pod refused", func() (bool, error) {
		_, err := kubelet.CoreV1().Secrets(ns).Get(ctx, "sa", metav1.GetOptions{})
		return apierrors.IsForbidden(err), nil
	})
}

package apiserver_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podNamespace is a new namespace with the service account "default",
// which the controller-manager would create and without which the
// ServiceAccount admission plugin refuses pods.
func podNamespace(t *testing.T) string {
	t.Helper()
	ns := namespace(t)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if _, err := srv.Client.CoreV1().ServiceAccounts(ns).Create(ctx(t), sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return ns
}

func busyboxPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}
}

func TestPods_CreateDefaultsAndStatus(t *testing.T) {
	ns := podNamespace(t)
	pods := srv.Client.CoreV1().Pods(ns)
	p := busyboxPod("web")
	p.Status.Phase = corev1.PodRunning
	created, err := pods.Create(ctx(t), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := created.Spec.Containers[0]
	if c.ImagePullPolicy != corev1.PullAlways || c.TerminationMessagePath != "/dev/termination-log" ||
		created.Spec.RestartPolicy != corev1.RestartPolicyAlways || *created.Spec.TerminationGracePeriodSeconds != 30 ||
		created.Spec.SchedulerName != "default-scheduler" || !*created.Spec.EnableServiceLinks {
		t.Fatalf("defaults: %+v", created.Spec)
	}
	if tol := created.Spec.Tolerations; *created.Spec.Priority != 0 || *created.Spec.PreemptionPolicy != corev1.PreemptLowerPriority ||
		len(tol) != 2 || tol[0].Key != corev1.TaintNodeNotReady || tol[1].Key != corev1.TaintNodeUnreachable || *tol[1].TolerationSeconds != 300 {
		t.Fatalf("admission defaults: priority %v, policy %v, tolerations %+v", created.Spec.Priority, created.Spec.PreemptionPolicy, tol)
	}
	if created.Status.Phase != corev1.PodPending || created.Status.QOSClass != corev1.PodQOSBestEffort || created.Generation != 0 {
		t.Fatalf("status %+v, generation %d", created.Status, created.Generation)
	}
	created.Status.Phase = corev1.PodRunning
	created.Status.PodIP = "10.0.0.7"
	running, err := pods.UpdateStatus(ctx(t), created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if running.Status.Phase != corev1.PodRunning || len(running.Status.PodIPs) != 1 || running.Status.PodIPs[0].IP != "10.0.0.7" {
		t.Fatalf("status after write: %+v", running.Status)
	}
	running.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.7"}, {IP: "10.0.0.8"}}
	_, err = pods.UpdateStatus(ctx(t), running, metav1.UpdateOptions{})
	if se := wantStatus(t, err, 422, metav1.StatusReasonInvalid); !strings.Contains(se.Message, "status.podIPs: Invalid value: []core.PodIP{") {
		t.Fatalf("message %q", se.Message)
	}
}

// The messages are kube-apiserver v1.29's for the same requests.
func TestPods_InvalidCreateAndForbiddenUpdates(t *testing.T) {
	ns := podNamespace(t)
	pods := srv.Client.CoreV1().Pods(ns)
	bad := busyboxPod("bad")
	bad.Spec.Containers[0].Name = "Bad"
	_, err := pods.Create(ctx(t), bad, metav1.CreateOptions{})
	if se := wantStatus(t, err, 422, metav1.StatusReasonInvalid); !strings.HasPrefix(se.Message, `Pod "bad" is invalid: spec.containers[0].name: Invalid value: "Bad": a lowercase RFC 1123 label`) {
		t.Fatalf("message %q", se.Message)
	}
	p, err := pods.Create(ctx(t), busyboxPod("web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Spec.Containers[0].Image = "busybox:2"
	p.Labels = map[string]string{"tier": "web"}
	if p, err = pods.Update(ctx(t), p, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("image and labels: %v", err)
	}
	p.Spec.RestartPolicy = corev1.RestartPolicyNever
	_, err = pods.Update(ctx(t), p, metav1.UpdateOptions{})
	if se := wantStatus(t, err, 422, metav1.StatusReasonInvalid); !strings.HasPrefix(se.Message, "Pod \"web\" is invalid: spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`") ||
		!regexp.MustCompile(`\+[\s\x{a0}]+RestartPolicy:[\s\x{a0}]+"Never",`).MatchString(se.Message) {
		t.Fatalf("message %q", se.Message)
	}
}

// TestPods_GracefulDeleteOfABoundPod binds a pod, as a scheduler does,
// and deletes it as kubectl and then the node agent do: the first delete
// marks it for its grace period, a second with gracePeriodSeconds=0
// removes it; watchers see MODIFIED, MODIFIED, DELETED. An unbound pod
// goes at once, marked first.
func TestPods_BindingAndGracefulDelete(t *testing.T) {
	ns := podNamespace(t)
	pods := srv.Client.CoreV1().Pods(ns)
	for _, name := range []string{"bound", "unbound"} {
		if _, err := pods.Create(ctx(t), busyboxPod(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bind := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "bound"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}
	if err := pods.Bind(ctx(t), bind, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := pods.Bind(ctx(t), bind, metav1.CreateOptions{})
	if se := wantStatus(t, err, 409, metav1.StatusReasonConflict); se.Message != `Operation cannot be fulfilled on pods/binding "bound": pod bound is already assigned to node "n1"` {
		t.Fatalf("message %q", se.Message)
	}
	bound, err := pods.Get(ctx(t), "bound", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := bound.Status.Conditions; bound.Spec.NodeName != "n1" || len(c) != 1 || c[0].Type != corev1.PodScheduled || c[0].Status != corev1.ConditionTrue {
		t.Fatalf("bound pod: node %q conditions %+v", bound.Spec.NodeName, c)
	}
	list, err := pods.List(ctx(t), metav1.ListOptions{FieldSelector: "spec.nodeName=n1"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "bound" {
		t.Fatalf("field selector: %v %+v", err, list)
	}

	w, err := pods.Watch(ctx(t), metav1.ListOptions{ResourceVersion: bound.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := pods.Delete(ctx(t), "bound", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	marked, err := pods.Get(ctx(t), "bound", metav1.GetOptions{})
	if err != nil || marked.DeletionTimestamp == nil || *marked.DeletionGracePeriodSeconds != 30 {
		t.Fatalf("after the first delete: %v %+v", err, marked)
	}
	// The node agent reports the pod stopping: it stays for its grace
	// period.
	marked.Status.Phase = corev1.PodRunning
	if _, err := pods.UpdateStatus(ctx(t), marked, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("status write during the grace period: %v", err)
	}
	zero := int64(0)
	if err := pods.Delete(ctx(t), "bound", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx(t), "unbound", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var got []string
	timeout := time.After(10 * time.Second)
	for len(got) < 6 {
		select {
		case e := <-w.ResultChan():
			p := e.Object.(*corev1.Pod)
			grace := "-"
			if g := p.DeletionGracePeriodSeconds; g != nil {
				grace = time.Duration(*g * int64(time.Second)).String()
			}
			got = append(got, string(e.Type)+" "+p.Name+" "+grace)
		case <-timeout:
			t.Fatalf("events so far: %v", got)
		}
	}
	want := []string{"MODIFIED bound 30s", "MODIFIED bound 30s", "MODIFIED bound 0s", "DELETED bound 0s", "MODIFIED unbound 0s", "DELETED unbound 0s"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("events %v, want %v", got, want)
	}
}

// TestPods_KubectlGetAsKube compares kubectl's table of a pending pod with
// kube's, wide too.
func TestPods_KubectlGetAsKube(t *testing.T) {
	ns := podNamespace(t)
	mustKubectl(t, "-n", ns, "run", "p1", "--image=busybox")
	ages := regexp.MustCompile(`\b\d+s\b`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "NAME   READY   STATUS    RESTARTS   AGE\np1     0/1     Pending   0          Xs\n"},
		{[]string{"-o", "wide"}, "NAME   READY   STATUS    RESTARTS   AGE   IP       NODE     NOMINATED NODE   READINESS GATES\np1     0/1     Pending   0          Xs    <none>   <none>   <none>           <none>\n"},
	} {
		out := mustKubectl(t, append([]string{"-n", ns, "get", "pods"}, tc.args...)...)
		if got := ages.ReplaceAllString(out, "Xs"); got != tc.want {
			t.Fatalf("kubectl get pods %v:\n%s\nwant:\n%s", tc.args, got, tc.want)
		}
	}
}

// TestPods_Eviction evicts a pod on a node: no budget can refuse it (none
// are served), the pod is marked as a disruption target and deleted
// gracefully, as kube does when no budget covers it.
func TestPods_Eviction(t *testing.T) {
	ns := podNamespace(t)
	pods := srv.Client.CoreV1().Pods(ns)
	p := busyboxPod("evicted")
	p.Spec.NodeName = "n1"
	if _, err := pods.Create(ctx(t), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := srv.Client.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name("evicted").SubResource("eviction").
		Body(&policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "other"}}).Do(ctx(t)).Error()
	if se := wantStatus(t, err, 400, metav1.StatusReasonBadRequest); se.Message != "name in URL does not match name in Eviction object" {
		t.Fatalf("message %q", se.Message)
	}
	if err := pods.EvictV1(ctx(t), &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "evicted"}}); err != nil {
		t.Fatal(err)
	}
	got, err := pods.Get(ctx(t), "evicted", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := got.Status.Conditions
	if got.DeletionTimestamp == nil || *got.DeletionGracePeriodSeconds != 30 || len(c) != 1 || c[0].Type != corev1.DisruptionTarget || c[0].Reason != "EvictionByEvictionAPI" {
		t.Fatalf("evicted pod: %+v %+v", got.ObjectMeta, c)
	}
}

// TestPods_ServiceAccountAdmission: a new pod runs as its namespace's
// "default" account with the token volume mounted, as on kube, and a
// missing account is refused in kube's words.
func TestPods_ServiceAccountAdmission(t *testing.T) {
	ns := podNamespace(t)
	pods := srv.Client.CoreV1().Pods(ns)
	created, err := pods.Create(ctx(t), busyboxPod("web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vols, mounts := created.Spec.Volumes, created.Spec.Containers[0].VolumeMounts
	if created.Spec.ServiceAccountName != "default" || len(vols) != 1 || !strings.HasPrefix(vols[0].Name, "kube-api-access-") ||
		len(mounts) != 1 || mounts[0].Name != vols[0].Name || mounts[0].MountPath != "/var/run/secrets/kubernetes.io/serviceaccount" || !mounts[0].ReadOnly {
		t.Fatalf("account %q volumes %+v mounts %+v", created.Spec.ServiceAccountName, vols, mounts)
	}
	p := busyboxPod("other")
	p.Spec.ServiceAccountName = "nope"
	_, err = pods.Create(ctx(t), p, metav1.CreateOptions{})
	if se := wantStatus(t, err, 403, metav1.StatusReasonForbidden); se.Message != `pods "other" is forbidden: error looking up service account `+ns+`/nope: serviceaccount "nope" not found` {
		t.Fatalf("message %q", se.Message)
	}
}

// TestNodes_RegisterCordonAndSelect registers a node as a node agent
// does, with its status: the status stays, the node is tainted not ready
// until a controller sees it ready, and its provider ID is set once.
func TestNodes_RegisterCordonAndSelect(t *testing.T) {
	nodes := srv.Client.CoreV1().Nodes()
	const name = "node-register"
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node-role.kubernetes.io/worker": ""}},
		Spec:       corev1.NodeSpec{ProviderID: "test://" + name},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.29.15"},
		},
	}
	created, err := nodes.Create(ctx(t), n, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nodes.Delete(ctx(t), name, metav1.DeleteOptions{}) })
	if len(created.Status.Conditions) != 1 || len(created.Spec.Taints) != 1 || created.Spec.Taints[0].Key != corev1.TaintNodeNotReady {
		t.Fatalf("registered node: %+v %+v", created.Spec, created.Status.Conditions)
	}
	created.Spec.Unschedulable = true
	created.Status.Conditions = nil
	cordoned, err := nodes.Update(ctx(t), created, metav1.UpdateOptions{})
	if err != nil || !cordoned.Spec.Unschedulable || len(cordoned.Status.Conditions) != 1 {
		t.Fatalf("cordon: %v %+v", err, cordoned)
	}
	list, err := nodes.List(ctx(t), metav1.ListOptions{FieldSelector: "spec.unschedulable=true,metadata.name=" + name})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("field selector: %v %+v", err, list)
	}
	out := mustKubectl(t, "get", "node", name)
	if want := regexp.MustCompile(name + `\s+Ready,SchedulingDisabled\s+worker\s+\d+s\s+v1.29.15\n$`); !want.MatchString(out) {
		t.Fatalf("kubectl get node:\n%s", out)
	}
	cordoned.Spec.ProviderID = "test://other"
	_, err = nodes.Update(ctx(t), cordoned, metav1.UpdateOptions{})
	if se := wantStatus(t, err, 422, metav1.StatusReasonInvalid); se.Message != `Node "`+name+`" is invalid: spec.providerID: Forbidden: node updates may not change providerID except from "" to valid` {
		t.Fatalf("message %q", se.Message)
	}
}

package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/cronplane/cronplane/pkg/certs"
	"github.com/cronplane/cronplane/pkg/nodeserver"
	"github.com/cronplane/cronplane/test/fakenode"
)

// fakeNodeTaint keeps the pods of other tests off the fake nodes; the
// pods of fake-node tests tolerate it.
const fakeNodeTaint = "cronplane.test/fakenode"

// runFakeNode runs a fake node for the test with quick restarts, until
// the test ends, and deletes its Node then.
func runFakeNode(t *testing.T, runner fakenode.Runner) *fakenode.Node {
	t.Helper()
	return runFakeNodeWith(t, runner, 0)
}

// runFakeNodeWith is runFakeNode with the node's HTTPS port.
func runFakeNodeWith(t *testing.T, runner fakenode.Runner, kubeletPort int32) *fakenode.Node {
	t.Helper()
	cfg := fakenode.DefaultConfig("fake-" + rand.String(5))
	cfg.Runner, cfg.Dir, cfg.KubeletPort = runner, t.TempDir(), kubeletPort
	cfg.RestartBackoff, cfg.MaxRestartBackoff = 100*time.Millisecond, time.Second
	cfg.Taints = []corev1.Taint{{Key: fakeNodeTaint, Effect: corev1.TaintEffectNoSchedule}}
	n := fakenode.New(srv.Client, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := n.Run(ctx); err != nil && ctx.Err() == nil {
			t.Errorf("fake node: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = srv.Client.CoreV1().Nodes().Delete(context.Background(), n.Name(), metav1.DeleteOptions{})
		_ = srv.Client.CoordinationV1().Leases(fakenode.LeaseNamespace).Delete(context.Background(), n.Name(), metav1.DeleteOptions{})
	})
	select {
	case <-n.Ready():
	case <-time.After(20 * time.Second):
		t.Fatal("the fake node did not register")
	}
	return n
}

// onFakeNode is a pod spec the scheduler may place on the fake nodes.
func onFakeNode(policy corev1.RestartPolicy, c corev1.Container) corev1.PodSpec {
	if c.Name == "" {
		c.Name = "c"
	}
	if c.Image == "" {
		c.Image = "busybox"
	}
	return corev1.PodSpec{
		RestartPolicy: policy, Containers: []corev1.Container{c},
		Tolerations: []corev1.Toleration{{Key: fakeNodeTaint, Operator: corev1.TolerationOpExists}},
	}
}

func waitLong(t *testing.T, what string, timeout time.Duration, cond func() (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) { return cond() })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func jobCondition(t *testing.T, ns, name string, typ batchv1.JobConditionType) *batchv1.JobCondition {
	t.Helper()
	job, err := srv.Client.BatchV1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range job.Status.Conditions {
		if c.Type == typ && c.Status == corev1.ConditionTrue {
			return &c
		}
	}
	return nil
}

func TestFakeNode_RegistersTheNodeAndItsLeaseAsTheKubeletDoes(t *testing.T) {
	start(t, "fakenode-register", false)
	n := runFakeNode(t, fakenode.Fixed{})
	ctx := context.Background()
	waitFor(t, "the node schedulable", func() (bool, error) {
		node, err := srv.Client.CoreV1().Nodes().Get(ctx, n.Name(), metav1.GetOptions{})
		return err == nil && !hasTaint(node, "node.kubernetes.io/not-ready", corev1.TaintEffectNoSchedule), err
	})
	node, err := srv.Client.CoreV1().Nodes().Get(ctx, n.Name(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.Labels["kubernetes.io/hostname"] != n.Name() || node.Labels["kubernetes.io/os"] != "linux" || node.Labels["kubernetes.io/arch"] == "" {
		t.Fatalf("labels %v", node.Labels)
	}
	if !hasTaint(node, fakeNodeTaint, corev1.TaintEffectNoSchedule) {
		t.Fatalf("taints %v lack the registered one", node.Spec.Taints)
	}
	if c, a := node.Status.Capacity, node.Status.Allocatable; c.Cpu().String() != "4" || c.Memory().String() != "8Gi" || c.Pods().Value() != 110 || a.Memory().Cmp(*c.Memory()) >= 0 {
		t.Fatalf("capacity %v allocatable %v", c, a)
	}
	types := map[corev1.NodeConditionType]corev1.ConditionStatus{}
	for _, c := range node.Status.Conditions {
		types[c.Type] = c.Status
	}
	if types[corev1.NodeReady] != corev1.ConditionTrue || types[corev1.NodeMemoryPressure] != corev1.ConditionFalse || len(types) != 4 {
		t.Fatalf("conditions %+v", node.Status.Conditions)
	}
	if len(node.Status.Addresses) != 2 || node.Status.Addresses[0] != (corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}) {
		t.Fatalf("addresses %v", node.Status.Addresses)
	}
	if node.Status.NodeInfo.KubeletVersion != fakenode.KubeletVersion {
		t.Fatalf("nodeInfo %+v", node.Status.NodeInfo)
	}
	lease, err := srv.Client.CoordinationV1().Leases(fakenode.LeaseNamespace).Get(ctx, n.Name(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ptr.Deref(lease.Spec.HolderIdentity, "") != n.Name() || ptr.Deref(lease.Spec.LeaseDurationSeconds, 0) != 40 ||
		len(lease.OwnerReferences) != 1 || lease.OwnerReferences[0].UID != node.UID {
		t.Fatalf("lease %+v", lease)
	}
}

func TestFakeNode_JobOfThreeCompletionsCompletes(t *testing.T) {
	ns := newNamespace(t, "fakenode-complete")
	start(t, "fakenode-complete", false)
	runFakeNode(t, fakenode.Fixed{Duration: 100 * time.Millisecond})
	three := int32(3)
	if _, err := srv.Client.BatchV1().Jobs(ns).Create(context.Background(), &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "three"},
		Spec:       batchv1.JobSpec{Completions: &three, Parallelism: &three, Template: corev1.PodTemplateSpec{Spec: onFakeNode(corev1.RestartPolicyNever, corev1.Container{})}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the Job Complete", func() (bool, error) { return jobCondition(t, ns, "three", batchv1.JobComplete) != nil, nil })
	pods := podsOf(t, ns)
	if len(pods) != 3 {
		t.Fatalf("%d pods, want 3", len(pods))
	}
	for _, p := range pods {
		s := p.Status
		if s.Phase != corev1.PodSucceeded || len(s.ContainerStatuses) != 1 || s.StartTime == nil || s.PodIP != "127.0.0.1" || s.HostIP != "127.0.0.1" {
			t.Fatalf("pod %s status %+v", p.Name, s)
		}
		term := s.ContainerStatuses[0].State.Terminated
		if term == nil || term.ExitCode != 0 || term.Reason != "Completed" || term.FinishedAt.IsZero() || s.ContainerStatuses[0].ImageID == "" {
			t.Fatalf("pod %s container %+v", p.Name, s.ContainerStatuses[0])
		}
		for _, c := range s.Conditions {
			if c.Type == corev1.PodReady && (c.Status != corev1.ConditionFalse || c.Reason != "PodCompleted") {
				t.Fatalf("pod %s Ready condition %+v", p.Name, c)
			}
		}
	}
}

// A pod that fails is replaced after kube's 10 s back-off; with
// backoffLimit 1 the second failure fails the Job.
func TestFakeNode_FailingPodsAreReplacedUntilTheBackoffLimit(t *testing.T) {
	ns := newNamespace(t, "fakenode-fail")
	start(t, "fakenode-fail", false)
	runFakeNode(t, fakenode.Fixed{ExitCode: 3})
	if _, err := srv.Client.BatchV1().Jobs(ns).Create(context.Background(), &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "fails"},
		Spec:       batchv1.JobSpec{BackoffLimit: ptr.To(int32(1)), Template: corev1.PodTemplateSpec{Spec: onFakeNode(corev1.RestartPolicyNever, corev1.Container{})}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitLong(t, "the Job Failed", 40*time.Second, func() (bool, error) { return jobCondition(t, ns, "fails", batchv1.JobFailed) != nil, nil })
	if c := jobCondition(t, ns, "fails", batchv1.JobFailed); c.Reason != "BackoffLimitExceeded" {
		t.Fatalf("Failed condition %+v", c)
	}
	pods := podsOf(t, ns)
	if len(pods) != 2 {
		t.Fatalf("%d pods, want 2", len(pods))
	}
	for _, p := range pods {
		term := p.Status.ContainerStatuses[0].State.Terminated
		if p.Status.Phase != corev1.PodFailed || term == nil || term.ExitCode != 3 || term.Reason != "Error" {
			t.Fatalf("pod %s status %+v", p.Name, p.Status)
		}
	}
}

// createPodOnFakeNode creates a pod the test keeps with a finalizer, so
// that its last status can be read after its deletion.
func createPodOnFakeNode(t *testing.T, ns string, spec corev1.PodSpec) *corev1.Pod {
	t.Helper()
	// The ServiceAccount admission wants the namespace's default account.
	waitFor(t, "the default ServiceAccount", func() (bool, error) {
		_, err := srv.Client.CoreV1().ServiceAccounts(ns).Get(context.Background(), "default", metav1.GetOptions{})
		return err == nil, nil
	})
	pod, err := srv.Client.CoreV1().Pods(ns).Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Finalizers: []string{"cronplane.test/keep"}}, Spec: spec,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = srv.Client.CoreV1().Pods(ns).Patch(context.Background(), "p", "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	return pod
}

func getPod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	pod, err := srv.Client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// A graceful deletion stops the container, writes its terminated status
// and is confirmed with a 0-second delete.
func TestFakeNode_ConfirmsAGracefulDeletionWithAZeroSecondDelete(t *testing.T) {
	ns := newNamespace(t, "fakenode-delete")
	start(t, "fakenode-delete", false)
	runFakeNode(t, fakenode.Func(func(*fakenode.Container) (time.Duration, int32) { return -1, 0 }))
	createPodOnFakeNode(t, ns, onFakeNode(corev1.RestartPolicyAlways, corev1.Container{}))
	waitFor(t, "the pod Running", func() (bool, error) { return getPod(t, ns, "p").Status.Phase == corev1.PodRunning, nil })
	if err := srv.Client.CoreV1().Pods(ns).Delete(context.Background(), "p", metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(30))}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deletion confirmed", func() (bool, error) {
		return ptr.Deref(getPod(t, ns, "p").DeletionGracePeriodSeconds, -1) == 0, nil
	})
	pod := getPod(t, ns, "p")
	term := pod.Status.ContainerStatuses[0].State.Terminated
	if pod.Status.Phase != corev1.PodFailed || term == nil || term.ExitCode != fakenode.ExitCodeTerminated {
		t.Fatalf("status after deletion %+v", pod.Status)
	}
}

func TestFakeNode_FailsAPodPastItsActiveDeadline(t *testing.T) {
	ns := newNamespace(t, "fakenode-deadline")
	start(t, "fakenode-deadline", false)
	runFakeNode(t, fakenode.Func(func(*fakenode.Container) (time.Duration, int32) { return -1, 0 }))
	spec := onFakeNode(corev1.RestartPolicyNever, corev1.Container{})
	spec.ActiveDeadlineSeconds = ptr.To(int64(1))
	createPodOnFakeNode(t, ns, spec)
	waitFor(t, "the pod Failed", func() (bool, error) { return getPod(t, ns, "p").Status.Phase == corev1.PodFailed, nil })
	if s := getPod(t, ns, "p").Status; s.Reason != "DeadlineExceeded" || s.ContainerStatuses[0].State.Terminated == nil {
		t.Fatalf("status %+v", s)
	}
}

// OnFailure restarts the container in place: the same pod, restartCount
// 1, the failed run kept as lastState.
func TestFakeNode_RestartsAFailedContainerInPlace(t *testing.T) {
	ns := newNamespace(t, "fakenode-restart")
	start(t, "fakenode-restart", false)
	runFakeNode(t, fakenode.Func(func(c *fakenode.Container) (time.Duration, int32) {
		if c.RestartCount == 0 {
			return 0, 1
		}
		return 0, 0
	}))
	createPodOnFakeNode(t, ns, onFakeNode(corev1.RestartPolicyOnFailure, corev1.Container{}))
	waitFor(t, "the pod Succeeded", func() (bool, error) { return getPod(t, ns, "p").Status.Phase == corev1.PodSucceeded, nil })
	cs := getPod(t, ns, "p").Status.ContainerStatuses[0]
	if cs.RestartCount != 1 || cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 1 || cs.State.Terminated.ExitCode != 0 {
		t.Fatalf("container status %+v", cs)
	}
}

// In exec mode the container's command runs with its environment and its
// emptyDir at the mountPath, and its output is kept in its log file.
func TestFakeNode_ExecRunsTheCommandWithItsEnvAndVolume(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("exec mode mounts volumes in a private mount namespace: root only")
	}
	ns := newNamespace(t, "fakenode-exec")
	start(t, "fakenode-exec", false)
	n := runFakeNode(t, fakenode.NewExec(srv.Client))
	mount := "/tmp/fakenode-it-" + rand.String(5)
	t.Cleanup(func() { _ = os.Remove(mount) })
	spec := onFakeNode(corev1.RestartPolicyNever, corev1.Container{
		Command: []string{"sh", "-c", `echo "$POD/$(WHO)" > ` + mount + `/f && cat ` + mount + `/f`},
		Env: []corev1.EnvVar{
			{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "WHO", Value: "$(POD)-x"},
		},
		VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: mount}},
	})
	spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	pod := createPodOnFakeNode(t, ns, spec)
	var logs []byte
	waitFor(t, "the pod Succeeded", func() (bool, error) {
		p := getPod(t, ns, "p")
		if p.Status.Phase == corev1.PodFailed {
			t.Fatalf("pod failed: %+v", p.Status.ContainerStatuses)
		}
		if p.Status.Phase != corev1.PodSucceeded {
			return false, nil
		}
		var err error
		logs, err = os.ReadFile(filepath.Join(n.PodDir(pod), "c", "0.log"))
		return err == nil, nil
	})
	// $(WHO) is the kubelet's expansion, $POD the shell's.
	if !strings.HasSuffix(strings.TrimSpace(string(logs)), " stdout F p/p-x") {
		t.Fatalf("log %q", logs)
	}
	// The volume was mounted in the container's namespace only.
	if entries, err := os.ReadDir(mount); err != nil || len(entries) != 0 {
		t.Fatalf("the host's %s: %v %v", mount, entries, err)
	}
	if err := srv.Client.CoreV1().Pods(ns).Delete(context.Background(), "p", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

// In exec mode the container's process is PID 1 of its namespace, as in a
// container: sh ignores the SIGTERM of a deletion, and is killed (137)
// once the grace period is over.
func TestFakeNode_ExecKillsAShellThatIgnoresSIGTERMAfterTheGracePeriod(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("exec mode isolates processes in PID namespaces as root only")
	}
	ns := newNamespace(t, "fakenode-pid1")
	start(t, "fakenode-pid1", false)
	runFakeNode(t, fakenode.NewExec(srv.Client))
	spec := onFakeNode(corev1.RestartPolicyNever, corev1.Container{Command: []string{"sh", "-c", "sleep 1000; exit 3"}})
	spec.TerminationGracePeriodSeconds = ptr.To(int64(1))
	createPodOnFakeNode(t, ns, spec)
	waitFor(t, "the pod Running", func() (bool, error) { return getPod(t, ns, "p").Status.Phase == corev1.PodRunning, nil })
	if err := srv.Client.CoreV1().Pods(ns).Delete(context.Background(), "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deletion confirmed", func() (bool, error) {
		return ptr.Deref(getPod(t, ns, "p").DeletionGracePeriodSeconds, -1) == 0, nil
	})
	if term := getPod(t, ns, "p").Status.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != fakenode.ExitCodeKilled {
		t.Fatalf("container state %+v, want killed", term)
	}
}

func TestFakeNode_ServesItsContainersLogsThroughPodsLog(t *testing.T) {
	ns := newNamespace(t, "fakenode-logs")
	start(t, "fakenode-logs", false)
	// Each run writes one line in the kubelet's log format and exits 1,
	// so the pod restarts once and has a previous run.
	runner := fakenode.Func(func(c *fakenode.Container) (time.Duration, int32) {
		line := fmt.Sprintf("%s stdout F run %d\n", time.Now().UTC().Format(time.RFC3339Nano), c.RestartCount)
		if f, err := os.OpenFile(c.LogPath, os.O_APPEND|os.O_WRONLY, 0); err == nil {
			_, _ = f.WriteString(line)
			_ = f.Close()
		}
		if c.RestartCount == 0 {
			return 0, 1
		}
		return 0, 0
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := runFakeNodeWith(t, runner, int32(l.Addr().(*net.TCPAddr).Port))
	files, err := certs.EnsureCert(t.TempDir(), certs.Spec{Name: "node", CommonName: n.Name(), Server: true})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(files.CertFile, files.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	clientCAs := x509.NewCertPool()
	clientCAs.AppendCertsFromPEM(srv.CAData)
	server, err := nodeserver.New(nodeserver.Config{NodeName: n.Name(), Certificate: cert, ClientCAs: clientCAs, Client: srv.Client, Logs: n})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- server.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("node server: %v", err)
		}
	})

	pod := createPodOnFakeNode(t, ns, onFakeNode(corev1.RestartPolicyOnFailure, corev1.Container{}))
	waitLong(t, "the pod to succeed after one restart", 30*time.Second, func() (bool, error) {
		p, err := srv.Client.CoreV1().Pods(ns).Get(context.Background(), pod.Name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodSucceeded, err
	})
	for _, tc := range []struct {
		previous bool
		want     string
	}{{false, "run 1\n"}, {true, "run 0\n"}} {
		got, err := readLog(context.Background(), ns, pod.Name, &corev1.PodLogOptions{Previous: tc.previous})
		if err != nil || got != tc.want {
			t.Errorf("previous=%v: %q, %v; want %q", tc.previous, got, err, tc.want)
		}
	}
}

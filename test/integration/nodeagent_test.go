package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/cronplane/cronplane/pkg/certs"
	"github.com/cronplane/cronplane/pkg/nodeagent"
	"github.com/cronplane/cronplane/pkg/nodeagent/engine"
	"github.com/cronplane/cronplane/pkg/nodeserver"
)

// agentImage is the image the node agent tests run: busybox, built here
// FROM scratch with the machine's static busybox.
const agentImage = "cronplane-test/busybox:nodeagent"

// needEngine skips the test without a Docker engine or a static busybox,
// and builds agentImage.
func needEngine(t *testing.T) *engine.Docker {
	t.Helper()
	if testing.Short() {
		t.Skip("runs containers")
	}
	if err := exec.Command("docker", "version").Run(); err != nil {
		t.Skipf("no Docker engine answers (docker version: %v): the node agent runs containers", err)
	}
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		t.Skip("no busybox on this machine (apt-get install busybox-static) to build the test image from")
	}
	if out, err := exec.Command("file", "-L", busybox).Output(); err == nil && !strings.Contains(string(out), "statically linked") {
		t.Skipf("%s is not statically linked (apt-get install busybox-static)", busybox)
	}
	dir := t.TempDir()
	data, err := os.ReadFile(busybox)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "busybox"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	dockerfile := "FROM scratch\nCOPY busybox /bin/busybox\nRUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\n"
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("docker", "build", "-q", "-t", agentImage, dir).CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", agentImage, err, out)
	}
	d, err := engine.NewDocker("")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// agentClient is a client with a node's credentials, as nodeClient, at
// the rate the agent asks for: the Node authorizer and NodeRestriction
// judge what it does.
func agentClient(t *testing.T, node string) kubernetes.Interface {
	t.Helper()
	f, err := certs.EnsureClient(filepath.Join(srv.DataDir(), "certs"), "node-"+node, "system:node:"+node, []string{"system:nodes"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{Host: srv.URL, QPS: 100, Burst: 200, TLSClientConfig: rest.TLSClientConfig{
		CAData: srv.CAData, CertFile: f.CertFile, KeyFile: f.KeyFile,
	}}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// runAgent runs a node agent for node until the returned stop is called
// or the test ends; the node's containers are removed after the test.
func runAgent(t *testing.T, node, rootDir string, eng engine.Engine) (stop func()) {
	t.Helper()
	opts := nodeagent.DefaultOptions()
	// The apiserver reaches the node's API by its Hostname address.
	opts.NodeName, opts.Hostname, opts.NodeIP, opts.RootDir = node, "localhost", "127.0.0.1", rootDir
	opts.APIServerHost, opts.APIServerPort = "127.0.0.1", 443
	opts.SyncPeriod, opts.LeaseDuration = 300*time.Millisecond, 4*time.Second
	// Only the pods of these tests, bound by name, run here.
	opts.Taints = []corev1.Taint{{Key: "cronplane.test/node-agent", Effect: corev1.TaintEffectNoSchedule}}
	// The node's API, serving the agent's container logs to the
	// apiserver.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts.Port = int32(l.Addr().(*net.TCPAddr).Port)
	client := agentClient(t, node)
	a, err := nodeagent.New(opts, client, eng)
	if err != nil {
		t.Fatal(err)
	}
	files, err := certs.EnsureCert(t.TempDir(), certs.Spec{Name: "node", CommonName: node, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(files.CertFile, files.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	clientCAs := x509.NewCertPool()
	clientCAs.AppendCertsFromPEM(srv.CAData)
	server, err := nodeserver.New(nodeserver.Config{NodeName: node, Certificate: cert, ClientCAs: clientCAs, Client: client, Logs: a})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := a.Run(ctx); err != nil {
			t.Logf("node agent: %v", err)
		}
	}()
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = server.Serve(ctx, l)
	}()
	stop = func() {
		cancel()
		for _, c := range []chan struct{}{done, served} {
			select {
			case <-c:
			case <-time.After(10 * time.Second):
			}
		}
	}
	t.Cleanup(stop)
	return stop
}

func removeNodeContainers(t *testing.T, eng engine.Engine, node string) {
	t.Cleanup(func() {
		ctx := context.Background()
		list, _ := eng.List(ctx, map[string]string{"io.cronplane.node": node})
		for _, c := range list {
			_ = eng.Remove(ctx, c.ID)
		}
		_ = srv.Client.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{})
	})
}

func waitPod(t *testing.T, ns, name, what string, timeout time.Duration, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := srv.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		pod = p
		return cond(p), nil
	})
	if err != nil {
		t.Fatalf("waiting for pod %s to be %s: %v; status %+v", name, what, err, pod.Status)
	}
	return pod
}

func agentPod(name, node string, restart corev1.RestartPolicy, script string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "agent-test"}},
		Spec: corev1.PodSpec{
			NodeName: node, RestartPolicy: restart, TerminationGracePeriodSeconds: ptr.To(int64(2)),
			Containers: []corev1.Container{{Name: "main", Image: agentImage, Command: []string{"sh", "-c", script}}},
		},
	}
}

func TestNodeAgent_RegistersItsNodeAndRunsPodsToCompletion(t *testing.T) {
	eng := needEngine(t)
	runManager(t, true, "serviceaccount-controller", "root-ca-certificate-publisher-controller")
	ctx := context.Background()
	node := "agent-" + rand.String(5)
	removeNodeContainers(t, eng, node)
	runAgent(t, node, t.TempDir(), eng)

	var n *corev1.Node
	waitFor(t, "the node Ready", func() (bool, error) {
		var err error
		n, err = srv.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	info, _ := eng.Info(ctx)
	if n.Labels[corev1.LabelHostname] != node || n.Labels[corev1.LabelOSStable] != "linux" || n.Status.Capacity.Pods().Value() != 110 ||
		n.Status.Capacity.Cpu().Value() != int64(info.NCPU) || n.Status.NodeInfo.ContainerRuntimeVersion != "docker://"+info.Version ||
		n.Status.DaemonEndpoints.KubeletEndpoint.Port == 0 || len(n.Status.Conditions) != 4 {
		t.Fatalf("node %+v %+v", n.Labels, n.Status)
	}
	waitFor(t, "the node's lease", func() (bool, error) {
		l, err := srv.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, node, metav1.GetOptions{})
		return err == nil && *l.Spec.HolderIdentity == node && l.OwnerReferences[0].UID == n.UID, nil
	})

	ns := newNamespace(t, "nodeagent")
	waitFor(t, "the default service account and kube-root-ca.crt", func() (bool, error) {
		_, err1 := getAccount(ns, "default")
		_, err2 := srv.Client.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err1 == nil && err2 == nil, nil
	})
	if _, err := srv.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"},
		Data: map[string]string{"greeting": "hello"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// An init container writes to an emptyDir; the container reads it,
	// its env from a ConfigMap and the downward API, and the service
	// account token's namespace, into its termination message.
	pod := agentPod("ok", node, corev1.RestartPolicyNever,
		`echo "$(cat /work/init) $GREETING $POD $(cat /var/run/secrets/kubernetes.io/serviceaccount/namespace) $KUBERNETES_SERVICE_HOST" > /dev/termination-log`)
	pod.Spec.Volumes = []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	pod.Spec.InitContainers = []corev1.Container{{Name: "init", Image: agentImage, Command: []string{"sh", "-c", "echo from-init > /work/init"},
		VolumeMounts: []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}}}
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}
	c.Env = []corev1.EnvVar{
		{Name: "GREETING", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "greeting"}}},
		{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
	}
	if _, err := srv.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := waitPod(t, ns, "ok", "Succeeded", 60*time.Second, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	term := got.Status.ContainerStatuses[0].State.Terminated
	if term == nil || term.Reason != "Completed" || term.ExitCode != 0 || strings.TrimSpace(term.Message) != "from-init hello ok "+ns+" 127.0.0.1" {
		t.Fatalf("container status %+v", got.Status.ContainerStatuses)
	}
	if it := got.Status.InitContainerStatuses[0].State.Terminated; it == nil || it.Reason != "Completed" {
		t.Fatalf("init container status %+v", got.Status.InitContainerStatuses)
	}
	if got.Status.HostIP != "127.0.0.1" || got.Status.StartTime == nil {
		t.Fatalf("status %+v", got.Status)
	}

	// A failing container with restartPolicy Never fails the pod.
	if _, err := srv.Client.CoreV1().Pods(ns).Create(ctx, agentPod("fails", node, corev1.RestartPolicyNever, "echo oops; exit 3"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got = waitPod(t, ns, "fails", "Failed", 30*time.Second, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if term := got.Status.ContainerStatuses[0].State.Terminated; term == nil || term.Reason != "Error" || term.ExitCode != 3 {
		t.Fatalf("container status %+v", got.Status.ContainerStatuses)
	}
	// Its log, from the engine through the node's API and the apiserver.
	if out, err := readLog(ctx, ns, "fails", &corev1.PodLogOptions{}); err != nil || out != "oops\n" {
		t.Fatalf("log %q, %v", out, err)
	}

	// OnFailure restarts a failing container, then backs off.
	if _, err := srv.Client.CoreV1().Pods(ns).Create(ctx, agentPod("crashes", node, corev1.RestartPolicyOnFailure, "echo attempt $(cat /proc/uptime); exit 1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, "crashes", "in CrashLoopBackOff", 30*time.Second, func(p *corev1.Pod) bool {
		s := p.Status.ContainerStatuses
		return len(s) == 1 && s[0].RestartCount >= 1 && s[0].State.Waiting != nil && s[0].State.Waiting.Reason == "CrashLoopBackOff" &&
			s[0].LastTerminationState.Terminated != nil && s[0].LastTerminationState.Terminated.ExitCode == 1
	})
	if out, err := readLog(ctx, ns, "crashes", &corev1.PodLogOptions{Previous: true, Timestamps: true}); err != nil || !strings.Contains(out, "Z attempt ") {
		t.Fatalf("previous log %q, %v", out, err)
	}

	// A deleted running pod is stopped and removed for good.
	if _, err := srv.Client.CoreV1().Pods(ns).Create(ctx, agentPod("runs", node, corev1.RestartPolicyAlways, "sleep 300"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, "runs", "Running", 30*time.Second, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" })
	if err := srv.Client.CoreV1().Pods(ns).Delete(ctx, "runs", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deleted pod gone", func() (bool, error) {
		_, err := srv.Client.CoreV1().Pods(ns).Get(ctx, "runs", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	waitFor(t, "the deleted pod's containers removed", func() (bool, error) {
		list, err := eng.List(ctx, map[string]string{"io.kubernetes.pod.name": "runs", "io.kubernetes.pod.namespace": ns})
		return err == nil && len(list) == 0, nil
	})
	events, err := srv.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]bool{}
	for _, e := range events.Items {
		if e.Source.Component == "kubelet" {
			reasons[e.Reason] = true
		}
	}
	for _, r := range []string{"Pulled", "Created", "Started", "Killing", "BackOff"} {
		if !reasons[r] {
			t.Errorf("no %s event; got %v", r, reasons)
		}
	}
}

func TestNodeAgent_RestartedAgentAdoptsItsContainersAndNeverRunsANeverContainerTwice(t *testing.T) {
	eng := needEngine(t)
	runManager(t, true, "serviceaccount-controller", "root-ca-certificate-publisher-controller")
	ctx := context.Background()
	node := "agent-" + rand.String(5)
	removeNodeContainers(t, eng, node)
	root := t.TempDir()
	stop := runAgent(t, node, root, eng)
	ns := newNamespace(t, "nodeagent-restart")
	waitFor(t, "the default service account and kube-root-ca.crt", func() (bool, error) {
		_, err1 := getAccount(ns, "default")
		_, err2 := srv.Client.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err1 == nil && err2 == nil, nil
	})
	if _, err := srv.Client.CoreV1().Pods(ns).Create(ctx, agentPod("once", node, corev1.RestartPolicyNever, "sleep 3"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	running := waitPod(t, ns, "once", "Running", 30*time.Second, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	id := running.Status.ContainerStatuses[0].ContainerID
	stop()
	// The container exits while no agent runs; the next one adopts it.
	time.Sleep(4 * time.Second)
	runAgent(t, node, root, eng)
	done := waitPod(t, ns, "once", "Succeeded", 30*time.Second, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	if s := done.Status.ContainerStatuses[0]; s.ContainerID != id || s.RestartCount != 0 {
		t.Fatalf("status %+v, first container %s", s, id)
	}
	list, err := eng.List(ctx, map[string]string{"io.kubernetes.pod.uid": string(done.UID)})
	if err != nil || len(list) != 1 {
		t.Fatalf("containers of the pod: %v %v", list, err)
	}
}

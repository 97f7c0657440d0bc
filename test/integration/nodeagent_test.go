package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
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
	opts.SandboxImage = agentImage
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
	server, err := nodeserver.New(nodeserver.Config{NodeName: node, Certificate: cert, ClientCAs: clientCAs, Client: client, Logs: a, Exec: a})
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

// startAgentProcess runs the node-agent command for node, its
// credentials in a kubeconfig written for it.
func startAgentProcess(t *testing.T, bin, node, rootDir string) *process {
	t.Helper()
	f, err := certs.EnsureClient(filepath.Join(srv.DataDir(), "certs"), "node-"+node, "system:node:"+node, []string{"system:nodes"})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(rootDir, "kubeconfig")
	if _, err := os.Stat(kubeconfig); err != nil {
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: srv.URL, CertificateAuthorityData: srv.CAData}
		cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificate: f.CertFile, ClientKey: f.KeyFile}
		cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
		cfg.CurrentContext = "c"
		if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
			t.Fatal(err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return startProcess(t, bin, "--kubeconfig", kubeconfig, "--hostname-override", node, "--node-ip", "127.0.0.1",
		"--root-dir", rootDir, "--apiserver-for-pods", "127.0.0.1:443", "--address", "127.0.0.1", "--port", fmt.Sprint(port),
		"--sync-period", "300ms", "--pod-infra-container-image", agentImage)
}

func containerID(p *corev1.Pod) string {
	if len(p.Status.ContainerStatuses) == 0 {
		return ""
	}
	return p.Status.ContainerStatuses[0].ContainerID
}

// An agent killed with SIGKILL and started again goes on from the
// engine's containers: a running one is adopted, a restartPolicy Never
// container that exited meanwhile is reported, not run again, and the
// containers of a pod deleted meanwhile are removed.
func TestNodeAgent_AgentKilledAndRestartedAdoptsItsContainersAndRemovesThoseOfPodsGone(t *testing.T) {
	eng := needEngine(t)
	bin := buildCommand(t, "node-agent")
	runManager(t, true, "serviceaccount-controller", "root-ca-certificate-publisher-controller")
	ctx := context.Background()
	node := "agent-" + rand.String(5)
	removeNodeContainers(t, eng, node)
	root := t.TempDir()
	agent := startAgentProcess(t, bin, node, root)
	ns := newNamespace(t, "nodeagent-kill")
	waitFor(t, "the default service account and kube-root-ca.crt", func() (bool, error) {
		_, err1 := getAccount(ns, "default")
		_, err2 := srv.Client.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err1 == nil && err2 == nil, nil
	})
	for _, p := range []*corev1.Pod{
		// Exits while no agent runs.
		agentPod("once", node, corev1.RestartPolicyNever, "sleep 4"),
		// Failed before the kill.
		agentPod("failed", node, corev1.RestartPolicyNever, "exit 3"),
		// Runs on through the restart.
		agentPod("keeps", node, corev1.RestartPolicyAlways, "sleep 300"),
		// Deleted while no agent runs.
		agentPod("gone", node, corev1.RestartPolicyAlways, "sleep 300"),
	} {
		if _, err := srv.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	running := func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning && containerID(p) != "" }
	once := waitPod(t, ns, "once", "Running", 60*time.Second, running)
	keeps := waitPod(t, ns, "keeps", "Running", 30*time.Second, running)
	gone := waitPod(t, ns, "gone", "Running", 30*time.Second, running)
	failed := waitPod(t, ns, "failed", "Failed", 30*time.Second, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })

	if err := agent.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-agent.exited
	if err := srv.Client.CoreV1().Pods(ns).Delete(ctx, "gone", metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}); err != nil {
		t.Fatal(err)
	}
	// The Never container exits while the agent is down.
	waitFor(t, "the Never container exited", func() (bool, error) {
		c, err := eng.List(ctx, map[string]string{"io.kubernetes.pod.uid": string(once.UID), "io.kubernetes.container.name": "main"})
		return err == nil && len(c) == 1 && c[0].State == engine.Exited, nil
	})
	startAgentProcess(t, bin, node, root)

	done := waitPod(t, ns, "once", "Succeeded", 30*time.Second, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	if s := done.Status.ContainerStatuses[0]; s.ContainerID != containerID(once) || s.RestartCount != 0 || s.State.Terminated == nil || s.State.Terminated.Reason != "Completed" {
		t.Fatalf("status %+v, first container %s", s, containerID(once))
	}
	waitFor(t, "the containers of the pod deleted while the agent was down removed", func() (bool, error) {
		c, err := eng.List(ctx, map[string]string{"io.kubernetes.pod.uid": string(gone.UID)})
		return err == nil && len(c) == 0, nil
	})
	// A few syncs of the new agent later, nothing ran twice.
	time.Sleep(2 * time.Second)
	for _, p := range []*corev1.Pod{once, failed, keeps} {
		c, err := eng.List(ctx, map[string]string{"io.kubernetes.pod.uid": string(p.UID), "io.kubernetes.container.name": "main"})
		if err != nil || len(c) != 1 || "docker://"+c[0].ID != containerID(p) {
			t.Fatalf("containers of %s: %+v %v, want only %s", p.Name, c, err, containerID(p))
		}
	}
	if sb, err := eng.List(ctx, map[string]string{"io.kubernetes.pod.uid": string(keeps.UID), "io.kubernetes.container.name": "POD"}); err != nil ||
		len(sb) != 1 || sb[0].State != engine.Running {
		t.Fatalf("sandboxes of the adopted pod: %+v %v", sb, err)
	}
	now := getPod(t, ns, "keeps")
	if now.Status.PodIP != keeps.Status.PodIP {
		t.Fatalf("pod IP %s, was %s", now.Status.PodIP, keeps.Status.PodIP)
	}
	if s := now.Status.ContainerStatuses[0]; now.Status.Phase != corev1.PodRunning || s.RestartCount != 0 || s.State.Running == nil {
		t.Fatalf("adopted pod %+v", now.Status)
	}
	if now = getPod(t, ns, "failed"); now.Status.Phase != corev1.PodFailed || now.Status.ContainerStatuses[0].State.Terminated.ExitCode != 3 {
		t.Fatalf("failed pod %+v", now.Status)
	}
}

// agentAndNamespace runs the controllers a pod's token volume needs and
// an agent on a new node, and returns a namespace where the default
// service account and kube-root-ca.crt exist.
func agentAndNamespace(t *testing.T, prefix string) (*engine.Docker, string, string) {
	t.Helper()
	eng := needEngine(t)
	runManager(t, true, "serviceaccount-controller", "root-ca-certificate-publisher-controller")
	node := "agent-" + rand.String(5)
	removeNodeContainers(t, eng, node)
	runAgent(t, node, t.TempDir(), eng)
	ns := newNamespace(t, prefix)
	waitFor(t, "the default service account and kube-root-ca.crt", func() (bool, error) {
		_, err1 := getAccount(ns, "default")
		_, err2 := srv.Client.CoreV1().ConfigMaps(ns).Get(context.Background(), "kube-root-ca.crt", metav1.GetOptions{})
		return err1 == nil && err2 == nil, nil
	})
	return eng, node, ns
}

// The containers of a pod share its sandbox's network namespace: one
// reaches the other on localhost, and the pod's IP, also in the first
// container's downward API, is the sandbox's.
func TestNodeAgent_ContainersOfAPodShareLocalhost(t *testing.T) {
	eng, node, ns := agentAndNamespace(t, "nodeagent-netns")
	ctx := context.Background()
	pod := agentPod("pair", node, corev1.RestartPolicyNever, `echo "$POD_IP" > /dev/termination-log; nc -l -p 8080 >> /dev/termination-log`)
	pod.Spec.Containers[0].Name = "server"
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "client", Image: agentImage, Command: []string{"sh", "-c",
		`for i in $(seq 1 100); do echo "hello over localhost" | nc -w 1 127.0.0.1 8080 && exit 0; sleep 0.1; done; exit 1`}})
	if _, err := srv.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	done := waitPod(t, ns, "pair", "Succeeded", 60*time.Second, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	var server *corev1.ContainerStateTerminated
	for _, s := range done.Status.ContainerStatuses {
		if s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
			t.Fatalf("container %s: %+v", s.Name, s.State)
		}
		if s.Name == "server" {
			server = s.State.Terminated
		}
	}
	ip := done.Status.PodIP
	if ip == "" || len(done.Status.PodIPs) != 1 || done.Status.PodIPs[0].IP != ip {
		t.Fatalf("pod IPs %q %v", ip, done.Status.PodIPs)
	}
	if got, want := strings.TrimSpace(server.Message), ip+"\nhello over localhost"; got != want {
		t.Fatalf("server saw %q, want %q", got, want)
	}
	// The sandbox is stopped once the pod is done.
	waitFor(t, "the sandbox stopped", func() (bool, error) {
		list, err := eng.List(ctx, map[string]string{"io.kubernetes.pod.uid": string(done.UID), "io.kubernetes.container.name": "POD"})
		return err == nil && len(list) == 1 && list[0].State == engine.Exited, nil
	})
}

func TestNodeAgent_ExecRunsInTheRunningContainerThroughTheApiserver(t *testing.T) {
	_, node, ns := agentAndNamespace(t, "nodeagent-exec")
	ctx := context.Background()
	if _, err := srv.Client.CoreV1().Pods(ns).Create(ctx, agentPod("shell", node, corev1.RestartPolicyNever, "echo started > /mark; sleep 600"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, "shell", "Running", 60*time.Second, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	t.Cleanup(func() { _ = srv.Client.CoreV1().Pods(ns).Delete(ctx, "shell", metav1.DeleteOptions{}) })

	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var out, errOut strings.Builder
	err := execIn(ctx, ns, "shell", &corev1.PodExecOptions{
		Command: []string{"sh", "-c", "for i in $(seq 50); do [ -f /mark ] && break; sleep 0.1; done; cat /mark; cat; hostname >&2; exit 3"}, Stdin: true, Stdout: true, Stderr: true,
	}, remotecommand.StreamOptions{Stdin: strings.NewReader("from stdin\n"), Stdout: &out, Stderr: &errOut})
	var code utilexec.CodeExitError
	if !errors.As(err, &code) || code.Code != 3 {
		t.Fatalf("exec: %v, want exit code 3", err)
	}
	if out.String() != "started\nfrom stdin\n" || strings.TrimSpace(errOut.String()) != "shell" {
		t.Errorf("stdout %q stderr %q, want the container's file, then stdin, and its hostname", out.String(), errOut.String())
	}
}

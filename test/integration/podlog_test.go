package integration

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/cronplane/cronplane/pkg/certs"
	"github.com/cronplane/cronplane/pkg/nodeserver"
)

// logNode runs a node server on a free loopback port, with a serving
// certificate of a CA of its own, trusting the apiserver's CA for client
// certificates, and registers its Node with the address and port.
func logNode(t *testing.T) (string, *nodeserver.MemoryLogs) {
	t.Helper()
	return testNodeServer(t, nil)
}

// testNodeServer is logNode that also serves /exec with exec, if not nil.
func testNodeServer(t *testing.T, exec nodeserver.Executor) (string, *nodeserver.MemoryLogs) {
	t.Helper()
	name := "lognode-" + rand.String(5)
	files, err := certs.EnsureCert(t.TempDir(), certs.Spec{Name: "node", CommonName: name, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(files.CertFile, files.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	clientCAs := x509.NewCertPool()
	if !clientCAs.AppendCertsFromPEM(srv.CAData) {
		t.Fatal("the apiserver's CA is not PEM")
	}
	logs := &nodeserver.MemoryLogs{}
	ns, err := nodeserver.New(nodeserver.Config{NodeName: name, Certificate: cert, ClientCAs: clientCAs, Client: srv.Client, Logs: logs, Exec: exec})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ns.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("node server: %v", err)
		}
	})
	node, err := srv.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "cronplane.test/" + name, Effect: corev1.TaintEffectNoSchedule}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(l.Addr().(*net.TCPAddr).Port)
	if _, err := srv.Client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name, logs
}

// logPod creates a pod with containers a and b on node ("" leaves it
// unscheduled, for a scheduler that does not run).
func logPod(t *testing.T, ns, name, node string) {
	t.Helper()
	ctx := context.Background()
	if _, err := srv.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	no := false
	_, err := srv.Client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{NodeName: node, SchedulerName: "none", AutomountServiceAccountToken: &no,
			Containers: []corev1.Container{{Name: "a", Image: "busybox"}, {Name: "b", Image: "busybox"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

func readLog(ctx context.Context, ns, pod string, opts *corev1.PodLogOptions) (string, error) {
	rc, err := srv.Client.CoreV1().Pods(ns).GetLogs(pod, opts).Stream(ctx)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	return string(b), err
}

func TestPodLog_StreamsTheContainerLogFromTheNodeWithKubesOptions(t *testing.T) {
	ns := newNamespace(t, "podlog")
	node, logs := logNode(t)
	logPod(t, ns, "p", node)
	a := nodeserver.Container{Namespace: ns, Pod: "p", Name: "a"}
	logs.Start(a)
	logs.Write(a, "first run\n")
	logs.Start(a)
	start := time.Now().UTC()
	logs.Write(a, "one\ntwo\nthree\n")
	logs.Start(nodeserver.Container{Namespace: ns, Pod: "p", Name: "b"})
	n := func(v int64) *int64 { return &v }
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name string
		opts corev1.PodLogOptions
		want string
	}{
		{"whole log", corev1.PodLogOptions{Container: "a"}, "one\ntwo\nthree\n"},
		{"previous instance", corev1.PodLogOptions{Container: "a", Previous: true}, "first run\n"},
		{"tailLines", corev1.PodLogOptions{Container: "a", TailLines: n(2)}, "two\nthree\n"},
		{"limitBytes", corev1.PodLogOptions{Container: "a", LimitBytes: n(5)}, "one\nt"},
		{"sinceSeconds", corev1.PodLogOptions{Container: "a", SinceSeconds: n(600)}, "one\ntwo\nthree\n"},
		{"sinceTime after the lines", corev1.PodLogOptions{Container: "a", SinceTime: &metav1.Time{Time: start.Add(time.Hour)}}, ""},
		{"empty container", corev1.PodLogOptions{Container: "b"}, ""},
	} {
		got, err := readLog(ctx, ns, "p", &tc.opts)
		if err != nil || got != tc.want {
			t.Errorf("%s: got %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	got, err := readLog(ctx, ns, "p", &corev1.PodLogOptions{Container: "a", Timestamps: true, TailLines: n(1)})
	stamp, line, _ := strings.Cut(got, " ")
	ts, perr := time.Parse(time.RFC3339Nano, stamp)
	if err != nil || perr != nil || line != "three\n" || ts.Sub(start) < 0 || ts.Sub(start) > time.Minute {
		t.Errorf("timestamps: got %q, %v; want the time of the line, a space and the line", got, err)
	}
}

func TestPodLog_FollowStreamsLinesAsTheContainerWritesThem(t *testing.T) {
	ns := newNamespace(t, "podlog")
	node, logs := logNode(t)
	logPod(t, ns, "p", node)
	a := nodeserver.Container{Namespace: ns, Pod: "p", Name: "a"}
	logs.Start(a)
	logs.Write(a, "before\n")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, err := srv.Client.CoreV1().Pods(ns).GetLogs("p", &corev1.PodLogOptions{Container: "a", Follow: true}).Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	r := bufio.NewReader(rc)
	for i, want := range []string{"before\n", "during 1\n", "during 2\n"} {
		if i > 0 {
			logs.Write(a, want)
		}
		line, err := r.ReadString('\n')
		if err != nil || line != want {
			t.Fatalf("got %q, %v; want %q as it is written", line, err, want)
		}
	}
	logs.Stop(a)
	if rest, err := io.ReadAll(r); err != nil || len(rest) != 0 {
		t.Errorf("after the container stopped: %q, %v; want the end of the log", rest, err)
	}
}

func TestPodLog_AnswersKubesErrors(t *testing.T) {
	ns := newNamespace(t, "podlog")
	node, logs := logNode(t)
	logPod(t, ns, "p", node)
	logPod(t, ns, "unbound", "")
	logPod(t, ns, "elsewhere", "no-such-node")
	addressless := "addressless-" + rand.String(5)
	if _, err := srv.Client.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: addressless}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = srv.Client.CoreV1().Nodes().Delete(context.Background(), addressless, metav1.DeleteOptions{})
	})
	logPod(t, ns, "nowhere", addressless)
	logs.Start(nodeserver.Container{Namespace: ns, Pod: "p", Name: "a"})
	n := func(v int64) *int64 { return &v }
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name     string
		pod      string
		opts     corev1.PodLogOptions
		wantCode int32
		wantMsg  string
	}{
		{"no container named", "p", corev1.PodLogOptions{}, 400, "a container name must be specified for pod p, choose one of: [a b]"},
		{"unknown container", "p", corev1.PodLogOptions{Container: "c"}, 400, "container c is not valid for pod p"},
		{"negative tailLines", "p", corev1.PodLogOptions{Container: "a", TailLines: n(-1)}, 422,
			`PodLogOptions "p" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0`},
		{"no previous instance", "p", corev1.PodLogOptions{Container: "a", Previous: true}, 400, `previous terminated container "a" in pod "p" not found`},
		{"container the node has not started", "p", corev1.PodLogOptions{Container: "b"}, 404, "the server could not find the requested resource ( pods/log p)"},
		{"missing pod", "nothing", corev1.PodLogOptions{Container: "a"}, 404, `pods "nothing" not found`},
		{"missing node", "elsewhere", corev1.PodLogOptions{Container: "a"}, 404, `pods "no-such-node" not found`},
		{"node without addresses", "nowhere", corev1.PodLogOptions{Container: "a"}, 500, "no preferred addresses found; known addresses: []"},
	} {
		_, err := readLog(ctx, ns, tc.pod, &tc.opts)
		var status apierrors.APIStatus
		if !errors.As(err, &status) || status.Status().Code != tc.wantCode || status.Status().Message != tc.wantMsg {
			t.Errorf("%s: got %v, want %d %q", tc.name, err, tc.wantCode, tc.wantMsg)
		}
	}
	if got, err := readLog(ctx, ns, "unbound", &corev1.PodLogOptions{Container: "a"}); err != nil || got != "" {
		t.Errorf("unbound pod: got %q, %v; want an empty log", got, err)
	}
}

func TestPodLog_NegotiatesAsKube(t *testing.T) {
	ns := newNamespace(t, "podlog")
	logPod(t, ns, "p", "")
	only := "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
	none := "406: Not Acceptable\n\nAvailable representations: text/plain, application/json, application/yaml, application/vnd.kubernetes.protobuf"
	for _, tc := range []struct {
		accept   string
		wantCode int
		wantMsg  string
	}{
		{"text/plain", 406, only},
		{"application/json;as=Table;v=v1;g=meta.k8s.io", 406, only},
		{"application/foo", 406, none},
		{"text/plain, */*", 204, ""},
	} {
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/namespaces/"+ns+"/pods/p/log?container=a", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+srv.AdminToken)
		req.Header.Set("Accept", tc.accept)
		resp, err := srv.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var status metav1.Status
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if tc.wantMsg != "" {
			_ = json.Unmarshal(body, &status)
		}
		if resp.StatusCode != tc.wantCode || status.Message != tc.wantMsg {
			t.Errorf("Accept %s: got %d %s, want %d %q", tc.accept, resp.StatusCode, body, tc.wantCode, tc.wantMsg)
		}
	}
}

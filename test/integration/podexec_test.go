package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/exec"

	"github.com/cronplane/cronplane/pkg/nodeserver"
)

// shellExec answers as a shell would for two commands: "cat" echoes its
// stdin, "where" says where it runs; "exit N" ends with code N.
type shellExec struct{}

func (shellExec) Exec(_ context.Context, c nodeserver.Container, cmd []string, s nodeserver.ExecStreams) (int, error) {
	switch cmd[0] {
	case "cat":
		_, err := io.Copy(s.Stdout, s.Stdin)
		return 0, err
	case "where":
		fmt.Fprintf(s.Stdout, "%s/%s/%s", c.Namespace, c.Pod, c.Name)
		return 0, nil
	case "exit":
		fmt.Fprint(s.Stderr, "bye")
		return 7, nil
	}
	return 0, fmt.Errorf("%s: not found", cmd[0])
}

func execIn(ctx context.Context, ns, pod string, opts *corev1.PodExecOptions, streams remotecommand.StreamOptions) error {
	req := srv.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(opts, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(srv.Config, http.MethodPost, req.URL())
	if err != nil {
		return err
	}
	return ex.StreamWithContext(ctx, streams)
}

func TestPodExec_RunsTheCommandAtThePodsNodeThroughTheApiserver(t *testing.T) {
	ns := newNamespace(t, "podexec")
	node, _ := testNodeServer(t, shellExec{})
	logPod(t, ns, "p", node)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var out, errOut bytes.Buffer
	err := execIn(ctx, ns, "p", &corev1.PodExecOptions{Container: "b", Command: []string{"where"}, Stdout: true},
		remotecommand.StreamOptions{Stdout: &out})
	if err != nil || out.String() != ns+"/p/b" {
		t.Fatalf("where: %q, %v; want %s/p/b", out.String(), err, ns)
	}

	out.Reset()
	err = execIn(ctx, ns, "p", &corev1.PodExecOptions{Container: "a", Command: []string{"cat"}, Stdin: true, Stdout: true},
		remotecommand.StreamOptions{Stdin: strings.NewReader("hello\n"), Stdout: &out})
	if err != nil || out.String() != "hello\n" {
		t.Fatalf("cat: %q, %v; want hello", out.String(), err)
	}

	err = execIn(ctx, ns, "p", &corev1.PodExecOptions{Container: "a", Command: []string{"exit"}, Stdout: true, Stderr: true},
		remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut})
	var code exec.CodeExitError
	if !errors.As(err, &code) || code.Code != 7 || errOut.String() != "bye" {
		t.Fatalf("exit: %v, stderr %q; want exit code 7 and bye", err, errOut.String())
	}
}

func TestPodExec_RefusesAsKube(t *testing.T) {
	ns := newNamespace(t, "podexec-bad")
	node, _ := testNodeServer(t, shellExec{})
	logPod(t, ns, "p", node)
	logPod(t, ns, "unscheduled", "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	streams := remotecommand.StreamOptions{Stdout: io.Discard}
	tests := []struct {
		name, pod string
		opts      corev1.PodExecOptions
		want      string
	}{
		{"no container of two", "p", corev1.PodExecOptions{Command: []string{"where"}, Stdout: true}, "a container name must be specified for pod p, choose one of: [a b]"},
		{"unknown container", "p", corev1.PodExecOptions{Container: "c", Command: []string{"where"}, Stdout: true}, "container c is not valid for pod p"},
		{"no node", "unscheduled", corev1.PodExecOptions{Container: "a", Command: []string{"where"}, Stdout: true}, "pod unscheduled does not have a host assigned"},
		{"no pod", "gone", corev1.PodExecOptions{Container: "a", Command: []string{"where"}, Stdout: true}, `pods "gone" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := execIn(ctx, ns, tt.pod, &tt.opts, streams)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("exec: %v, want %q", err, tt.want)
			}
		})
	}

	// Without an upgrade, as kube: a 400 Status.
	err := srv.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name("p").SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "a", Command: []string{"where"}, Stdout: true}, scheme.ParameterCodec).
		Do(ctx).Error()
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "Upgrade request required") {
		t.Errorf("exec without upgrade: %v, want 400 Upgrade request required", err)
	}
}

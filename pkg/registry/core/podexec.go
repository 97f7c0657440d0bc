package core

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cronplane/cronplane/pkg/nodeserver"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
	"github.com/cronplane/cronplane/pkg/storage"
)

// podExecStorage serves pods/exec as kube does: it reads PodExecOptions
// from the query, finds the pod, its node and the container, and sends
// the connection on to the node's agent, which checks the command and the
// streams and runs it.
type podExecStorage struct {
	pods  *generic.Store
	nodes NodeConnector
}

var _ rest.Connecter = (*podExecStorage)(nil)

// New is the kind discovery names for pods/exec, as kube's.
func (e *podExecStorage) New() runtime.Object { return &corev1.PodExecOptions{} }

// Connect implements rest.Connecter.
func (e *podExecStorage) Connect(ctx context.Context, namespace, name string, query url.Values) (*rest.Upstream, error) {
	opts, err := decodeExecOptions(query)
	if err != nil {
		return nil, err
	}
	obj, err := e.pods.Get(ctx, namespace, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	pod := storage.Unwrap(obj).(*corev1.Pod)
	container, err := execContainer(pod, opts.Container)
	if err != nil {
		return nil, err
	}
	if pod.Spec.NodeName == "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", name))
	}
	// The agent's parameters, as kube-apiserver writes the kubelet's.
	params := url.Values{}
	for _, p := range []struct {
		set  bool
		name string
	}{{opts.Stdin, corev1.ExecStdinParam}, {opts.Stdout, corev1.ExecStdoutParam}, {opts.Stderr, corev1.ExecStderrParam}, {opts.TTY, corev1.ExecTTYParam}} {
		if p.set {
			params.Set(p.name, "1")
		}
	}
	params[corev1.ExecCommandParam] = opts.Command
	return e.nodes.ContainerExec(ctx, pod.Spec.NodeName, nodeserver.Container{Namespace: pod.Namespace, Pod: pod.Name, Name: container}, params)
}

// decodeExecOptions reads PodExecOptions from a query as kube's parameter
// codec does; a flag that is not a boolean is a bad request.
func decodeExecOptions(q url.Values) (*corev1.PodExecOptions, error) {
	opts := &corev1.PodExecOptions{Container: q.Get("container"), Command: q["command"]}
	for _, f := range []struct {
		name string
		to   *bool
	}{{"stdin", &opts.Stdin}, {"stdout", &opts.Stdout}, {"stderr", &opts.Stderr}, {"tty", &opts.TTY}} {
		v := q.Get(f.name)
		if v == "" {
			continue
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid %s %q: %v", f.name, v, err))
		}
		*f.to = b
	}
	return opts, nil
}

// execContainer is the container to exec in: the one named, which the
// pod must have, or the pod's only container, in kube's words.
func execContainer(pod *corev1.Pod, name string) (string, error) {
	if name != "" {
		found := false
		eachContainer(&pod.Spec, func(c string) { found = found || c == name })
		if !found {
			return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", name, pod.Name))
		}
		return name, nil
	}
	switch len(pod.Spec.Containers) {
	case 1:
		return pod.Spec.Containers[0].Name, nil
	case 0:
		return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s", pod.Name))
	}
	msg := fmt.Sprintf("a container name must be specified for pod %s, choose one of: %v", pod.Name, containerNames(pod.Spec.Containers))
	if len(pod.Spec.InitContainers) > 0 {
		msg += fmt.Sprintf(" or one of the init containers: %v", containerNames(pod.Spec.InitContainers))
	}
	return "", apierrors.NewBadRequest(msg)
}

func containerNames(cs []corev1.Container) []string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return names
}

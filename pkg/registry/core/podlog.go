package core

import (
	"context"
	"fmt"
	"io"
	"net/url"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/nodeserver"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
	"github.com/cronplane/cronplane/pkg/storage"
)

// NodeConnector reaches containers where they are: at the agent of the
// pod's node, as kube-apiserver opens them at the kubelet.
type NodeConnector interface {
	// ContainerLog opens the log of a container of a pod on node, with
	// opts (checked already). Its errors are API errors, in kube's words
	// for an agent that cannot be found, reached, or that refuses.
	ContainerLog(ctx context.Context, node string, c nodeserver.Container, opts *corev1.PodLogOptions) (io.ReadCloser, error)
	// ContainerExec is where an exec in a container of a pod on node
	// goes: the agent's /exec with query (the agent's parameters). Its
	// errors are as ContainerLog's.
	ContainerExec(ctx context.Context, node string, c nodeserver.Container, query url.Values) (*rest.Upstream, error)
}

// podLogStorage serves pods/log: it checks the options and the container
// as kube does, then streams the log from the pod's node.
type podLogStorage struct {
	pods *generic.Store
	logs NodeConnector
}

var _ rest.Streamer = (*podLogStorage)(nil)

// New is the kind discovery names for pods/log: Pod, as kube's.
func (l *podLogStorage) New() runtime.Object { return &corev1.Pod{} }

// Stream reads the options, finds the pod and its container and opens
// the log at the node. A pod on no node has no log yet: an empty answer.
func (l *podLogStorage) Stream(ctx context.Context, namespace, name string, query url.Values) (*rest.Stream, error) {
	opts, err := nodeserver.DecodeLogOptions(query)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if errs := nodeserver.ValidateLogOptions(opts); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Kind: "PodLogOptions"}, name, errs)
	}
	obj, err := l.pods.Get(ctx, namespace, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	pod := storage.Unwrap(obj).(*corev1.Pod)
	container, err := logContainer(pod, opts.Container)
	if err != nil {
		return nil, err
	}
	if pod.Spec.NodeName == "" {
		return &rest.Stream{}, nil
	}
	body, err := l.logs.ContainerLog(ctx, pod.Spec.NodeName, nodeserver.Container{Namespace: pod.Namespace, Pod: pod.Name, Name: container}, opts)
	if err != nil {
		return nil, err
	}
	return &rest.Stream{Body: body, ContentType: "text/plain", Flush: opts.Follow}, nil
}

// logContainer is the container whose log is asked for: the one named,
// which the pod must have, or the pod's only container.
func logContainer(pod *corev1.Pod, name string) (string, error) {
	if name == "" {
		switch len(pod.Spec.Containers) {
		case 1:
			return pod.Spec.Containers[0].Name, nil
		case 0:
			return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s", pod.Name))
		}
		var names []string
		eachContainer(&pod.Spec, func(c string) { names = append(names, c) })
		return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: %s", pod.Name, names))
	}
	found := false
	eachContainer(&pod.Spec, func(c string) { found = found || c == name })
	if !found {
		return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", name, pod.Name))
	}
	return name, nil
}

// eachContainer visits the names of a pod's init, regular and ephemeral
// containers, in kube's order.
func eachContainer(spec *corev1.PodSpec, f func(string)) {
	for _, c := range spec.InitContainers {
		f(c.Name)
	}
	for _, c := range spec.Containers {
		f(c.Name)
	}
	for _, c := range spec.EphemeralContainers {
		f(c.Name)
	}
}

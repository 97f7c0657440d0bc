package core

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
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

// NodeConnection is how to reach a node's agent: its HTTPS address
// (host:port) and the transport that authenticates the apiserver to it.
type NodeConnection struct {
	Host      string
	Transport http.RoundTripper
}

// NodeConnector finds a node's agent, as kube-apiserver finds a kubelet:
// by the node's preferred address and its kubelet endpoint port.
// insecureSkipTLSVerify asks for a transport that does not verify the
// agent's certificate.
type NodeConnector interface {
	NodeConnection(ctx context.Context, node string, insecureSkipTLSVerify bool) (*NodeConnection, error)
}

// podLogStorage serves pods/log: it checks the options and the container
// as kube does, then streams the log from the agent of the pod's node,
// which authenticates the apiserver and authorizes it for nodes/proxy.
type podLogStorage struct {
	pods  *generic.Store
	nodes NodeConnector
}

var _ rest.Streamer = (*podLogStorage)(nil)

// New is the kind discovery names for pods/log: Pod, as kube's.
func (l *podLogStorage) New() runtime.Object { return &corev1.Pod{} }

// maxErrorBody bounds what is read of an agent's error answer.
const maxErrorBody = 50000

var podLogResource = schema.GroupResource{Resource: "pods/log"}

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
	conn, err := l.nodes.NodeConnection(ctx, pod.Spec.NodeName, opts.InsecureSkipTLSVerifyBackend)
	if err != nil {
		return nil, asStatus(err)
	}
	loc := url.URL{
		Scheme:   "https",
		Host:     conn.Host,
		Path:     fmt.Sprintf("/containerLogs/%s/%s/%s", pod.Namespace, pod.Name, container),
		RawQuery: nodeserver.EncodeLogOptions(opts).Encode(),
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, loc.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("failed to construct request for %s, got %v", loc.String(), err)
	}
	client := &http.Client{Transport: conn.Transport, CheckRedirect: func(*http.Request, []*http.Request) error {
		return fmt.Errorf("redirects forbidden")
	}}
	resp, err := client.Do(req)
	if err != nil {
		return nil, asStatus(err)
	}
	if err := agentError(resp, name); err != nil {
		return nil, err
	}
	return &rest.Stream{Body: resp.Body, ContentType: "text/plain", Flush: opts.Follow}, nil
}

// asStatus answers an error that is not an API error as kube answers
// one: a 500 with the error's text and no reason.
func asStatus(err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: err.Error()}}
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

// agentError turns an agent's answer outside 200-206 into kube's error
// for it, with the agent's text; it closes the body then.
func agentError(resp *http.Response, name string) error {
	if resp.StatusCode >= http.StatusOK && resp.StatusCode <= http.StatusPartialContent {
		return nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	text := string(body)
	switch resp.StatusCode {
	case http.StatusInternalServerError:
		return apierrors.NewInternalError(fmt.Errorf("%s", text))
	case http.StatusBadRequest:
		return apierrors.NewBadRequest(text)
	}
	return apierrors.NewGenericServerResponse(resp.StatusCode, "", podLogResource, name, text, 0, false)
}

package apiserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/certs"
	"github.com/cronplane/cronplane/pkg/nodeserver"
	"github.com/cronplane/cronplane/pkg/registry"
	"github.com/cronplane/cronplane/pkg/registry/core"
	"github.com/cronplane/cronplane/pkg/registry/rest"
	"github.com/cronplane/cronplane/pkg/storage"
)

// KubeletClientOptions say how the apiserver reaches the nodes' agents
// (for pods/log), with kube-apiserver's --kubelet-* flags.
type KubeletClientOptions struct {
	// CertFile and KeyFile are the client certificate the apiserver
	// presents to the agents. Unset, a server that generated its own CA
	// issues itself one from it, as kubeadm issues
	// apiserver-kubelet-client: CN kube-apiserver-kubelet-client, in
	// system:masters (kubeadm's cluster-admins group has no binding here),
	// in <cert-dir>/kubelet-client.{crt,key}; the agents verify it with
	// <cert-dir>/ca.crt.
	CertFile, KeyFile string
	// CAFile verifies the agents' serving certificates; unset, as in
	// kube, they are not verified.
	CAFile string
	// Timeout bounds connecting to an agent and its TLS handshake.
	Timeout time.Duration
	// PreferredAddressTypes are the node address types tried in turn.
	PreferredAddressTypes []string
	// Port is the agent's port when a node reports none in
	// status.daemonEndpoints.kubeletEndpoint.
	Port int
}

// DefaultKubeletClientOptions are kube-apiserver's defaults.
func DefaultKubeletClientOptions() KubeletClientOptions {
	return KubeletClientOptions{
		Timeout: 5 * time.Second,
		PreferredAddressTypes: []string{
			string(corev1.NodeHostName),
			string(corev1.NodeInternalDNS), string(corev1.NodeInternalIP),
			string(corev1.NodeExternalDNS), string(corev1.NodeExternalIP),
		},
		Port: 10250,
	}
}

// AddFlags binds the options to kube-apiserver's flags.
func (o *KubeletClientOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.PreferredAddressTypes, "kubelet-preferred-address-types", o.PreferredAddressTypes, "List of the preferred NodeAddressTypes to use for kubelet connections.")
	fs.DurationVar(&o.Timeout, "kubelet-timeout", o.Timeout, "Timeout for kubelet operations (connecting and the TLS handshake).")
	fs.StringVar(&o.CertFile, "kubelet-client-certificate", o.CertFile, "Path to a client cert file for TLS (default: one issued from the generated CA, in --cert-dir).")
	fs.StringVar(&o.KeyFile, "kubelet-client-key", o.KeyFile, "Path to a client key file for TLS.")
	fs.StringVar(&o.CAFile, "kubelet-certificate-authority", o.CAFile, "Path to a cert file for the certificate authority.")
}

// Validate refuses a certificate without its key, and the reverse, and
// a negative timeout.
func (o *KubeletClientOptions) Validate() error {
	var errs []error
	if (o.CertFile == "") != (o.KeyFile == "") {
		errs = append(errs, errors.New("--kubelet-client-certificate and --kubelet-client-key go together"))
	}
	if o.Timeout < 0 {
		errs = append(errs, fmt.Errorf("--kubelet-timeout %v must not be negative", o.Timeout))
	}
	if o.Port < 1 || o.Port > 65535 {
		errs = append(errs, fmt.Errorf("kubelet port %d must be between 1 and 65535", o.Port))
	}
	return errors.Join(errs...)
}

// kubeletConnector opens container logs at the nodes' agents as
// kube-apiserver opens them at the kubelets: at the node's first address
// of the preferred types and its kubelet endpoint port, with the
// apiserver's kubelet client certificate. Its transports are set once
// the server's certificates are (setTransports).
type kubeletConnector struct {
	opts      KubeletClientOptions
	registry  *registry.Registry
	transport http.RoundTripper
	// insecure does not verify the agent's certificate
	// (insecureSkipTLSVerifyBackend).
	insecure http.RoundTripper
}

var _ core.NodeConnector = (*kubeletConnector)(nil)

var (
	nodesGVR       = corev1.SchemeGroupVersion.WithResource("nodes")
	podLogResource = schema.GroupResource{Resource: "pods/log"}
)

// maxErrorBody bounds what is read of an agent's error answer.
const maxErrorBody = 50000

// ContainerLog implements core.NodeConnector: a GET of the agent's
// /containerLogs, which must not redirect.
func (k *kubeletConnector) ContainerLog(ctx context.Context, node string, c nodeserver.Container, opts *corev1.PodLogOptions) (io.ReadCloser, error) {
	host, err := k.agentHost(ctx, node)
	if err != nil {
		return nil, asStatus(err)
	}
	loc := url.URL{
		Scheme:   "https",
		Host:     host,
		Path:     fmt.Sprintf("/containerLogs/%s/%s/%s", c.Namespace, c.Pod, c.Name),
		RawQuery: nodeserver.EncodeLogOptions(opts).Encode(),
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, loc.String(), nil)
	if err != nil {
		return nil, asStatus(fmt.Errorf("failed to construct request for %s, got %v", loc.String(), err))
	}
	transport := k.transport
	if opts.InsecureSkipTLSVerifyBackend {
		transport = k.insecure
	}
	client := &http.Client{Transport: transport, CheckRedirect: func(*http.Request, []*http.Request) error {
		return errors.New("redirects forbidden")
	}}
	resp, err := client.Do(req)
	if err != nil {
		return nil, asStatus(err)
	}
	if err := agentError(resp, c.Pod); err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// ContainerExec implements core.NodeConnector: the agent's /exec, with
// the apiserver's kubelet client certificate.
func (k *kubeletConnector) ContainerExec(ctx context.Context, node string, c nodeserver.Container, query url.Values) (*rest.Upstream, error) {
	host, err := k.agentHost(ctx, node)
	if err != nil {
		return nil, asStatus(err)
	}
	return &rest.Upstream{
		Location: &url.URL{
			Scheme:   "https",
			Host:     host,
			Path:     fmt.Sprintf("/exec/%s/%s/%s", c.Namespace, c.Pod, c.Name),
			RawQuery: query.Encode(),
		},
		Transport: k.transport,
	}, nil
}

// agentError turns an agent's answer outside 200-206 into kube's error
// for it, with the agent's text; it closes the body then.
func agentError(resp *http.Response, pod string) error {
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
		return apierrors.NewInternalError(errors.New(text))
	case http.StatusBadRequest:
		return apierrors.NewBadRequest(text)
	}
	return apierrors.NewGenericServerResponse(resp.StatusCode, "", podLogResource, pod, text, 0, false)
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

// agentHost is host:port of a node's agent.
func (k *kubeletConnector) agentHost(ctx context.Context, name string) (string, error) {
	e, ok := k.registry.Lookup(nodesGVR)
	if !ok {
		return "", errors.New("nodes are not served")
	}
	obj, err := e.Storage.(rest.Getter).Get(ctx, "", name, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		// kube-apiserver names the missing node a pod.
		return "", apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name)
	}
	if err != nil {
		return "", err
	}
	node := storage.Unwrap(obj).(*corev1.Node)
	host, err := preferredAddress(node, k.opts.PreferredAddressTypes)
	if err != nil {
		return "", err
	}
	port := int(node.Status.DaemonEndpoints.KubeletEndpoint.Port)
	if port <= 0 {
		port = k.opts.Port
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}

// preferredAddress is the node's first address of the first type it has.
func preferredAddress(node *corev1.Node, types []string) (string, error) {
	for _, t := range types {
		for _, a := range node.Status.Addresses {
			if string(a.Type) == t {
				return a.Address, nil
			}
		}
	}
	return "", fmt.Errorf("no preferred addresses found; known addresses: %v", node.Status.Addresses)
}

// setTransports builds the transports to the agents: the configured
// client certificate, or one issued from the CA the server generated;
// none when there is neither.
func (k *kubeletConnector) setTransports(certDir string, generatedCA bool) error {
	certFile, keyFile := k.opts.CertFile, k.opts.KeyFile
	if certFile == "" && generatedCA {
		files, err := certs.EnsureClient(certDir, "kubelet-client", "kube-apiserver-kubelet-client", []string{"system:masters"})
		if err != nil {
			return fmt.Errorf("kubelet client certificate: %w", err)
		}
		certFile, keyFile = files.CertFile, files.KeyFile
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return fmt.Errorf("loading the kubelet client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	insecure := cfg.Clone()
	insecure.InsecureSkipVerify = true
	if k.opts.CAFile == "" {
		cfg.InsecureSkipVerify = true
	} else {
		pem, err := os.ReadFile(k.opts.CAFile)
		if err != nil {
			return fmt.Errorf("--kubelet-certificate-authority: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--kubelet-certificate-authority %s: no PEM certificates", k.opts.CAFile)
		}
		cfg.RootCAs = pool
	}
	k.transport = k.newTransport(cfg)
	k.insecure = k.newTransport(insecure)
	return nil
}

func (k *kubeletConnector) newTransport(cfg *tls.Config) http.RoundTripper {
	dialer := &net.Dialer{Timeout: k.opts.Timeout, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dialer.DialContext,
		TLSClientConfig:     cfg,
		TLSHandshakeTimeout: k.opts.Timeout,
		MaxIdleConnsPerHost: 25,
		IdleConnTimeout:     90 * time.Second,
	}
}

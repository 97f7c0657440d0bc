// Package nodeserver is a node's HTTPS API for the apiserver, as the
// kubelet serves it on its port (10250 by default): the apiserver reaches
// it to stream container logs (/containerLogs/{namespace}/{pod}/{container})
// and to run commands in containers (/exec/{namespace}/{pod}/{container}).
// Every request is authenticated, by a client certificate signed by the
// client CA (the apiserver's kubelet client certificate) or by a bearer
// token the apiserver confirms through a TokenReview, and authorized by a
// SubjectAccessReview of nodes/proxy on the node, as the kubelet's webhook
// modes do; the answers are cached for a while. A node implementation
// (the fake node of the tests, the Docker node agent) provides only a
// LogSource, the raw timestamped lines of its containers: the server
// applies follow, tailLines, sinceSeconds, sinceTime, timestamps and
// limitBytes itself, the same way for every node.
package nodeserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// Config is what a node server needs.
type Config struct {
	// NodeName is the Node this server answers for: the name authorized
	// in nodes/proxy.
	NodeName string
	// Certificate is the server's TLS certificate.
	Certificate tls.Certificate
	// ClientCAs verify client certificates; nil accepts none, so only
	// bearer tokens authenticate.
	ClientCAs *x509.CertPool
	// Client reaches the apiserver for TokenReviews and
	// SubjectAccessReviews, with the node's own credentials.
	Client kubernetes.Interface
	// Logs opens the containers' logs.
	Logs LogSource
	// Exec runs commands in the containers (/exec); nil serves no /exec.
	Exec Executor
}

// Server serves a node's API. Build it with New.
type Server struct {
	cfg     Config
	authn   *authenticator
	authz   *authorizer
	handler http.Handler
}

// New checks cfg and builds its server.
func New(cfg Config) (*Server, error) {
	switch {
	case cfg.NodeName == "":
		return nil, errors.New("nodeserver: NodeName is required")
	case cfg.Client == nil:
		return nil, errors.New("nodeserver: Client is required to review tokens and access")
	case cfg.Logs == nil:
		return nil, errors.New("nodeserver: Logs is required")
	case len(cfg.Certificate.Certificate) == 0:
		return nil, errors.New("nodeserver: Certificate is required")
	}
	s := &Server{
		cfg:   cfg,
		authn: newAuthenticator(cfg.ClientCAs, cfg.Client.AuthenticationV1().TokenReviews()),
		authz: newAuthorizer(cfg.NodeName, cfg.Client.AuthorizationV1().SubjectAccessReviews()),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/containerLogs/", s.serveContainerLogs)
	if cfg.Exec != nil {
		mux.HandleFunc("/exec/", s.serveExec)
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	s.handler = s.withAuth(mux)
	return s, nil
}

// Handler is the server's authenticated and authorized handler, for a
// caller that serves TLS itself: the request's TLS state must carry the
// client's certificates (tls.RequestClientCert).
func (s *Server) Handler() http.Handler { return s.handler }

// TLSConfig is the server's TLS configuration: its certificate, and a
// client certificate asked for but verified per request, so that a bad
// one is answered 401 as the kubelet answers it.
func (s *Server) TLSConfig() *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{s.cfg.Certificate},
		ClientAuth:   tls.RequestClientCert,
		MinVersion:   tls.VersionTLS12,
	}
}

// Serve serves HTTPS on l until ctx ends, then closes the connections.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		TLSConfig:         s.TLSConfig(),
		ReadHeaderTimeout: 30 * time.Second,
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			_ = srv.Close()
		case <-done:
		}
	}()
	err := srv.ServeTLS(l, "", "")
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// ListenAndServe listens on addr and serves until ctx ends.
func (s *Server) ListenAndServe(ctx context.Context, addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	klog.InfoS("Serving the node API", "node", s.cfg.NodeName, "address", l.Addr().String())
	return s.Serve(ctx, l)
}

// LoadCertPool reads a PEM file of CA certificates, such as the client
// CA file of a kubelet (--client-ca-file).
func LoadCertPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificates", file)
	}
	return pool, nil
}

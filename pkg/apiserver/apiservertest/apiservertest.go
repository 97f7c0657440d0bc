// Package apiservertest starts a real apiserver with an embedded etcd
// in-process, on a free loopback port and in a temporary directory, for
// integration tests; it hands out client-go configurations for it.
package apiservertest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cronplane/cronplane/pkg/apiserver"
)

// Server is a running test apiserver.
type Server struct {
	*apiserver.Server
	// Config authenticates as the admin user.
	Config *rest.Config
	Client kubernetes.Interface
	dir    string
	// dataDir is where the server keeps its data and certificates.
	dataDir string
	cancel  context.CancelFunc
	done    chan error
}

// Start starts a server for one test and stops it when the test ends.
func Start(t testing.TB, mutate ...func(*apiserver.Options)) *Server {
	t.Helper()
	s, err := New(mutate...)
	if err != nil {
		t.Fatalf("starting apiserver: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// New starts a server; the caller must Stop it. It suits TestMain, where
// one server is shared by a package's tests.
func New(mutate ...func(*apiserver.Options)) (*Server, error) {
	dir, err := os.MkdirTemp("", "cronplane-test-")
	if err != nil {
		return nil, err
	}
	opts := apiserver.DefaultOptions()
	opts.DataDir = dir
	opts.SecurePort = 0
	opts.Logger = logr.Discard()
	for _, m := range mutate {
		m(&opts)
	}
	c, err := opts.Complete()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	srv, err := apiserver.New(ctx, c)
	cancel()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &Server{Server: srv, dir: dir, dataDir: opts.DataDir, done: make(chan error, 1)}
	var serveCtx context.Context
	serveCtx, s.cancel = context.WithCancel(context.Background())
	go func() { s.done <- srv.Run(serveCtx) }()
	select {
	case <-srv.Listening():
	case err := <-s.done:
		s.cancel = nil
		s.Stop()
		return nil, err
	}
	s.Config = &rest.Config{
		Host:            srv.URL,
		BearerToken:     srv.AdminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: srv.CAData},
		QPS:             1000,
		Burst:           1000,
	}
	if s.Client, err = kubernetes.NewForConfig(s.Config); err != nil {
		s.Stop()
		return nil, err
	}
	if err := s.waitReady(); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Server) waitReady() error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var code int
		s.Client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(context.Background()).StatusCode(&code)
		if code == http.StatusOK {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("apiserver at %s not ready after 30s", s.URL)
}

// HTTPClient returns an http.Client that trusts the server, and the admin
// bearer token to send.
func (s *Server) HTTPClient() *http.Client {
	rt, err := rest.TransportFor(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: s.CAData}})
	if err != nil {
		panic(err)
	}
	return &http.Client{Transport: rt, Timeout: 30 * time.Second}
}

// Stop stops the server and removes its data.
func (s *Server) Stop() {
	if s.cancel != nil {
		s.cancel()
		select {
		case err := <-s.done:
			if err != nil {
				fmt.Fprintf(os.Stderr, "apiservertest: serving ended with %v\n", err)
			}
		case <-time.After(10 * time.Second):
		}
	}
	s.Server.Close()
	os.RemoveAll(s.dir)
}

// DataDir is the server's data directory: its etcd, its generated
// certificates (under certs/) and kubeconfigs.
func (s *Server) DataDir() string { return s.dataDir }

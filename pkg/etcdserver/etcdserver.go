// Package etcdserver runs a single-member etcd inside the apiserver's
// process, for a laptop or a test: data under one directory, client and
// peer listeners on free loopback ports, and an in-process client. Both
// listeners serve TLS and require a client certificate signed by a CA of
// their own, generated under the data directory (pki/), so that only a
// holder of that directory's client key reaches etcd over the network: a
// local process cannot read Secrets or write RBAC objects past the
// apiserver's authentication, authorization and audit.
package etcdserver

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/pkg/certs"
)

// Config of an embedded etcd.
type Config struct {
	// DataDir keeps the data across restarts, and the TLS material under
	// pki/.
	DataDir string
	// LogLevel of etcd's own logs; empty means "error".
	LogLevel string
}

// Server is a running embedded etcd.
type Server struct {
	etcd      *embed.Etcd
	client    *clientv3.Client
	tls       certs.Files
	closeOnce sync.Once
	closeErr  error
}

// Start starts etcd and waits until it serves, for up to a minute.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	ec := embed.NewConfig()
	ec.Dir = cfg.DataDir
	ec.LogLevel = cfg.LogLevel
	if ec.LogLevel == "" {
		ec.LogLevel = "error"
	}
	ec.Name = "cronplane"
	pki := filepath.Join(cfg.DataDir, "pki")
	// One certificate serves both listeners and lets the member reach its
	// own peer listener; the client certificate is what other processes
	// present.
	member, err := certs.EnsureCert(pki, certs.Spec{Name: "member", CommonName: "cronplane-etcd", Server: true, Client: true})
	if err != nil {
		return nil, fmt.Errorf("embedded etcd certificates: %w", err)
	}
	client, err := certs.EnsureClient(pki, "client", "cronplane-etcd-client", nil)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd certificates: %w", err)
	}
	tlsInfo := transport.TLSInfo{CertFile: member.CertFile, KeyFile: member.KeyFile, TrustedCAFile: member.CAFile, ClientCertAuth: true}
	ec.ClientTLSInfo, ec.PeerTLSInfo = tlsInfo, tlsInfo
	clientURL, err := freeURL()
	if err != nil {
		return nil, err
	}
	peerURL, err := freeURL()
	if err != nil {
		return nil, err
	}
	ec.ListenClientUrls, ec.AdvertiseClientUrls = []url.URL{*clientURL}, []url.URL{*clientURL}
	ec.ListenPeerUrls, ec.AdvertisePeerUrls = []url.URL{*peerURL}, []url.URL{*peerURL}
	ec.InitialCluster = ec.Name + "=" + peerURL.String()
	// The apiserver compacts; etcd's own compaction stays off.
	ec.AutoCompactionRetention = "0"
	// Frequent progress notifications let watch caches answer consistent
	// reads without waiting long.
	ec.ExperimentalWatchProgressNotifyInterval = 5 * time.Second
	// A single member has no follower to catch up: keep the raft log it
	// holds in memory short (each entry holds a whole written object).
	ec.SnapshotCount = 2500
	ec.SnapshotCatchUpEntries = 500
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("starting embedded etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded etcd: %w", err)
	case <-ctx.Done():
		e.Close()
		return nil, ctx.Err()
	case <-time.After(time.Minute):
		e.Close()
		return nil, fmt.Errorf("embedded etcd not ready after a minute")
	}
	return &Server{etcd: e, client: v3client.New(e.Server), tls: client}, nil
}

func freeURL() (*url.URL, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return &url.URL{Scheme: "https", Host: "127.0.0.1:" + strconv.Itoa(port)}, nil
}

// Client is an in-process client: no network hop between the apiserver
// and its embedded etcd.
func (s *Server) Client() *clientv3.Client { return s.client }

// ClientURL is where other processes (a second apiserver) reach etcd,
// presenting ClientTLS.
func (s *Server) ClientURL() string { return "https://" + s.etcd.Clients[0].Addr().String() }

// ClientTLS are the CA that signs etcd's serving certificate and the
// client certificate and key that etcd accepts.
func (s *Server) ClientTLS() certs.Files { return s.tls }

// Close stops etcd; it may be called more than once, and reports the
// first call's error.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = s.client.Close()
		s.etcd.Close()
	})
	return s.closeErr
}

// StartTemp starts an etcd in a new temporary directory, for tests; stop
// closes it and removes the directory.
func StartTemp(ctx context.Context) (s *Server, stop func(), err error) {
	dir, err := os.MkdirTemp("", "cronplane-etcd-")
	if err != nil {
		return nil, nil, err
	}
	if s, err = Start(ctx, Config{DataDir: dir}); err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return s, func() {
		if err := s.Close(); err != nil {
			klog.ErrorS(err, "Closing the etcd client")
		}
		os.RemoveAll(dir)
	}, nil
}

package etcdserver_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cronplane/cronplane/pkg/etcdserver"
)

// TestStart_OnlyHoldersOfTheClientCertificateConnect checks that the
// embedded etcd's network listener refuses plain HTTP and TLS clients
// without the data directory's client certificate, and serves one with it.
func TestStart_OnlyHoldersOfTheClientCertificateConnect(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, stop, err := etcdserver.StartTemp(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	files := s.ClientTLS()
	caPEM, err := os.ReadFile(files.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	url := s.ClientURL()
	if !strings.HasPrefix(url, "https://") {
		t.Fatalf("ClientURL() = %s, want https", url)
	}

	httpClient := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	for name, u := range map[string]string{
		"plain HTTP":                "http://" + strings.TrimPrefix(url, "https://") + "/health",
		"TLS without a client cert": url + "/health",
	} {
		resp, err := httpClient.Get(u)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Errorf("%s: GET /health answered 200, want refused", name)
			}
		}
	}

	noCert, err := (transport.TLSInfo{TrustedCAFile: files.CAFile}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	withCert, err := (transport.TLSInfo{TrustedCAFile: files.CAFile, CertFile: files.CertFile, KeyFile: files.KeyFile}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		tls    *tls.Config
		wantOK bool
	}{
		{"no client certificate", noCert, false},
		{"the data directory's client certificate", withCert, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, TLS: tc.tls, DialTimeout: 2 * time.Second})
			if err != nil {
				if tc.wantOK {
					t.Fatal(err)
				}
				return
			}
			defer func() { _ = c.Close() }()
			getCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			_, err = c.Get(getCtx, "/registry/secrets", clientv3.WithPrefix())
			if ok := err == nil; ok != tc.wantOK {
				t.Errorf("Get: err = %v, want success %v", err, tc.wantOK)
			}
		})
	}
}

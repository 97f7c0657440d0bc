package certs

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
)

func TestEnsureServing_TrustedForLoopbackNamesAndReused(t *testing.T) {
	dir := t.TempDir()
	files, err := EnsureServing(dir, []string{"10.1.2.3", "api.example"})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(files.CertFile, files.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, _ := os.ReadFile(files.CAFile)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("bad CA PEM")
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	for _, host := range []string{"127.0.0.1", "localhost"} {
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: host}}}
		resp, err := client.Get("https://" + net.JoinHostPort("127.0.0.1", port))
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		resp.Body.Close()
	}
	leaf, _ := x509.ParseCertificate(cert.Certificate[0])
	if leaf.VerifyHostname("10.1.2.3") != nil || leaf.VerifyHostname("api.example") != nil {
		t.Fatal("extra hosts not covered")
	}
	before, _ := os.ReadFile(files.CertFile)
	if _, err := EnsureServing(dir, []string{"10.1.2.3", "api.example"}); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(files.CertFile)
	if string(before) != string(after) {
		t.Fatal("a valid certificate was regenerated")
	}
	if _, err := EnsureServing(dir, []string{"other.example"}); err != nil {
		t.Fatal(err)
	}
	renewed, _ := os.ReadFile(files.CertFile)
	if string(renewed) == string(after) {
		t.Fatal("certificate not regenerated for a new host")
	}
}

func TestEnsureClient_IssuesForTheSubjectAndReuses(t *testing.T) {
	dir := t.TempDir()
	f, err := EnsureClient(dir, "cm", "system:kube-controller-manager", nil)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(pair.Certificate[0])
	caPEM, _ := os.ReadFile(f.CAFile)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("client certificate does not verify for client auth: %v", err)
	}
	if cert.Subject.CommonName != "system:kube-controller-manager" {
		t.Fatalf("CN %q", cert.Subject.CommonName)
	}
	before, _ := os.ReadFile(f.CertFile)
	if _, err := EnsureClient(dir, "cm", "system:kube-controller-manager", nil); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(f.CertFile); string(again) != string(before) {
		t.Fatal("a valid certificate was issued again")
	}
	if _, err := EnsureClient(dir, "cm", "admin", []string{"system:masters"}); err != nil {
		t.Fatal(err)
	}
	if changed, _ := os.ReadFile(f.CertFile); string(changed) == string(before) {
		t.Fatal("a certificate for another subject was reused")
	}
}

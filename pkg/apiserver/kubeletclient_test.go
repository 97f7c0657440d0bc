package apiserver

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/cronplane/cronplane/pkg/certs"
)

func TestKubeletClientOptions_Validate_RefusesWhatCannotConnect(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*KubeletClientOptions)
		want   string
	}{
		{"defaults", func(*KubeletClientOptions) {}, ""},
		{"certificate and key", func(o *KubeletClientOptions) { o.CertFile, o.KeyFile = "c.crt", "c.key" }, ""},
		{"certificate without key", func(o *KubeletClientOptions) { o.CertFile = "c.crt" }, "--kubelet-client-certificate and --kubelet-client-key go together"},
		{"key without certificate", func(o *KubeletClientOptions) { o.KeyFile = "c.key" }, "--kubelet-client-certificate and --kubelet-client-key go together"},
		{"negative timeout", func(o *KubeletClientOptions) { o.Timeout = -time.Second }, "--kubelet-timeout -1s must not be negative"},
		{"port out of range", func(o *KubeletClientOptions) { o.Port = 70000 }, "kubelet port 70000 must be between 1 and 65535"},
	} {
		o := DefaultKubeletClientOptions()
		tc.mutate(&o)
		err := o.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && err.Error() != tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestPreferredAddress_TakesTheFirstPreferredTypeTheNodeHas(t *testing.T) {
	types := DefaultKubeletClientOptions().PreferredAddressTypes
	addrs := func(a ...corev1.NodeAddress) *corev1.Node {
		return &corev1.Node{Status: corev1.NodeStatus{Addresses: a}}
	}
	for _, tc := range []struct {
		node    *corev1.Node
		want    string
		wantErr string
	}{
		{addrs(corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "203.0.113.1"}, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}), "10.0.0.1", ""},
		{addrs(corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}, corev1.NodeAddress{Type: corev1.NodeHostName, Address: "node-0"}), "node-0", ""},
		{addrs(corev1.NodeAddress{Type: "Other", Address: "x"}), "", "no preferred addresses found; known addresses: [{Other x}]"},
		{addrs(), "", "no preferred addresses found; known addresses: []"},
	} {
		got, err := preferredAddress(tc.node, types)
		if got != tc.want || (err == nil) != (tc.wantErr == "") || (err != nil && err.Error() != tc.wantErr) {
			t.Errorf("%v: got %q, %v; want %q, %q", tc.node.Status.Addresses, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestKubeletConnector_IssuesItsClientCertificateFromTheGeneratedCA(t *testing.T) {
	dir := t.TempDir()
	if _, err := certs.EnsureServing(dir, nil); err != nil {
		t.Fatal(err)
	}
	k := &kubeletConnector{opts: DefaultKubeletClientOptions()}
	if err := k.setTransports(dir, true); err != nil {
		t.Fatal(err)
	}
	cert := readCert(t, filepath.Join(dir, "kubelet-client.crt"))
	if cert.Subject.CommonName != "kube-apiserver-kubelet-client" || len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != "system:masters" {
		t.Errorf("subject %v, want CN kube-apiserver-kubelet-client in system:masters", cert.Subject)
	}
	roots := x509.NewCertPool()
	roots.AddCert(readCert(t, filepath.Join(dir, "ca.crt")))
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the kubelet client certificate does not verify against the CA agents trust: %v", err)
	}
	tr := k.transport.(*http.Transport)
	if len(tr.TLSClientConfig.Certificates) != 1 || !tr.TLSClientConfig.InsecureSkipVerify {
		t.Errorf("transport presents %d certificates, verifies agents %v; want the client certificate, agents unverified without --kubelet-certificate-authority",
			len(tr.TLSClientConfig.Certificates), !tr.TLSClientConfig.InsecureSkipVerify)
	}
}

func readCert(t *testing.T, file string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s: no PEM", file)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestAgentError_ReadsTheAgentsAnswerAsKube(t *testing.T) {
	for _, tc := range []struct {
		code     int
		body     string
		wantCode int32
		wantMsg  string
	}{
		{200, "log", 0, ""},
		{400, `container "a" in pod "p" is waiting to start: ContainerCreating`, 400, `container "a" in pod "p" is waiting to start: ContainerCreating`},
		{404, `pod "p" does not exist`, 404, "the server could not find the requested resource ( pods/log p)"},
		{403, "Forbidden (user=x, verb=get, resource=nodes, subresource=proxy)", 403, "Forbidden (user=x, verb=get, resource=nodes, subresource=proxy) ( pods/log p)"},
		{401, "Unauthorized", 401, "the server has asked for the client to provide credentials ( pods/log p)"},
		{500, "boom", 500, "Internal error occurred: boom"},
	} {
		err := agentError(&http.Response{StatusCode: tc.code, Body: io.NopCloser(strings.NewReader(tc.body))}, "p")
		if tc.wantCode == 0 {
			if err != nil {
				t.Errorf("%d: %v", tc.code, err)
			}
			continue
		}
		var status apierrors.APIStatus
		if !errors.As(err, &status) || status.Status().Code != tc.wantCode || status.Status().Message != tc.wantMsg {
			t.Errorf("%d: got %v, want %d %q", tc.code, err, tc.wantCode, tc.wantMsg)
		}
	}
}

// Package certs owns the apiserver's generated TLS material: a CA, the
// serving certificate it signs, and client certificates for the server's
// own components, created on first start in a directory and reused on
// later starts while they are valid and cover the requested hosts.
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Files are the paths of the generated PEM files.
type Files struct {
	CAFile, CertFile, KeyFile string
}

const (
	caName   = "ca"
	certName = "apiserver"
)

// EnsureServing returns a CA and a serving certificate in dir, generating
// whatever is missing, expiring within a day, or not covering hosts. The
// serving certificate always covers localhost, 127.0.0.1, ::1 and the
// machine's hostname.
func EnsureServing(dir string, hosts []string) (Files, error) {
	f := Files{
		CAFile:   filepath.Join(dir, caName+".crt"),
		CertFile: filepath.Join(dir, certName+".crt"),
		KeyFile:  filepath.Join(dir, certName+".key"),
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return f, err
	}
	dnsNames, ips := sans(hosts)
	caCert, caKey, err := loadOrCreateCA(dir)
	if err != nil {
		return f, err
	}
	if valid(f.CertFile, caCert, dnsNames, ips) {
		return f, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return f, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "cronplane-apiserver"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     dnsNames,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return f, err
	}
	if err := writeKeyPair(f.CertFile, f.KeyFile, der, key); err != nil {
		return f, err
	}
	return f, nil
}

// EnsureClient returns a client certificate in dir, signed by the CA that
// EnsureServing made there, for the user commonName in the groups
// organizations (as x509 client authentication reads them), generating
// it when it is missing, expiring within a day, or for another subject
// or CA. name names its files.
func EnsureClient(dir, name, commonName string, organizations []string) (Files, error) {
	return EnsureCert(dir, Spec{Name: name, CommonName: commonName, Organizations: organizations, Client: true})
}

// Spec describes a certificate signed by the CA of a directory.
type Spec struct {
	// Name names the files: <Name>.crt and <Name>.key.
	Name          string
	CommonName    string
	Organizations []string
	// Hosts are the names and addresses a server certificate covers,
	// besides localhost, 127.0.0.1 and ::1.
	Hosts []string
	// Server and Client are the uses: serving TLS, authenticating to a
	// server, or both (an etcd member to its peers).
	Server, Client bool
}

// EnsureCert returns the certificate s describes in dir, signed by dir's
// CA (created if missing), generating it when it is missing, expiring
// within a day, or for another subject, CA or set of hosts.
func EnsureCert(dir string, s Spec) (Files, error) {
	f := Files{
		CAFile:   filepath.Join(dir, caName+".crt"),
		CertFile: filepath.Join(dir, s.Name+".crt"),
		KeyFile:  filepath.Join(dir, s.Name+".key"),
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return f, err
	}
	caCert, caKey, err := loadOrCreateCA(dir)
	if err != nil {
		return f, err
	}
	var dnsNames []string
	var ips []net.IP
	if s.Server {
		dnsNames, ips = sans(s.Hosts)
	}
	if cert, _, err := load(f.CertFile, f.KeyFile); err == nil && cert.Subject.CommonName == s.CommonName &&
		fmt.Sprint(cert.Subject.Organization) == fmt.Sprint(s.Organizations) && valid(f.CertFile, caCert, dnsNames, ips) {
		return f, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return f, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: s.CommonName, Organization: s.Organizations},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		DNSNames:     dnsNames,
		IPAddresses:  ips,
	}
	if s.Server {
		tmpl.KeyUsage |= x509.KeyUsageKeyEncipherment
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if s.Client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return f, err
	}
	return f, writeKeyPair(f.CertFile, f.KeyFile, der, key)
}

func sans(hosts []string) ([]string, []net.IP) {
	dns := []string{"localhost"}
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}
	if h, err := os.Hostname(); err == nil && h != "" {
		hosts = append(hosts, h)
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			if !ip.IsUnspecified() {
				ips = append(ips, ip)
			}
		} else if h != "" {
			dns = append(dns, h)
		}
	}
	return dns, ips
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err)
	}
	return n
}

func loadOrCreateCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certFile, keyFile := filepath.Join(dir, caName+".crt"), filepath.Join(dir, caName+".key")
	if cert, key, err := load(certFile, keyFile); err == nil && time.Until(cert.NotAfter) > 24*time.Hour {
		return cert, key, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "cronplane-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	if err := writeKeyPair(certFile, keyFile, der, key); err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

func load(certFile, keyFile string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, nil, err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, errors.New("not PEM")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, err
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	return cert, key, err
}

// valid reports whether the certificate in file is signed by ca, valid for
// another day and covers every name and address.
func valid(file string, ca *x509.Certificate, dns []string, ips []net.IP) bool {
	data, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	b, _ := pem.Decode(data)
	if b == nil {
		return false
	}
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil || time.Until(cert.NotAfter) < 24*time.Hour || cert.CheckSignatureFrom(ca) != nil {
		return false
	}
	for _, d := range dns {
		if cert.VerifyHostname(d) != nil {
			return false
		}
	}
	for _, ip := range ips {
		if cert.VerifyHostname(ip.String()) != nil {
			return false
		}
	}
	return true
}

func writeKeyPair(certFile, keyFile string, der []byte, key *ecdsa.PrivateKey) error {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", keyFile, err)
	}
	return os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

package apiserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/client-go/util/keyutil"
)

func writePEM(t *testing.T, blocks ...*pem.Block) string {
	t.Helper()
	var data []byte
	for _, b := range blocks {
		data = append(data, pem.EncodeToMemory(b)...)
	}
	f := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(f, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

var discardLogs = logr.Discard()

// loadServiceAccounts takes the options the way the server does: checked
// and completed (Options.Complete), then loaded (New).
func loadServiceAccounts(o ServiceAccountOptions, dataDir string, logger logr.Logger) (*serviceAccounts, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return newServiceAccounts(o.completed(), dataDir, nil, false, logger)
}

func TestNewServiceAccounts_GeneratesTheSigningKeyOnceAndKeepsIt(t *testing.T) {
	dir := t.TempDir()
	var logs []string
	logf := funcr.New(func(_, args string) { logs = append(logs, args) }, funcr.Options{})
	first, err := loadServiceAccounts(ServiceAccountOptions{}, dir, logf)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, generatedSigningKey)
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	if len(logs) != 2 || !strings.Contains(logs[0], "Generated the service account signing key") || !strings.Contains(logs[0], keyFile) {
		t.Fatalf("logs %q", logs)
	}
	if !reflect.DeepEqual(first.issuers, []string{"https://kubernetes.default.svc.cluster.local"}) || !reflect.DeepEqual(first.audiences, first.issuers) {
		t.Fatalf("issuers %v, audiences %v", first.issuers, first.audiences)
	}
	logs = nil
	second, err := loadServiceAccounts(ServiceAccountOptions{}, dir, logf)
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) != 1 || strings.Contains(logs[0], "Generated") {
		t.Fatalf("a restart generated a key again: %q", logs)
	}
	if !first.signer.PublicKey().(*rsa.PublicKey).Equal(second.signer.PublicKey()) {
		t.Fatal("a restart signs with another key")
	}
}

func TestNewServiceAccounts_ReadsKeysAsKube(t *testing.T) {
	signing, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signingPEM, err := keyutil.MarshalPrivateKeyToPEM(signing)
	if err != nil {
		t.Fatal(err)
	}
	signingFile := filepath.Join(t.TempDir(), "sa.key")
	if err := os.WriteFile(signingFile, signingPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	old, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	oldPublic, err := x509.MarshalPKIXPublicKey(&old.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	// One file of a public key and a private one, whose public half counts.
	keyFile := writePEM(t,
		&pem.Block{Type: "PUBLIC KEY", Bytes: oldPublic},
		&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(old)})
	sa, err := loadServiceAccounts(ServiceAccountOptions{
		SigningKeyFile:     signingFile,
		KeyFiles:           []string{keyFile},
		Issuers:            []string{"https://new.example", "https://old.example"},
		APIAudiences:       []string{"api"},
		MaxTokenExpiration: 2 * time.Hour,
	}, t.TempDir(), discardLogs)
	if err != nil {
		t.Fatal(err)
	}
	if sa.signer.Issuer() != "https://new.example" || !reflect.DeepEqual(sa.audiences, []string{"api"}) || sa.maxExpiration != 2*time.Hour {
		t.Fatalf("%+v", sa)
	}
	// The signing key's public half always verifies, then the files' keys.
	if len(sa.keys) != 3 || !signing.PublicKey.Equal(sa.keys[0]) || !old.PublicKey.Equal(sa.keys[1]) || !old.PublicKey.Equal(sa.keys[2]) {
		t.Fatalf("keys %v", sa.keys)
	}
}

func TestNewServiceAccounts_RefusesWhatKubeRefuses(t *testing.T) {
	empty := writePEM(t)
	for _, tc := range []struct {
		name string
		opts ServiceAccountOptions
		want string
	}{
		{"an empty issuer", ServiceAccountOptions{Issuers: []string{""}}, "service-account-issuer should not be an empty string"},
		{"an issuer twice", ServiceAccountOptions{Issuers: []string{"a", "a"}}, `service-account-issuer "a" is already specified`},
		{"an issuer with a colon that is no URL", ServiceAccountOptions{Issuers: []string{"http://[::1"}}, `service-account-issuer "http://[::1" contained a ':' but was not a valid URL`},
		{"a jwks URI that is not https", ServiceAccountOptions{JWKSURI: "http://x/jwks"}, "service-account-jwks-uri requires https scheme, parsed as: http://x/jwks"},
		{"a jwks URI that is not a URL", ServiceAccountOptions{JWKSURI: "https://x/%zz"}, `service-account-jwks-uri must be a valid URL: parse "https://x/%zz": invalid URL escape "%zz"`},
		{"a maximum lifetime under an hour", ServiceAccountOptions{MaxTokenExpiration: 30 * time.Minute}, "the service-account-max-token-expiration must be between 1 hour and 2^32 seconds"},
		{"a maximum lifetime over 2^32 s", ServiceAccountOptions{MaxTokenExpiration: (1<<32 + 1) * time.Second}, "the service-account-max-token-expiration must be between 1 hour and 2^32 seconds"},
		{"a missing signing key file", ServiceAccountOptions{SigningKeyFile: "/nonexistent/sa.key"}, "no such file"},
		{"a signing key file without a key", ServiceAccountOptions{SigningKeyFile: empty}, "data does not contain a valid RSA or ECDSA private key"},
		{"a key file without keys", ServiceAccountOptions{KeyFiles: []string{empty}}, "data does not contain any valid RSA or ECDSA public keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadServiceAccounts(tc.opts, t.TempDir(), discardLogs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error containing %q, got %v", tc.want, err)
			}
		})
	}
}

package core

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestSecretDefault_TypeAndStringData(t *testing.T) {
	cases := []struct {
		name string
		in   corev1.Secret
		want corev1.Secret
	}{
		{"empty", corev1.Secret{}, corev1.Secret{Type: corev1.SecretTypeOpaque}},
		{"type kept", corev1.Secret{Type: corev1.SecretTypeTLS}, corev1.Secret{Type: corev1.SecretTypeTLS}},
		{"stringData becomes data", corev1.Secret{StringData: map[string]string{"b": "2"}},
			corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"b": []byte("2")}}},
		{"stringData overrides data", corev1.Secret{
			Data:       map[string][]byte{"a": []byte("1"), "c": []byte("3")},
			StringData: map[string]string{"a": "override", "b": "2"},
		}, corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"a": []byte("override"), "b": []byte("2"), "c": []byte("3")}}},
		{"empty stringData leaves data alone", corev1.Secret{StringData: map[string]string{}},
			corev1.Secret{Type: corev1.SecretTypeOpaque}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.in.DeepCopy()
			defaultSecret(s)
			if !equalSecrets(s, &tc.want) {
				t.Fatalf("got %+v, want %+v", s, tc.want)
			}
			defaultSecret(s)
			if !equalSecrets(s, &tc.want) {
				t.Fatalf("defaulting twice: %+v", s)
			}
		})
	}
}

func equalSecrets(a, b *corev1.Secret) bool {
	if a.Type != b.Type || a.StringData != nil || len(a.Data) != len(b.Data) || (a.Data == nil) != (b.Data == nil) {
		return false
	}
	for k, v := range b.Data {
		if string(a.Data[k]) != string(v) {
			return false
		}
	}
	return true
}

func secret(typ corev1.SecretType, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default", ResourceVersion: "5"},
		Type:       typ,
	}
	if data != nil {
		s.Data = map[string][]byte{}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
	}
	return s
}

// The messages are those kube-apiserver v1.29 answered for the same
// secrets.
func TestSecretValidate_PerType(t *testing.T) {
	cases := []struct {
		name string
		in   *corev1.Secret
		want []string
	}{
		{"opaque", secret("", map[string]string{"a": "1"}), nil},
		{"custom type", secret("example.com/custom", nil), nil},
		{"bootstrap token, unchecked", secret(corev1.SecretTypeBootstrapToken, nil), nil},
		{"bad key", secret("", map[string]string{"a b": "1"}), []string{`data[a b]: Invalid value: "a b": ` + keyMsg}},
		{"over 1 MiB", secret("", map[string]string{"a": strings.Repeat("x", 600000), "b": strings.Repeat("y", 600000)}),
			[]string{`data: Too long: must have at most 1048576 bytes`}},
		{"service account token without account", secret(corev1.SecretTypeServiceAccountToken, nil),
			[]string{`metadata.annotations[kubernetes.io/service-account.name]: Required value`}},
		{"service account token", func() *corev1.Secret {
			s := secret(corev1.SecretTypeServiceAccountToken, nil)
			s.Annotations = map[string]string{corev1.ServiceAccountNameKey: "default"}
			return s
		}(), nil},
		{"dockercfg missing", secret(corev1.SecretTypeDockercfg, nil), []string{`data[.dockercfg]: Required value`}},
		{"dockercfg not an object", secret(corev1.SecretTypeDockercfg, map[string]string{".dockercfg": "[1]"}),
			[]string{`data[.dockercfg]: Invalid value: "<secret contents redacted>": json: cannot unmarshal array into Go value of type map[string]interface {}`}},
		{"dockercfg", secret(corev1.SecretTypeDockercfg, map[string]string{".dockercfg": "{}"}), nil},
		{"dockerconfigjson missing", secret(corev1.SecretTypeDockerConfigJson, nil), []string{`data[.dockerconfigjson]: Required value`}},
		{"dockerconfigjson malformed", secret(corev1.SecretTypeDockerConfigJson, map[string]string{".dockerconfigjson": "{bad"}),
			[]string{`data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": invalid character 'b' looking for beginning of object key string`}},
		{"basic-auth missing both", secret(corev1.SecretTypeBasicAuth, nil),
			[]string{`data[username]: Required value`, `data[password]: Required value`}},
		{"basic-auth empty password only", secret(corev1.SecretTypeBasicAuth, map[string]string{"password": ""}), nil},
		{"ssh-auth empty key", secret(corev1.SecretTypeSSHAuth, map[string]string{"ssh-privatekey": ""}),
			[]string{`data[ssh-privatekey]: Required value`}},
		{"ssh-auth", secret(corev1.SecretTypeSSHAuth, map[string]string{"ssh-privatekey": "k"}), nil},
		{"tls missing both", secret(corev1.SecretTypeTLS, nil), []string{`data[tls.crt]: Required value`, `data[tls.key]: Required value`}},
		{"tls missing key", secret(corev1.SecretTypeTLS, map[string]string{"tls.crt": ""}), []string{`data[tls.key]: Required value`}},
		{"tls, not PEM (only a warning)", secret(corev1.SecretTypeTLS, map[string]string{"tls.crt": "x", "tls.key": "y"}), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := secretStrategy{}
			defaultSecret(tc.in)
			s.PrepareForCreate(tc.in)
			checkErrs(t, s.Validate(tc.in), tc.want)
		})
	}
}

func TestSecretValidateUpdate(t *testing.T) {
	forbidden := func(f string) string { return f + ": Forbidden: field is immutable when `immutable` is set" }
	yes, no := true, false
	cases := []struct {
		name      string
		immutable bool
		mutate    func(*corev1.Secret)
		want      []string
	}{
		{"mutable: data changes", false, func(s *corev1.Secret) { s.Data["a"] = []byte("2") }, nil},
		{"mutable: stringData changes data", false, func(s *corev1.Secret) { s.StringData = map[string]string{"b": "3"} }, nil},
		{"type change", false, func(s *corev1.Secret) { s.Type = "Other" }, []string{`type: Invalid value: "Other": field is immutable`}},
		{"immutable: labels change", true, func(s *corev1.Secret) { s.Labels = map[string]string{"x": "z"} }, nil},
		{"immutable: everything changes", true, func(s *corev1.Secret) {
			s.Type = "Other"
			s.Immutable = nil
			s.StringData = map[string]string{"b": "3"}
		}, []string{`type: Invalid value: "Other": field is immutable`, forbidden("immutable"), forbidden("data")}},
		{"immutable: set to false", true, func(s *corev1.Secret) { s.Immutable = &no }, []string{forbidden("immutable")}},
		{"immutable: same data through stringData", true, func(s *corev1.Secret) { s.StringData = map[string]string{"a": "1"} }, nil},
		{"immutable: empty stringData", true, func(s *corev1.Secret) { s.StringData = map[string]string{} }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := secret("", map[string]string{"a": "1"})
			if tc.immutable {
				old.Immutable = &yes
			}
			s := secretStrategy{}
			defaultSecret(old)
			obj := old.DeepCopy()
			tc.mutate(obj)
			defaultSecret(obj)
			s.PrepareForUpdate(obj, old)
			checkErrs(t, s.ValidateUpdate(obj, old), tc.want)
		})
	}

	// An empty data map is a change from none, as kube's reflect.DeepEqual
	// has it.
	old := secret("", nil)
	old.Immutable = &yes
	obj := old.DeepCopy()
	obj.Data = map[string][]byte{}
	checkErrs(t, secretStrategy{}.ValidateUpdate(obj, old), []string{forbidden("data")})

	// A TLS secret updated without a type gets Opaque, and that is refused.
	old = secret(corev1.SecretTypeTLS, map[string]string{"tls.crt": "", "tls.key": ""})
	obj = old.DeepCopy()
	obj.Type = ""
	defaultSecret(obj)
	checkErrs(t, secretStrategy{}.ValidateUpdate(obj, old), []string{`type: Invalid value: "Opaque": field is immutable`})
}

func selfSignedPEM(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

func TestSecretWarnings_TLSKeyPair(t *testing.T) {
	cert, key := selfSignedPEM(t)
	_, otherKey := selfSignedPEM(t)
	cases := []struct {
		name string
		s    *corev1.Secret
		want string
	}{
		{"not PEM", secret(corev1.SecretTypeTLS, map[string]string{"tls.crt": "x", "tls.key": "y"}), "tls: failed to find any PEM data in certificate input"},
		{"matching pair", secret(corev1.SecretTypeTLS, map[string]string{"tls.crt": string(cert), "tls.key": string(key)}), ""},
		{"mismatched pair", secret(corev1.SecretTypeTLS, map[string]string{"tls.crt": string(cert), "tls.key": string(otherKey)}), "tls: private key does not match public key"},
		{"opaque is not checked", secret(corev1.SecretTypeOpaque, map[string]string{"tls.crt": "x"}), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, w := range [][]string{secretStrategy{}.WarningsOnCreate(tc.s), secretStrategy{}.WarningsOnUpdate(tc.s, tc.s)} {
				if got := strings.Join(w, "|"); got != tc.want {
					t.Fatalf("warnings %q, want %q", got, tc.want)
				}
			}
		})
	}
}

func TestSecretRegistration(t *testing.T) {
	res := SecretResource()
	var names []string
	for _, c := range res.Table.Columns {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, ","); got != "Name,Type,Data,Age" {
		t.Fatalf("columns %s", got)
	}
	if d := res.Table.Columns[1].Description; !strings.HasPrefix(d, "Used to facilitate programmatic handling of secret data.") {
		t.Fatalf("Type description %q", d)
	}
	now := time.Now()
	s := secret(corev1.SecretTypeBasicAuth, map[string]string{"password": ""})
	s.CreationTimestamp = metav1.NewTime(now.Add(-36 * time.Second))
	cells := res.Table.Cells(s, now)
	if len(cells) != 4 || cells[0] != "s" || cells[1] != "kubernetes.io/basic-auth" || cells[2] != int64(1) || cells[3] != "36s" {
		t.Fatalf("cells %#v", cells)
	}
	if got := res.SelectableFields(s)["type"]; got != "kubernetes.io/basic-auth" {
		t.Fatalf("type field %q", got)
	}
	if len(res.ShortNames) != 0 || !res.Namespaced {
		t.Fatalf("registration %+v", res)
	}
}

// kube stores a secret created with data {a: 1, c: 3} and stringData
// {a: override, b: 2} as data {a: override, b: 2, c: 3}, type Opaque.
func TestSecretStorage_MatchesKube(t *testing.T) {
	var request runtime.Object = &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-secret", Namespace: "cmprobe", Labels: map[string]string{"app": "demo"}},
		Data:       map[string][]byte{"a": []byte("1"), "c": []byte("3")},
		StringData: map[string]string{"a": "override", "b": "2"},
	}
	storedLikeKube(t, SecretResource(), "testdata/kube-secret.pb", request)
}

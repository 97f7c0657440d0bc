package serviceaccount

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/keyutil"

	"github.com/cronplane/cronplane/pkg/auth/authenticator"
	"github.com/cronplane/cronplane/pkg/auth/user"
)

// objects is a Getter over fixed objects.
type objects struct {
	accounts map[string]*corev1.ServiceAccount
	secrets  map[string]*corev1.Secret
	pods     map[string]*corev1.Pod
}

func (o objects) GetPod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	if p, ok := o.pods[namespace+"/"+name]; ok {
		return p, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name)
}

func (o objects) GetServiceAccount(_ context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	if sa, ok := o.accounts[namespace+"/"+name]; ok {
		return sa, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "serviceaccounts"}, name)
}

func (o objects) GetSecret(_ context.Context, namespace, name string) (*corev1.Secret, error) {
	if s, ok := o.secrets[namespace+"/"+name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func account(uid types.UID) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "builder", UID: uid}}
}

func secret(uid types.UID) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bound", UID: uid}}
}

func rsaKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newSigner(t *testing.T, issuer string, key crypto.PrivateKey) *Signer {
	t.Helper()
	s, err := NewSigner(issuer, key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var now = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func claims() Claims {
	return Claims{
		Namespace:      "ns",
		ServiceAccount: Ref{Name: "builder", UID: "sa-uid"},
		Audiences:      []string{"https://api.example"},
		IssuedAt:       now,
		Expiry:         now.Add(time.Hour),
	}
}

func TestAuthenticator_VerifiesTokensAndTheObjectsTheyName(t *testing.T) {
	key, otherKey := rsaKey(t), rsaKey(t)
	signer := newSigner(t, "https://issuer.example", key)
	bound := claims()
	bound.Secret = &Ref{Name: "bound", UID: "secret-uid"}
	tamper := func(token string) string {
		parts := strings.Split(token, ".")
		payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
		payload = []byte(strings.Replace(string(payload), `"name":"builder"`, `"name":"admin"`, 1))
		parts[1] = base64.RawURLEncoding.EncodeToString(payload)
		return strings.Join(parts, ".")
	}
	for _, tc := range []struct {
		name string
		// token is issued at now by signer unless the case says otherwise.
		token func() string
		at    time.Time
		// objects are the account alone unless the case says otherwise.
		objects *objects
		// recognized false: left to other authenticators, without error.
		recognized bool
		wantErr    string
		// asked are the audiences the request asks for (none: the API's);
		// audiences those the token is then good for (default: the
		// first API audience, which the tokens name).
		asked, audiences []string
	}{
		{name: "a valid token authenticates", recognized: true},
		{name: "a token is valid until it expires", at: now.Add(time.Hour), recognized: true},
		{name: "an expired token is refused", at: now.Add(time.Hour + leeway + time.Second), recognized: true, wantErr: "expired"},
		{name: "a token is refused before nbf", at: now.Add(-leeway - time.Second), recognized: true, wantErr: "not valid yet"},
		{name: "a token of another issuer is not recognized", token: func() string {
			tok, _ := newSigner(t, "https://other.example", key).Sign(claims())
			return tok
		}, recognized: false},
		{name: "a token of the second accepted issuer authenticates", token: func() string {
			tok, _ := newSigner(t, "https://old-issuer.example", key).Sign(claims())
			return tok
		}, recognized: true},
		{name: "a token for another audience is refused", token: func() string {
			c := claims()
			c.Audiences = []string{"vault"}
			tok, _ := signer.Sign(c)
			return tok
		}, recognized: true, wantErr: `token audiences ["vault"] is invalid for the target audiences ["https://api.example" "https://other-api.example"]`},
		{name: "a token for another audience is good when that one is asked for", token: func() string {
			c := claims()
			c.Audiences = []string{"https://api.example", "vault"}
			tok, _ := signer.Sign(c)
			return tok
		}, asked: []string{"other", "vault"}, recognized: true, audiences: []string{"vault"}},
		{name: "a token for the API is refused when another audience is asked for", asked: []string{"vault"},
			recognized: true, wantErr: `token audiences ["https://api.example"] is invalid for the target audiences ["vault"]`},
		{name: "a tampered token is refused", token: func() string {
			tok, _ := signer.Sign(claims())
			return tamper(tok)
		}, recognized: true, wantErr: "square/go-jose: error in cryptographic primitive"},
		{name: "a token signed by an unknown key is refused", token: func() string {
			tok, _ := newSigner(t, "https://issuer.example", otherKey).Sign(claims())
			return tok
		}, recognized: true, wantErr: "square/go-jose: error in cryptographic primitive"},
		{name: "a token of algorithm none is refused in kube's words", token: func() string {
			tok, _ := signer.Sign(claims())
			parts := strings.Split(tok, ".")
			return base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + "." + parts[1] + "."
		}, recognized: true, wantErr: "square/go-jose: error in cryptographic primitive"},
		{name: "a token of a deleted account is refused", objects: &objects{}, recognized: true, wantErr: `serviceaccounts "builder" not found`},
		{name: "a token of an account created again is refused", objects: &objects{accounts: map[string]*corev1.ServiceAccount{"ns/builder": account("new-uid")}},
			recognized: true, wantErr: "service account UID (new-uid) does not match claim (sa-uid)"},
		{name: "a token of an account being deleted is refused after the leeway", objects: &objects{accounts: map[string]*corev1.ServiceAccount{"ns/builder": func() *corev1.ServiceAccount {
			sa := account("sa-uid")
			sa.DeletionTimestamp = &metav1.Time{Time: now.Add(-2 * leeway)}
			return sa
		}()}}, recognized: true, wantErr: "deleted"},
		{name: "a token bound to an existing secret authenticates", token: func() string {
			tok, _ := signer.Sign(bound)
			return tok
		}, objects: &objects{
			accounts: map[string]*corev1.ServiceAccount{"ns/builder": account("sa-uid")},
			secrets:  map[string]*corev1.Secret{"ns/bound": secret("secret-uid")},
		}, recognized: true},
		{name: "a token bound to a deleted secret is refused", token: func() string {
			tok, _ := signer.Sign(bound)
			return tok
		}, recognized: true, wantErr: "service account token has been invalidated"},
		{name: "a token bound to a secret created again is refused", token: func() string {
			tok, _ := signer.Sign(bound)
			return tok
		}, objects: &objects{
			accounts: map[string]*corev1.ServiceAccount{"ns/builder": account("sa-uid")},
			secrets:  map[string]*corev1.Secret{"ns/bound": secret("other-uid")},
		}, recognized: true, wantErr: "secret UID (other-uid) does not match service account secret ref claim (secret-uid)"},
		{name: "a token bound to a deleted pod is refused", token: func() string {
			c := claims()
			c.Pod = &Ref{Name: "web", UID: "pod-uid"}
			tok, _ := signer.Sign(c)
			return tok
		}, recognized: true, wantErr: "service account token has been invalidated"},
		{name: "a token bound to a pod created again is refused", token: func() string {
			c := claims()
			c.Pod = &Ref{Name: "web", UID: "pod-uid"}
			tok, _ := signer.Sign(c)
			return tok
		}, objects: &objects{
			accounts: map[string]*corev1.ServiceAccount{"ns/builder": account("sa-uid")},
			pods:     map[string]*corev1.Pod{"ns/web": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "other-uid"}}},
		}, recognized: true, wantErr: "pod UID (other-uid) does not match service account pod ref claim (pod-uid)"},
		{name: "a static token is not recognized", token: func() string { return "admin-token" }, recognized: false},
		{name: "three dots that are no JWT are not recognized", token: func() string { return "a.b.c" }, recognized: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			token := ""
			if tc.token != nil {
				token = tc.token()
			} else {
				token, _ = signer.Sign(claims())
			}
			at := tc.at
			if at.IsZero() {
				at = now
			}
			objs := objects{accounts: map[string]*corev1.ServiceAccount{"ns/builder": account("sa-uid")}}
			if tc.objects != nil {
				objs = *tc.objects
			}
			a := NewAuthenticator(AuthenticatorConfig{
				Issuers:   []string{"https://issuer.example", "https://old-issuer.example"},
				Keys:      []crypto.PublicKey{signer.PublicKey()},
				Audiences: []string{"https://api.example", "https://other-api.example"},
				Getter:    objs,
				Now:       func() time.Time { return at },
			})
			ctx := context.Background()
			if tc.asked != nil {
				ctx = authenticator.WithAudiences(ctx, tc.asked)
			}
			resp, ok, err := a.AuthenticateToken(ctx, token)
			switch {
			case !tc.recognized:
				if ok || err != nil {
					t.Fatalf("want not recognized, got ok=%v err=%v", ok, err)
				}
			case tc.wantErr != "":
				if ok || err == nil || !strings.HasSuffix(err.Error(), tc.wantErr) {
					t.Fatalf("want an error containing %q, got ok=%v err=%v", tc.wantErr, ok, err)
				}
			default:
				if !ok || err != nil {
					t.Fatalf("want authenticated, got ok=%v err=%v", ok, err)
				}
				wantAudiences := tc.audiences
				if wantAudiences == nil {
					wantAudiences = []string{"https://api.example"}
				}
				if !reflect.DeepEqual(resp.Audiences, wantAudiences) {
					t.Fatalf("audiences %v, want %v", resp.Audiences, wantAudiences)
				}
				u := resp.User
				want := &user.Info{Name: "system:serviceaccount:ns:builder", UID: "sa-uid", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns"}}
				// kube v1.29 names no credential without its JTI gate.
				if !reflect.DeepEqual(u, want) {
					t.Fatalf("user %+v, want %+v", u, want)
				}
			}
		})
	}
}

// payload decodes a token's claims without verifying them.
func payload(t *testing.T, token string) (header, claims map[string]interface{}) {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a compact JWS: %q", token)
	}
	for i, into := range []*map[string]interface{}{&header, &claims} {
		data, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, into); err != nil {
			t.Fatal(err)
		}
	}
	return header, claims
}

func TestSigner_WritesKubesClaims(t *testing.T) {
	c := claims()
	c.Secret = &Ref{Name: "bound", UID: "secret-uid"}
	token, err := newSigner(t, DefaultIssuer, rsaKey(t)).Sign(c)
	if err != nil {
		t.Fatal(err)
	}
	header, got := payload(t, token)
	if header["alg"] != "RS256" || header["kid"] == "" || len(header) != 2 {
		t.Fatalf("header %v", header)
	}
	want := map[string]interface{}{
		"iss": DefaultIssuer,
		"sub": "system:serviceaccount:ns:builder",
		// A list even of one, as kube writes it.
		"aud": []interface{}{"https://api.example"},
		"iat": float64(now.Unix()),
		"nbf": float64(now.Unix()),
		"exp": float64(now.Add(time.Hour).Unix()),
		"kubernetes.io": map[string]interface{}{
			"namespace":      "ns",
			"serviceaccount": map[string]interface{}{"name": "builder", "uid": "sa-uid"},
			"secret":         map[string]interface{}{"name": "bound", "uid": "secret-uid"},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("claims\n got %v\nwant %v", got, want)
	}
}

func TestSigner_ECDSAKeysSignWithTheirCurvesAlgorithm(t *testing.T) {
	for curve, alg := range map[elliptic.Curve]string{elliptic.P256(): "ES256", elliptic.P384(): "ES384", elliptic.P521(): "ES512"} {
		key, err := ecdsa.GenerateKey(curve, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		signer := newSigner(t, DefaultIssuer, key)
		token, err := signer.Sign(claims())
		if err != nil {
			t.Fatal(err)
		}
		if header, _ := payload(t, token); header["alg"] != alg {
			t.Fatalf("%s: alg %v", curve.Params().Name, header["alg"])
		}
		a := NewAuthenticator(AuthenticatorConfig{
			Issuers: []string{DefaultIssuer}, Keys: []crypto.PublicKey{signer.PublicKey()}, Audiences: []string{"https://api.example"},
			Getter: objects{accounts: map[string]*corev1.ServiceAccount{"ns/builder": account("sa-uid")}},
			Now:    func() time.Time { return now },
		})
		if _, ok, err := a.AuthenticateToken(context.Background(), token); !ok || err != nil {
			t.Fatalf("%s: ok=%v err=%v", curve.Params().Name, ok, err)
		}
	}
}

func TestNewSigner_RefusesKeysKubeDoesNotSignWith(t *testing.T) {
	p224, err := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for name, key := range map[string]crypto.PrivateKey{"P-224": p224, "a public key": &p224.PublicKey} {
		if _, err := NewSigner(DefaultIssuer, key); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

// testdata holds a token kube-apiserver v1.29 issued (`kubectl create
// token default --bound-object-kind Secret --bound-object-name cp-s
// --audience https://kubernetes.default.svc.cluster.local --audience
// other`) and the public key that verifies it.
func TestAuthenticator_ReadsTokensKubeIssued(t *testing.T) {
	data, err := os.ReadFile("testdata/kube-token.jwt")
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(data))
	keys, err := keyutil.PublicKeysFromFile("testdata/kube-sa.pub")
	if err != nil {
		t.Fatal(err)
	}
	header, c := payload(t, token)
	// The same key gets the same key id from both servers.
	if kid, err := keyID(keys[0]); err != nil || header["kid"] != kid {
		t.Fatalf("kid %v, ours %s (%v)", header["kid"], kid, err)
	}
	issued := time.Unix(int64(c["iat"].(float64)), 0)
	a := NewAuthenticator(AuthenticatorConfig{
		Issuers:   []string{DefaultIssuer},
		Keys:      []crypto.PublicKey{keys[0]},
		Audiences: []string{DefaultIssuer},
		Getter: objects{
			accounts: map[string]*corev1.ServiceAccount{"cp-sa/default": {ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "0773f9da-7934-4505-b2c0-32920e120d17"}}},
			secrets:  map[string]*corev1.Secret{"cp-sa/cp-s": {ObjectMeta: metav1.ObjectMeta{Name: "cp-s", UID: "a6b42975-5d8d-4502-b739-18d1ce3cc603"}}},
		},
		Now: func() time.Time { return issued.Add(time.Minute) },
	})
	resp, ok, err := a.AuthenticateToken(context.Background(), token)
	if !ok || err != nil {
		t.Fatalf("ok=%v err=%v", ok, err)
	}
	u := resp.User
	// kube v1.29 writes no jti by default, so there is no credential id.
	want := &user.Info{Name: "system:serviceaccount:cp-sa:default", UID: "0773f9da-7934-4505-b2c0-32920e120d17", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:cp-sa"}}
	if !reflect.DeepEqual(u, want) {
		t.Fatalf("user %+v", u)
	}
}

// With kube's ServiceAccountTokenJTI gate a token carries an id, which
// the user's extra then names; without it neither is.
func TestTokenIDs_WrittenAndNamedOnlyWhenAsked(t *testing.T) {
	signer := newSigner(t, DefaultIssuer, rsaKey(t))
	for _, on := range []bool{false, true} {
		c := claims()
		if on {
			c.ID = "id-1"
		}
		token, err := signer.Sign(c)
		if err != nil {
			t.Fatal(err)
		}
		if _, got := payload(t, token); got["jti"] != map[bool]interface{}{false: nil, true: "id-1"}[on] {
			t.Fatalf("gate %v: jti %v", on, got["jti"])
		}
		a := NewAuthenticator(AuthenticatorConfig{
			Issuers: []string{DefaultIssuer}, Keys: []crypto.PublicKey{signer.PublicKey()}, Audiences: []string{"https://api.example"},
			Getter: objects{accounts: map[string]*corev1.ServiceAccount{"ns/builder": account("sa-uid")}},
			Now:    func() time.Time { return now }, CredentialIDs: on,
		})
		resp, ok, err := a.AuthenticateToken(context.Background(), token)
		if !ok || err != nil {
			t.Fatalf("gate %v: ok=%v err=%v", on, ok, err)
		}
		if want := map[bool]map[string][]string{true: {CredentialIDKey: {"JTI=id-1"}}}[on]; !reflect.DeepEqual(resp.User.Extra, want) {
			t.Fatalf("gate %v: extra %v, want %v", on, resp.User.Extra, want)
		}
	}
}

// A token bound to a pod names it in its claims and, once authenticated,
// in the user's extra, as kube's do.
func TestAuthenticator_PodBoundTokenNamesThePod(t *testing.T) {
	signer := newSigner(t, "https://issuer.example", rsaKey(t))
	c := claims()
	c.Pod = &Ref{Name: "web", UID: "pod-uid"}
	token, err := signer.Sign(c)
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[1])
	if !strings.Contains(string(payload), `"kubernetes.io":{"namespace":"ns","pod":{"name":"web","uid":"pod-uid"},"serviceaccount":{"name":"builder","uid":"sa-uid"}}`) {
		t.Errorf("claims %s", payload)
	}
	a := NewAuthenticator(AuthenticatorConfig{
		Issuers: []string{"https://issuer.example"}, Keys: []crypto.PublicKey{signer.PublicKey()}, Audiences: []string{"https://api.example"},
		Getter: objects{
			accounts: map[string]*corev1.ServiceAccount{"ns/builder": account("sa-uid")},
			pods:     map[string]*corev1.Pod{"ns/web": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "pod-uid"}}},
		},
		Now: func() time.Time { return now },
	})
	resp, ok, err := a.AuthenticateToken(context.Background(), token)
	if !ok || err != nil {
		t.Fatalf("ok=%v err=%v", ok, err)
	}
	want := map[string][]string{PodNameKey: {"web"}, PodUIDKey: {"pod-uid"}}
	if !reflect.DeepEqual(resp.User.Extra, want) {
		t.Errorf("extra %v, want %v", resp.User.Extra, want)
	}
}

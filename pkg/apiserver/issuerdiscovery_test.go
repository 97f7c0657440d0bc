package apiserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cronplane/cronplane/pkg/apiserver"
	"github.com/cronplane/cronplane/pkg/apiserver/apiservertest"
)

// As the API part of the upstream spec "ServiceAccountIssuerDiscovery
// should support OIDC discovery of service account issuer": a service
// account reads the issuer's configuration and keys, and the keys verify
// the account's own token.
func TestIssuerDiscovery_ServiceAccountVerifiesItsTokenWithTheKeys(t *testing.T) {
	ctx := context.Background()
	ns := "oidc-discovery"
	if _, err := srv.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}) }()
	if _, err := srv.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reader"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := srv.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "reader", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	token := tr.Status.Token

	resp, body := raw(t, "GET", "/.well-known/openid-configuration", token, "", "")
	want := `{"issuer":"https://kubernetes.default.svc.cluster.local","jwks_uri":"` + srv.URL + `/openid/v1/jwks","response_types_supported":["id_token"],"subject_types_supported":["public"],"id_token_signing_alg_values_supported":["RS256"]}`
	if resp.StatusCode != 200 || body != want || resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Cache-Control") != "public, max-age=3600" {
		t.Fatalf("openid-configuration: %d %v\n%s\nwant\n%s", resp.StatusCode, resp.Header, body, want)
	}
	resp, body = raw(t, "GET", "/openid/v1/jwks", token, "", "")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/jwk-set+json" {
		t.Fatalf("jwks: %d %v\n%s", resp.StatusCode, resp.Header, body)
	}
	var keys jose.JSONWebKeySet
	if err := json.Unmarshal([]byte(body), &keys); err != nil {
		t.Fatal(err)
	}
	parsed, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.ES384, jose.ES512})
	if err != nil {
		t.Fatal(err)
	}
	found := keys.Key(parsed.Headers[0].KeyID)
	if len(found) != 1 || found[0].Use != "sig" || found[0].Algorithm != "RS256" {
		t.Fatalf("no key %q in %s", parsed.Headers[0].KeyID, body)
	}
	var claims jwt.Claims
	if err := parsed.Claims(found[0].Key, &claims); err != nil || claims.Subject != "system:serviceaccount:"+ns+":reader" {
		t.Fatalf("token verified with the published key: %v, claims %+v", err, claims)
	}

	for _, tc := range []struct {
		method, path, token string
		code                int
		body                string
	}{
		{"GET", "/openid/v1/jwks/", token, 200, `{"keys":[`},
		{"GET", "/.well-known/openid-configuration/", token, 200, `{"issuer":`},
		// As kube's router, more trailing slashes name the same document,
		// which the bootstrap role, matching paths exactly, does not grant.
		{"GET", "/openid/v1/jwks//", srv.AdminToken, 200, `{"keys":[`},
		{"GET", "/.well-known/openid-configuration///", srv.AdminToken, 200, `{"issuer":`},
		{"GET", "/openid/v1/jwks//", token, 403, `cannot get path \"/openid/v1/jwks//\"`},
		{"GET", "/openid/v1/jwksx", srv.AdminToken, 404, "404 page not found"},
		{"POST", "/openid/v1/jwks", srv.AdminToken, 405, `"reason":"MethodNotAllowed"`},
		{"GET", "/openid/v1/jwks", "", 403, `cannot get path \"/openid/v1/jwks\"`},
	} {
		resp, body := raw(t, tc.method, tc.path, tc.token, "", "")
		if resp.StatusCode != tc.code || !strings.Contains(body, tc.body) {
			t.Errorf("%s %s: %d %s, want %d %s", tc.method, tc.path, resp.StatusCode, body, tc.code, tc.body)
		}
	}
}

// getFrom GETs path from s as its admin.
func getFrom(t *testing.T, s *apiservertest.Server, path string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.AdminToken)
	resp, err := s.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// Kube requires only https of --service-account-jwks-uri and publishes it
// as given, query included.
func TestIssuerDiscovery_PublishesAJWKSURIWithAQueryAsGiven(t *testing.T) {
	s := apiservertest.Start(t, func(o *apiserver.Options) {
		o.ServiceAccounts.Issuers = []string{"https://issuer.example"}
		o.ServiceAccounts.JWKSURI = "https://x/j?q=1"
	})
	resp, body := getFrom(t, s, "/.well-known/openid-configuration")
	if resp.StatusCode != 200 || !strings.Contains(body, `"issuer":"https://issuer.example","jwks_uri":"https://x/j?q=1",`) {
		t.Fatalf("openid-configuration: %d %s", resp.StatusCode, body)
	}
	if resp, body := getFrom(t, s, "/openid/v1/jwks"); resp.StatusCode != 200 || !strings.HasPrefix(body, `{"keys":[`) {
		t.Fatalf("jwks: %d %s", resp.StatusCode, body)
	}
}

// An issuer kube cannot publish (not https, or with a query or fragment)
// leaves the server running without discovery: its paths are unknown.
func TestIssuerDiscovery_NotServedForAnIssuerThatIsNotAnHTTPSURL(t *testing.T) {
	s := apiservertest.Start(t, func(o *apiserver.Options) {
		o.ServiceAccounts.Issuers = []string{"https://issuer.example/?q=1"}
	})
	for _, path := range []string{"/.well-known/openid-configuration", "/openid/v1/jwks", "/openid/v1/jwks/"} {
		resp, body := getFrom(t, s, path)
		if resp.StatusCode != 404 || body != "404 page not found\n" {
			t.Errorf("%s: %d %q", path, resp.StatusCode, body)
		}
	}
}

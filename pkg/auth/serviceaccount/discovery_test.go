package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"strings"
	"testing"
)

func TestOpenIDMetadata_KeysOnceEachAndHTTPSOnly(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, issuer, jwks string
		keys               []crypto.PublicKey
		err                string
		algs               string
		keyCount           int
	}{
		{name: "the same key twice is listed once", issuer: "https://issuer.example", jwks: "https://issuer.example/keys",
			keys: []crypto.PublicKey{&rsaKey.PublicKey, &rsaKey.PublicKey}, algs: `["RS256"]`, keyCount: 1},
		{name: "algorithms of both kinds, sorted", issuer: "https://issuer.example", jwks: "https://issuer.example/keys",
			keys: []crypto.PublicKey{&rsaKey.PublicKey, &ecKey.PublicKey}, algs: `["ES384","RS256"]`, keyCount: 2},
		{name: "an issuer that is not an https URL", issuer: "cronplane", jwks: "https://issuer.example/keys",
			keys: []crypto.PublicKey{&rsaKey.PublicKey}, err: "issuer URL must use https scheme, got: cronplane"},
		{name: "a jwks_uri with a query is published as given", issuer: "https://issuer.example", jwks: "https://issuer.example/keys?x=1",
			keys: []crypto.PublicKey{&rsaKey.PublicKey}, algs: `["RS256"]`, keyCount: 1},
		{name: "an issuer with a query", issuer: "https://issuer.example/?q=1", jwks: "https://issuer.example/keys",
			keys: []crypto.PublicKey{&rsaKey.PublicKey}, err: "issuer URL may not include a query, got: https://issuer.example/?q=1"},
		{name: "an issuer with a fragment", issuer: "https://issuer.example/p#f", jwks: "https://issuer.example/keys",
			keys: []crypto.PublicKey{&rsaKey.PublicKey}, err: "issuer URL may not include a fragment, got: https://issuer.example/p#f"},
		{name: "a jwks_uri that is not https", issuer: "https://issuer.example", jwks: "http://issuer.example/keys",
			keys: []crypto.PublicKey{&rsaKey.PublicKey}, err: "jwks URI must use https scheme, got: http://issuer.example/keys"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := NewOpenIDMetadata(tc.issuer, tc.jwks, tc.keys)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(m.Configuration), `"jwks_uri":"`+tc.jwks+`"`) {
				t.Fatalf("configuration %s, want jwks_uri %s", m.Configuration, tc.jwks)
			}
			if !strings.Contains(string(m.Configuration), `"id_token_signing_alg_values_supported":`+tc.algs) {
				t.Fatalf("configuration %s, want algorithms %s", m.Configuration, tc.algs)
			}
			if got := strings.Count(string(m.KeySet), `"kid"`); got != tc.keyCount {
				t.Fatalf("%d keys in %s, want %d", got, m.KeySet, tc.keyCount)
			}
		})
	}
}

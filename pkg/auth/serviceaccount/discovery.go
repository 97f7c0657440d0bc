package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"

	jose "github.com/go-jose/go-jose/v4"
)

// OpenIDMetadata is what service account issuer discovery serves: the
// OpenID Provider configuration of the issuer and the JSON Web Key Set of
// the keys that verify its tokens, so that a party outside the cluster can
// verify them as it verifies any OIDC ID token.
type OpenIDMetadata struct {
	Configuration []byte
	KeySet        []byte
}

// NewOpenIDMetadata describes issuer, whose keys are published at jwksURI.
// As kube requires, the issuer is an https URL without query or fragment
// (it names the document below it), and jwksURI is an https URL, published
// as given; the keys are listed once each.
func NewOpenIDMetadata(issuer, jwksURI string, keys []crypto.PublicKey) (*OpenIDMetadata, error) {
	if err := validIssuer(issuer); err != nil {
		return nil, err
	}
	if u, err := url.Parse(jwksURI); err != nil {
		return nil, fmt.Errorf("jwks URI is invalid: %w", err)
	} else if u.Scheme != "https" {
		return nil, fmt.Errorf("jwks URI must use https scheme, got: %s", jwksURI)
	}
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{}}
	algs := map[string]bool{}
	seen := map[string]bool{}
	for _, k := range keys {
		kid, err := keyID(k)
		if err != nil {
			return nil, err
		}
		alg, err := algorithm(k)
		if err != nil {
			return nil, err
		}
		if seen[kid] {
			continue
		}
		seen[kid] = true
		algs[alg] = true
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k, KeyID: kid, Algorithm: alg, Use: "sig"})
	}
	algList := make([]string, 0, len(algs))
	for a := range algs {
		algList = append(algList, a)
	}
	sort.Strings(algList)
	config, err := json.Marshal(struct {
		Issuer        string   `json:"issuer"`
		JWKSURI       string   `json:"jwks_uri"`
		ResponseTypes []string `json:"response_types_supported"`
		SubjectTypes  []string `json:"subject_types_supported"`
		SigningAlgs   []string `json:"id_token_signing_alg_values_supported"`
	}{issuer, jwksURI, []string{"id_token"}, []string{"public"}, algList})
	if err != nil {
		return nil, err
	}
	keySet, err := json.Marshal(set)
	if err != nil {
		return nil, err
	}
	return &OpenIDMetadata{Configuration: config, KeySet: keySet}, nil
}

func validIssuer(issuer string) error {
	u, err := url.Parse(issuer)
	switch {
	case err != nil:
		return fmt.Errorf("issuer URL is invalid: %w", err)
	case u.Scheme != "https":
		return fmt.Errorf("issuer URL must use https scheme, got: %s", issuer)
	case u.RawQuery != "":
		return fmt.Errorf("issuer URL may not include a query, got: %s", issuer)
	case u.Fragment != "":
		return fmt.Errorf("issuer URL may not include a fragment, got: %s", issuer)
	}
	return nil
}

// algorithm is the JWS algorithm tokens signed by the key's private half
// use.
func algorithm(k crypto.PublicKey) (string, error) {
	switch key := k.(type) {
	case *rsa.PublicKey:
		return string(jose.RS256), nil
	case *ecdsa.PublicKey:
		switch key.Curve {
		case elliptic.P256():
			return string(jose.ES256), nil
		case elliptic.P384():
			return string(jose.ES384), nil
		case elliptic.P521():
			return string(jose.ES512), nil
		}
	}
	return "", fmt.Errorf("service account key of type %T cannot sign tokens", k)
}

package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"fmt"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// tokenClaims is a token's payload as kube writes it: the registered
// claims, with aud always a list, and the private "kubernetes.io" claim.
type tokenClaims struct {
	Issuer     string           `json:"iss"`
	Subject    string           `json:"sub"`
	Audience   []string         `json:"aud"`
	Expiry     *jwt.NumericDate `json:"exp"`
	NotBefore  *jwt.NumericDate `json:"nbf"`
	IssuedAt   *jwt.NumericDate `json:"iat"`
	ID         string           `json:"jti,omitempty"`
	Kubernetes kubeClaims       `json:"kubernetes.io"`
}

// privateClaims is what a token is read as beyond the registered claims
// (which jwt.Claims reads, aud as a string or a list).
type privateClaims struct {
	Kubernetes kubeClaims `json:"kubernetes.io"`
}

// kubeClaims is the private claim: whose token it is and what it is bound
// to.
type kubeClaims struct {
	Namespace      string    `json:"namespace,omitempty"`
	ServiceAccount claimRef  `json:"serviceaccount,omitempty"`
	Pod            *claimRef `json:"pod,omitempty"`
	Secret         *claimRef `json:"secret,omitempty"`
}

type claimRef struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// Signer issues tokens under one issuer with one private key.
type Signer struct {
	issuer string
	public crypto.PublicKey
	signer jose.Signer
}

// NewSigner returns a signer of tokens from issuer. key is an RSA private
// key (signing RS256) or an ECDSA one on P-256, P-384 or P-521 (ES256,
// ES384, ES512), as kube accepts them.
func NewSigner(issuer string, key crypto.PrivateKey) (*Signer, error) {
	var alg jose.SignatureAlgorithm
	var public crypto.PublicKey
	switch k := key.(type) {
	case *rsa.PrivateKey:
		alg, public = jose.RS256, &k.PublicKey
	case *ecdsa.PrivateKey:
		switch k.Curve {
		case elliptic.P256():
			alg = jose.ES256
		case elliptic.P384():
			alg = jose.ES384
		case elliptic.P521():
			alg = jose.ES512
		default:
			return nil, fmt.Errorf("service account signing key: unsupported ECDSA curve %s (want P-256, P-384 or P-521)", k.Curve.Params().Name)
		}
		public = &k.PublicKey
	default:
		return nil, fmt.Errorf("service account signing key: %T is neither an RSA nor an ECDSA private key", key)
	}
	kid, err := keyID(public)
	if err != nil {
		return nil, err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: kid, Algorithm: string(alg), Use: "sig"}}, nil)
	if err != nil {
		return nil, err
	}
	return &Signer{issuer: issuer, public: public, signer: signer}, nil
}

// keyID names a public key in the tokens it verifies: the unpadded
// base64url SHA-256 of its PKIX form, as kube derives it, so that a key
// has the same "kid" whichever of the two servers signs with it.
func keyID(public crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(public)
	if err != nil {
		return "", fmt.Errorf("service account key: %w", err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// Issuer is the issuer the signer's tokens name.
func (s *Signer) Issuer() string { return s.issuer }

// PublicKey verifies the signer's tokens.
func (s *Signer) PublicKey() crypto.PublicKey { return s.public }

// Sign returns the compact JWS of a token with claims c.
func (s *Signer) Sign(c Claims) (string, error) {
	tc := tokenClaims{
		Issuer:    s.issuer,
		Subject:   UserName(c.Namespace, c.ServiceAccount.Name),
		Audience:  c.Audiences,
		Expiry:    jwt.NewNumericDate(c.Expiry),
		NotBefore: jwt.NewNumericDate(c.IssuedAt),
		IssuedAt:  jwt.NewNumericDate(c.IssuedAt),
		ID:        c.ID,
		Kubernetes: kubeClaims{
			Namespace:      c.Namespace,
			ServiceAccount: claimRef{Name: c.ServiceAccount.Name, UID: string(c.ServiceAccount.UID)},
		},
	}
	if c.Pod != nil {
		tc.Kubernetes.Pod = &claimRef{Name: c.Pod.Name, UID: string(c.Pod.UID)}
	}
	if c.Secret != nil {
		tc.Kubernetes.Secret = &claimRef{Name: c.Secret.Name, UID: string(c.Secret.UID)}
	}
	return jwt.Signed(s.signer).Claims(tc).Serialize()
}

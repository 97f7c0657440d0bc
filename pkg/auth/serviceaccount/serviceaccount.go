// Package serviceaccount owns the service account token format: the
// signed JWTs kube-apiserver issues through the TokenRequest API (bound
// tokens), with kube's claims, so that a token is read the same way by
// either server given the same keys and issuer. A Signer issues tokens
// with one private key under one issuer; an Authenticator verifies them
// against the accepted issuers, public keys and API audiences, and checks
// that the account (and the Secret or Pod the token is bound to) still exists
// with the uid the token names. Tokens of other issuers, and anything that
// is not a JWT, are left to the other authenticators.
package serviceaccount

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// DefaultIssuer is the issuer kubeadm configures, the cluster's in-cluster
// API address.
const DefaultIssuer = "https://kubernetes.default.svc.cluster.local"

// The user and group names of service accounts, as kube makes them.
const (
	userNamePrefix = "system:serviceaccount:"
	// AllServiceAccountsGroup holds every service account.
	AllServiceAccountsGroup = "system:serviceaccounts"
	namespaceGroupPrefix    = "system:serviceaccounts:"
	// CredentialIDKey is the user's extra that names the token it
	// authenticated with ("JTI=<jti>").
	CredentialIDKey = "authentication.kubernetes.io/credential-id"
	// PodNameKey and PodUIDKey are the user's extras that name the pod a
	// token is bound to.
	PodNameKey = "authentication.kubernetes.io/pod-name"
	PodUIDKey  = "authentication.kubernetes.io/pod-uid"
)

// UserName is the user a service account authenticates as.
func UserName(namespace, name string) string {
	return userNamePrefix + namespace + ":" + name
}

// Groups are the groups of a service account of namespace.
func Groups(namespace string) []string {
	return []string{AllServiceAccountsGroup, namespaceGroupPrefix + namespace}
}

// Ref names an object a token refers to; the uid tells it apart from an
// object of the same name deleted and created again.
type Ref struct {
	Name string
	UID  types.UID
}

// Claims are what one token asserts.
type Claims struct {
	Namespace      string
	ServiceAccount Ref
	// Pod and Secret are the object the token is bound to, if any: the
	// token is valid only while it exists.
	Pod       *Ref
	Secret    *Ref
	Audiences []string
	IssuedAt  time.Time
	Expiry    time.Time
	// ID is the token's jti; empty writes none, as kube v1.29 does unless
	// its ServiceAccountTokenJTI gate is on.
	ID string
}

package nodeserver

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/klog/v2"
)

// The kubelet's cache lifetimes of its webhook answers: authenticated
// tokens for 2 minutes, authorization decisions for 5 minutes when
// allowed and 30 seconds when denied. A refused token is kept briefly so
// a client retrying it does not load the apiserver.
const (
	tokenTTL        = 2 * time.Minute
	refusedTokenTTL = 10 * time.Second
	allowedTTL      = 5 * time.Minute
	deniedTTL       = 30 * time.Second
	// cacheLimit bounds each cache; past it, expired entries go first
	// and, if that is not enough, everything.
	cacheLimit = 4096
)

// user is who made a request, as an authenticator tells it.
type user struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// withAuth answers 401 to a request no one can be found for and 403 to
// one whose user may not use the node's API, with the kubelet's texts.
func (s *Server) withAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, err := s.authn.authenticate(r)
		if err != nil || u == nil {
			if err != nil {
				klog.V(2).InfoS("Unable to authenticate the request", "err", err)
			}
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		a := attributesFor(u, r)
		allowed, err := s.authz.authorize(r.Context(), a)
		switch {
		case err != nil:
			klog.ErrorS(err, "Authorization error", "user", u.Name, "verb", a.verb, "resource", "nodes", "subresource", a.subresource)
			http.Error(w, fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=nodes, subresource=%s)", u.Name, a.verb, a.subresource), http.StatusInternalServerError)
		case !allowed:
			klog.V(2).InfoS("Forbidden", "user", u.Name, "verb", a.verb, "resource", "nodes", "subresource", a.subresource)
			http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=nodes, subresource=%s)", u.Name, a.verb, a.subresource), http.StatusForbidden)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// attributes is what a request asks of the node, as an API request on
// the Node object would: the kubelet maps every path it serves here to
// nodes/proxy (its /stats, /metrics and /logs, which this server does not
// serve, have subresources of their own).
type attributes struct {
	user        *user
	verb        string
	subresource string
}

func attributesFor(u *user, r *http.Request) attributes {
	verb := ""
	switch r.Method {
	case http.MethodPost:
		verb = "create"
	case http.MethodGet, http.MethodHead:
		verb = "get"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
	}
	return attributes{user: u, verb: verb, subresource: "proxy"}
}

// authenticator finds the user of a request: its client certificate if
// it has one and a CA is configured, else its bearer token.
type authenticator struct {
	cas     *x509.CertPool
	reviews authenticationclient.TokenReviewInterface
	cache   ttlCache[*user]
}

func newAuthenticator(cas *x509.CertPool, reviews authenticationclient.TokenReviewInterface) *authenticator {
	return &authenticator{cas: cas, reviews: reviews}
}

func (a *authenticator) authenticate(r *http.Request) (*user, error) {
	if a.cas != nil && r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		return a.certificateUser(r.TLS.PeerCertificates)
	}
	auth := strings.TrimSpace(r.Header.Get("Authorization"))
	scheme, token, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "bearer") || strings.TrimSpace(token) == "" {
		return nil, nil
	}
	return a.tokenUser(r.Context(), strings.TrimSpace(token))
}

// certificateUser is the user of a verified client certificate: its
// common name, in the groups of its organizations.
func (a *authenticator) certificateUser(chain []*x509.Certificate) (*user, error) {
	opts := x509.VerifyOptions{Roots: a.cas, Intermediates: x509.NewCertPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	for _, c := range chain[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := chain[0].Verify(opts); err != nil {
		return nil, fmt.Errorf("verifying certificate %s: %w", chain[0].Subject.CommonName, err)
	}
	cert := chain[0]
	if cert.Subject.CommonName == "" {
		return nil, errors.New("client certificate has no common name")
	}
	return &user{Name: cert.Subject.CommonName, Groups: cert.Subject.Organization}, nil
}

// tokenUser asks the apiserver who a token is, through a TokenReview.
func (a *authenticator) tokenUser(ctx context.Context, token string) (*user, error) {
	sum := sha256.Sum256([]byte(token))
	key := string(sum[:])
	if u, ok := a.cache.get(key); ok {
		return u, nil
	}
	review, err := a.reviews.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("reviewing a token: %w", err)
	}
	if !review.Status.Authenticated {
		a.cache.put(key, nil, refusedTokenTTL)
		return nil, nil
	}
	ui := review.Status.User
	u := &user{Name: ui.Username, UID: ui.UID, Groups: ui.Groups}
	if len(ui.Extra) > 0 {
		u.Extra = map[string][]string{}
		for k, v := range ui.Extra {
			u.Extra[k] = v
		}
	}
	a.cache.put(key, u, tokenTTL)
	return u, nil
}

// authorizer asks the apiserver, through SubjectAccessReviews, whether a
// user may use the node's API.
type authorizer struct {
	node    string
	reviews authorizationclient.SubjectAccessReviewInterface
	cache   ttlCache[bool]
}

func newAuthorizer(node string, reviews authorizationclient.SubjectAccessReviewInterface) *authorizer {
	return &authorizer{node: node, reviews: reviews}
}

func (z *authorizer) authorize(ctx context.Context, a attributes) (bool, error) {
	spec := authorizationv1.SubjectAccessReviewSpec{
		User:   a.user.Name,
		UID:    a.user.UID,
		Groups: a.user.Groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb:        a.verb,
			Version:     "v1",
			Resource:    "nodes",
			Subresource: a.subresource,
			Name:        z.node,
		},
	}
	if len(a.user.Extra) > 0 {
		spec.Extra = map[string]authorizationv1.ExtraValue{}
		for k, v := range a.user.Extra {
			spec.Extra[k] = v
		}
	}
	key := reviewKey(spec)
	if allowed, ok := z.cache.get(key); ok {
		return allowed, nil
	}
	review, err := z.reviews.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	allowed := review.Status.Allowed && !review.Status.Denied
	ttl := deniedTTL
	if allowed {
		ttl = allowedTTL
	}
	z.cache.put(key, allowed, ttl)
	return allowed, nil
}

// reviewKey identifies a review by everything it asks.
func reviewKey(s authorizationv1.SubjectAccessReviewSpec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%q %q %q", s.User, s.UID, s.Groups)
	keys := make([]string, 0, len(s.Extra))
	for k := range s.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, " %q=%q", k, []string(s.Extra[k]))
	}
	ra := s.ResourceAttributes
	fmt.Fprintf(&b, " %q %q %q", ra.Verb, ra.Subresource, ra.Name)
	return b.String()
}

// ttlCache keeps values for a while.
type ttlCache[V any] struct {
	mu      sync.Mutex
	entries map[string]ttlEntry[V]
}

type ttlEntry[V any] struct {
	value   V
	expires time.Time
}

func (c *ttlCache[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || time.Now().After(e.expires) {
		var zero V
		return zero, false
	}
	return e.value, true
}

func (c *ttlCache[V]) put(key string, v V, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if c.entries == nil {
		c.entries = map[string]ttlEntry[V]{}
	}
	if len(c.entries) >= cacheLimit {
		for k, e := range c.entries {
			if now.After(e.expires) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= cacheLimit {
			c.entries = map[string]ttlEntry[V]{}
		}
	}
	c.entries[key] = ttlEntry[V]{value: v, expires: now.Add(ttl)}
}

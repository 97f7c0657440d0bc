// Package authenticator owns the authentication stage of the filter chain: it
// turns a request's credentials (bearer tokens, from kube's static token
// file or generated at start) into a User in the request's context, and
// answers 401 with a Status when they are missing or wrong.
package authenticator

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/cronplane/cronplane/pkg/endpoints/responsewriters"
)

// Groups every authenticated or anonymous user is in.
const (
	GroupAuthenticated   = "system:authenticated"
	GroupUnauthenticated = "system:unauthenticated"
	Anonymous            = "system:anonymous"
)

// User is who a request comes from.
type User struct {
	Name   string
	UID    string
	Groups []string
}

type userKey struct{}

// WithUser stores u in ctx.
func WithUser(ctx context.Context, u *User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the user of an authenticated request.
func UserFrom(ctx context.Context) (*User, bool) {
	u, ok := ctx.Value(userKey{}).(*User)
	return u, ok
}

// Authenticator checks a bearer token. ok is false for an unknown token.
type Authenticator interface {
	AuthenticateToken(ctx context.Context, token string) (u *User, ok bool, err error)
}

// TokenSet is a fixed set of bearer tokens.
type TokenSet struct {
	mu     sync.RWMutex
	tokens map[string]*User
}

// NewTokenSet returns an empty set.
func NewTokenSet() *TokenSet { return &TokenSet{tokens: map[string]*User{}} }

// Add makes token authenticate as u.
func (t *TokenSet) Add(token string, u *User) {
	t.mu.Lock()
	t.tokens[token] = u
	t.mu.Unlock()
}

func (t *TokenSet) AuthenticateToken(_ context.Context, token string) (*User, bool, error) {
	t.mu.RLock()
	u, ok := t.tokens[token]
	t.mu.RUnlock()
	return u, ok, nil
}

// LoadTokenFile reads kube's static token file: CSV lines of
// token,user,uid and an optional fourth column of comma-separated groups
// (quoted). Blank lines are skipped; a later line for the same token wins.
func LoadTokenFile(path string) (*TokenSet, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	set := NewTokenSet()
	for line := 1; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return set, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if len(rec) < 3 {
			return nil, fmt.Errorf("%s: line %d: want at least 3 columns (token,user,uid), got %d", path, line, len(rec))
		}
		token := strings.TrimSpace(rec[0])
		if token == "" {
			return nil, fmt.Errorf("%s: line %d: empty token", path, line)
		}
		u := &User{Name: strings.TrimSpace(rec[1]), UID: strings.TrimSpace(rec[2])}
		if len(rec) >= 4 {
			for _, g := range strings.Split(rec[3], ",") {
				if g = strings.TrimSpace(g); g != "" {
					u.Groups = append(u.Groups, g)
				}
			}
		}
		set.Add(token, u)
	}
}

// WithAuthentication authenticates every request by its bearer token. A
// request without credentials for which isPublic holds continues as the
// anonymous user; any other failure is a 401 Status.
func WithAuthentication(next http.Handler, a Authenticator, isPublic func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		header := r.Header.Get("Authorization")
		if header == "" && isPublic(r) {
			anon := &User{Name: Anonymous, Groups: []string{GroupUnauthenticated}}
			next.ServeHTTP(w, r.WithContext(WithUser(r.Context(), anon)))
			return
		}
		token, ok := bearerToken(header)
		if ok {
			var u *User
			var err error
			u, ok, err = a.AuthenticateToken(r.Context(), token)
			if err == nil && ok {
				r.Header.Del("Authorization")
				next.ServeHTTP(w, r.WithContext(WithUser(r.Context(), withAuthenticatedGroup(u))))
				return
			}
		}
		responsewriters.WriteError(w, r, apierrors.NewUnauthorized("Unauthorized"))
	})
}

func bearerToken(header string) (string, bool) {
	parts := strings.SplitN(strings.TrimSpace(header), " ", 2)
	if len(parts) != 2 || !strings.EqualFold(parts[0], "bearer") {
		return "", false
	}
	token := strings.TrimSpace(parts[1])
	return token, token != ""
}

// withAuthenticatedGroup adds system:authenticated, as kube does for
// every authenticated user.
func withAuthenticatedGroup(u *User) *User {
	for _, g := range u.Groups {
		if g == GroupAuthenticated {
			return u
		}
	}
	cp := *u
	cp.Groups = append(append([]string(nil), u.Groups...), GroupAuthenticated)
	return &cp
}

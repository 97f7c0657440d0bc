// Package authenticator owns authentication: it turns a request's
// credentials into the user it comes from. Today that is a bearer token,
// from kube's static token file or generated at start; the HTTP filter
// that answers 401 lives in pkg/endpoints/filters.
package authenticator

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/cronplane/cronplane/pkg/auth/user"
)

// Token checks a bearer token. ok is false for an unknown token; err is
// for a failure to decide.
type Token interface {
	AuthenticateToken(ctx context.Context, token string) (u *user.Info, ok bool, err error)
}

// Tokens asks token authenticators in order: the first that recognizes a
// token decides. A token none recognizes is unknown; the failures of
// those that could not decide are returned with it.
type Tokens []Token

func (ts Tokens) AuthenticateToken(ctx context.Context, token string) (*user.Info, bool, error) {
	var errs []error
	for _, t := range ts {
		u, ok, err := t.AuthenticateToken(ctx, token)
		if ok {
			return u, true, nil
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return nil, false, errors.Join(errs...)
}

// TokenSet is a fixed set of bearer tokens.
type TokenSet struct {
	mu     sync.RWMutex
	tokens map[string]*user.Info
}

// NewTokenSet returns an empty set.
func NewTokenSet() *TokenSet { return &TokenSet{tokens: map[string]*user.Info{}} }

// Add makes token authenticate as u.
func (t *TokenSet) Add(token string, u *user.Info) {
	t.mu.Lock()
	t.tokens[token] = u
	t.mu.Unlock()
}

func (t *TokenSet) AuthenticateToken(_ context.Context, token string) (*user.Info, bool, error) {
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
		u := &user.Info{Name: strings.TrimSpace(rec[1]), UID: strings.TrimSpace(rec[2])}
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

// WithAuthenticatedGroup adds system:authenticated, as kube does for
// every authenticated user.
func WithAuthenticatedGroup(u *user.Info) *user.Info {
	for _, g := range u.Groups {
		if g == user.AllAuthenticated {
			return u
		}
	}
	cp := *u
	cp.Groups = append(append([]string(nil), u.Groups...), user.AllAuthenticated)
	return &cp
}

type audiencesKey struct{}

// WithAudiences returns ctx carrying the audiences a token is checked
// for, as a TokenReview names them; without them a token must be meant
// for the server itself.
func WithAudiences(ctx context.Context, audiences []string) context.Context {
	return context.WithValue(ctx, audiencesKey{}, audiences)
}

// AudiencesFrom returns the audiences ctx carries, or nil.
func AudiencesFrom(ctx context.Context) []string {
	a, _ := ctx.Value(audiencesKey{}).([]string)
	return a
}

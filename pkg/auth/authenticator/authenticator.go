// Package authenticator owns authentication: it turns a request's
// credentials into the user it comes from: a client certificate, or a
// bearer token (kube's static token file, the tokens generated at start,
// service account tokens), for the audiences asked. The HTTP filter that
// answers 401 lives in pkg/endpoints/filters.
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

	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/cronplane/cronplane/pkg/auth/user"
)

// Response is what a token authenticates: the user, and those of the
// audiences asked for (WithAudiences) the token is good for.
type Response struct {
	User      *user.Info
	Audiences []string
}

// Token checks a bearer token, for the audiences ctx carries (the API's
// when it carries none). ok is false for a token it does not recognize,
// or one not meant for those audiences; err says why a token it
// recognizes is not good.
type Token interface {
	AuthenticateToken(ctx context.Context, token string) (r *Response, ok bool, err error)
}

// Tokens asks token authenticators in order: the first that recognizes a
// token decides. A token none recognizes is unknown; the failures of
// those that could not decide are returned with it, as kube aggregates
// them.
type Tokens []Token

func (ts Tokens) AuthenticateToken(ctx context.Context, token string) (*Response, bool, error) {
	var errs []error
	for _, t := range ts {
		r, ok, err := t.AuthenticateToken(ctx, token)
		if ok {
			return r, true, nil
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return nil, false, utilerrors.NewAggregate(errs)
}

// AudienceAgnostic serves tokens that name no audience, such as those of
// the static token file, as kube does: they are good for the API's own
// audiences only, so a token is not recognized when other audiences are
// asked for.
type AudienceAgnostic struct {
	Token        Token
	APIAudiences []string
}

func (a AudienceAgnostic) AuthenticateToken(ctx context.Context, token string) (*Response, bool, error) {
	asked, ok := ctx.Value(audiencesKey{}).([]string)
	if !ok {
		return a.Token.AuthenticateToken(ctx, token)
	}
	auds := Intersect(a.APIAudiences, asked)
	if len(auds) == 0 {
		return nil, false, nil
	}
	r, ok, err := a.Token.AuthenticateToken(ctx, token)
	if !ok || err != nil {
		return nil, false, err
	}
	return &Response{User: r.User, Audiences: auds}, true, nil
}

// Intersect returns the audiences of asked that are among have, in
// asked's order.
func Intersect(have, asked []string) []string {
	var out []string
	for _, a := range asked {
		for _, h := range have {
			if a == h {
				out = append(out, a)
				break
			}
		}
	}
	return out
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

func (t *TokenSet) AuthenticateToken(_ context.Context, token string) (*Response, bool, error) {
	t.mu.RLock()
	u, ok := t.tokens[token]
	t.mu.RUnlock()
	if !ok {
		return nil, false, nil
	}
	return &Response{User: u}, true, nil
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

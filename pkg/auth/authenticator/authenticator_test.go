package authenticator

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cronplane/cronplane/pkg/auth/user"
)

func writeFile(t *testing.T, content string) string {
	p := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadTokenFile_ReadsKubeFormat(t *testing.T) {
	set, err := LoadTokenFile(writeFile(t, "admin-token,admin,admin-uid,\"system:masters,ops\"\n\nalice-token,alice,alice-uid\n"))
	if err != nil {
		t.Fatal(err)
	}
	r, ok, _ := set.AuthenticateToken(context.Background(), "admin-token")
	u := r.User
	if !ok || u.Name != "admin" || u.UID != "admin-uid" || !reflect.DeepEqual(u.Groups, []string{"system:masters", "ops"}) {
		t.Fatalf("admin: %+v", u)
	}
	if r, ok, _ := set.AuthenticateToken(context.Background(), "alice-token"); !ok || r.User.Name != "alice" || len(r.User.Groups) != 0 {
		t.Fatalf("alice: %+v", r)
	}
}

func TestLoadTokenFile_RejectsShortLines(t *testing.T) {
	_, err := LoadTokenFile(writeFile(t, "tok,user\n"))
	if err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("want an error naming line 1, got %v", err)
	}
}

// A static token is good for the API's audiences only, as kube's
// audience-agnostic tokens are.
func TestAudienceAgnostic_GoodForTheAPIAudiencesOnly(t *testing.T) {
	set := NewTokenSet()
	set.Add("t", &user.Info{Name: "alice"})
	a := AudienceAgnostic{Token: set, APIAudiences: []string{"api", "api2"}}
	for _, tc := range []struct {
		name  string
		asked []string // nil: none asked
		ok    bool
		auds  []string
	}{
		{"none asked: as the token set answers", nil, true, nil},
		{"an API audience", []string{"api"}, true, []string{"api"}},
		{"the API audiences among others, in the order asked", []string{"other", "api2", "api"}, true, []string{"api2", "api"}},
		{"only others", []string{"other"}, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.asked != nil {
				ctx = WithAudiences(ctx, tc.asked)
			}
			r, ok, err := a.AuthenticateToken(ctx, "t")
			if ok != tc.ok || err != nil {
				t.Fatalf("ok=%v err=%v", ok, err)
			}
			if ok && (r.User.Name != "alice" || !reflect.DeepEqual(r.Audiences, tc.auds)) {
				t.Fatalf("response %+v, want audiences %v", r, tc.auds)
			}
		})
	}
	if _, ok, err := a.AuthenticateToken(WithAudiences(context.Background(), []string{"api"}), "unknown"); ok || err != nil {
		t.Fatalf("an unknown token: ok=%v err=%v", ok, err)
	}
}

// The Authorization header is read as kube reads it: one space after
// the scheme; with two the request carries no token (anonymous), a tab
// makes the token a bad one.
func TestBearerToken_ReadsTheHeaderAsKube(t *testing.T) {
	set := NewTokenSet()
	set.Add("tok", &user.Info{Name: "alice"})
	b := BearerToken{Token: set}
	for _, tc := range []struct {
		header  string
		user    string
		invalid bool
	}{
		{"Bearer tok", "alice", false},
		{"bearer tok", "alice", false},
		{"  Bearer tok  ", "alice", false},
		{"Bearer tok other", "alice", false},
		{"Bearer  tok", "", false},
		{"Bearer ", "", false},
		{"Bearer", "", false},
		{"Basic tok", "", false},
		{"Bearer \ttok", "", true},
		{"Bearer wrong", "", true},
	} {
		r, _ := http.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", tc.header)
		u, ok, err := b.AuthenticateRequest(r)
		name := ""
		if ok {
			name = u.Name
		}
		if name != tc.user || (err != nil) != tc.invalid {
			t.Errorf("%q: user %q, error %v; want user %q, error %v", tc.header, name, err, tc.user, tc.invalid)
		}
	}
}

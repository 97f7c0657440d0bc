package filters

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/cronplane/cronplane/pkg/auth/authenticator"
	"github.com/cronplane/cronplane/pkg/auth/user"
)

func TestWithAuthentication_TokensAnonymousAnd401(t *testing.T) {
	set := authenticator.NewTokenSet()
	set.Add("good", &user.Info{Name: "bob", Groups: []string{"devs"}})
	var seen *user.Info
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, _ = user.From(r.Context())
		if seen.Name != user.Anonymous && strings.HasPrefix(strings.ToLower(r.Header.Get("Authorization")), "bearer") {
			t.Error("a bearer token that served passed on")
		}
	})
	cases := []struct {
		header    string
		anonymous bool
		code      int
		user      string
	}{
		{"Bearer good", true, 200, "bob"},
		{"bearer good ", true, 200, "bob"},
		// As kube reads the header: two spaces carry no token.
		{"Bearer  good", true, 200, user.Anonymous},
		// Bad credentials are never anonymous.
		{"Bearer bad", true, 401, ""},
		{"Bearer bad", false, 401, ""},
		// No credentials, or none of a kind the server reads, are.
		{"", true, 200, user.Anonymous},
		{"Basic dXNlcjpwYXNz", true, 200, user.Anonymous},
		{"", false, 401, ""},
	}
	for _, tc := range cases {
		seen = nil
		h := WithAuthentication(next, authenticator.Union{authenticator.BearerToken{Token: set}}, tc.anonymous)
		r := httptest.NewRequest("GET", "/api", nil)
		if tc.header != "" {
			r.Header.Set("Authorization", tc.header)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.code {
			t.Fatalf("%q anonymous=%v: code %d, want %d", tc.header, tc.anonymous, w.Code, tc.code)
		}
		if tc.code == 401 {
			want := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`
			if got := strings.TrimSpace(w.Body.String()); got != want {
				t.Fatalf("401 body %s", got)
			}
			continue
		}
		if seen == nil || seen.Name != tc.user {
			t.Fatalf("%q: user %+v, want %s", tc.header, seen, tc.user)
		}
		wantGroups := []string{user.AllUnauthenticated}
		if tc.user == "bob" {
			wantGroups = []string{"devs", user.AllAuthenticated}
		}
		if !reflect.DeepEqual(seen.Groups, wantGroups) {
			t.Fatalf("%q: groups %v, want %v", tc.header, seen.Groups, wantGroups)
		}
	}
}

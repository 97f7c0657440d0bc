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
	h := WithAuthentication(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, _ = user.From(r.Context())
		if r.Header.Get("Authorization") != "" {
			t.Error("credentials passed on")
		}
	}), set, func(r *http.Request) bool { return r.URL.Path == "/healthz" })
	cases := []struct {
		path, header string
		code         int
		user         string
	}{
		{"/api", "Bearer good", 200, "bob"},
		{"/api", "bearer  good ", 200, "bob"},
		{"/api", "Bearer bad", 401, ""},
		{"/api", "", 401, ""},
		{"/healthz", "", 200, user.Anonymous},
		{"/healthz", "Bearer bad", 401, ""},
	}
	for _, tc := range cases {
		seen = nil
		r := httptest.NewRequest("GET", tc.path, nil)
		if tc.header != "" {
			r.Header.Set("Authorization", tc.header)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.code {
			t.Fatalf("%s %q: code %d, want %d", tc.path, tc.header, w.Code, tc.code)
		}
		if tc.code == 401 {
			want := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`
			if got := strings.TrimSpace(w.Body.String()); got != want {
				t.Fatalf("401 body %s", got)
			}
			continue
		}
		if seen == nil || seen.Name != tc.user {
			t.Fatalf("%s %q: user %+v, want %s", tc.path, tc.header, seen, tc.user)
		}
		if tc.user == "bob" && !reflect.DeepEqual(seen.Groups, []string{"devs", user.AllAuthenticated}) {
			t.Fatalf("groups %v", seen.Groups)
		}
	}
}

package authenticator

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
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
	u, ok, _ := set.AuthenticateToken(nil, "admin-token")
	if !ok || u.Name != "admin" || u.UID != "admin-uid" || !reflect.DeepEqual(u.Groups, []string{"system:masters", "ops"}) {
		t.Fatalf("admin: %+v", u)
	}
	if u, ok, _ := set.AuthenticateToken(nil, "alice-token"); !ok || u.Name != "alice" || len(u.Groups) != 0 {
		t.Fatalf("alice: %+v", u)
	}
}

func TestLoadTokenFile_RejectsShortLines(t *testing.T) {
	_, err := LoadTokenFile(writeFile(t, "tok,user\n"))
	if err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("want an error naming line 1, got %v", err)
	}
}

func TestWithAuthentication_TokensAnonymousAnd401(t *testing.T) {
	set := NewTokenSet()
	set.Add("good", &User{Name: "bob", Groups: []string{"devs"}})
	var seen *User
	h := WithAuthentication(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, _ = UserFrom(r.Context())
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
		{"/healthz", "", 200, Anonymous},
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
		if tc.user == "bob" && !reflect.DeepEqual(seen.Groups, []string{"devs", GroupAuthenticated}) {
			t.Fatalf("groups %v", seen.Groups)
		}
	}
}

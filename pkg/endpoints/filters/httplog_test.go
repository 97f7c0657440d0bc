package filters

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"

	"github.com/cronplane/cronplane/pkg/audit"
	"github.com/cronplane/cronplane/pkg/auth/authenticator"
	"github.com/cronplane/cronplane/pkg/auth/user"
)

func TestWithLogging_LogsEachRequestAtVerbosityThree(t *testing.T) {
	teapot := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	})
	set := authenticator.NewTokenSet()
	set.Add("alice-token", &user.Info{Name: "alice"})
	// The user is told by authentication, further in.
	chain := func(next http.Handler) http.Handler {
		return WithAuthentication(next, authenticator.BearerToken{Token: set}, false)
	}
	for _, tc := range []struct {
		verbosity int
		token     string
		want      string
		code      string
	}{
		{2, "alice-token", "", ""},
		{3, "alice-token", `"level"=3 "msg"="HTTP" "verb"="DELETE" "URI"="/api/v1/namespaces/x?dryRun=All" "user"="alice" "latency"=`, "418"},
		{3, "bad", `"level"=3 "msg"="HTTP" "verb"="DELETE" "URI"="/api/v1/namespaces/x?dryRun=All" "user"="" "latency"=`, "401"},
	} {
		var lines []string
		logger := funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: tc.verbosity})
		h := WithLogging(chain(teapot), logger)
		r := httptest.NewRequest("DELETE", "/api/v1/namespaces/x?dryRun=All", nil)
		r.Header.Set("User-Agent", "kubectl/v1.29.0")
		r.Header.Set("Authorization", "Bearer "+tc.token)
		w := httptest.NewRecorder()
		w.Header().Set(audit.HeaderAuditID, "abc")
		h.ServeHTTP(w, r)
		if tc.want == "" {
			if len(lines) != 0 {
				t.Errorf("-v=%d logged %q", tc.verbosity, lines)
			}
			continue
		}
		if len(lines) != 1 || !strings.HasPrefix(lines[0], tc.want) ||
			!strings.HasSuffix(lines[0], `"userAgent"="kubectl/v1.29.0" "audit-ID"="abc" "srcIP"="192.0.2.1:1234" "resp"=`+tc.code) {
			t.Errorf("-v=%d logged %q", tc.verbosity, lines)
		}
	}
}

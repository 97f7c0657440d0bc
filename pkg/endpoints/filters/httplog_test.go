package filters

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"

	"github.com/cronplane/cronplane/pkg/audit"
	"github.com/cronplane/cronplane/pkg/auth/user"
)

func TestWithLogging_LogsEachRequestAtVerbosityThree(t *testing.T) {
	teapot := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(audit.HeaderAuditID, "abc")
		w.WriteHeader(http.StatusTeapot)
	})
	for _, tc := range []struct {
		verbosity int
		want      string
	}{
		{2, ""},
		{3, `"level"=3 "msg"="HTTP" "verb"="DELETE" "URI"="/api/v1/namespaces/x?dryRun=All" "user"="alice" "latency"=`},
	} {
		var lines []string
		logger := funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: tc.verbosity})
		h := WithLogging(teapot, logger)
		r := httptest.NewRequest("DELETE", "/api/v1/namespaces/x?dryRun=All", nil)
		r.Header.Set("User-Agent", "kubectl/v1.29.0")
		r = r.WithContext(user.WithUser(r.Context(), &user.Info{Name: "alice"}))
		h.ServeHTTP(httptest.NewRecorder(), r)
		if tc.want == "" {
			if len(lines) != 0 {
				t.Errorf("-v=%d logged %q", tc.verbosity, lines)
			}
			continue
		}
		if len(lines) != 1 || !strings.HasPrefix(lines[0], tc.want) ||
			!strings.HasSuffix(lines[0], `"userAgent"="kubectl/v1.29.0" "audit-ID"="abc" "srcIP"="192.0.2.1:1234" "resp"=418`) {
			t.Errorf("-v=%d logged %q", tc.verbosity, lines)
		}
	}
}

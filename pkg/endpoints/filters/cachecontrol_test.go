package filters

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestWithCacheControl_MarksAnswersPrivateUnlessTheHandlerSetsIt(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		want    string
	}{
		{"an answer", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }, "no-cache, private"},
		{"an error", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusUnauthorized) }, "no-cache, private"},
		{"the handler's own", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Cache-Control", "public, max-age=60")
			w.WriteHeader(http.StatusOK)
		}, "public, max-age=60"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			WithCacheControl(tc.handler).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api", nil))
			if got := rec.Header().Get("Cache-Control"); got != tc.want {
				t.Errorf("Cache-Control %q, want %q", got, tc.want)
			}
		})
	}
}

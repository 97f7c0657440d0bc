package filters

import "net/http"

// WithCacheControl marks every answer "Cache-Control: no-cache, private",
// as kube-apiserver does: every answer depends on who asked, so no shared
// cache may keep it. A handler that sets its own Cache-Control keeps it.
func WithCacheControl(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache, private")
		next.ServeHTTP(w, r)
	})
}

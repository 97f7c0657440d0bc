// Package filters owns the stages every request passes before it is
// routed: request deadlines here, and the other cross-cutting filters
// (authentication, audit, authorization) as they move in. A filter wraps
// an http.Handler and either passes the request on, changed only in its
// context, or answers it with a Status.
package filters

import (
	"context"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/cronplane/cronplane/pkg/endpoints/responsewriters"
)

// WithRequestDeadline bounds a request by its ?timeout (a Go duration),
// at most max; a malformed timeout is kube's 400. Long-running requests
// (watches), which longRunning reports, keep their own bounds.
func WithRequestDeadline(next http.Handler, max time.Duration, longRunning func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if longRunning(r) {
			next.ServeHTTP(w, r)
			return
		}
		timeout := max
		if v := r.URL.Query().Get("timeout"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				responsewriters.WriteError(w, r, apierrors.NewBadRequest(fmt.Sprintf("invalid timeout specified in the request URL - %v", err)))
				return
			}
			if d > 0 && d < max {
				timeout = d
			}
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

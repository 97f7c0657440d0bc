package filters

import (
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/pkg/auth/authenticator"
	"github.com/cronplane/cronplane/pkg/auth/user"
	"github.com/cronplane/cronplane/pkg/endpoints/instrumentation"
	"github.com/cronplane/cronplane/pkg/endpoints/responsewriters"
)

// WithAuthentication authenticates every request and puts its user in
// the request's context, with the group system:authenticated. Bad
// credentials are a 401 Status. A request without credentials is the
// anonymous user (system:anonymous, group system:unauthenticated) when
// anonymous is true, which authorization then judges; a 401 otherwise.
func WithAuthentication(next http.Handler, a authenticator.Request, anonymous bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok, err := a.AuthenticateRequest(r)
		switch {
		case ok:
			logUser(r.Context(), u)
			next.ServeHTTP(w, r.WithContext(user.WithUser(r.Context(), authenticator.WithAuthenticatedGroup(u))))
		case err == nil && anonymous:
			anon := &user.Info{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
			logUser(r.Context(), anon)
			next.ServeHTTP(w, r.WithContext(user.WithUser(r.Context(), anon)))
		default:
			if err != nil {
				klog.V(2).InfoS("Unable to authenticate the request", "path", r.URL.Path, "err", err)
			}
			instrumentation.Refused(r.Context())
			responsewriters.WriteError(w, r, apierrors.NewUnauthorized("Unauthorized"))
		}
	})
}

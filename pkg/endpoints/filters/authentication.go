package filters

import (
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/cronplane/cronplane/pkg/auth/authenticator"
	"github.com/cronplane/cronplane/pkg/auth/user"
	"github.com/cronplane/cronplane/pkg/endpoints/responsewriters"
)

// WithAuthentication authenticates every request by its bearer token and
// puts the user in the request's context. A request without credentials
// for which isPublic holds continues as the anonymous user; any other
// failure is a 401 Status. The credentials go no further.
func WithAuthentication(next http.Handler, a authenticator.Token, isPublic func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		header := r.Header.Get("Authorization")
		if header == "" && isPublic(r) {
			anon := &user.Info{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
			next.ServeHTTP(w, r.WithContext(user.WithUser(r.Context(), anon)))
			return
		}
		if token, ok := bearerToken(header); ok {
			u, ok, err := a.AuthenticateToken(r.Context(), token)
			if err == nil && ok {
				r.Header.Del("Authorization")
				next.ServeHTTP(w, r.WithContext(user.WithUser(r.Context(), authenticator.WithAuthenticatedGroup(u))))
				return
			}
		}
		responsewriters.WriteError(w, r, apierrors.NewUnauthorized("Unauthorized"))
	})
}

func bearerToken(header string) (string, bool) {
	parts := strings.SplitN(strings.TrimSpace(header), " ", 2)
	if len(parts) != 2 || !strings.EqualFold(parts[0], "bearer") {
		return "", false
	}
	token := strings.TrimSpace(parts[1])
	return token, token != ""
}

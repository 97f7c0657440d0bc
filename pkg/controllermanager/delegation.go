package controllermanager

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// delegatedAuth lets through to next the requests the apiserver allows,
// as kube-controller-manager's delegated authentication and
// authorization decide: a bearer token is checked with a TokenReview (a
// token it does not know is a 401), a request without one is
// system:anonymous, and the user is asked for with a SubjectAccessReview
// for the path (403 when refused; system:masters, and the group
// system:monitoring for /metrics, may). Refusals are kube's Status.
func delegatedAuth(reviews kubernetes.Interface, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		u := authenticationv1.UserInfo{Username: "system:anonymous", Groups: []string{"system:unauthenticated"}}
		if token, ok := bearerToken(r.Header.Get("Authorization")); ok {
			tr, err := reviews.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
				Spec: authenticationv1.TokenReviewSpec{Token: token},
			}, metav1.CreateOptions{})
			if err != nil {
				klog.ErrorS(err, "Reviewing the token of a request", "path", r.URL.Path)
			}
			if err != nil || !tr.Status.Authenticated {
				writeStatus(w, &apierrors.NewUnauthorized("Unauthorized").ErrStatus)
				return
			}
			u = tr.Status.User
		}
		extra := map[string]authorizationv1.ExtraValue{}
		for k, v := range u.Extra {
			extra[k] = authorizationv1.ExtraValue(v)
		}
		verb := "get"
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			// pprof's symbol lookup takes a POST.
			verb = strings.ToLower(r.Method)
		}
		sar, err := reviews.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra,
				NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: r.URL.Path, Verb: verb},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			klog.ErrorS(err, "Authorizing a request", "path", r.URL.Path)
			writeStatus(w, &apierrors.NewInternalError(err).ErrStatus)
			return
		}
		if !sar.Status.Allowed {
			writeStatus(w, &metav1.Status{
				Status: metav1.StatusFailure, Reason: metav1.StatusReasonForbidden, Code: http.StatusForbidden,
				Message: fmt.Sprintf("forbidden: User %q cannot %s path %q", u.Username, verb, r.URL.Path),
				Details: &metav1.StatusDetails{},
			})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bearerToken reads the token of an Authorization header as kube does
// (and the apiserver's authenticator): the header trimmed, the scheme
// "Bearer" in any case, one space, the token up to the next space; with
// two spaces there is no token and the caller is anonymous.
func bearerToken(header string) (string, bool) {
	parts := strings.SplitN(strings.TrimSpace(header), " ", 3)
	if len(parts) < 2 || !strings.EqualFold(parts[0], "bearer") || parts[1] == "" {
		return "", false
	}
	return parts[1], true
}

// writeStatus answers s as kube's JSON Status.
func writeStatus(w http.ResponseWriter, s *metav1.Status) {
	s.Kind, s.APIVersion = "Status", "v1"
	data, err := json.Marshal(s)
	if err != nil {
		http.Error(w, s.Message, int(s.Code))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(int(s.Code))
	_, _ = w.Write(append(data, '\n'))
}

package controllermanager

import (
	"context"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// profilingHandler serves Go's profiles at /debug/pprof/ as
// kube-controller-manager's --profiling does (the index, profile for 30 s
// of CPU, heap, allocs, goroutine, trace, ...), to the callers the
// apiserver allows to get that path: as kube's delegated authentication
// and authorization, the bearer token is checked with a TokenReview, then
// the user it names with a SubjectAccessReview for get on the path
// (system:masters, for one, may).
func profilingHandler(reviews kubernetes.Interface) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return delegatedAuth(reviews, mux)
}

// delegatedAuth lets through to next the requests whose bearer token the
// apiserver authenticates and whose user it allows to get the path:
// kube's 401 without such a token, 403 when the user may not.
func delegatedAuth(reviews kubernetes.Interface, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || strings.TrimSpace(token) == "" {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		tr, err := reviews.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
			Spec: authenticationv1.TokenReviewSpec{Token: strings.TrimSpace(token)},
		}, metav1.CreateOptions{})
		if err != nil {
			klog.ErrorS(err, "Reviewing the token of a profiling request")
			http.Error(w, "Internal Server Error", http.StatusInternalServerError)
			return
		}
		if !tr.Status.Authenticated {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		u := tr.Status.User
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
			klog.ErrorS(err, "Authorizing a profiling request")
			http.Error(w, "Internal Server Error", http.StatusInternalServerError)
			return
		}
		if !sar.Status.Allowed {
			http.Error(w, "Forbidden: "+u.Username+" may not "+verb+" "+r.URL.Path, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

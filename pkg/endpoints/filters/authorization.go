package filters

import (
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/audit"
	"github.com/cronplane/cronplane/pkg/auth/authorizer"
	"github.com/cronplane/cronplane/pkg/auth/user"
	"github.com/cronplane/cronplane/pkg/endpoints/instrumentation"
	"github.com/cronplane/cronplane/pkg/endpoints/request"
	"github.com/cronplane/cronplane/pkg/endpoints/responsewriters"
)

// AuthorizationAttributes is the authorization question of a request: its
// user and what its RequestInfo says it does.
func AuthorizationAttributes(u *user.Info, info *request.RequestInfo) authorizer.Attributes {
	return authorizer.Attributes{
		User:            u,
		Verb:            info.Verb,
		ResourceRequest: info.IsResourceRequest,
		Path:            info.Path,
		Namespace:       info.Namespace,
		APIGroup:        info.APIGroup,
		APIVersion:      info.APIVersion,
		Resource:        info.Resource,
		Subresource:     info.Subresource,
		Name:            info.Name,
	}
}

// WithAuthorization refuses with a 403 Status every request the
// authorizer does not allow.
func WithAuthorization(next http.Handler, z authorizer.Authorizer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := user.From(r.Context())
		info, ok := request.RequestInfoFrom(r.Context())
		if !ok {
			responsewriters.WriteError(w, r, apierrors.NewInternalError(fmt.Errorf("no request info")))
			return
		}
		a := AuthorizationAttributes(u, info)
		d, reason, err := z.Authorize(r.Context(), a)
		if err != nil {
			audit.AddAnnotation(r.Context(), audit.ReasonAnnotation, "internal error")
			responsewriters.WriteError(w, r, apierrors.NewInternalError(err))
			return
		}
		if d != authorizer.Allow {
			audit.AddAnnotation(r.Context(), audit.DecisionAnnotation, audit.DecisionForbid)
			audit.AddAnnotation(r.Context(), audit.ReasonAnnotation, reason)
			instrumentation.Refused(r.Context())
			responsewriters.WriteError(w, r, Forbidden(a, reason))
			return
		}
		audit.AddAnnotation(r.Context(), audit.DecisionAnnotation, audit.DecisionAllow)
		audit.AddAnnotation(r.Context(), audit.ReasonAnnotation, reason)
		next.ServeHTTP(w, r)
	})
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// Forbidden words a denial as kube does: who cannot do what, where, and
// the authorizer's reason.
func Forbidden(a authorizer.Attributes, reason string) error {
	name := ""
	if a.User != nil {
		name = a.User.Name
	}
	var msg string
	if a.ResourceRequest {
		resource := a.Resource
		if a.Subresource != "" {
			resource += "/" + a.Subresource
		}
		msg = fmt.Sprintf("User %q cannot %s resource %q in API group %q", name, a.Verb, resource, a.APIGroup)
		if a.Namespace != "" {
			msg += fmt.Sprintf(" in the namespace %q", a.Namespace)
		} else {
			msg += " at the cluster scope"
		}
	} else {
		msg = fmt.Sprintf("User %q cannot %s path %q", name, a.Verb, a.Path)
	}
	// What the request chose is escaped, as kube escapes it, lest a
	// client render it as HTML.
	msg = htmlEscaper.Replace(msg)
	if reason != "" {
		msg += ": " + reason
	}
	// A path outside the resources (/apis/<group>/<version>) is no
	// group's: "forbidden: User ...", as kube words it.
	var gr schema.GroupResource
	if a.ResourceRequest {
		gr = schema.GroupResource{Group: a.APIGroup, Resource: a.Resource}
	}
	return apierrors.NewForbidden(gr, a.Name, fmt.Errorf("%s", msg))
}

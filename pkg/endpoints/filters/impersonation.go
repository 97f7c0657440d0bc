package filters

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/cronplane/cronplane/pkg/audit"
	"github.com/cronplane/cronplane/pkg/auth/authorizer"
	"github.com/cronplane/cronplane/pkg/auth/user"
	"github.com/cronplane/cronplane/pkg/endpoints/instrumentation"
	"github.com/cronplane/cronplane/pkg/endpoints/responsewriters"
)

// impersonation is one thing a request asks to act as, and the
// authorization question it raises: may the requester impersonate it?
// ref is how kube names it in an error.
type impersonation struct {
	attrs authorizer.Attributes
	ref   corev1.ObjectReference
	apply func(u *user.Info)
}

// WithImpersonation lets an authenticated user act as another, as kube
// does: Impersonate-User (a user or a service account), -Group (any
// number), -Uid and -Extra-<key> headers, each allowed only when the
// requester may "impersonate" it (users, groups, serviceaccounts, uids,
// userextras/<key>). The request then continues as the user the headers
// describe; the headers go no further. Anything but a user asked for
// without one is kube's plain 500.
func WithImpersonation(next http.Handler, z authorizer.Authorizer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wanted, err := impersonations(r.Header)
		if err != nil {
			// kube's answer, a plain 500.
			http.Error(w, htmlEscaper.Replace(fmt.Sprintf("Internal Server Error: %q: %v", r.RequestURI, err)), http.StatusInternalServerError)
			return
		}
		if len(wanted) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		requester, _ := user.From(r.Context())
		as := &user.Info{Extra: map[string][]string{}}
		groupsGiven := len(r.Header[authenticationv1.ImpersonateGroupHeader]) > 0
		for _, imp := range wanted {
			imp.attrs.User = requester
			imp.attrs.Verb = "impersonate"
			imp.attrs.ResourceRequest = true
			d, reason, err := z.Authorize(r.Context(), imp.attrs)
			if err != nil || d != authorizer.Allow {
				instrumentation.Refused(r.Context())
				responsewriters.WriteError(w, r, Forbidden(imp.attrs, reason))
				return
			}
			imp.apply(as)
		}
		if !groupsGiven {
			if ns, _, ok := serviceAccountOf(as.Name); ok {
				as.Groups = append(serviceAccountGroups(ns), as.Groups...)
			}
		}
		as.Groups = withAllGroup(as.Name, as.Groups)
		if len(as.Extra) == 0 {
			as.Extra = nil
		}
		for k := range r.Header {
			if strings.HasPrefix(k, "Impersonate-") {
				r.Header.Del(k)
			}
		}
		audit.LogImpersonatedUser(r.Context(), as)
		next.ServeHTTP(w, r.WithContext(user.WithUser(r.Context(), as)))
	})
}

// impersonations reads what the headers ask to act as; groups, extras or
// a uid without a user are an error.
func impersonations(h http.Header) ([]impersonation, error) {
	var out []impersonation
	name := h.Get(authenticationv1.ImpersonateUserHeader)
	if name != "" {
		if ns, sa, ok := serviceAccountOf(name); ok {
			out = append(out, impersonation{
				attrs: authorizer.Attributes{APIVersion: "v1", Resource: "serviceaccounts", Namespace: ns, Name: sa},
				ref:   corev1.ObjectReference{Kind: "ServiceAccount", Namespace: ns, Name: sa},
				apply: func(u *user.Info) { u.Name = name },
			})
		} else {
			out = append(out, impersonation{
				attrs: authorizer.Attributes{APIVersion: "v1", Resource: "users", Name: name},
				ref:   corev1.ObjectReference{Kind: "User", Name: name},
				apply: func(u *user.Info) { u.Name = name },
			})
		}
	}
	for _, g := range h[authenticationv1.ImpersonateGroupHeader] {
		g := g
		out = append(out, impersonation{
			attrs: authorizer.Attributes{APIVersion: "v1", Resource: "groups", Name: g},
			ref:   corev1.ObjectReference{Kind: "Group", Name: g},
			apply: func(u *user.Info) { u.Groups = append(u.Groups, g) },
		})
	}
	for header, values := range h {
		encoded, ok := strings.CutPrefix(header, authenticationv1.ImpersonateUserExtraHeaderPrefix)
		if !ok {
			continue
		}
		key := strings.ToLower(encoded)
		if k, err := url.PathUnescape(key); err == nil {
			key = k
		}
		for _, v := range values {
			v := v
			out = append(out, impersonation{
				attrs: authorizer.Attributes{APIGroup: authenticationv1.GroupName, APIVersion: "v1", Resource: "userextras", Subresource: key, Name: v},
				ref:   corev1.ObjectReference{Kind: "UserExtra", Name: v, APIVersion: authenticationv1.SchemeGroupVersion.String(), FieldPath: key},
				apply: func(u *user.Info) { u.Extra[key] = append(u.Extra[key], v) },
			})
		}
	}
	if uid := h.Get(authenticationv1.ImpersonateUIDHeader); uid != "" {
		out = append(out, impersonation{
			attrs: authorizer.Attributes{APIGroup: authenticationv1.GroupName, APIVersion: "v1", Resource: "uids", Name: uid},
			ref:   corev1.ObjectReference{Kind: "UID", Name: uid, APIVersion: authenticationv1.SchemeGroupVersion.String()},
			apply: func(u *user.Info) { u.UID = uid },
		})
	}
	if name == "" && len(out) > 0 {
		return nil, fmt.Errorf("requested %s without impersonating a user", describe(out))
	}
	return out, nil
}

// describe lists what was asked for as kube's error prints it.
func describe(imps []impersonation) string {
	refs := make([]corev1.ObjectReference, len(imps))
	for i, imp := range imps {
		refs[i] = imp.ref
	}
	return fmt.Sprintf("%v", refs)
}

// serviceAccountOf splits system:serviceaccount:<namespace>:<name>.
func serviceAccountOf(name string) (namespace, sa string, ok bool) {
	rest, ok := strings.CutPrefix(name, "system:serviceaccount:")
	if !ok {
		return "", "", false
	}
	namespace, sa, ok = strings.Cut(rest, ":")
	return namespace, sa, ok && namespace != "" && sa != "" && !strings.Contains(sa, ":")
}

func serviceAccountGroups(namespace string) []string {
	return []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace}
}

// withAllGroup adds system:authenticated to an impersonated user (or
// system:unauthenticated to the anonymous one), unless the headers chose
// either already.
func withAllGroup(name string, groups []string) []string {
	all, other := user.AllAuthenticated, user.AllUnauthenticated
	if name == user.Anonymous {
		all, other = user.AllUnauthenticated, ""
	}
	for _, g := range groups {
		if g == all || (other != "" && g == other) {
			return groups
		}
	}
	return append(groups, all)
}

// Package authentication serves authentication.k8s.io/v1's reviews:
// TokenReview, which asks the server to authenticate a token, and
// SelfSubjectReview, which tells the requester who the server takes it
// for (kubectl auth whoami). Both are create-only virtual resources;
// nothing is stored.
package authentication

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/cronplane/cronplane/pkg/auth/authenticator"
	"github.com/cronplane/cronplane/pkg/auth/user"
	"github.com/cronplane/cronplane/pkg/registry"
	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// Entries are the two reviews; tokens authenticates what a TokenReview
// carries, for the audiences it names or else apiAudiences.
func Entries(tokens authenticator.Token, apiAudiences []string) []*registry.Entry {
	entry := func(kind, plural string, newFunc func() runtime.Object, s rest.Storage) *registry.Entry {
		return &registry.Entry{
			Resource: &rest.Resource{
				GroupVersionKind: authenticationv1.SchemeGroupVersion.WithKind(kind),
				Plural:           plural,
				Singular:         plural[:len(plural)-1],
				New:              newFunc,
			},
			Storage: s,
		}
	}
	return []*registry.Entry{
		entry("SelfSubjectReview", "selfsubjectreviews", func() runtime.Object { return &authenticationv1.SelfSubjectReview{} }, selfReviews{}),
		entry("TokenReview", "tokenreviews", func() runtime.Object { return &authenticationv1.TokenReview{} }, tokenReviews{tokens: tokens, apiAudiences: apiAudiences}),
	}
}

func userInfo(u *user.Info) authenticationv1.UserInfo {
	out := authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
	if len(u.Extra) > 0 {
		out.Extra = make(map[string]authenticationv1.ExtraValue, len(u.Extra))
		for k, v := range u.Extra {
			out.Extra[k] = v
		}
	}
	return out
}

type tokenReviews struct {
	tokens       authenticator.Token
	apiAudiences []string
}

func (tokenReviews) New() runtime.Object { return &authenticationv1.TokenReview{} }

// Create authenticates the token as a request bearing it would be, for
// the audiences the review names (the API's when it names none): a user
// in system:authenticated with the audiences the token is good for, or
// not authenticated with kube's reasons.
func (s tokenReviews) Create(ctx context.Context, _ string, obj runtime.Object, v rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	r := obj.(*authenticationv1.TokenReview)
	if r.Spec.Token == "" {
		return nil, apierrors.NewBadRequest("token is required for TokenReview in authentication")
	}
	if v != nil {
		if err := v(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	audiences := r.Spec.Audiences
	if len(audiences) == 0 {
		audiences = s.apiAudiences
	}
	resp, ok, err := s.tokens.AuthenticateToken(authenticator.WithAudiences(ctx, audiences), r.Spec.Token)
	r.Status = authenticationv1.TokenReviewStatus{Authenticated: ok}
	if !ok {
		// kube asks its bearer token authenticators in turn, and one that
		// does not know the token answers so besides the others' reasons.
		errs := []error{authenticator.ErrInvalidBearerToken}
		if err != nil {
			errs = append(errs, err)
		}
		r.Status.Error = utilerrors.NewAggregate(errs).Error()
		return r, nil
	}
	r.Status.User = userInfo(authenticator.WithAuthenticatedGroup(resp.User))
	r.Status.Audiences = resp.Audiences
	return r, nil
}

type selfReviews struct{}

func (selfReviews) New() runtime.Object { return &authenticationv1.SelfSubjectReview{} }

// Create answers with a new review, as kube does: nothing of the request
// is echoed, and it is created now.
func (selfReviews) Create(ctx context.Context, _ string, obj runtime.Object, v rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	r := obj.(*authenticationv1.SelfSubjectReview)
	u, ok := user.From(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	if v != nil {
		if err := v(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	return &authenticationv1.SelfSubjectReview{
		TypeMeta:   r.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.Now()},
		Status:     authenticationv1.SelfSubjectReviewStatus{UserInfo: userInfo(u)},
	}, nil
}

// Package authorization serves authorization.k8s.io/v1's access reviews:
// SubjectAccessReview, LocalSubjectAccessReview, SelfSubjectAccessReview
// and SelfSubjectRulesReview. Each is a create-only virtual resource: the
// question comes in, the server's own authorizer (or its rule resolver)
// answers in the status, and nothing is stored.
package authorization

import (
	"context"

	authorizationv1 "k8s.io/api/authorization/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/auth/authorizer"
	"github.com/cronplane/cronplane/pkg/auth/user"
	"github.com/cronplane/cronplane/pkg/registry"
	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// Entries are the four reviews, answered by z and rules.
func Entries(z authorizer.Authorizer, rules authorizer.RuleResolver) []*registry.Entry {
	entry := func(kind, plural string, namespaced bool, newFunc func() runtime.Object, s rest.Storage) *registry.Entry {
		return &registry.Entry{
			Resource: &rest.Resource{
				GroupVersionKind: authorizationv1.SchemeGroupVersion.WithKind(kind),
				Plural:           plural,
				Singular:         plural[:len(plural)-1],
				Namespaced:       namespaced,
				New:              newFunc,
			},
			Storage: s,
		}
	}
	return []*registry.Entry{
		entry("LocalSubjectAccessReview", "localsubjectaccessreviews", true,
			func() runtime.Object { return &authorizationv1.LocalSubjectAccessReview{} }, localReviews{z}),
		entry("SelfSubjectAccessReview", "selfsubjectaccessreviews", false,
			func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} }, selfReviews{z}),
		entry("SelfSubjectRulesReview", "selfsubjectrulesreviews", false,
			func() runtime.Object { return &authorizationv1.SelfSubjectRulesReview{} }, rulesReviews{rules}),
		entry("SubjectAccessReview", "subjectaccessreviews", false,
			func() runtime.Object { return &authorizationv1.SubjectAccessReview{} }, subjectReviews{z}),
	}
}

// A review's metadata must be empty (kube ignores managedFields, which
// the server itself may have recorded).
func metadataErrors(m metav1.ObjectMeta, allowNamespace bool) field.ErrorList {
	cp := m
	cp.ManagedFields = nil
	msg := "must be empty"
	if allowNamespace {
		cp.Namespace = ""
		msg = "must be empty except for namespace"
	}
	if apiequality.Semantic.DeepEqual(metav1.ObjectMeta{}, cp) {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("metadata"), m, msg)}
}

// NonResourceAttributes is how kube's errors show a review's
// nonResourceAttributes: as its internal type, of a package also named
// authorization.
type NonResourceAttributes struct{ Path, Verb string }

// shown is nonRes as kube's errors show it; nil when absent.
func shown(nonRes *authorizationv1.NonResourceAttributes) *NonResourceAttributes {
	if nonRes == nil {
		return nil
	}
	return &NonResourceAttributes{Path: nonRes.Path, Verb: nonRes.Verb}
}

// invalid is kube's error for an invalid review, which names no kind:
// kube validates the object it decoded, whose kind is no longer set.
func invalid(errs field.ErrorList) error {
	return apierrors.NewInvalid(schema.GroupKind{Group: authorizationv1.GroupName}, "", errs)
}

func attributesErrors(res *authorizationv1.ResourceAttributes, nonRes *authorizationv1.NonResourceAttributes) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if res != nil && nonRes != nil {
		errs = append(errs, field.Invalid(spec.Child("nonResourceAttributes"), shown(nonRes), "cannot be specified in combination with resourceAttributes"))
	}
	if res == nil && nonRes == nil {
		errs = append(errs, field.Invalid(spec.Child("resourceAttributes"), shown(nonRes), "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
	}
	return errs
}

func specErrors(spec authorizationv1.SubjectAccessReviewSpec) field.ErrorList {
	errs := attributesErrors(spec.ResourceAttributes, spec.NonResourceAttributes)
	if spec.User == "" && len(spec.Groups) == 0 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "user"), spec.User, "at least one of user or group must be specified"))
	}
	return errs
}

// attributes is the question a review asks about u.
func attributes(u *user.Info, res *authorizationv1.ResourceAttributes, nonRes *authorizationv1.NonResourceAttributes) authorizer.Attributes {
	if res == nil {
		return authorizer.Attributes{User: u, Verb: nonRes.Verb, Path: nonRes.Path}
	}
	version := res.Version
	if version == "" {
		version = "*"
	}
	return authorizer.Attributes{
		User: u, Verb: res.Verb, ResourceRequest: true,
		Namespace: res.Namespace, APIGroup: res.Group, APIVersion: version,
		Resource: res.Resource, Subresource: res.Subresource, Name: res.Name,
	}
}

func subjectOf(spec authorizationv1.SubjectAccessReviewSpec) *user.Info {
	u := &user.Info{Name: spec.User, UID: spec.UID, Groups: spec.Groups}
	if len(spec.Extra) > 0 {
		u.Extra = make(map[string][]string, len(spec.Extra))
		for k, v := range spec.Extra {
			u.Extra[k] = v
		}
	}
	return u
}

func decide(ctx context.Context, z authorizer.Authorizer, a authorizer.Attributes) authorizationv1.SubjectAccessReviewStatus {
	d, reason, err := z.Authorize(ctx, a)
	st := authorizationv1.SubjectAccessReviewStatus{Allowed: d == authorizer.Allow, Denied: d == authorizer.Deny, Reason: reason}
	if err != nil {
		st.EvaluationError = err.Error()
	}
	return st
}

func validate(ctx context.Context, obj runtime.Object, v rest.ValidateObjectFunc) error {
	if v == nil {
		return nil
	}
	return v(ctx, obj.DeepCopyObject())
}

type subjectReviews struct{ z authorizer.Authorizer }

func (subjectReviews) New() runtime.Object { return &authorizationv1.SubjectAccessReview{} }

func (s subjectReviews) Create(ctx context.Context, _ string, obj runtime.Object, v rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	r := obj.(*authorizationv1.SubjectAccessReview)
	if errs := append(specErrors(r.Spec), metadataErrors(r.ObjectMeta, false)...); len(errs) > 0 {
		return nil, invalid(errs)
	}
	if err := validate(ctx, obj, v); err != nil {
		return nil, err
	}
	r.Status = decide(ctx, s.z, attributes(subjectOf(r.Spec), r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes))
	return r, nil
}

type localReviews struct{ z authorizer.Authorizer }

func (localReviews) New() runtime.Object { return &authorizationv1.LocalSubjectAccessReview{} }

func (s localReviews) Create(ctx context.Context, namespace string, obj runtime.Object, v rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	r := obj.(*authorizationv1.LocalSubjectAccessReview)
	errs := append(specErrors(r.Spec), metadataErrors(r.ObjectMeta, true)...)
	if ra := r.Spec.ResourceAttributes; ra != nil && ra.Namespace != r.Namespace {
		errs = append(errs, field.Invalid(field.NewPath("spec.resourceAttributes.namespace"), ra.Namespace, "must match metadata.namespace"))
	}
	if r.Spec.NonResourceAttributes != nil {
		errs = append(errs, field.Invalid(field.NewPath("spec.nonResourceAttributes"), shown(r.Spec.NonResourceAttributes), "disallowed on this kind of request"))
	}
	if len(errs) > 0 {
		return nil, invalid(errs)
	}
	if namespace != r.Namespace {
		return nil, apierrors.NewBadRequest("spec.resourceAttributes.namespace must match namespace: " + namespace)
	}
	if err := validate(ctx, obj, v); err != nil {
		return nil, err
	}
	r.Status = decide(ctx, s.z, attributes(subjectOf(r.Spec), r.Spec.ResourceAttributes, nil))
	return r, nil
}

type selfReviews struct{ z authorizer.Authorizer }

func (selfReviews) New() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} }

func (s selfReviews) Create(ctx context.Context, _ string, obj runtime.Object, v rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	r := obj.(*authorizationv1.SelfSubjectAccessReview)
	if errs := append(attributesErrors(r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes), metadataErrors(r.ObjectMeta, false)...); len(errs) > 0 {
		return nil, invalid(errs)
	}
	u, ok := user.From(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	if err := validate(ctx, obj, v); err != nil {
		return nil, err
	}
	r.Status = decide(ctx, s.z, attributes(u, r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes))
	return r, nil
}

type rulesReviews struct{ rules authorizer.RuleResolver }

func (rulesReviews) New() runtime.Object { return &authorizationv1.SelfSubjectRulesReview{} }

// Create answers with the rules alone, as kube does: the spec is not
// echoed.
func (s rulesReviews) Create(ctx context.Context, _ string, obj runtime.Object, v rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	r := obj.(*authorizationv1.SelfSubjectRulesReview)
	u, ok := user.From(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	if r.Spec.Namespace == "" {
		return nil, apierrors.NewBadRequest("no namespace on request")
	}
	if err := validate(ctx, obj, v); err != nil {
		return nil, err
	}
	rules, incomplete, err := s.rules.RulesFor(ctx, u, r.Spec.Namespace)
	out := &authorizationv1.SelfSubjectRulesReview{TypeMeta: r.TypeMeta, Status: authorizationv1.SubjectRulesReviewStatus{
		ResourceRules: []authorizationv1.ResourceRule{}, NonResourceRules: []authorizationv1.NonResourceRule{}, Incomplete: incomplete,
	}}
	for _, rule := range rules {
		if len(rule.NonResourceURLs) > 0 {
			out.Status.NonResourceRules = append(out.Status.NonResourceRules, authorizationv1.NonResourceRule{Verbs: rule.Verbs, NonResourceURLs: rule.NonResourceURLs})
		} else {
			out.Status.ResourceRules = append(out.Status.ResourceRules, authorizationv1.ResourceRule{
				Verbs: rule.Verbs, APIGroups: rule.APIGroups, Resources: rule.Resources, ResourceNames: rule.ResourceNames,
			})
		}
	}
	if err != nil {
		out.Status.EvaluationError = err.Error()
	}
	return out, nil
}

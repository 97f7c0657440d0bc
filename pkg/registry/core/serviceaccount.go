package core

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/auth/serviceaccount"
	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
	"github.com/cronplane/cronplane/pkg/storage"
	"github.com/cronplane/cronplane/pkg/warning"
)

// TokenSigner signs the tokens TokenRequests ask for
// (serviceaccount.Signer).
type TokenSigner interface {
	Sign(c serviceaccount.Claims) (string, error)
}

// SecretGetter reads the Secret a token is to be bound to, as it is now
// (not from a cache that may lag); a missing one is an API NotFound error.
type SecretGetter interface {
	GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
}

// PodGetter reads the Pod a token is to be bound to, as it is now; a
// missing one is an API NotFound error.
type PodGetter interface {
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
}

// TokenRequests configures the serviceaccounts/token subresource.
type TokenRequests struct {
	Signer TokenSigner
	// Audiences are the API audiences, which a request naming none gets.
	Audiences []string
	// MaxExpiration caps the lifetime of a token; 0 leaves it uncapped.
	MaxExpiration time.Duration
	// TokenIDs gives each token a jti (kube's ServiceAccountTokenJTI).
	TokenIDs bool
	Secrets  SecretGetter
	Pods     PodGetter
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// ServiceAccountResource registers core/v1 serviceaccounts and their token
// subresource, which issues tokens through tokens.
func ServiceAccountResource(tokens *TokenRequests) *generic.Resource {
	gvk := corev1.SchemeGroupVersion.WithKind("ServiceAccount")
	newFunc := func() runtime.Object { return &corev1.ServiceAccount{} }
	return &generic.Resource{
		Resource: rest.Resource{
			GroupVersionKind: gvk,
			Plural:           "serviceaccounts",
			Singular:         "serviceaccount",
			ShortNames:       []string{"sa"},
			Namespaced:       true,
			New:              newFunc,
			NewList:          func() runtime.Object { return &corev1.ServiceAccountList{} },
			Table:            serviceAccountTable,
		},
		Codec:    codec.Protobuf(gvk, newFunc),
		Strategy: serviceAccountStrategy{},
		Serve: func(s *generic.Store) (rest.Storage, map[string]rest.Storage) {
			return s, map[string]rest.Storage{"token": &tokenStorage{accounts: s, cfg: tokens}}
		},
	}
}

type serviceAccountStrategy struct{ generic.DefaultStrategy }

// PrepareForCreate and PrepareForUpdate keep only the names of the
// referenced secrets, as kube does: they are always in the account's
// namespace.
func (serviceAccountStrategy) PrepareForCreate(obj runtime.Object) {
	nameOnlySecretRefs(obj.(*corev1.ServiceAccount))
}

func (serviceAccountStrategy) PrepareForUpdate(obj, _ runtime.Object) {
	nameOnlySecretRefs(obj.(*corev1.ServiceAccount))
}

func nameOnlySecretRefs(sa *corev1.ServiceAccount) {
	for i, ref := range sa.Secrets {
		sa.Secrets[i] = corev1.ObjectReference{Name: ref.Name}
	}
}

func (serviceAccountStrategy) Validate(obj runtime.Object) field.ErrorList {
	return validateKubeFinalizers(&obj.(*corev1.ServiceAccount).ObjectMeta)
}

// ValidateUpdate repeats the metadata checks as kube's does (see
// configMapStrategy.ValidateUpdate).
func (serviceAccountStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	sa, oldSA := obj.(*corev1.ServiceAccount), old.(*corev1.ServiceAccount)
	return append(validateCoreMetaUpdate(&sa.ObjectMeta, &oldSA.ObjectMeta), validateCoreMeta(&sa.ObjectMeta)...)
}

var serviceAccountTable = &rest.TableSpec{
	Columns: []metav1.TableColumnDefinition{
		rest.NameColumn,
		{Name: "Secrets", Type: "string", Description: corev1.ServiceAccount{}.SwaggerDoc()["secrets"]},
		rest.AgeColumn,
	},
	Cells: func(obj runtime.Object, now time.Time) []interface{} {
		sa := obj.(*corev1.ServiceAccount)
		return []interface{}{sa.Name, int64(len(sa.Secrets)), rest.Age(sa.CreationTimestamp, now)}
	},
}

// Token lifetimes, as kube bounds them.
const (
	defaultTokenExpirationSeconds = 60 * 60
	minTokenExpirationSeconds     = 10 * 60
	maxTokenExpirationSeconds     = 1 << 32
)

var tokenRequestGK = authenticationv1.SchemeGroupVersion.WithKind("TokenRequest").GroupKind()

// tokenRequestDescription is what serviceaccounts/token takes and returns.
var tokenRequestDescription = func() *rest.Resource {
	r := &rest.Resource{
		GroupVersionKind: authenticationv1.SchemeGroupVersion.WithKind("TokenRequest"),
		Plural:           "tokenrequests",
		Singular:         "tokenrequest",
		Namespaced:       true,
		New:              func() runtime.Object { return &authenticationv1.TokenRequest{} },
		Default:          defaultTokenRequest,
	}
	// Completed once: every server in the process shares it.
	r.Complete()
	return r
}()

// defaultTokenRequest applies kube's v1 default lifetime, an hour.
func defaultTokenRequest(obj runtime.Object) {
	tr := obj.(*authenticationv1.TokenRequest)
	if tr.Spec.ExpirationSeconds == nil {
		seconds := int64(defaultTokenExpirationSeconds)
		tr.Spec.ExpirationSeconds = &seconds
	}
}

// tokenStorage serves serviceaccounts/token: a POST of a TokenRequest
// returns it with a new token in its status. Nothing is stored, so a dry
// run is answered as any other request, with a token, as kube answers it.
type tokenStorage struct {
	accounts rest.Getter
	cfg      *TokenRequests
}

var (
	_ rest.NamedCreater = (*tokenStorage)(nil)
	_ rest.Describer    = (*tokenStorage)(nil)
)

func (t *tokenStorage) New() runtime.Object      { return &authenticationv1.TokenRequest{} }
func (t *tokenStorage) Describe() *rest.Resource { return tokenRequestDescription }

func (t *tokenStorage) now() time.Time {
	if t.cfg.Now != nil {
		return t.cfg.Now()
	}
	return time.Now()
}

// Create issues a token for the account name, checking what kube checks in
// its order: the body's name and namespace, the account, the lifetime,
// validating admission, then the object the token is bound to.
func (t *tokenStorage) Create(ctx context.Context, namespace, name string, obj runtime.Object, validate rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	req := obj.(*authenticationv1.TokenRequest)
	// What the system sets is not taken from the body, as on any create.
	req.UID = ""
	req.SetSelfLink("")
	req.DeletionTimestamp, req.DeletionGracePeriodSeconds = nil, nil
	switch req.Namespace {
	case "":
		req.Namespace = namespace
	case namespace:
	default:
		return nil, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	if req.Name != "" && req.Name != name {
		return nil, apierrors.NewInvalid(tokenRequestGK, name, field.ErrorList{
			field.Invalid(field.NewPath("metadata", "name"), req.Name, "must match the service account name if specified"),
		})
	}
	saObj, err := t.accounts.Get(ctx, namespace, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	sa := storage.Unwrap(saObj).(*corev1.ServiceAccount)
	if len(req.Spec.Audiences) == 0 {
		req.Spec.Audiences = append([]string(nil), t.cfg.Audiences...)
	}
	req.Name = sa.Name
	now := t.now()
	req.CreationTimestamp = metav1.NewTime(now)
	req.Status = authenticationv1.TokenRequestStatus{}
	// kube names no object in this error.
	if errs := validateTokenRequest(req); len(errs) > 0 {
		return nil, apierrors.NewInvalid(tokenRequestGK, "", errs)
	}
	if validate != nil {
		if err := validate(ctx, req.DeepCopy()); err != nil {
			return nil, err
		}
	}
	var pod, secret *serviceaccount.Ref
	if ref := req.Spec.BoundObjectRef; ref != nil {
		if pod, secret, err = t.boundObject(ctx, namespace, sa.Name, ref); err != nil {
			return nil, err
		}
	}
	if max := int64(t.cfg.MaxExpiration / time.Second); max > 0 && *req.Spec.ExpirationSeconds > max {
		warning.Add(ctx, fmt.Sprintf("requested expiration of %d seconds shortened to %d seconds", *req.Spec.ExpirationSeconds, max))
		req.Spec.ExpirationSeconds = &max
	}
	expiry := now.Add(time.Duration(*req.Spec.ExpirationSeconds) * time.Second)
	claims := serviceaccount.Claims{
		Namespace:      namespace,
		ServiceAccount: serviceaccount.Ref{Name: sa.Name, UID: sa.UID},
		Pod:            pod,
		Secret:         secret,
		Audiences:      req.Spec.Audiences,
		IssuedAt:       now,
		Expiry:         expiry,
	}
	if t.cfg.TokenIDs {
		claims.ID = uuid.NewString()
	}
	token, err := t.cfg.Signer.Sign(claims)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("failed to generate token: %w", err))
	}
	req.Status = authenticationv1.TokenRequestStatus{Token: token, ExpirationTimestamp: metav1.NewTime(expiry)}
	return req, nil
}

// boundObject resolves the Pod or Secret a token is to be bound to; a
// Node is answered as kube v1.29 answers with its default feature gates.
// A pod must run as the account.
func (t *tokenStorage) boundObject(ctx context.Context, namespace, account string, ref *authenticationv1.BoundObjectReference) (pod, secret *serviceaccount.Ref, err error) {
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	switch {
	case gvk.Group == "" && (gvk.Kind == "Pod" || gvk.Kind == "Secret"):
	case gvk.Group == "" && gvk.Kind == "Node":
		return nil, nil, apierrors.NewBadRequest(`cannot bind token to a Node object as the "ServiceAccountTokenNodeBinding" feature-gate is disabled`)
	default:
		return nil, nil, apierrors.NewBadRequest("cannot bind token to object of type " + gvk.String())
	}
	if ref.Name == "" {
		return nil, nil, apierrors.NewBadRequest("Name parameter required.")
	}
	var bound serviceaccount.Ref
	if gvk.Kind == "Pod" {
		p, err := t.cfg.Pods.GetPod(ctx, namespace, ref.Name)
		if err != nil {
			return nil, nil, err
		}
		if p.Spec.ServiceAccountName != account {
			return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", account))
		}
		bound = serviceaccount.Ref{Name: p.Name, UID: p.UID}
		pod = &bound
	} else {
		s, err := t.cfg.Secrets.GetSecret(ctx, namespace, ref.Name)
		if err != nil {
			return nil, nil, err
		}
		bound = serviceaccount.Ref{Name: s.Name, UID: s.UID}
		secret = &bound
	}
	if ref.UID != "" && ref.UID != bound.UID {
		// kube names the kind where a resource would go.
		return nil, nil, apierrors.NewConflict(schema.GroupResource{Resource: gvk.Kind}, ref.Name,
			fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	return pod, secret, nil
}

// validateTokenRequest checks the requested lifetime, as kube does.
func validateTokenRequest(tr *authenticationv1.TokenRequest) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("spec", "expirationSeconds")
	switch seconds := *tr.Spec.ExpirationSeconds; {
	case seconds < minTokenExpirationSeconds:
		errs = append(errs, field.Invalid(path, seconds, "may not specify a duration less than 10 minutes"))
	case seconds > maxTokenExpirationSeconds:
		errs = append(errs, field.Invalid(path, seconds, "may not specify a duration larger than 2^32 seconds"))
	}
	return errs
}

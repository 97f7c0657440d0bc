package core

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/auth/serviceaccount"
	"github.com/cronplane/cronplane/pkg/registry/rest"
	"github.com/cronplane/cronplane/pkg/warning"
)

func TestServiceAccountStorage_MatchesKube(t *testing.T) {
	no := false
	// kube keeps only the names of the referenced secrets.
	storedLikeKube(t, ServiceAccountResource(nil), "testdata/kube-serviceaccount.pb", &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: "cp-a", Namespace: "cp-sa"},
		Secrets: []corev1.ObjectReference{
			{Name: "s1", Namespace: "x", Kind: "Secret", UID: "u"},
			{Name: "s1"},
		},
		ImagePullSecrets:             []corev1.LocalObjectReference{{Name: "p"}},
		AutomountServiceAccountToken: &no,
	})
}

func TestServiceAccountValidate_FinalizersAndMetadataAsKube(t *testing.T) {
	s := serviceAccountStrategy{}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa", Namespace: "ns", ResourceVersion: "1", Finalizers: []string{"foo"}}}
	// The message kube-apiserver v1.29 answered.
	if errs := s.Validate(sa); len(errs) != 1 || errs[0].Error() != `metadata.finalizers[0]: Invalid value: "foo": name is neither a standard finalizer name nor is it fully qualified` {
		t.Fatalf("create: %v", errs)
	}
	old := sa.DeepCopy()
	old.Finalizers = nil
	renamed := sa.DeepCopy()
	renamed.Finalizers, renamed.Name = nil, "other"
	if errs := s.ValidateUpdate(renamed, old); len(errs) == 0 {
		t.Fatal("update: a new name must be refused")
	}
}

func TestServiceAccountTable_CountsSecrets(t *testing.T) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}, Secrets: []corev1.ObjectReference{{Name: "a"}, {Name: "b"}}}
	cells := serviceAccountTable.Cells(sa, time.Now())
	if !reflect.DeepEqual(cells, []interface{}{"builder", int64(2), "<unknown>"}) {
		t.Fatalf("cells %v", cells)
	}
	var names []string
	for _, c := range serviceAccountTable.Columns {
		names = append(names, c.Name)
	}
	if !reflect.DeepEqual(names, []string{"Name", "Secrets", "Age"}) {
		t.Fatalf("columns %v", names)
	}
}

// accountGetter serves one ServiceAccount, ns/builder.
type accountGetter struct{}

func (accountGetter) Get(_ context.Context, namespace, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	if namespace != "ns" || name != "builder" {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "serviceaccounts"}, name)
	}
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "builder", UID: "sa-uid"}}, nil
}

// secretGetter serves one Secret, ns/bound.
type secretGetter struct{}

func (secretGetter) GetSecret(_ context.Context, namespace, name string) (*corev1.Secret, error) {
	if namespace != "ns" || name != "bound" {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bound", UID: "secret-uid"}}, nil
}

type podGetter struct{}

func (podGetter) GetPod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	accounts := map[string]string{"web": "builder", "other": "default"}
	if namespace != "ns" || accounts[name] == "" {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name)
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: "pod-uid"}, Spec: corev1.PodSpec{ServiceAccountName: accounts[name]}}, nil
}

// recordingSigner returns "token" and remembers the claims it signed.
type recordingSigner struct{ claims *serviceaccount.Claims }

func (s *recordingSigner) Sign(c serviceaccount.Claims) (string, error) {
	s.claims = &c
	return "token", nil
}

func seconds(n int64) *int64 { return &n }

func TestTokenRequest_CreateAsKube(t *testing.T) {
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	apiAudiences := []string{serviceaccount.DefaultIssuer}
	for _, tc := range []struct {
		name      string
		account   string
		req       authenticationv1.TokenRequest
		maxExpiry time.Duration
		admission rest.ValidateObjectFunc
		// want is the answer's spec; wantClaims what was signed.
		want       authenticationv1.TokenRequestSpec
		wantClaims serviceaccount.Claims
		wantWarn   []string
		// wantErr is the answer's Status message and code.
		wantErr  string
		wantCode int32
	}{
		{
			name: "an empty request gets the API audiences and an hour",
			want: authenticationv1.TokenRequestSpec{Audiences: apiAudiences, ExpirationSeconds: seconds(3600)},
			wantClaims: serviceaccount.Claims{Namespace: "ns", ServiceAccount: serviceaccount.Ref{Name: "builder", UID: "sa-uid"},
				Audiences: apiAudiences, IssuedAt: now, Expiry: now.Add(time.Hour)},
		},
		{
			name: "audiences and lifetime are taken as asked",
			req:  authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}, ExpirationSeconds: seconds(600)}},
			want: authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}, ExpirationSeconds: seconds(600)},
			wantClaims: serviceaccount.Claims{Namespace: "ns", ServiceAccount: serviceaccount.Ref{Name: "builder", UID: "sa-uid"},
				Audiences: []string{"vault"}, IssuedAt: now, Expiry: now.Add(10 * time.Minute)},
		},
		{
			name: "a lifetime beyond the maximum is shortened with a warning", maxExpiry: 2 * time.Hour,
			req:  authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: seconds(86400)}},
			want: authenticationv1.TokenRequestSpec{Audiences: apiAudiences, ExpirationSeconds: seconds(7200)},
			wantClaims: serviceaccount.Claims{Namespace: "ns", ServiceAccount: serviceaccount.Ref{Name: "builder", UID: "sa-uid"},
				Audiences: apiAudiences, IssuedAt: now, Expiry: now.Add(2 * time.Hour)},
			wantWarn: []string{"requested expiration of 86400 seconds shortened to 7200 seconds"},
		},
		{
			name: "a token bound to a secret names its uid",
			req:  authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: "bound", UID: "secret-uid"}}},
			want: authenticationv1.TokenRequestSpec{Audiences: apiAudiences, ExpirationSeconds: seconds(3600),
				BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: "bound", UID: "secret-uid"}},
			wantClaims: serviceaccount.Claims{Namespace: "ns", ServiceAccount: serviceaccount.Ref{Name: "builder", UID: "sa-uid"},
				Secret: &serviceaccount.Ref{Name: "bound", UID: "secret-uid"}, Audiences: apiAudiences, IssuedAt: now, Expiry: now.Add(time.Hour)},
		},
		// The messages below are those kube-apiserver v1.29 answered.
		{
			name: "a missing account is a 404", account: "nosuch",
			wantErr: `serviceaccounts "nosuch" not found`, wantCode: 404,
		},
		{
			name:    "another name in the body is refused",
			req:     authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{Name: "other"}},
			wantErr: `TokenRequest.authentication.k8s.io "builder" is invalid: metadata.name: Invalid value: "other": must match the service account name if specified`, wantCode: 422,
		},
		{
			name:    "another namespace in the body is refused",
			req:     authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "other"}},
			wantErr: "the namespace of the provided object does not match the namespace sent on the request", wantCode: 400,
		},
		{
			name:    "less than ten minutes is refused",
			req:     authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: seconds(300)}},
			wantErr: `TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes`, wantCode: 422,
		},
		{
			name:    "more than 2^32 seconds is refused",
			req:     authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: seconds(100000000000)}},
			wantErr: `TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 100000000000: may not specify a duration larger than 2^32 seconds`, wantCode: 422,
		},
		{
			name:    "a missing secret is a 404",
			req:     authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Secret", Name: "nosuch"}}},
			wantErr: `secrets "nosuch" not found`, wantCode: 404,
		},
		{
			name:    "a secret of another uid is a conflict",
			req:     authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Secret", Name: "bound", UID: "123"}}},
			wantErr: `Operation cannot be fulfilled on Secret "bound": the UID in the bound object reference (123) does not match the UID in record. The object might have been deleted and then recreated`, wantCode: 409,
		},
		{
			name:    "a secret without a name is a bad request",
			req:     authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Secret"}}},
			wantErr: "Name parameter required.", wantCode: 400,
		},
		{
			name: "a token bound to a pod names its uid",
			req:  authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web"}}},
			want: authenticationv1.TokenRequestSpec{Audiences: apiAudiences, ExpirationSeconds: seconds(3600),
				BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web"}},
			wantClaims: serviceaccount.Claims{Namespace: "ns", ServiceAccount: serviceaccount.Ref{Name: "builder", UID: "sa-uid"},
				Pod: &serviceaccount.Ref{Name: "web", UID: "pod-uid"}, Audiences: apiAudiences, IssuedAt: now, Expiry: now.Add(time.Hour)},
		},
		{
			name:    "a missing pod is a 404",
			req:     authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "nosuch"}}},
			wantErr: `pods "nosuch" not found`, wantCode: 404,
		},
		{
			name:    "a pod of another account is a bad request",
			req:     authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "other"}}},
			wantErr: `cannot bind token for serviceaccount "builder" to pod running with different serviceaccount name.`, wantCode: 400,
		},
		{
			name:    "a pod of another uid is a conflict",
			req:     authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web", UID: "123"}}},
			wantErr: `Operation cannot be fulfilled on Pod "web": the UID in the bound object reference (123) does not match the UID in record. The object might have been deleted and then recreated`, wantCode: 409,
		},
		{
			name:    "a node is refused as kube refuses it by default",
			req:     authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Node", Name: "n1"}}},
			wantErr: `cannot bind token to a Node object as the "ServiceAccountTokenNodeBinding" feature-gate is disabled`, wantCode: 400,
		},
		{
			name:    "other kinds are refused",
			req:     authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "apps/v1", Name: "bound"}}},
			wantErr: "cannot bind token to object of type apps/v1, Kind=Secret", wantCode: 400,
		},
		{
			name: "validating admission can refuse",
			admission: func(_ context.Context, obj runtime.Object) error {
				if obj.(*authenticationv1.TokenRequest).Spec.Audiences[0] != serviceaccount.DefaultIssuer {
					return errors.New("admission saw no defaults")
				}
				return apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts"}, "builder", errors.New("no"))
			},
			wantErr: `serviceaccounts "builder" is forbidden: no`, wantCode: 403,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			signer := &recordingSigner{}
			tokens := &TokenRequests{Signer: signer, Audiences: apiAudiences, MaxExpiration: tc.maxExpiry, Secrets: secretGetter{}, Pods: podGetter{}, Now: func() time.Time { return now }}
			storage := &tokenStorage{accounts: accountGetter{}, cfg: tokens}
			// Bodies come defaulted as the description says.
			req := tc.req.DeepCopy()
			storage.Describe().Defaults(req)
			account := tc.account
			if account == "" {
				account = "builder"
			}
			rec := &warning.Recorder{}
			ctx := warning.WithRecorder(context.Background(), rec)
			out, err := storage.Create(ctx, "ns", account, req, tc.admission, &metav1.CreateOptions{})
			if tc.wantErr != "" {
				var status apierrors.APIStatus
				if !errors.As(err, &status) || status.Status().Message != tc.wantErr || status.Status().Code != tc.wantCode {
					t.Fatalf("want %d %q, got %v", tc.wantCode, tc.wantErr, err)
				}
				if signer.claims != nil {
					t.Fatal("a refused request signed a token")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := out.(*authenticationv1.TokenRequest)
			wantMeta := metav1.ObjectMeta{Name: "builder", Namespace: "ns", CreationTimestamp: metav1.NewTime(now)}
			if !reflect.DeepEqual(got.ObjectMeta, wantMeta) || !reflect.DeepEqual(got.Spec, tc.want) {
				t.Fatalf("answer %+v %+v", got.ObjectMeta, got.Spec)
			}
			if got.Status.Token != "token" || !got.Status.ExpirationTimestamp.Time.Equal(tc.wantClaims.Expiry) {
				t.Fatalf("status %+v", got.Status)
			}
			if !reflect.DeepEqual(*signer.claims, tc.wantClaims) {
				t.Fatalf("claims %+v, want %+v", *signer.claims, tc.wantClaims)
			}
			if !reflect.DeepEqual(rec.Texts(), tc.wantWarn) {
				t.Fatalf("warnings %q", rec.Texts())
			}
		})
	}
}

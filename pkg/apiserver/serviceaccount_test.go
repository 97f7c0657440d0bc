package apiserver_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/cronplane/cronplane/pkg/apiserver"
	"github.com/cronplane/cronplane/pkg/apiserver/apiservertest"
)

// authenticates reports whether s takes token: any answer but a 401 to a
// read of the account means it authenticated (authorization is another
// matter).
func authenticates(t *testing.T, s *apiserver.Server, token, ns, account string) bool {
	t.Helper()
	c, err := kubernetes.NewForConfig(&rest.Config{Host: s.URL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: s.CAData}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.CoreV1().ServiceAccounts(ns).Get(ctx(t), account, metav1.GetOptions{})
	return !apierrors.IsUnauthorized(err)
}

// eventually waits, boundedly, for the watch cache the authenticator reads
// to see a change.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx(t), 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting until %s: %v", what, err)
	}
}

func createAccount(t *testing.T, c kubernetes.Interface, ns, name string) *corev1.ServiceAccount {
	t.Helper()
	sa, err := c.CoreV1().ServiceAccounts(ns).Create(ctx(t), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return sa
}

func TestServiceAccountToken_AuthenticatesUntilTheAccountIsDeleted(t *testing.T) {
	ns := namespace(t)
	createAccount(t, srv.Client, ns, "builder")
	token := strings.TrimSpace(mustKubectl(t, "-n", ns, "create", "token", "builder", "--duration", "2h"))
	if !authenticates(t, srv.Server, token, ns, "builder") {
		t.Fatal("a fresh token was refused")
	}
	other := strings.TrimSpace(mustKubectl(t, "-n", ns, "create", "token", "builder", "--audience", "vault"))
	if authenticates(t, srv.Server, other, ns, "builder") {
		t.Fatal("a token for another audience was taken")
	}

	if err := srv.Client.CoreV1().ServiceAccounts(ns).Delete(ctx(t), "builder", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the token of the deleted account is refused", func() bool { return !authenticates(t, srv.Server, token, ns, "builder") })

	// The same name is another account: the old token stays refused while
	// a new one is taken.
	createAccount(t, srv.Client, ns, "builder")
	fresh := strings.TrimSpace(mustKubectl(t, "-n", ns, "create", "token", "builder"))
	eventually(t, "a token of the new account is taken", func() bool { return authenticates(t, srv.Server, fresh, ns, "builder") })
	if authenticates(t, srv.Server, token, ns, "builder") {
		t.Fatal("the token of the deleted account is taken by the new one")
	}
}

func TestServiceAccountToken_BoundToASecretLivesAsLongAsIt(t *testing.T) {
	ns := namespace(t)
	createAccount(t, srv.Client, ns, "builder")
	s, err := srv.Client.CoreV1().Secrets(ns).Create(ctx(t), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "holder"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(mustKubectl(t, "-n", ns, "create", "token", "builder", "--bound-object-kind", "Secret", "--bound-object-name", "holder", "--bound-object-uid", string(s.UID)))
	_, claims := splitJWT(t, token)
	if secret := claims["kubernetes.io"].(map[string]interface{})["secret"]; secret == nil || secret.(map[string]interface{})["uid"] != string(s.UID) {
		t.Fatalf("claims %v", claims)
	}
	if !authenticates(t, srv.Server, token, ns, "builder") {
		t.Fatal("the bound token was refused")
	}
	if err := srv.Client.CoreV1().Secrets(ns).Delete(ctx(t), "holder", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the token bound to the deleted secret is refused", func() bool { return !authenticates(t, srv.Server, token, ns, "builder") })

	// The messages kube-apiserver v1.29 answers.
	for _, tc := range []struct{ args, want string }{
		{"--bound-object-kind Secret --bound-object-name holder", `secrets "holder" not found`},
		{"--bound-object-kind Pod --bound-object-name web", `pods "web" not found`},
		{"--duration 5m", `TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes`},
	} {
		out, err := kubectl(t, append([]string{"-n", ns, "create", "token", "builder"}, strings.Fields(tc.args)...)...)
		if err == nil || !strings.Contains(out, "failed to create token: "+tc.want) {
			t.Errorf("create token %s: %v\n%s", tc.args, err, out)
		}
	}
}

func splitJWT(t *testing.T, token string) (header, claims map[string]interface{}) {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", token)
	}
	for i, into := range []*map[string]interface{}{&header, &claims} {
		data, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, into); err != nil {
			t.Fatal(err)
		}
	}
	return header, claims
}

// TestTokenRequest_AnswersAsKube compares with what `kubectl create token
// default -o yaml` shows from kube-apiserver v1.29.
func TestTokenRequest_AnswersAsKube(t *testing.T) {
	ns := namespace(t)
	sa := createAccount(t, srv.Client, ns, "builder")
	before := time.Now().Truncate(time.Second)
	out := mustKubectl(t, "-n", ns, "create", "token", "builder", "-o", "yaml")
	var tr authenticationv1.TokenRequest
	if err := yaml.Unmarshal([]byte(out), &tr); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"apiVersion: authentication.k8s.io/v1", "kind: TokenRequest", "boundObjectRef: null", "expirationSeconds: 3600", "  - https://kubernetes.default.svc.cluster.local"} {
		if !strings.Contains(out, want) {
			t.Errorf("-o yaml lacks %q:\n%s", want, out)
		}
	}
	created := tr.CreationTimestamp.Time
	if tr.Name != "builder" || tr.Namespace != ns || created.Before(before) || tr.UID != "" || tr.ResourceVersion != "" {
		t.Fatalf("metadata %+v", tr.ObjectMeta)
	}
	if exp := tr.Status.ExpirationTimestamp.Time; exp.Sub(created) < time.Hour || exp.Sub(created) > time.Hour+time.Second {
		t.Fatalf("expires %s, created %s", exp, created)
	}
	header, claims := splitJWT(t, tr.Status.Token)
	if header["alg"] != "RS256" || header["kid"] == nil {
		t.Fatalf("header %v", header)
	}
	k8s := claims["kubernetes.io"].(map[string]interface{})
	if claims["iss"] != "https://kubernetes.default.svc.cluster.local" || claims["sub"] != "system:serviceaccount:"+ns+":builder" ||
		k8s["namespace"] != ns || k8s["serviceaccount"].(map[string]interface{})["uid"] != string(sa.UID) ||
		claims["exp"].(float64)-claims["iat"].(float64) != 3600 || claims["jti"] != nil {
		t.Fatalf("claims %v", claims)
	}

	// A dry run answers as kube's does, with a token: nothing is stored
	// either way.
	dry, err := srv.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx(t), "builder", &authenticationv1.TokenRequest{}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil || dry.Status.Token == "" {
		t.Fatalf("dry run: %v %+v", err, dry)
	}

	if out := mustKubectl(t, "-n", ns, "get", "sa"); !strings.HasPrefix(out, "NAME      SECRETS   AGE\nbuilder   0         ") {
		t.Fatalf("get sa:\n%s", out)
	}
}

func TestTokenRequest_RefusedInATerminatingNamespace(t *testing.T) {
	ns := namespace(t)
	createAccount(t, srv.Client, ns, "builder")
	// No namespace controller runs here, so the namespace stays
	// terminating.
	if err := srv.Client.CoreV1().Namespaces().Delete(ctx(t), ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := srv.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx(t), "builder", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	st := wantStatus(t, err, http.StatusForbidden, metav1.StatusReasonForbidden)
	// As kube-apiserver v1.29 words it.
	if st.Message != `serviceaccounts "builder" is forbidden: unable to create new content in namespace `+ns+` because it is being terminated` {
		t.Fatalf("message %q", st.Message)
	}
}

func TestServiceAccountToken_OutlivesARestart(t *testing.T) {
	dir := t.TempDir()
	sameDir := func(o *apiserver.Options) { o.DataDir = dir }
	first, err := apiservertest.New(sameDir)
	if err != nil {
		t.Fatal(err)
	}
	ns := "default"
	createAccount(t, first.Client, ns, "survivor")
	tr, err := first.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx(t), "survivor", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		first.Stop()
		t.Fatal(err)
	}
	ok := authenticates(t, first.Server, tr.Status.Token, ns, "survivor")
	first.Stop()
	if !ok {
		t.Fatal("the token was refused before the restart")
	}
	second := apiservertest.Start(t, sameDir)
	if !authenticates(t, second.Server, tr.Status.Token, ns, "survivor") {
		t.Fatal("the token was refused after the restart")
	}
}

// A TokenReview checks a token for the audiences it names, or the API's:
// a service whose own audience a token names may review it, and a token
// for the API does not pass for another service's. The answers are
// kube's.
func TestTokenReview_AudiencesAndReasonsAsKube(t *testing.T) {
	ns := namespace(t)
	createAccount(t, srv.Client, ns, "robot")
	issue := func(audiences ...string) string {
		tr, err := srv.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx(t), "robot", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: audiences}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	api := "https://kubernetes.default.svc.cluster.local"
	forAPI, forVault, forBoth := issue(), issue("vault"), issue("vault", api)
	review := func(token string, audiences ...string) authenticationv1.TokenReviewStatus {
		t.Helper()
		r, err := srv.Client.AuthenticationV1().TokenReviews().Create(ctx(t), &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: audiences}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Status
	}
	robot := "system:serviceaccount:" + ns + ":robot"
	cases := []struct {
		name      string
		token     string
		asked     []string
		user      string // "" when not authenticated
		audiences []string
		err       string
	}{
		{"a token for the API, none asked", forAPI, nil, robot, []string{api}, ""},
		{"a token for the API, another audience asked", forAPI, []string{"vault"}, "", nil,
			`[invalid bearer token, token audiences ["` + api + `"] is invalid for the target audiences ["vault"]]`},
		{"a token for vault, none asked", forVault, nil, "", nil,
			`[invalid bearer token, token audiences ["vault"] is invalid for the target audiences ["` + api + `"]]`},
		{"a token for vault, vault asked", forVault, []string{"vault"}, robot, []string{"vault"}, ""},
		{"a token for both, others asked with vault", forBoth, []string{"other", "vault"}, robot, []string{"vault"}, ""},
		{"a static token, none asked", "bob-token", nil, "bob", []string{api}, ""},
		{"a static token, the API among others asked", "bob-token", []string{"vault", api}, "bob", []string{api}, ""},
		{"a static token, another audience asked", "bob-token", []string{"vault"}, "", nil, "invalid bearer token"},
		{"an unknown token", "nobody", nil, "", nil, "invalid bearer token"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := review(tc.token, tc.asked...)
			if st.Authenticated != (tc.user != "") || st.User.Username != tc.user || strings.Join(st.Audiences, ",") != strings.Join(tc.audiences, ",") || st.Error != tc.err {
				t.Fatalf("status %+v\nwant user %q audiences %v error %q", st, tc.user, tc.audiences, tc.err)
			}
		})
	}
	if err := srv.Client.CoreV1().ServiceAccounts(ns).Delete(ctx(t), "robot", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := `[invalid bearer token, serviceaccounts "robot" not found]`
	eventually(t, "the review names the deleted account", func() bool { return review(forAPI).Error == want })
}

// kube v1.29's ServiceAccountTokenJTI gate (off by default, as the
// shared server runs): tokens carry a jti, and whoami names it.
func TestServiceAccountTokenJTI_GateGivesTokensAnIDTheUserNames(t *testing.T) {
	s := apiservertest.Start(t, func(o *apiserver.Options) {
		if err := o.FeatureGates.Set("ServiceAccountTokenJTI=true"); err != nil {
			t.Fatal(err)
		}
	})
	_, err := s.Client.CoreV1().Namespaces().Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	createAccount(t, s.Client, "team", "builder")
	tr, err := s.Client.CoreV1().ServiceAccounts("team").CreateToken(ctx(t), "builder", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, claims := splitJWT(t, tr.Status.Token)
	jti, _ := claims["jti"].(string)
	if len(jti) != 36 {
		t.Fatalf("jti %v", claims["jti"])
	}
	c := kubernetes.NewForConfigOrDie(&rest.Config{Host: s.URL, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: s.CAData}})
	var review *authenticationv1.SelfSubjectReview
	eventually(t, "the token authenticates", func() bool {
		review, err = c.AuthenticationV1().SelfSubjectReviews().Create(ctx(t), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		return err == nil
	})
	if got := review.Status.UserInfo.Extra["authentication.kubernetes.io/credential-id"]; len(got) != 1 || got[0] != "JTI="+jti {
		t.Fatalf("extra %v", review.Status.UserInfo.Extra)
	}
}

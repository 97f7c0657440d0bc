package apiserver_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cronplane/cronplane/pkg/apiserver"
	"github.com/cronplane/cronplane/pkg/apiserver/apiservertest"
	"github.com/cronplane/cronplane/pkg/audit"
	"github.com/cronplane/cronplane/test/webhookserver"
)

// hookFor is a webhook on configmaps of namespaces labelled
// webhook-case=<name>, at path /<name> of srv.
func hookFor(srv *webhookserver.Server, name string) (admissionregistrationv1.WebhookClientConfig, []admissionregistrationv1.RuleWithOperations, *metav1.LabelSelector) {
	u := srv.URL + "/" + name
	return admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: srv.CABundle},
		[]admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
		}},
		&metav1.LabelSelector{MatchLabels: map[string]string{"webhook-case": name}}
}

var none = admissionregistrationv1.SideEffectClassNone

// waitCached waits until the watch cache the webhooks read lists the
// named configuration.
func waitCached(t *testing.T, s *apiservertest.Server, mutating bool, name string) {
	t.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		found := false
		if mutating {
			l, err := s.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
			found = err == nil && len(l.Items) > 0 && containsName(len(l.Items), func(i int) string { return l.Items[i].Name }, name)
		} else {
			l, err := s.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
			found = err == nil && containsName(len(l.Items), func(i int) string { return l.Items[i].Name }, name)
		}
		if found {
			return
		}
	}
	t.Fatalf("webhook configuration %s never reached the cache", name)
}

func containsName(n int, at func(int) string, name string) bool {
	for i := 0; i < n; i++ {
		if at(i) == name {
			return true
		}
	}
	return false
}

func namespaceFor(t *testing.T, s *apiservertest.Server, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"webhook-case": name}}}
	if _, err := s.Client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Validating webhooks refuse, allow, time out and fail as kube's do, with
// kube's messages, and the failure policy decides on a failed call.
func TestWebhooks_ValidatingAnswersAndFailuresAsKube(t *testing.T) {
	s := apiservertest.Start(t)
	srv, err := webhookserver.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	fail, ignore := admissionregistrationv1.Fail, admissionregistrationv1.Ignore
	one := int32(1)
	cases := []struct {
		name    string
		answer  webhookserver.Response
		policy  *admissionregistrationv1.FailurePolicyType
		down    bool
		cond    string
		objName string
		code    int32
		want    string // "" means allowed
	}{
		{name: "deny", answer: webhookserver.Response{Deny: true, Message: "no way"}, code: 400,
			want: `admission webhook "deny.example.com" denied the request: no way`},
		{name: "deny-code", answer: webhookserver.Response{Deny: true, Message: "go away", Code: 403}, code: 403,
			want: `admission webhook "deny-code.example.com" denied the request: go away`},
		{name: "deny-silent", answer: webhookserver.Response{Deny: true}, code: 400,
			want: `admission webhook "deny-silent.example.com" denied the request without explanation`},
		{name: "allow", answer: webhookserver.Response{Warnings: []string{"careful"}}},
		{name: "timeout-fail", answer: webhookserver.Response{Delay: 3 * time.Second}, policy: &fail, code: 500,
			want: `Internal error occurred: failed calling webhook "timeout-fail.example.com": failed to call webhook: Post "` + srv.URL + `/timeout-fail?timeout=1s": context deadline exceeded`},
		{name: "timeout-ignore", answer: webhookserver.Response{Delay: 3 * time.Second}, policy: &ignore},
		{name: "down-fail", down: true, policy: &fail, code: 500, want: `Internal error occurred: failed calling webhook "down-fail.example.com": failed to call webhook: Post "https://127.0.0.1:1/down-fail?timeout=1s": dial tcp 127.0.0.1:1: connect: connection refused`},
		{name: "down-ignore", down: true, policy: &ignore},
		{name: "status-500", answer: webhookserver.Response{HTTPStatus: 500, Message: "boom"}, code: 500,
			want: `Internal error occurred: failed calling webhook "status-500.example.com": failed to call webhook: an error on the server ("boom") has prevented the request from succeeding`},
		{name: "condition-skips", answer: webhookserver.Response{Deny: true}, cond: `object.metadata.name.startsWith("deny")`, objName: "keep"},
		{name: "condition-matches", answer: webhookserver.Response{Deny: true, Message: "matched"}, cond: `object.metadata.name.startsWith("deny")`, objName: "deny-me", code: 400,
			want: `admission webhook "condition-matches.example.com" denied the request: matched`},
	}
	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv.Always("/"+c.name, c.answer)
			cc, rules, sel := hookFor(srv, c.name)
			if c.down {
				u := "https://127.0.0.1:1/" + c.name
				cc.URL = &u
			}
			w := admissionregistrationv1.ValidatingWebhook{
				Name: c.name + ".example.com", ClientConfig: cc, Rules: rules, NamespaceSelector: sel,
				SideEffects: &none, AdmissionReviewVersions: []string{"v1"}, FailurePolicy: c.policy, TimeoutSeconds: &one,
			}
			if c.cond != "" {
				w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "by-name", Expression: c.cond}}
			}
			cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: c.name}, Webhooks: []admissionregistrationv1.ValidatingWebhook{w}}
			if _, err := s.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitCached(t, s, false, c.name)
			namespaceFor(t, s, c.name)
			name := c.objName
			if name == "" {
				name = "cm"
			}
			_, err := s.Client.CoreV1().ConfigMaps(c.name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			if c.want == "" {
				if err != nil {
					t.Fatalf("create: %v, want it allowed", err)
				}
				return
			}
			var se *apierrors.StatusError
			if !asStatus(err, &se) || se.ErrStatus.Message != c.want || se.ErrStatus.Code != c.code {
				t.Fatalf("create: %v (%#v)\nwant %d %s", err, se, c.code, c.want)
			}
		})
	}
	// The webhook saw the request as kube describes it.
	reviews := srv.Reviews("/allow")
	if len(reviews) != 1 {
		t.Fatalf("allow was sent %d reviews, want 1", len(reviews))
	}
	r := reviews[0].Request
	if reviews[0].APIVersion != "admission.k8s.io/v1" || r.Operation != admissionv1.Create || r.Namespace != "allow" || r.Name != "cm" ||
		r.Resource.Resource != "configmaps" || r.Kind.Kind != "ConfigMap" || r.UserInfo.Username != "cronplane-admin" ||
		r.DryRun == nil || *r.DryRun || !strings.Contains(string(r.Object.Raw), `"kind":"ConfigMap"`) || !strings.Contains(string(r.Options.Raw), `"kind":"CreateOptions"`) {
		t.Errorf("review: %+v", reviews[0])
	}
}

func asStatus(err error, se **apierrors.StatusError) bool {
	s, ok := err.(*apierrors.StatusError)
	if ok {
		*se = s
	}
	return ok
}

// Mutating webhooks patch the object in order, a patch the object's
// validation refuses fails the write as invalid, a webhook with
// reinvocationPolicy IfNeeded is called again after a later one changed
// the object, and webhooks never see webhook configurations.
func TestWebhooks_MutatingPatchesReinvokesAndSkipsConfigurations(t *testing.T) {
	s := apiservertest.Start(t)
	srv, err := webhookserver.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	ifNeeded := admissionregistrationv1.IfNeededReinvocationPolicy
	// a-first adds label a once; b-second adds label b; a-first then sees b.
	srv.Handle("/mutate", func(r *admissionv1.AdmissionRequest) webhookserver.Response {
		if strings.Contains(string(r.Object.Raw), `"a":"1"`) {
			return webhookserver.Response{}
		}
		return webhookserver.Response{Patch: `[{"op":"add","path":"/metadata/labels","value":{"a":"1"}}]`}
	})
	srv.Always("/second", webhookserver.Response{Patch: `[{"op":"add","path":"/metadata/labels/b","value":"1"}]`})
	srv.Always("/break", webhookserver.Response{Patch: `[{"op":"add","path":"/data","value":{"bad key!":"x"}}]`})
	mk := func(name, path string, reinvoke *admissionregistrationv1.ReinvocationPolicyType, ns string) {
		cc, rules, sel := hookFor(srv, ns)
		u := srv.URL + path
		cc.URL = &u
		cfg := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: name + ".example.com", ClientConfig: cc, Rules: rules, NamespaceSelector: sel, SideEffects: &none,
			AdmissionReviewVersions: []string{"v1beta1"}, ReinvocationPolicy: reinvoke,
		}}}
		if _, err := s.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitCached(t, s, true, name)
	}
	mk("a-first", "/mutate", &ifNeeded, "mutate")
	mk("b-second", "/second", nil, "mutate")
	mk("c-break", "/break", nil, "break")
	namespaceFor(t, s, "mutate")
	namespaceFor(t, s, "break")

	cm, err := s.Client.CoreV1().ConfigMaps("mutate").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Labels["a"] != "1" || cm.Labels["b"] != "1" {
		t.Errorf("labels %v, want a=1 and b=1", cm.Labels)
	}
	first := srv.Reviews("/mutate")
	if len(first) != 2 {
		t.Fatalf("a-first was called %d times, want 2 (reinvoked after b-second)", len(first))
	}
	if first[0].APIVersion != "admission.k8s.io/v1beta1" {
		t.Errorf("review version %s, want admission.k8s.io/v1beta1", first[0].APIVersion)
	}
	if len(srv.Reviews("/second")) != 1 {
		t.Errorf("b-second was called %d times, want 1", len(srv.Reviews("/second")))
	}

	_, err = s.Client.CoreV1().ConfigMaps("break").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `data[bad key!]`) {
		t.Errorf("patch breaking validation: %v, want 422 on data[bad key!]", err)
	}

	// A webhook for everything does not see webhook configurations.
	u := srv.URL + "/deny-all"
	srv.Always("/deny-all", webhookserver.Response{Deny: true})
	all := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "deny-all"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{{
		Name: "deny-all.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: srv.CABundle}, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"*"}, Rule: admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*/*"}}}},
	}}}
	if _, err := s.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, all, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCached(t, s, false, "deny-all")
	if err := s.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, "c-break", metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting a configuration under a deny-all webhook: %v", err)
	}
	if err := s.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, "deny-all", metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting the deny-all webhook: %v", err)
	}
}

// The webhooks' answers are in the audit log under kube's keys: which
// mutating webhook ran and what it patched, and the webhook's own
// annotations under its name.
func TestWebhooks_AnswersAreAudited(t *testing.T) {
	dir := t.TempDir()
	policy, logPath := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "audit.log")
	if err := os.WriteFile(policy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := apiservertest.Start(t, func(o *apiserver.Options) { o.Audit = audit.Options{PolicyFile: policy, LogPath: logPath} })
	srv, err := webhookserver.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.Always("/audited", webhookserver.Response{Patch: `[{"op":"add","path":"/data","value":{"k":"v"}}]`, AuditAnnotations: map[string]string{"verdict": "ok"}})
	ctx := context.Background()
	cc, rules, sel := hookFor(srv, "audited")
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "audited"}, Webhooks: []admissionregistrationv1.MutatingWebhook{{
		Name: "audited.example.com", ClientConfig: cc, Rules: rules, NamespaceSelector: sel, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
	}}}
	if _, err := s.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCached(t, s, true, "audited")
	namespaceFor(t, s, "audited")
	if _, err := s.Client.CoreV1().ConfigMaps("audited").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"audited.example.com/verdict":                       "ok",
		"mutation.webhook.admission.k8s.io/round_0_index_0": `{"configuration":"audited","webhook":"audited.example.com","mutated":true}`,
		"patch.webhook.admission.k8s.io/round_0_index_0":    `{"configuration":"audited","webhook":"audited.example.com","patch":[{"op":"add","path":"/data","value":{"k":"v"}}],"patchType":"JSONPatch"}`,
	}
	var got map[string]string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		data, _ := os.ReadFile(logPath)
		for _, line := range strings.Split(string(data), "\n") {
			var ev struct {
				Stage       string                    `json:"stage"`
				Verb        string                    `json:"verb"`
				ObjectRef   struct{ Resource string } `json:"objectRef"`
				Annotations map[string]string         `json:"annotations"`
			}
			if json.Unmarshal([]byte(line), &ev) == nil && ev.Stage == "ResponseComplete" && ev.Verb == "create" && ev.ObjectRef.Resource == "configmaps" {
				got = ev.Annotations
			}
		}
		if got != nil {
			break
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, got[k], v)
		}
	}
}

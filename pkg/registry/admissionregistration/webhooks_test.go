package admissionregistration

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func validHook() admissionregistrationv1.ValidatingWebhook {
	u := "https://127.0.0.1:8443/hook"
	none := admissionregistrationv1.SideEffectClassNone
	return admissionregistrationv1.ValidatingWebhook{
		Name: "hook.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &u},
		SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{"CREATE"},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
		}},
	}
}

// Bad webhooks are refused with kube's field paths and messages.
func TestValidateValidating_KubeMessages(t *testing.T) {
	some := admissionregistrationv1.SideEffectClassSome
	bad := admissionregistrationv1.FailurePolicyType("Sometimes")
	for _, c := range []struct {
		name   string
		change func(w *admissionregistrationv1.ValidatingWebhook)
		want   string
	}{
		{"valid", func(*admissionregistrationv1.ValidatingWebhook) {}, ""},
		{"short name", func(w *admissionregistrationv1.ValidatingWebhook) { w.Name = "hook" }, `webhooks[0].name: Invalid value: "hook": should be a domain with at least three segments separated by dots`},
		{"no side effects", func(w *admissionregistrationv1.ValidatingWebhook) { w.SideEffects = nil }, `webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun`},
		{"side effects Some", func(w *admissionregistrationv1.ValidatingWebhook) { w.SideEffects = &some }, `webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun"`},
		{"no review versions", func(w *admissionregistrationv1.ValidatingWebhook) { w.AdmissionReviewVersions = nil }, `webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1`},
		{"unknown review version", func(w *admissionregistrationv1.ValidatingWebhook) { w.AdmissionReviewVersions = []string{"v2"} }, `webhooks[0].admissionReviewVersions: Invalid value: []string{"v2"}: must include at least one of v1, v1beta1`},
		{"failure policy", func(w *admissionregistrationv1.ValidatingWebhook) { w.FailurePolicy = &bad }, `webhooks[0].failurePolicy: Unsupported value: "Sometimes": supported values: "Fail", "Ignore"`},
		{"timeout", func(w *admissionregistrationv1.ValidatingWebhook) { t := int32(31); w.TimeoutSeconds = &t }, `webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds`},
		{"no client", func(w *admissionregistrationv1.ValidatingWebhook) { w.ClientConfig.URL = nil }, `webhooks[0].clientConfig: Required value: exactly one of url or service is required`},
		{"http url", func(w *admissionregistrationv1.ValidatingWebhook) { u := "http://x/y"; w.ClientConfig.URL = &u }, `webhooks[0].clientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]`},
		{"service path", func(w *admissionregistrationv1.ValidatingWebhook) {
			p := "hook"
			w.ClientConfig = admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "svc", Path: &p}}
		}, `webhooks[0].clientConfig.service.path: Invalid value: "hook": must start with a '/'`},
		{"no operations", func(w *admissionregistrationv1.ValidatingWebhook) { w.Rules[0].Operations = nil }, `webhooks[0].rules[0].operations: Required value`},
		{"star and more", func(w *admissionregistrationv1.ValidatingWebhook) { w.Rules[0].Resources = []string{"*", "pods"} }, `webhooks[0].rules[0].resources: Invalid value: []string{"*", "pods"}: if '*' is present, must not specify other resources without subresources`},
		{"match condition", func(w *admissionregistrationv1.ValidatingWebhook) {
			w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "c", Expression: "object.metadata.name == "}}
		}, "webhooks[0].matchConditions[0].expression: Invalid value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := validHook()
			c.change(&w)
			cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{w}}
			DefaultValidatingWebhooks(cfg)
			errs := validatingStrategy{}.Validate(cfg)
			if c.want == "" {
				if len(errs) > 0 {
					t.Fatalf("unexpected: %v", errs)
				}
				return
			}
			if len(errs) == 0 || len(errs[0].Error()) < len(c.want) || errs[0].Error()[:len(c.want)] != c.want {
				t.Fatalf("got %v\nwant %s", errs, c.want)
			}
		})
	}
}

// Names are unique across a configuration's webhooks; updates keep
// accepting what kube stored under older rules (sideEffects Some).
func TestValidateMutating_DuplicatesAndOldSideEffects(t *testing.T) {
	w := validHook()
	m := admissionregistrationv1.MutatingWebhook{Name: w.Name, ClientConfig: w.ClientConfig, SideEffects: w.SideEffects, AdmissionReviewVersions: w.AdmissionReviewVersions, Rules: w.Rules}
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Webhooks: []admissionregistrationv1.MutatingWebhook{m, m}}
	DefaultMutatingWebhooks(cfg)
	errs := mutatingStrategy{}.Validate(cfg)
	if len(errs) != 1 || errs[0].Error() != `webhooks[1].name: Duplicate value: "hook.example.com"` {
		t.Fatalf("got %v", errs)
	}
	if *cfg.Webhooks[0].ReinvocationPolicy != admissionregistrationv1.NeverReinvocationPolicy || *cfg.Webhooks[0].TimeoutSeconds != 10 ||
		*cfg.Webhooks[0].FailurePolicy != admissionregistrationv1.Fail || *cfg.Webhooks[0].MatchPolicy != admissionregistrationv1.Equivalent || *cfg.Webhooks[0].Rules[0].Scope != "*" {
		t.Errorf("defaults: %+v", cfg.Webhooks[0])
	}
	some := admissionregistrationv1.SideEffectClassSome
	old := cfg.DeepCopy()
	old.Webhooks = old.Webhooks[:1]
	old.Webhooks[0].SideEffects = &some
	upd := old.DeepCopy()
	if errs := (mutatingStrategy{}).ValidateUpdate(upd, old); len(errs) != 0 {
		t.Errorf("update keeping sideEffects Some: %v", errs)
	}
}

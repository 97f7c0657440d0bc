package webhook

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/admission"
	"github.com/cronplane/cronplane/pkg/metrics"
	"github.com/cronplane/cronplane/test/webhookserver"
)

type fakeSource struct {
	mutating   []*admissionregistrationv1.MutatingWebhookConfiguration
	validating []*admissionregistrationv1.ValidatingWebhookConfiguration
}

func (f fakeSource) MutatingWebhookConfigurations(context.Context) ([]*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	return f.mutating, nil
}

func (f fakeSource) ValidatingWebhookConfigurations(context.Context) ([]*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	return f.validating, nil
}

type fakeNamespaces map[string]map[string]string

func (f fakeNamespaces) GetNamespace(_ context.Context, name string, _ bool) (*corev1.Namespace, error) {
	l, ok := f[name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, name)
	}
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}, nil
}

var (
	coreEvents   = schema.GroupVersionResource{Version: "v1", Resource: "events"}
	eventsEvents = eventsv1.SchemeGroupVersion.WithResource("events")
	configMaps   = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// fakeResources knows that core and events.k8s.io events are the same
// objects; the test converts nothing but the kind.
type fakeResources struct{}

func (fakeResources) Equivalents(gvr schema.GroupVersionResource) []Equivalent {
	if gvr != coreEvents {
		return nil
	}
	same := func(o runtime.Object) (runtime.Object, error) { return o, nil }
	return []Equivalent{{Resource: eventsEvents, Kind: eventsv1.SchemeGroupVersion.WithKind("Event"), To: same, From: same}}
}

func (fakeResources) Default(schema.GroupVersionResource, runtime.Object) {}

func startServer(t *testing.T) *webhookserver.Server {
	t.Helper()
	srv, err := webhookserver.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

func validatingWith(srv *webhookserver.Server, w admissionregistrationv1.ValidatingWebhook) *Validating {
	u := srv.URL + "/hook"
	w.Name = "hook.example.com"
	w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: srv.CABundle}
	if w.AdmissionReviewVersions == nil {
		w.AdmissionReviewVersions = []string{"v1"}
	}
	if w.Rules == nil {
		w.Rules = []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{"*"},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
		}}
	}
	src := fakeSource{validating: []*admissionregistrationv1.ValidatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{w}}}}
	_, v := New(Config{Source: src, Namespaces: fakeNamespaces{"labelled": {"team": "a"}, "plain": nil}, Resources: fakeResources{}, Metrics: metrics.NewRegistry()})
	return v
}

func configMapWrite(ns string, labels map[string]string, dryRun bool) *admission.Attributes {
	return &admission.Attributes{
		Operation: admission.Create, Resource: configMaps, Kind: corev1.SchemeGroupVersion.WithKind("ConfigMap"),
		Namespace: ns, Name: "cm", DryRun: dryRun, Options: &metav1.CreateOptions{},
		Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: ns, Labels: labels}},
	}
}

// A dry run that would call a webhook with side effects is refused with
// kube's error; webhooks without side effects are called.
func TestValidating_DryRunRefusedForWebhooksWithSideEffects(t *testing.T) {
	srv := startServer(t)
	srv.Always("/hook", webhookserver.Response{})
	for _, c := range []struct {
		sideEffects admissionregistrationv1.SideEffectClass
		refused     bool
	}{{"None", false}, {"NoneOnDryRun", false}, {"Some", true}, {"Unknown", true}} {
		t.Run(string(c.sideEffects), func(t *testing.T) {
			se := c.sideEffects
			v := validatingWith(srv, admissionregistrationv1.ValidatingWebhook{SideEffects: &se})
			err := v.Validate(context.Background(), configMapWrite("plain", nil, true))
			if !c.refused {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !apierrors.IsBadRequest(err) || err.Error() != `admission webhook "hook.example.com" does not support dry run` {
				t.Fatalf("got %v, want kube's dry-run refusal", err)
			}
		})
	}
}

// The namespace selector reads the namespace's labels, the object
// selector the object's; a webhook that does not match is not called.
func TestValidating_SelectorsChooseWhatIsSent(t *testing.T) {
	srv := startServer(t)
	srv.Always("/hook", webhookserver.Response{Deny: true, Message: "called"})
	none := admissionregistrationv1.SideEffectClassNone
	team := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	for _, c := range []struct {
		name       string
		nsSel      *metav1.LabelSelector
		objSel     *metav1.LabelSelector
		ns         string
		objLabels  map[string]string
		wantCalled bool
	}{
		{"no selectors", nil, nil, "plain", nil, true},
		{"namespace matches", team, nil, "labelled", nil, true},
		{"namespace does not match", team, nil, "plain", nil, false},
		{"object matches", nil, team, "plain", map[string]string{"team": "a"}, true},
		{"object does not match", nil, team, "plain", map[string]string{"team": "b"}, false},
		{"expression selector", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpDoesNotExist}}}, nil, "plain", nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := validatingWith(srv, admissionregistrationv1.ValidatingWebhook{SideEffects: &none, NamespaceSelector: c.nsSel, ObjectSelector: c.objSel})
			err := v.Validate(context.Background(), configMapWrite(c.ns, c.objLabels, false))
			if called := err != nil; called != c.wantCalled {
				t.Fatalf("called=%v (%v), want %v", called, err, c.wantCalled)
			}
		})
	}
}

// Rules match operations, groups, versions, resources with their
// subresources and wildcards, and scope.
func TestRuleMatches_OperationsResourcesSubresourcesScope(t *testing.T) {
	rule := func(ops []admissionregistrationv1.OperationType, res []string, scope admissionregistrationv1.ScopeType) admissionregistrationv1.RuleWithOperations {
		return admissionregistrationv1.RuleWithOperations{Operations: ops, Rule: admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: res, Scope: &scope}}
	}
	deploy := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	create := []admissionregistrationv1.OperationType{"CREATE"}
	all := []admissionregistrationv1.OperationType{"*"}
	for _, c := range []struct {
		name string
		rule admissionregistrationv1.RuleWithOperations
		op   admission.Operation
		gvr  schema.GroupVersionResource
		sub  string
		ns   string
		want bool
	}{
		{"exact", rule(create, []string{"deployments"}, "*"), admission.Create, deploy, "", "ns", true},
		{"other operation", rule(create, []string{"deployments"}, "*"), admission.Update, deploy, "", "ns", false},
		{"any operation", rule(all, []string{"deployments"}, "*"), admission.Delete, deploy, "", "ns", true},
		{"resource without subresource", rule(all, []string{"deployments"}, "*"), admission.Update, deploy, "status", "ns", false},
		{"subresource", rule(all, []string{"deployments/status"}, "*"), admission.Update, deploy, "status", "ns", true},
		{"any subresource", rule(all, []string{"deployments/*"}, "*"), admission.Update, deploy, "scale", "ns", true},
		{"any resource's subresource", rule(all, []string{"*/scale"}, "*"), admission.Update, deploy, "scale", "ns", true},
		{"star is no subresource", rule(all, []string{"*"}, "*"), admission.Update, deploy, "scale", "ns", false},
		{"star star", rule(all, []string{"*/*"}, "*"), admission.Update, deploy, "scale", "ns", true},
		{"other group", rule(all, []string{"*"}, "*"), admission.Create, configMaps, "", "ns", false},
		{"cluster scope refuses namespaced", rule(all, []string{"*"}, "Cluster"), admission.Create, deploy, "", "ns", false},
		{"namespaced scope", rule(all, []string{"*"}, "Namespaced"), admission.Create, deploy, "", "ns", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := ruleMatches(c.rule, c.op, c.gvr, c.sub, c.ns); got != c.want {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

// Under matchPolicy Equivalent a webhook for events.k8s.io events sees
// core events, told the resource it registered for and the one asked;
// under Exact it does not.
func TestValidating_EquivalentMatchPolicySeesOtherVersion(t *testing.T) {
	srv := startServer(t)
	srv.Always("/hook", webhookserver.Response{})
	none := admissionregistrationv1.SideEffectClassNone
	for _, policy := range []admissionregistrationv1.MatchPolicyType{admissionregistrationv1.Equivalent, admissionregistrationv1.Exact} {
		t.Run(string(policy), func(t *testing.T) {
			before := len(srv.Reviews("/hook"))
			p := policy
			v := validatingWith(srv, admissionregistrationv1.ValidatingWebhook{SideEffects: &none, MatchPolicy: &p, Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{"CREATE"},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"events.k8s.io"}, APIVersions: []string{"v1"}, Resources: []string{"events"}},
			}}})
			a := &admission.Attributes{Operation: admission.Create, Resource: coreEvents, Kind: corev1.SchemeGroupVersion.WithKind("Event"), Namespace: "plain", Name: "e",
				Object: &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "plain"}}}
			if err := v.Validate(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			reviews := srv.Reviews("/hook")[before:]
			if policy == admissionregistrationv1.Exact {
				if len(reviews) != 0 {
					t.Fatalf("Exact: called %d times", len(reviews))
				}
				return
			}
			if len(reviews) != 1 {
				t.Fatalf("Equivalent: called %d times, want 1", len(reviews))
			}
			r := reviews[0].Request
			if r.Resource.Group != "events.k8s.io" || r.Kind.Group != "events.k8s.io" || r.RequestResource.Group != "" || r.RequestKind.Kind != "Event" {
				t.Errorf("review resource %v kind %v request resource %v", r.Resource, r.Kind, r.RequestResource)
			}
		})
	}
}

// An answer the apiserver cannot use is a call error whose message says
// why, and a v1beta1 webhook is sent a v1beta1 review.
func TestValidating_BadAnswersAndReviewVersions(t *testing.T) {
	srv := startServer(t)
	none := admissionregistrationv1.SideEffectClassNone
	srv.Always("/hook", webhookserver.Response{})
	v := validatingWith(srv, admissionregistrationv1.ValidatingWebhook{SideEffects: &none, AdmissionReviewVersions: []string{"v2", "v1beta1"}})
	if err := v.Validate(context.Background(), configMapWrite("plain", nil, false)); err != nil {
		t.Fatal(err)
	}
	if r := srv.Reviews("/hook"); len(r) != 1 || r[0].APIVersion != "admission.k8s.io/v1beta1" {
		t.Fatalf("reviews %+v, want one v1beta1", r)
	}
	v = validatingWith(srv, admissionregistrationv1.ValidatingWebhook{SideEffects: &none, AdmissionReviewVersions: []string{"v2"}})
	err := v.Validate(context.Background(), configMapWrite("plain", nil, false))
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), `failed calling webhook "hook.example.com": webhook does not accept known AdmissionReview versions`) {
		t.Fatalf("got %v", err)
	}
}

type fakeServices map[string]string

func (f fakeServices) ResolveService(_ context.Context, namespace, name string, port int32) (string, error) {
	addr, ok := f[namespace+"/"+name]
	if !ok {
		return "", apierrors.NewNotFound(schema.GroupResource{Resource: "services"}, name)
	}
	return addr, nil
}

// A webhook named by Service is called at https://<name>.<namespace>.svc
// (its certificate must name that host), dialled where the resolver
// says; a Service that cannot be resolved is a call error.
func TestValidating_ServiceClientConfigIsResolved(t *testing.T) {
	srv, err := webhookserver.Start(t.TempDir(), "hooks.infra.svc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	srv.Always("/check", webhookserver.Response{Deny: true, Message: "reached"})
	none := admissionregistrationv1.SideEffectClassNone
	path, port := "/check", int32(8443)
	for _, c := range []struct {
		service string
		want    string
	}{
		{"hooks", `admission webhook "hook.example.com" denied the request: reached`},
		{"missing", `Internal error occurred: failed calling webhook "hook.example.com": could not get REST client: services "missing" not found`},
	} {
		t.Run(c.service, func(t *testing.T) {
			w := admissionregistrationv1.ValidatingWebhook{Name: "hook.example.com", SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
				ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: srv.CABundle, Service: &admissionregistrationv1.ServiceReference{Namespace: "infra", Name: c.service, Path: &path, Port: &port}},
				Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"*"},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}}
			src := fakeSource{validating: []*admissionregistrationv1.ValidatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{w}}}}
			_, v := New(Config{Source: src, Namespaces: fakeNamespaces{"plain": nil}, Services: fakeServices{"infra/hooks": strings.TrimPrefix(srv.URL, "https://")}, Resources: fakeResources{}, Metrics: metrics.NewRegistry()})
			err := v.Validate(context.Background(), configMapWrite("plain", nil, false))
			if err == nil || err.Error() != c.want {
				t.Fatalf("got %v\nwant %s", err, c.want)
			}
		})
	}
}

// switchingSource returns whichever configurations it holds now.
type switchingSource struct {
	validating *[]*admissionregistrationv1.ValidatingWebhookConfiguration
}

func (s switchingSource) MutatingWebhookConfigurations(context.Context) ([]*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	return nil, nil
}

func (s switchingSource) ValidatingWebhookConfigurations(context.Context) ([]*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	return *s.validating, nil
}

// The hooks are built once for a set of configurations and rebuilt when
// a configuration is replaced, as an update replaces a stored object.
func TestValidating_RebuildsHooksOnlyWhenConfigurationsChange(t *testing.T) {
	srv := startServer(t)
	srv.Always("/allow", webhookserver.Response{})
	srv.Always("/deny", webhookserver.Response{Deny: true, Message: "no"})
	config := func(path string) *admissionregistrationv1.ValidatingWebhookConfiguration {
		u, none := srv.URL+path, admissionregistrationv1.SideEffectClassNone
		return &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "hook.example.com", SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: srv.CABundle},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{"*"},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "always", Expression: "true"}},
		}}}
	}
	current := []*admissionregistrationv1.ValidatingWebhookConfiguration{config("/allow")}
	_, v := New(Config{Source: switchingSource{&current}, Namespaces: fakeNamespaces{"plain": nil}, Resources: fakeResources{}, Metrics: metrics.NewRegistry()})
	ctx := context.Background()
	var first []hook
	for i := 0; i < 3; i++ {
		if err := v.Validate(ctx, configMapWrite("plain", nil, false)); err != nil {
			t.Fatal(err)
		}
		hooks, err := v.validatingHooks(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = hooks
		} else if &hooks[0] != &first[0] {
			t.Fatalf("write %d: hooks rebuilt for the same configurations", i)
		}
	}
	current = []*admissionregistrationv1.ValidatingWebhookConfiguration{config("/deny")}
	if err := v.Validate(ctx, configMapWrite("plain", nil, false)); err == nil || !strings.Contains(err.Error(), "denied the request: no") {
		t.Fatalf("after the configuration changed: got %v, want the new webhook's refusal", err)
	}
	if len(srv.Reviews("/allow")) != 3 || len(srv.Reviews("/deny")) != 1 {
		t.Fatalf("reviews: %d to /allow, %d to /deny; want 3 and 1", len(srv.Reviews("/allow")), len(srv.Reviews("/deny")))
	}
}

// As kube v1.29's, the apiserver calls webhooks over HTTP/1.1 (even a
// server that offers HTTP/2), with the URL's query and kube's timeout
// parameter.
func TestValidating_CallsOverHTTP1WithTimeoutParameter(t *testing.T) {
	srv := startServer(t)
	srv.Always("/hook", webhookserver.Response{})
	none, timeout := admissionregistrationv1.SideEffectClassNone, int32(7)
	u := srv.URL + "/hook?team=a"
	w := admissionregistrationv1.ValidatingWebhook{Name: "hook.example.com", SideEffects: &none, TimeoutSeconds: &timeout, AdmissionReviewVersions: []string{"v1"},
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: srv.CABundle},
		Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"*"},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}}
	src := fakeSource{validating: []*admissionregistrationv1.ValidatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{w}}}}
	_, v := New(Config{Source: src, Namespaces: fakeNamespaces{"plain": nil}, Resources: fakeResources{}, Metrics: metrics.NewRegistry()})
	if err := v.Validate(context.Background(), configMapWrite("plain", nil, false)); err != nil {
		t.Fatal(err)
	}
	r := srv.Reviews("/hook")
	if len(r) != 1 {
		t.Fatalf("%d reviews, want 1", len(r))
	}
	if r[0].Proto != "HTTP/1.1" || r[0].Query.Get("timeout") != "7s" || r[0].Query.Get("team") != "a" {
		t.Fatalf("sent over %s with query %v; want HTTP/1.1, timeout=7s and team=a", r[0].Proto, r[0].Query)
	}
}

// The review's body is the JSON encoding/json writes of the
// AdmissionReview, whichever objects the request has.
func TestReviewBody_IsTheReviewEncodingJSONWrites(t *testing.T) {
	cm := func(data string) []byte {
		b, err := json.Marshal(&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "cm", Labels: map[string]string{"a": "<&>"}}, Data: map[string]string{"k": data}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	dryRun := true
	base := admissionv1.AdmissionRequest{UID: "u-1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Name: "cm", Namespace: "ns", DryRun: &dryRun,
		UserInfo: authenticationv1.UserInfo{Username: "alice", Groups: []string{"g"}}}
	for _, c := range []struct {
		name                string
		object, old, option []byte
	}{
		{"create", cm("new"), nil, []byte(`{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1","fieldManager":"m"}`)},
		{"update", cm("new"), cm("old"), []byte(`{"kind":"UpdateOptions","apiVersion":"meta.k8s.io/v1"}`)},
		{"delete", nil, cm("old"), nil},
		{"connect", nil, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := base
			req.Object.Raw, req.OldObject.Raw, req.Options.Raw = c.object, c.old, c.option
			for _, version := range []string{"v1", "v1beta1"} {
				got, err := reviewBody(version, &req)
				if err != nil {
					t.Fatal(err)
				}
				want, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/" + version, Kind: "AdmissionReview"}, Request: &req})
				if err != nil {
					t.Fatal(err)
				}
				var gotV, wantV interface{}
				if err := json.Unmarshal(got, &gotV); err != nil {
					t.Fatalf("%s: %v", got, err)
				}
				if err := json.Unmarshal(want, &wantV); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(gotV, wantV) {
					t.Fatalf("%s\nwant the same as\n%s", got, want)
				}
			}
		})
	}
}

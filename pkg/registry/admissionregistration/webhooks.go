package admissionregistration

import (
	"fmt"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/registry/clientconfig"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// WebhookResources registers validatingwebhookconfigurations and
// mutatingwebhookconfigurations (v1, cluster-scoped).
func WebhookResources() []*generic.Resource {
	vgvk := admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingWebhookConfiguration")
	vnew := func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfiguration{} }
	mgvk := admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingWebhookConfiguration")
	mnew := func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfiguration{} }
	return []*generic.Resource{{
		Resource: rest.Resource{
			GroupVersionKind: vgvk,
			Plural:           "validatingwebhookconfigurations",
			Singular:         "validatingwebhookconfiguration",
			Categories:       []string{"api-extensions"},
			New:              vnew,
			NewList:          func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfigurationList{} },
			Default: func(obj runtime.Object) {
				DefaultValidatingWebhooks(obj.(*admissionregistrationv1.ValidatingWebhookConfiguration))
			},
			Table: webhooksTable(func(obj runtime.Object) (metav1.ObjectMeta, int) {
				c := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
				return c.ObjectMeta, len(c.Webhooks)
			}),
		},
		Codec:    codec.Protobuf(vgvk, vnew),
		Strategy: validatingStrategy{},
	}, {
		Resource: rest.Resource{
			GroupVersionKind: mgvk,
			Plural:           "mutatingwebhookconfigurations",
			Singular:         "mutatingwebhookconfiguration",
			Categories:       []string{"api-extensions"},
			New:              mnew,
			NewList:          func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfigurationList{} },
			Default: func(obj runtime.Object) {
				DefaultMutatingWebhooks(obj.(*admissionregistrationv1.MutatingWebhookConfiguration))
			},
			Table: webhooksTable(func(obj runtime.Object) (metav1.ObjectMeta, int) {
				c := obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
				return c.ObjectMeta, len(c.Webhooks)
			}),
		},
		Codec:    codec.Protobuf(mgvk, mnew),
		Strategy: mutatingStrategy{},
	}}
}

// webhooksTable has kubectl's columns: NAME WEBHOOKS AGE.
func webhooksTable(of func(runtime.Object) (metav1.ObjectMeta, int)) *rest.TableSpec {
	return &rest.TableSpec{
		Columns: []metav1.TableColumnDefinition{
			rest.NameColumn,
			{Name: "Webhooks", Type: "integer", Description: "Webhooks indicates the number of webhooks in the configuration."},
			rest.AgeColumn,
		},
		Cells: func(obj runtime.Object, now time.Time) []interface{} {
			m, n := of(obj)
			return []interface{}{m.Name, int64(n), rest.Age(m.CreationTimestamp, now)}
		},
	}
}

// DefaultValidatingWebhooks applies kube's v1 defaults.
func DefaultValidatingWebhooks(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		defaultCommon(&w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector, &w.TimeoutSeconds, w.Rules, &w.ClientConfig)
	}
}

// DefaultMutatingWebhooks applies kube's v1 defaults.
func DefaultMutatingWebhooks(c *admissionregistrationv1.MutatingWebhookConfiguration) {
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		defaultCommon(&w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector, &w.TimeoutSeconds, w.Rules, &w.ClientConfig)
		if w.ReinvocationPolicy == nil {
			p := admissionregistrationv1.NeverReinvocationPolicy
			w.ReinvocationPolicy = &p
		}
	}
}

func defaultCommon(fp **admissionregistrationv1.FailurePolicyType, mp **admissionregistrationv1.MatchPolicyType, ns, obj **metav1.LabelSelector, timeout **int32, rules []admissionregistrationv1.RuleWithOperations, cc *admissionregistrationv1.WebhookClientConfig) {
	if *fp == nil {
		p := admissionregistrationv1.Fail
		*fp = &p
	}
	if *mp == nil {
		p := admissionregistrationv1.Equivalent
		*mp = &p
	}
	if *ns == nil {
		*ns = &metav1.LabelSelector{}
	}
	if *obj == nil {
		*obj = &metav1.LabelSelector{}
	}
	if *timeout == nil {
		t := int32(10)
		*timeout = &t
	}
	for i := range rules {
		if rules[i].Scope == nil {
			s := admissionregistrationv1.AllScopes
			rules[i].Scope = &s
		}
	}
	if s := cc.Service; s != nil && s.Port == nil {
		p := int32(443)
		s.Port = &p
	}
}

type validatingStrategy struct{ generic.DefaultStrategy }

func (validatingStrategy) PrepareForCreate(obj runtime.Object) {
	obj.(*admissionregistrationv1.ValidatingWebhookConfiguration).Generation = 1
}

func (validatingStrategy) PrepareForUpdate(obj, old runtime.Object) {
	n, o := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration), old.(*admissionregistrationv1.ValidatingWebhookConfiguration)
	n.Generation = o.Generation
	if !equality.Semantic.DeepEqual(n.Webhooks, o.Webhooks) {
		n.Generation++
	}
}

func (validatingStrategy) Validate(obj runtime.Object) field.ErrorList {
	return validateValidating(obj.(*admissionregistrationv1.ValidatingWebhookConfiguration), nil)
}

func (validatingStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	return validateValidating(obj.(*admissionregistrationv1.ValidatingWebhookConfiguration), old.(*admissionregistrationv1.ValidatingWebhookConfiguration))
}

type mutatingStrategy struct{ generic.DefaultStrategy }

func (mutatingStrategy) PrepareForCreate(obj runtime.Object) {
	obj.(*admissionregistrationv1.MutatingWebhookConfiguration).Generation = 1
}

func (mutatingStrategy) PrepareForUpdate(obj, old runtime.Object) {
	n, o := obj.(*admissionregistrationv1.MutatingWebhookConfiguration), old.(*admissionregistrationv1.MutatingWebhookConfiguration)
	n.Generation = o.Generation
	if !equality.Semantic.DeepEqual(n.Webhooks, o.Webhooks) {
		n.Generation++
	}
}

func (mutatingStrategy) Validate(obj runtime.Object) field.ErrorList {
	return validateMutating(obj.(*admissionregistrationv1.MutatingWebhookConfiguration), nil)
}

func (mutatingStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	return validateMutating(obj.(*admissionregistrationv1.MutatingWebhookConfiguration), old.(*admissionregistrationv1.MutatingWebhookConfiguration))
}

// hook is what validation reads of a validating or a mutating webhook.
type hook struct {
	name                    string
	rules                   []admissionregistrationv1.RuleWithOperations
	failurePolicy           *admissionregistrationv1.FailurePolicyType
	matchPolicy             *admissionregistrationv1.MatchPolicyType
	sideEffects             *admissionregistrationv1.SideEffectClass
	timeoutSeconds          *int32
	namespaceSelector       *metav1.LabelSelector
	objectSelector          *metav1.LabelSelector
	clientConfig            admissionregistrationv1.WebhookClientConfig
	admissionReviewVersions []string
	matchConditions         []admissionregistrationv1.MatchCondition
}

func validateValidating(c, old *admissionregistrationv1.ValidatingWebhookConfiguration) field.ErrorList {
	hooks := make([]hook, len(c.Webhooks))
	for i, w := range c.Webhooks {
		hooks[i] = hook{w.Name, w.Rules, w.FailurePolicy, w.MatchPolicy, w.SideEffects, w.TimeoutSeconds, w.NamespaceSelector, w.ObjectSelector, w.ClientConfig, w.AdmissionReviewVersions, w.MatchConditions}
	}
	var oldHooks []hook
	if old != nil {
		oldHooks = make([]hook, len(old.Webhooks))
		for i, w := range old.Webhooks {
			oldHooks[i] = hook{name: w.Name, admissionReviewVersions: w.AdmissionReviewVersions, sideEffects: w.SideEffects}
		}
	}
	return validateHooks(hooks, oldHooks, old != nil, nil)
}

func validateMutating(c, old *admissionregistrationv1.MutatingWebhookConfiguration) field.ErrorList {
	hooks := make([]hook, len(c.Webhooks))
	for i, w := range c.Webhooks {
		hooks[i] = hook{w.Name, w.Rules, w.FailurePolicy, w.MatchPolicy, w.SideEffects, w.TimeoutSeconds, w.NamespaceSelector, w.ObjectSelector, w.ClientConfig, w.AdmissionReviewVersions, w.MatchConditions}
	}
	var oldHooks []hook
	if old != nil {
		oldHooks = make([]hook, len(old.Webhooks))
		for i, w := range old.Webhooks {
			oldHooks[i] = hook{name: w.Name, admissionReviewVersions: w.AdmissionReviewVersions, sideEffects: w.SideEffects}
		}
	}
	return validateHooks(hooks, oldHooks, old != nil, func(i int, p *field.Path) field.ErrorList {
		if r := c.Webhooks[i].ReinvocationPolicy; r != nil && *r != admissionregistrationv1.NeverReinvocationPolicy && *r != admissionregistrationv1.IfNeededReinvocationPolicy {
			return field.ErrorList{field.NotSupported(p.Child("reinvocationPolicy"), *r, []string{string(admissionregistrationv1.IfNeededReinvocationPolicy), string(admissionregistrationv1.NeverReinvocationPolicy)})}
		}
		return nil
	})
}

var acceptedReviewVersions = []string{"v1", "v1beta1"}

// validateHooks checks the webhooks of a configuration as kube's v1
// validation does. On update, as kube, the stricter rules (a recognized
// review version, sideEffects None or NoneOnDryRun) apply only if every
// old webhook already met them, so that stored objects stay updatable.
func validateHooks(hooks, old []hook, update bool, extra func(int, *field.Path) field.ErrorList) field.ErrorList {
	var errs field.ErrorList
	requireVersion, requireNoSideEffects := true, true
	if update {
		for _, h := range old {
			if !hasAccepted(h.admissionReviewVersions) {
				requireVersion = false
			}
			if h.sideEffects == nil || !isNoSideEffects(*h.sideEffects) {
				requireNoSideEffects = false
			}
		}
	}
	seen := map[string]bool{}
	for i, h := range hooks {
		p := field.NewPath("webhooks").Index(i)
		errs = append(errs, validateHook(h, p, requireNoSideEffects)...)
		errs = append(errs, validateReviewVersions(h.admissionReviewVersions, requireVersion, p.Child("admissionReviewVersions"))...)
		if extra != nil {
			errs = append(errs, extra(i, p)...)
		}
		if seen[h.name] {
			errs = append(errs, field.Duplicate(p.Child("name"), h.name))
		}
		seen[h.name] = true
	}
	return errs
}

func hasAccepted(versions []string) bool {
	for _, v := range versions {
		if v == "v1" || v == "v1beta1" {
			return true
		}
	}
	return false
}

func isNoSideEffects(s admissionregistrationv1.SideEffectClass) bool {
	return s == admissionregistrationv1.SideEffectClassNone || s == admissionregistrationv1.SideEffectClassNoneOnDryRun
}

func validateHook(h hook, p *field.Path, requireNoSideEffects bool) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validation.IsFullyQualifiedName(p.Child("name"), h.name)...)
	for i := range h.rules {
		errs = append(errs, validateRule(&h.rules[i], p.Child("rules").Index(i))...)
	}
	if f := h.failurePolicy; f != nil && *f != admissionregistrationv1.Fail && *f != admissionregistrationv1.Ignore {
		errs = append(errs, field.NotSupported(p.Child("failurePolicy"), *f, []string{"Fail", "Ignore"}))
	}
	if m := h.matchPolicy; m != nil && *m != admissionregistrationv1.Equivalent && *m != admissionregistrationv1.Exact {
		errs = append(errs, field.NotSupported(p.Child("matchPolicy"), *m, []string{"Equivalent", "Exact"}))
	}
	allowed := []string{"None", "NoneOnDryRun", "Some", "Unknown"}
	if requireNoSideEffects {
		allowed = []string{"None", "NoneOnDryRun"}
	}
	switch s := h.sideEffects; {
	case s == nil:
		errs = append(errs, field.Required(p.Child("sideEffects"), "must specify one of "+strings.Join(allowed, ", ")))
	case !contains(allowed, string(*s)):
		errs = append(errs, field.NotSupported(p.Child("sideEffects"), *s, allowed))
	}
	if t := h.timeoutSeconds; t != nil && (*t < 1 || *t > 30) {
		errs = append(errs, field.Invalid(p.Child("timeoutSeconds"), *t, "the timeout value must be between 1 and 30 seconds"))
	}
	if s := h.namespaceSelector; s != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(s, metav1validation.LabelSelectorValidationOptions{}, p.Child("namespaceSelector"))...)
	}
	if s := h.objectSelector; s != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(s, metav1validation.LabelSelectorValidationOptions{}, p.Child("objectSelector"))...)
	}
	cc := h.clientConfig
	switch {
	case (cc.URL == nil) == (cc.Service == nil):
		errs = append(errs, field.Required(p.Child("clientConfig"), "exactly one of url or service is required"))
	case cc.URL != nil:
		errs = append(errs, clientconfig.ValidateURL(p.Child("clientConfig", "url"), *cc.URL)...)
	default:
		s := cc.Service
		port := int32(443)
		if s.Port != nil {
			port = *s.Port
		}
		errs = append(errs, clientconfig.ValidateService(p.Child("clientConfig", "service"), s.Namespace, s.Name, s.Path, port)...)
	}
	return append(errs, validateWebhookMatchConditions(h.matchConditions, p.Child("matchConditions"))...)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func validateReviewVersions(versions []string, requireAccepted bool, p *field.Path) field.ErrorList {
	if len(versions) == 0 {
		return field.ErrorList{field.Required(p, "must specify one of "+strings.Join(acceptedReviewVersions, ", "))}
	}
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, v := range versions {
		if seen[v] {
			errs = append(errs, field.Invalid(p.Index(i), v, "duplicate version"))
			continue
		}
		seen[v] = true
		for _, msg := range validation.IsDNS1035Label(v) {
			errs = append(errs, field.Invalid(p.Index(i), v, msg))
		}
	}
	if requireAccepted && !hasAccepted(versions) {
		errs = append(errs, field.Invalid(p, versions, "must include at least one of "+strings.Join(acceptedReviewVersions, ", ")))
	}
	return errs
}

func validateRule(r *admissionregistrationv1.RuleWithOperations, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	ops := make([]string, len(r.Operations))
	for i, op := range r.Operations {
		ops[i] = string(op)
	}
	if len(ops) == 0 {
		errs = append(errs, field.Required(p.Child("operations"), ""))
	}
	if len(ops) > 1 && contains(ops, "*") {
		internal := make([]OperationType, len(ops))
		for i, op := range ops {
			internal[i] = OperationType(op)
		}
		errs = append(errs, field.Invalid(p.Child("operations"), internal, "if '*' is present, must not specify other operations"))
	}
	for i, op := range ops {
		if !contains(supportedOperations, op) {
			errs = append(errs, field.NotSupported(p.Child("operations").Index(i), r.Operations[i], supportedOperations))
		}
	}
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), ""))
	}
	if len(r.APIGroups) > 1 && contains(r.APIGroups, "*") {
		errs = append(errs, field.Invalid(p.Child("apiGroups"), r.APIGroups, "if '*' is present, must not specify other API groups"))
	}
	if len(r.APIVersions) == 0 {
		errs = append(errs, field.Required(p.Child("apiVersions"), ""))
	}
	if len(r.APIVersions) > 1 && contains(r.APIVersions, "*") {
		errs = append(errs, field.Invalid(p.Child("apiVersions"), r.APIVersions, "if '*' is present, must not specify other API versions"))
	}
	for i, v := range r.APIVersions {
		if v == "" {
			errs = append(errs, field.Required(p.Child("apiVersions").Index(i), ""))
		}
	}
	errs = append(errs, validateResources(r.Resources, p.Child("resources"))...)
	if s := r.Scope; s != nil && *s != admissionregistrationv1.ClusterScope && *s != admissionregistrationv1.NamespacedScope && *s != admissionregistrationv1.AllScopes {
		errs = append(errs, field.NotSupported(p.Child("scope"), *s, []string{"*", "Cluster", "Namespaced"}))
	}
	return errs
}

func validateWebhookMatchConditions(conds []admissionregistrationv1.MatchCondition, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(conds) > 64 {
		errs = append(errs, field.TooMany(p, len(conds), 64))
	}
	seen := map[string]bool{}
	for i, c := range conds {
		cp := p.Index(i)
		if c.Name != "" {
			if seen[c.Name] {
				errs = append(errs, field.Duplicate(cp.Child("name"), c.Name))
			}
			seen[c.Name] = true
		}
		if strings.TrimSpace(c.Expression) == "" {
			errs = append(errs, field.Required(cp.Child("expression"), ""))
		} else if _, err := CompileMatchCondition(c.Expression); err != nil {
			errs = append(errs, field.Invalid(cp.Child("expression"), c.Expression, err.Error()))
		}
		if c.Name == "" {
			errs = append(errs, field.Required(cp.Child("name"), ""))
		} else {
			errs = append(errs, metav1validation.ValidateLabelName(c.Name, cp.Child("name"))...)
		}
	}
	return errs
}

// matchConditionEnv declares the variables a match condition reads, as
// kube gives them: object, oldObject and request (the AdmissionRequest),
// typed dyn. kube's optional authorizer variable is not offered.
var matchConditionEnv = func() *cel.Env {
	env, err := cel.NewEnv(
		cel.Variable("object", cel.DynType),
		cel.Variable("oldObject", cel.DynType),
		cel.Variable("request", cel.DynType),
	)
	if err != nil {
		panic(err)
	}
	return env
}()

// CompileMatchCondition compiles a match condition's expression, which
// must yield a bool; the error is kube's message for an invalid one.
func CompileMatchCondition(expr string) (cel.Program, error) {
	ast, iss := matchConditionEnv.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("compilation failed: %v", iss.Err())
	}
	if t := ast.OutputType(); t != cel.BoolType && t != cel.DynType {
		return nil, fmt.Errorf("must evaluate to bool")
	}
	return matchConditionEnv.Program(ast, cel.EvalOptions(cel.OptOptimize), cel.CostLimit(matchConditionCostLimit))
}

// matchConditionCostLimit is kube's per-expression runtime cost limit.
const matchConditionCostLimit = 1000000

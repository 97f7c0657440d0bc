package admissionregistration

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	v1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/api/admissionregistration/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/cel"
	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// TypeChecker reports, for a policy's status, the expressions that do
// not type-check against the resources it matches; nil leaves
// status.typeChecking unset.
type TypeChecker func(p *v1beta1.ValidatingAdmissionPolicy) *v1beta1.TypeChecking

// PolicyResources registers validatingadmissionpolicies (with /status)
// and validatingadmissionpolicybindings, admissionregistration.k8s.io
// v1beta1. A policy's status is written when its spec is: observed
// generation and the type checker's warnings, which kube's controller
// manager writes shortly after.
func PolicyResources(check TypeChecker) []*generic.Resource {
	policyGVK := v1beta1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicy")
	newPolicy := func() runtime.Object { return &v1beta1.ValidatingAdmissionPolicy{} }
	bindingGVK := v1beta1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicyBinding")
	newBinding := func() runtime.Object { return &v1beta1.ValidatingAdmissionPolicyBinding{} }
	return []*generic.Resource{{
		Resource: rest.Resource{
			GroupVersionKind: policyGVK,
			Plural:           "validatingadmissionpolicies",
			Singular:         "validatingadmissionpolicy",
			Categories:       []string{"api-extensions"},
			New:              newPolicy,
			NewList:          func() runtime.Object { return &v1beta1.ValidatingAdmissionPolicyList{} },
			Default:          func(obj runtime.Object) { defaultPolicy(obj.(*v1beta1.ValidatingAdmissionPolicy)) },
			Table: &rest.TableSpec{
				Columns: []metav1.TableColumnDefinition{
					rest.NameColumn,
					{Name: "Validations", Type: "integer", Description: "Validations indicates the number of validation rules defined in this configuration"},
					{Name: "ParamKind", Type: "string", Description: "ParamKind specifies the kind of resources used to parameterize this policy"},
					rest.AgeColumn,
				},
				Cells: func(obj runtime.Object, now time.Time) []interface{} {
					p := obj.(*v1beta1.ValidatingAdmissionPolicy)
					paramKind := "<unset>"
					if pk := p.Spec.ParamKind; pk != nil {
						paramKind = pk.APIVersion + "/" + pk.Kind
					}
					return []interface{}{p.Name, int64(len(p.Spec.Validations)), paramKind, rest.Age(p.CreationTimestamp, now)}
				},
			},
		},
		Codec:        codec.Protobuf(policyGVK, newPolicy),
		Strategy:     policyStrategy{check: check},
		Subresources: map[string]generic.Strategy{"status": generic.StatusStrategy{}},
	}, {
		Resource: rest.Resource{
			GroupVersionKind: bindingGVK,
			Plural:           "validatingadmissionpolicybindings",
			Singular:         "validatingadmissionpolicybinding",
			Categories:       []string{"api-extensions"},
			New:              newBinding,
			NewList:          func() runtime.Object { return &v1beta1.ValidatingAdmissionPolicyBindingList{} },
			Default: func(obj runtime.Object) {
				defaultMatchResources(obj.(*v1beta1.ValidatingAdmissionPolicyBinding).Spec.MatchResources)
			},
			Table: &rest.TableSpec{
				Columns: []metav1.TableColumnDefinition{
					rest.NameColumn,
					{Name: "PolicyName", Type: "string", Description: "PolicyName indicates the policy definition which the policy binding binds to."},
					{Name: "ParamRef", Type: "string", Description: "ParamRef indicates the param resource which sets the configration param"},
					rest.AgeColumn,
				},
				Cells: func(obj runtime.Object, now time.Time) []interface{} {
					b := obj.(*v1beta1.ValidatingAdmissionPolicyBinding)
					return []interface{}{b.Name, b.Spec.PolicyName, paramRefCell(b.Spec.ParamRef), rest.Age(b.CreationTimestamp, now)}
				},
			},
		},
		Codec:    codec.Protobuf(bindingGVK, newBinding),
		Strategy: bindingStrategy{},
	}}
}

func paramRefCell(pr *v1beta1.ParamRef) string {
	switch {
	case pr == nil:
		return "<unset>"
	case pr.Name != "" && pr.Namespace != "":
		return pr.Namespace + "/" + pr.Name
	case pr.Name != "":
		return pr.Name
	case pr.Selector != nil:
		if s, err := metav1.LabelSelectorAsSelector(pr.Selector); err == nil {
			return s.String()
		}
	}
	return "<unset>"
}

// --- defaults, as kube's v1beta1 defaulting ---

func defaultPolicy(p *v1beta1.ValidatingAdmissionPolicy) {
	if p.Spec.FailurePolicy == nil {
		fail := v1beta1.Fail
		p.Spec.FailurePolicy = &fail
	}
	defaultMatchResources(p.Spec.MatchConstraints)
}

func defaultMatchResources(m *v1beta1.MatchResources) {
	if m == nil {
		return
	}
	if m.MatchPolicy == nil {
		eq := v1beta1.Equivalent
		m.MatchPolicy = &eq
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	for _, rules := range [][]v1beta1.NamedRuleWithOperations{m.ResourceRules, m.ExcludeResourceRules} {
		for i := range rules {
			if rules[i].Scope == nil {
				all := v1.AllScopes
				rules[i].Scope = &all
			}
		}
	}
}

// --- strategies ---

type policyStrategy struct {
	generic.SpecStatusStrategy
	check TypeChecker
}

func (s policyStrategy) PrepareForCreate(obj runtime.Object) {
	s.SpecStatusStrategy.PrepareForCreate(obj)
	s.typeCheck(obj.(*v1beta1.ValidatingAdmissionPolicy))
}

func (s policyStrategy) PrepareForUpdate(obj, old runtime.Object) {
	s.SpecStatusStrategy.PrepareForUpdate(obj, old)
	p := obj.(*v1beta1.ValidatingAdmissionPolicy)
	if p.Generation != old.(*v1beta1.ValidatingAdmissionPolicy).Generation {
		s.typeCheck(p)
	}
}

func (s policyStrategy) typeCheck(p *v1beta1.ValidatingAdmissionPolicy) {
	if s.check == nil {
		return
	}
	p.Status = v1beta1.ValidatingAdmissionPolicyStatus{ObservedGeneration: p.Generation, TypeChecking: s.check(p)}
}

func (policyStrategy) Validate(obj runtime.Object) field.ErrorList {
	return ValidatePolicy(obj.(*v1beta1.ValidatingAdmissionPolicy))
}

func (policyStrategy) ValidateUpdate(obj, _ runtime.Object) field.ErrorList {
	return ValidatePolicy(obj.(*v1beta1.ValidatingAdmissionPolicy))
}

type bindingStrategy struct{ generic.DefaultStrategy }

func (bindingStrategy) Validate(obj runtime.Object) field.ErrorList {
	return validateBinding(obj.(*v1beta1.ValidatingAdmissionPolicyBinding))
}

func (bindingStrategy) ValidateUpdate(obj, _ runtime.Object) field.ErrorList {
	return validateBinding(obj.(*v1beta1.ValidatingAdmissionPolicyBinding))
}

// --- validation, in kube's order and words ---

// OperationType and ValidationAction print as kube's internal types do
// in the values of its messages
// ([]admissionregistration.OperationType{"*", "CREATE"}).
type (
	OperationType    string
	ValidationAction string
)

var (
	supportedFailurePolicies = []string{"Fail", "Ignore"}
	supportedMatchPolicies   = []string{"Equivalent", "Exact"}
	supportedOperations      = []string{"*", "CONNECT", "CREATE", "DELETE", "UPDATE"}
	supportedScopes          = []string{"*", "Cluster", "Namespaced"}
	supportedReasons         = []string{"Forbidden", "Invalid", "RequestEntityTooLarge"}
	supportedActions         = []string{"Audit", "Deny", "Warn"}
	supportedNotFoundActions = []string{"Deny", "Allow"}
	celIdentifier            = regexp.MustCompile(`^[_a-zA-Z][_a-zA-Z0-9]*$`)
	celReserved              = sets.New("true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function", "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while")
)

// ValidatePolicy checks a policy as kube does.
func ValidatePolicy(p *v1beta1.ValidatingAdmissionPolicy) field.ErrorList {
	spec := &p.Spec
	path := field.NewPath("spec")
	var errs field.ErrorList
	if spec.FailurePolicy == nil {
		errs = append(errs, field.Required(path.Child("failurePolicy"), ""))
	} else if !sets.New(supportedFailurePolicies...).Has(string(*spec.FailurePolicy)) {
		errs = append(errs, field.NotSupported(path.Child("failurePolicy"), *spec.FailurePolicy, supportedFailurePolicies))
	}
	if pk := spec.ParamKind; pk != nil {
		errs = append(errs, validateParamKind(pk, path.Child("paramKind"))...)
	}
	if spec.MatchConstraints == nil {
		errs = append(errs, field.Required(path.Child("matchConstraints"), ""))
	} else {
		errs = append(errs, validateMatchResources(spec.MatchConstraints, path.Child("matchConstraints"))...)
		if len(spec.MatchConstraints.ResourceRules) == 0 {
			errs = append(errs, field.Required(path.Child("matchConstraints", "resourceRules"), ""))
		}
	}
	if len(spec.Validations) == 0 && len(spec.AuditAnnotations) == 0 {
		errs = append(errs,
			field.Required(path.Child("validations"), "validations or auditAnnotations must contain at least one item"),
			field.Required(path.Child("auditAnnotations"), "validations or auditAnnotations must contain at least one item"))
	}
	// Variables first: the expressions after them see their types.
	comp := cel.NewPolicyCompiler(spec.ParamKind != nil)
	var varErrs field.ErrorList
	for i, v := range spec.Variables {
		varErrs = append(varErrs, validateVariable(comp, v, path.Child("variables").Index(i))...)
	}
	errs = append(errs, validateMatchConditions(comp, spec.MatchConditions, path.Child("matchConditions"))...)
	errs = append(errs, varErrs...)
	for i, v := range spec.Validations {
		errs = append(errs, validateValidation(comp, v, path.Child("validations").Index(i))...)
	}
	keys := sets.New[string]()
	for i, a := range spec.AuditAnnotations {
		at := path.Child("auditAnnotations").Index(i)
		errs = append(errs, validateAuditAnnotation(comp, p.Name, a, at)...)
		if a.Key != "" {
			if keys.Has(a.Key) {
				errs = append(errs, field.Duplicate(at.Child("key"), a.Key))
			}
			keys.Insert(a.Key)
		}
	}
	return errs
}

func validateParamKind(pk *v1beta1.ParamKind, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if pk.APIVersion == "" {
		errs = append(errs, field.Required(path.Child("apiVersion"), ""))
	} else if gv, err := schema.ParseGroupVersion(pk.APIVersion); err != nil {
		errs = append(errs, field.Invalid(path.Child("apiVersion"), pk.APIVersion, err.Error()))
	} else {
		if gv.Group != "" {
			for _, msg := range validation.IsDNS1123Subdomain(gv.Group) {
				errs = append(errs, field.Invalid(path.Child("apiVersion"), gv.Group, msg))
			}
		}
		for _, msg := range validation.IsDNS1035Label(gv.Version) {
			errs = append(errs, field.Invalid(path.Child("apiVersion"), gv.Version, msg))
		}
	}
	if pk.Kind == "" {
		errs = append(errs, field.Required(path.Child("kind"), ""))
	} else if msgs := validation.IsDNS1035Label(strings.ToLower(pk.Kind)); len(msgs) > 0 {
		errs = append(errs, field.Invalid(path.Child("kind"), pk.Kind, "may have mixed case, but should otherwise match: "+strings.Join(msgs, ",")))
	}
	return errs
}

func validateMatchResources(m *v1beta1.MatchResources, path *field.Path) field.ErrorList {
	if m == nil {
		return nil
	}
	var errs field.ErrorList
	if m.MatchPolicy == nil {
		errs = append(errs, field.Required(path.Child("matchPolicy"), ""))
	} else if !sets.New(supportedMatchPolicies...).Has(string(*m.MatchPolicy)) {
		errs = append(errs, field.NotSupported(path.Child("matchPolicy"), *m.MatchPolicy, supportedMatchPolicies))
	}
	for _, sel := range []struct {
		name string
		s    *metav1.LabelSelector
	}{{"namespaceSelector", m.NamespaceSelector}, {"objectSelector", m.ObjectSelector}} {
		if sel.s == nil {
			errs = append(errs, field.Required(path.Child(sel.name), ""))
			continue
		}
		errs = append(errs, metav1validation.ValidateLabelSelector(sel.s, metav1validation.LabelSelectorValidationOptions{}, path.Child(sel.name))...)
	}
	for i, r := range m.ResourceRules {
		errs = append(errs, validateNamedRule(r, path.Child("resourceRules").Index(i))...)
	}
	for i, r := range m.ExcludeResourceRules {
		errs = append(errs, validateNamedRule(r, path.Child("excludeResourceRules").Index(i))...)
	}
	return errs
}

func validateNamedRule(r v1beta1.NamedRuleWithOperations, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, n := range r.ResourceNames {
		for _, msg := range validation.IsDNS1123Subdomain(n) {
			errs = append(errs, field.Invalid(path.Child("resourceNames").Index(i), n, msg))
		}
		if names.Has(n) {
			errs = append(errs, field.Duplicate(path.Child("resourceNames").Index(i), n))
		}
		names.Insert(n)
	}
	ops := make([]OperationType, len(r.Operations))
	for i, op := range r.Operations {
		ops[i] = OperationType(op)
	}
	if len(ops) == 0 {
		errs = append(errs, field.Required(path.Child("operations"), ""))
	}
	if len(ops) > 1 && hasWildcard(r.Operations) {
		errs = append(errs, field.Invalid(path.Child("operations"), ops, "if '*' is present, must not specify other operations"))
	}
	for i, op := range ops {
		if !sets.New(supportedOperations...).Has(string(op)) {
			errs = append(errs, field.NotSupported(path.Child("operations").Index(i), op, supportedOperations))
		}
	}
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(path.Child("apiGroups"), ""))
	}
	if len(r.APIGroups) > 1 && hasWildcard(r.APIGroups) {
		errs = append(errs, field.Invalid(path.Child("apiGroups"), r.APIGroups, "if '*' is present, must not specify other API groups"))
	}
	if len(r.APIVersions) == 0 {
		errs = append(errs, field.Required(path.Child("apiVersions"), ""))
	}
	if len(r.APIVersions) > 1 && hasWildcard(r.APIVersions) {
		errs = append(errs, field.Invalid(path.Child("apiVersions"), r.APIVersions, "if '*' is present, must not specify other API versions"))
	}
	for i, v := range r.APIVersions {
		if v == "" {
			errs = append(errs, field.Required(path.Child("apiVersions").Index(i), ""))
		}
	}
	errs = append(errs, validateResources(r.Resources, path.Child("resources"))...)
	if r.Scope != nil && !sets.New(supportedScopes...).Has(string(*r.Scope)) {
		errs = append(errs, field.NotSupported(path.Child("scope"), *r.Scope, supportedScopes))
	}
	return errs
}

func hasWildcard[T ~string](l []T) bool {
	for _, s := range l {
		if s == "*" {
			return true
		}
	}
	return false
}

// validateResources checks resource and resource/subresource patterns:
// "*" matches resources, "x/*" a resource's subresources, "*/y" a
// subresource of any resource, "*/*" everything.
func validateResources(resources []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(resources) == 0 {
		errs = append(errs, field.Required(path, ""))
	}
	wildSub, wildRes := sets.New[string](), sets.New[string]()
	doubleWildcard, singleWildcard, plain := false, false, false
	for i, rs := range resources {
		if rs == "" {
			errs = append(errs, field.Required(path.Index(i), ""))
			continue
		}
		if rs == "*/*" {
			doubleWildcard = true
		}
		if rs == "*" {
			singleWildcard = true
		}
		res, sub, ok := strings.Cut(rs, "/")
		if !ok {
			plain = rs != "*"
			continue
		}
		if wildSub.Has(res) {
			errs = append(errs, field.Invalid(path.Index(i), rs, fmt.Sprintf("if '%s/*' is present, must not specify %s", res, rs)))
		}
		if wildRes.Has(sub) {
			errs = append(errs, field.Invalid(path.Index(i), rs, fmt.Sprintf("if '*/%s' is present, must not specify %s", sub, rs)))
		}
		if sub == "*" {
			wildSub.Insert(res)
		}
		if res == "*" {
			wildRes.Insert(sub)
		}
	}
	if len(resources) > 1 && doubleWildcard {
		errs = append(errs, field.Invalid(path, resources, "if '*/*' is present, must not specify other resources"))
	}
	if singleWildcard && plain {
		errs = append(errs, field.Invalid(path, resources, "if '*' is present, must not specify other resources without subresources"))
	}
	return errs
}

func validateMatchConditions(comp *cel.PolicyCompiler, conds []v1beta1.MatchCondition, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(conds) > 64 {
		errs = append(errs, field.TooMany(path, len(conds), 64))
	}
	names := sets.New[string]()
	for i, c := range conds {
		at := path.Index(i)
		if strings.TrimSpace(c.Expression) == "" {
			errs = append(errs, field.Required(at.Child("expression"), ""))
		} else {
			errs = append(errs, compileErrors(comp, c.Expression, cel.PolicyBool, true, at.Child("expression"))...)
		}
		if c.Name == "" {
			errs = append(errs, field.Required(at.Child("name"), ""))
		} else {
			for _, msg := range validation.IsQualifiedName(c.Name) {
				errs = append(errs, field.Invalid(at.Child("name"), c.Name, msg))
			}
			if names.Has(c.Name) {
				errs = append(errs, field.Duplicate(at.Child("name"), c.Name))
			}
			names.Insert(c.Name)
		}
	}
	return errs
}

func validateVariable(comp *cel.PolicyCompiler, v v1beta1.Variable, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if strings.TrimSpace(v.Name) == "" {
		errs = append(errs, field.Required(path.Child("name"), "name is not specified"))
	} else if !celIdentifier.MatchString(v.Name) || celReserved.Has(v.Name) {
		errs = append(errs, field.Invalid(path.Child("name"), v.Name, "name is not a valid CEL identifier"))
	}
	if strings.TrimSpace(v.Expression) == "" {
		errs = append(errs, field.Required(path.Child("expression"), "expression is not specified"))
	} else {
		errs = append(errs, variableErrors(comp, v.Name, v.Expression, path.Child("expression"))...)
	}
	return errs
}

func validateValidation(comp *cel.PolicyCompiler, v v1beta1.Validation, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if strings.TrimSpace(v.Expression) == "" {
		errs = append(errs, field.Required(path.Child("expression"), "expression is not specified"))
	} else {
		errs = append(errs, compileErrors(comp, v.Expression, cel.PolicyBool, true, path.Child("expression"))...)
	}
	msgExpr := strings.TrimSpace(v.MessageExpression)
	if v.MessageExpression != "" && msgExpr == "" {
		errs = append(errs, field.Required(path.Child("messageExpression"), "messageExpression must be non-empty if specified"))
	} else if msgExpr != "" {
		errs = append(errs, compileErrors(comp, v.MessageExpression, cel.PolicyString, false, path.Child("messageExpression"))...)
	}
	msg := strings.TrimSpace(v.Message)
	if v.Message != "" && msg == "" {
		errs = append(errs, field.Invalid(path.Child("message"), v.Message, "message must be non-empty if specified"))
	} else if strings.ContainsAny(msg, "\n\r") {
		errs = append(errs, field.Invalid(path.Child("message"), v.Message, "message must not contain line breaks"))
	}
	if v.Reason != nil && !sets.New(supportedReasons...).Has(string(*v.Reason)) {
		errs = append(errs, field.NotSupported(path.Child("reason"), *v.Reason, supportedReasons))
	}
	return errs
}

func validateAuditAnnotation(comp *cel.PolicyCompiler, policyName string, a v1beta1.AuditAnnotation, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if policyName == "" {
		errs = append(errs, field.Invalid(path.Child("key"), a.Key, "requires metadata.name be non-empty"))
	} else {
		key := policyName + "/" + a.Key
		for _, msg := range validation.IsQualifiedName(key) {
			errs = append(errs, field.Invalid(path.Child("key"), key, msg))
		}
	}
	value := strings.TrimSpace(a.ValueExpression)
	switch {
	case value == "":
		errs = append(errs, field.Required(path.Child("valueExpression"), "valueExpression is not specified"))
	case len(value) > 5*1024:
		errs = append(errs, field.TooLong(path.Child("valueExpression"), "", 5*1024))
	default:
		errs = append(errs, compileErrors(comp, a.ValueExpression, cel.PolicyStringOrNull, false, path.Child("valueExpression"))...)
	}
	return errs
}

func compileErrors(comp *cel.PolicyCompiler, expr string, want cel.PolicyResult, authorizer bool, path *field.Path) field.ErrorList {
	if _, err := comp.Compile(expr, want, authorizer); err != nil {
		return field.ErrorList{field.Invalid(path, expr, err.Error())}
	}
	return nil
}

func validateBinding(b *v1beta1.ValidatingAdmissionPolicyBinding) field.ErrorList {
	spec := &b.Spec
	path := field.NewPath("spec")
	var errs field.ErrorList
	if spec.PolicyName == "" {
		errs = append(errs, field.Required(path.Child("policyName"), ""))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(spec.PolicyName) {
			errs = append(errs, field.Invalid(path.Child("policyName"), spec.PolicyName, msg))
		}
	}
	if pr := spec.ParamRef; pr != nil {
		errs = append(errs, validateParamRef(pr, path.Child("paramRef"))...)
	}
	// kube's path is misspelt so.
	errs = append(errs, validateMatchResources(spec.MatchResources, path.Child("matchResouces"))...)
	actions := make([]ValidationAction, len(spec.ValidationActions))
	for i, a := range spec.ValidationActions {
		actions[i] = ValidationAction(a)
	}
	at := path.Child("validationActions")
	if len(actions) == 0 {
		errs = append(errs, field.Required(at, "at least one validation action is required"))
	}
	seen := sets.New[ValidationAction]()
	for i, a := range actions {
		if seen.Has(a) {
			errs = append(errs, field.Duplicate(at.Index(i), a))
		}
		seen.Insert(a)
		if !sets.New(supportedActions...).Has(string(a)) {
			errs = append(errs, field.NotSupported(at.Index(i), a, supportedActions))
		}
	}
	if seen.Has("Deny") && seen.Has("Warn") {
		errs = append(errs, field.Invalid(at, actions, "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))
	}
	return errs
}

func validateParamRef(pr *v1beta1.ParamRef, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if pr.Name != "" {
		for _, msg := range validatePathSegmentName(pr.Name) {
			errs = append(errs, field.Invalid(path.Child("name"), pr.Name, msg))
		}
		if pr.Selector != nil {
			errs = append(errs, field.Forbidden(path.Child("name"), "name and selector are mutually exclusive"))
		}
	}
	if pr.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(pr.Selector, metav1validation.LabelSelectorValidationOptions{}, path.Child("selector"))...)
		if pr.Name != "" {
			errs = append(errs, field.Forbidden(path.Child("selector"), "name and selector are mutually exclusive"))
		}
	}
	if pr.Name == "" && pr.Selector == nil {
		errs = append(errs, field.Required(path, "one of name or selector must be specified"))
	}
	if pr.ParameterNotFoundAction == nil || *pr.ParameterNotFoundAction == "" {
		errs = append(errs, field.Required(path.Child("parameterNotFoundAction"), ""))
	} else if !sets.New(supportedNotFoundActions...).Has(string(*pr.ParameterNotFoundAction)) {
		errs = append(errs, field.NotSupported(path.Child("parameterNotFoundAction"), *pr.ParameterNotFoundAction, supportedNotFoundActions))
	}
	return errs
}

// validatePathSegmentName is kube's check of a name that becomes a
// segment of a URL path.
func validatePathSegmentName(name string) []string {
	switch name {
	case ".", "..":
		return []string{fmt.Sprintf(`may not be '%s'`, name)}
	}
	var msgs []string
	for _, illegal := range []string{"/", "%"} {
		if strings.Contains(name, illegal) {
			msgs = append(msgs, fmt.Sprintf(`may not contain '%s'`, illegal))
		}
	}
	return msgs
}

// variableErrors compiles variable name's expression and declares it to
// the expressions validated after it.
func variableErrors(comp *cel.PolicyCompiler, name, expr string, path *field.Path) field.ErrorList {
	if _, err := comp.CompileVariable(name, expr); err != nil {
		return field.ErrorList{field.Invalid(path, expr, err.Error())}
	}
	return nil
}

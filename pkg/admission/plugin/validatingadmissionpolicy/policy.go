// Package validatingadmissionpolicy is the admission plugin that
// enforces ValidatingAdmissionPolicies (admissionregistration.k8s.io
// v1beta1) in the validating phase, as kube-apiserver v1.29 does: each
// binding whose policy and own match resources select a write has the
// policy's matchConditions, variables, validations and auditAnnotations
// evaluated with CEL (pkg/cel) against the write and the binding's
// params, and its validationActions decide what a failed validation
// does: deny the write, warn the client, or annotate the audit event.
package validatingadmissionpolicy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"k8s.io/api/admissionregistration/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	apitypes "k8s.io/apimachinery/pkg/types"

	"github.com/cronplane/cronplane/pkg/admission"
	"github.com/cronplane/cronplane/pkg/audit"
	"github.com/cronplane/cronplane/pkg/auth/authorizer"
	"github.com/cronplane/cronplane/pkg/cel"
	"github.com/cronplane/cronplane/pkg/warning"
)

// Source reads the policies, bindings, namespaces and params the
// plugin needs, from the watch cache.
type Source interface {
	Policies(ctx context.Context) ([]*v1beta1.ValidatingAdmissionPolicy, error)
	Bindings(ctx context.Context) ([]*v1beta1.ValidatingAdmissionPolicyBinding, error)
	GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error)
	// ParamNamespaced says whether the kind of a paramKind is
	// namespaced; an error when no served resource has that kind.
	ParamNamespaced(apiVersion, kind string) (bool, error)
	// GetParam returns one param object (a NotFound API error when it
	// does not exist), ListParams those a selector selects, as
	// JSON-like maps.
	GetParam(ctx context.Context, apiVersion, kind, namespace, name string) (map[string]interface{}, error)
	ListParams(ctx context.Context, apiVersion, kind, namespace string, sel labels.Selector) ([]map[string]interface{}, error)
}

// ValidationFailureAnnotation is the audit annotation that lists the
// failed validations of bindings with the Audit action.
const ValidationFailureAnnotation = "validation.policy.admission.k8s.io/validation_failure"

// maxAuditAnnotationValueLength bounds a published audit annotation.
const maxAuditAnnotationValueLength = 10 * 1024

// Plugin enforces the policies of its Source.
type Plugin struct {
	src   Source
	authz authorizer.Authorizer

	mu sync.Mutex
	// compiled are the policies compiled, by UID, for the
	// resourceVersion they were compiled at.
	compiled map[apitypes.UID]*compiledPolicy
}

// New returns the plugin; authz answers the authorizer variable (nil
// leaves it null).
func New(src Source, authz authorizer.Authorizer) *Plugin {
	return &Plugin{src: src, authz: authz, compiled: map[apitypes.UID]*compiledPolicy{}}
}

// Handles every operation: bindings say which they apply to.
func (p *Plugin) Handles(admission.Operation) bool { return true }

// decision is the outcome of one validation (or a failure to evaluate).
type decision struct {
	policy, binding string
	actions         []v1beta1.ValidationAction
	message         string
	reason          metav1.StatusReason
	index           int
}

// Validate evaluates the bindings that match the write; the first
// denial is the answer.
func (p *Plugin) Validate(ctx context.Context, a *admission.Attributes) error {
	bindings, err := p.src.Bindings(ctx)
	if err != nil || len(bindings) == 0 {
		return err
	}
	policies, err := p.src.Policies(ctx)
	if err != nil {
		return err
	}
	byName := make(map[string]*v1beta1.ValidatingAdmissionPolicy, len(policies))
	for _, pol := range policies {
		byName[pol.Name] = pol
	}
	var r *request
	var in *input
	var denied, warned []decision
	var audited []validationFailure
	annotations := map[string][]string{}
	sort.Slice(bindings, func(i, j int) bool { return bindings[i].Name < bindings[j].Name })
	for _, b := range bindings {
		pol := byName[b.Spec.PolicyName]
		if pol == nil {
			continue
		}
		if r == nil {
			if r, err = p.request(ctx, a); err != nil {
				return err
			}
		}
		if !matches(pol.Spec.MatchConstraints, r) || (b.Spec.MatchResources != nil && !matches(b.Spec.MatchResources, r)) {
			continue
		}
		if in == nil {
			in = p.input(ctx, a, r)
		}
		c := p.compile(pol)
		params, err := p.params(ctx, pol.Spec.ParamKind, b.Spec.ParamRef, a.Namespace)
		var decisions []decision
		var published map[string]string
		if err != nil {
			if failurePolicy(pol) == v1beta1.Fail {
				decisions = []decision{{message: "failed to configure binding: " + err.Error()}}
			}
		} else {
			for _, param := range params {
				d, pub := c.evaluate(ctx, in, param, failurePolicy(pol))
				decisions = append(decisions, d...)
				if published == nil {
					published = pub
				}
			}
		}
		for k, v := range published {
			annotations[pol.Name+"/"+k] = append(annotations[pol.Name+"/"+k], v)
		}
		for _, d := range decisions {
			d.policy, d.binding, d.actions = pol.Name, b.Name, b.Spec.ValidationActions
			for _, action := range b.Spec.ValidationActions {
				switch action {
				case v1beta1.Deny:
					denied = append(denied, d)
				case v1beta1.Warn:
					warned = append(warned, d)
				case v1beta1.Audit:
					audited = append(audited, validationFailure{ExpressionIndex: d.index, Message: d.message, Policy: d.policy, Binding: d.binding, ValidationActions: d.actions})
				}
			}
		}
	}
	for _, d := range warned {
		warning.Add(ctx, fmt.Sprintf("Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s': %s", d.policy, d.binding, d.message))
	}
	publishAudit(ctx, annotations, audited)
	if len(denied) == 0 {
		return nil
	}
	return denial(a, denied[0])
}

// validationFailure is one entry of ValidationFailureAnnotation.
type validationFailure struct {
	ExpressionIndex   int                        `json:"expressionIndex"`
	Message           string                     `json:"message"`
	Policy            string                     `json:"policy"`
	Binding           string                     `json:"binding"`
	ValidationActions []v1beta1.ValidationAction `json:"validationActions"`
}

func publishAudit(ctx context.Context, annotations map[string][]string, failures []validationFailure) {
	keys := make([]string, 0, len(annotations))
	for k := range annotations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		// the same value from several bindings is given once
		var values []string
		for _, v := range annotations[k] {
			if !contains(values, v) {
				values = append(values, v)
			}
		}
		audit.AddAnnotation(ctx, k, strings.Join(values, ", "))
	}
	if len(failures) > 0 {
		if raw, err := json.Marshal(failures); err == nil {
			audit.AddAnnotation(ctx, ValidationFailureAnnotation, string(raw))
		}
	}
}

// denial is kube's answer to a denied write: 403 naming the object, with
// the validation's reason and its code.
func denial(a *admission.Attributes, d decision) error {
	message := fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s", d.policy, d.binding, d.message)
	name := a.Name
	if name == "" && a.Object != nil {
		if m, err := meta.Accessor(a.Object); err == nil {
			name = m.GetName()
		}
	}
	err := apierrors.NewForbidden(a.Resource.GroupResource(), name, errors.New(message))
	reason := d.reason
	if reason == "" {
		reason = metav1.StatusReasonInvalid
	}
	err.ErrStatus.Reason = reason
	switch reason {
	case metav1.StatusReasonForbidden:
		err.ErrStatus.Code = 403
	case metav1.StatusReasonRequestEntityTooLarge:
		err.ErrStatus.Code = 413
	default:
		err.ErrStatus.Code = 422
	}
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Message: message})
	return err
}

func failurePolicy(p *v1beta1.ValidatingAdmissionPolicy) v1beta1.FailurePolicyType {
	if p.Spec.FailurePolicy == nil {
		return v1beta1.Fail
	}
	return *p.Spec.FailurePolicy
}

// request gathers what matching needs.
func (p *Plugin) request(ctx context.Context, a *admission.Attributes) (*request, error) {
	r := &request{a: a, objectLabels: objectLabels(a.Object), oldLabels: objectLabels(a.OldObject)}
	switch {
	case a.Resource.Group == "" && a.Resource.Resource == "namespaces" && a.Subresource == "":
		r.namespaceLabels = r.objectLabels
		if a.Object == nil {
			r.namespaceLabels = r.oldLabels
		}
	case a.Namespace != "":
		ns, err := p.src.GetNamespace(ctx, a.Namespace)
		if err != nil {
			return nil, err
		}
		r.namespaceLabels = labels.Set(ns.Labels)
		if r.namespaceLabels == nil {
			r.namespaceLabels = labels.Set{}
		}
	}
	return r, nil
}

func objectLabels(obj runtime.Object) labels.Set {
	if obj == nil {
		return nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	return labels.Set(m.GetLabels())
}

// params returns the params a binding names: one nil when the policy
// takes none (or the binding names none), none when none is found and
// the binding allows that.
func (p *Plugin) params(ctx context.Context, kind *v1beta1.ParamKind, ref *v1beta1.ParamRef, requestNamespace string) ([]map[string]interface{}, error) {
	if kind == nil || ref == nil {
		return []map[string]interface{}{nil}, nil
	}
	namespaced, err := p.src.ParamNamespaced(kind.APIVersion, kind.Kind)
	if err != nil {
		return nil, fmt.Errorf("paramKind kind `%s, Kind=%s` not known", kind.APIVersion, kind.Kind)
	}
	namespace := ""
	if namespaced {
		namespace = requestNamespace
		if ref.Namespace != "" {
			namespace = ref.Namespace
		} else if namespace == "" {
			return nil, fmt.Errorf("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources")
		}
	} else if ref.Namespace != "" {
		return nil, fmt.Errorf("paramRef.namespace must not be provided for a cluster-scoped `paramKind`")
	}
	var params []map[string]interface{}
	switch {
	case ref.Name != "":
		obj, err := p.src.GetParam(ctx, kind.APIVersion, kind.Kind, namespace, ref.Name)
		switch {
		case err == nil:
			params = append(params, obj)
		case !apierrors.IsNotFound(err):
			return nil, err
		}
	case ref.Selector != nil:
		sel, err := metav1.LabelSelectorAsSelector(ref.Selector)
		if err != nil {
			return nil, err
		}
		if params, err = p.src.ListParams(ctx, kind.APIVersion, kind.Kind, namespace, sel); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("one of name or selector must be provided")
	}
	if len(params) == 0 && ref.ParameterNotFoundAction != nil && *ref.ParameterNotFoundAction == v1beta1.DenyAction {
		return nil, errors.New("no params found for policy binding with `Deny` parameterNotFoundAction")
	}
	return params, nil
}

// input is the write as expressions see it.
type input struct {
	object, oldObject, request, namespaceObject interface{}
	authorizer, requestResource                 ref.Val
}

func (p *Plugin) input(ctx context.Context, a *admission.Attributes, r *request) *input {
	in := &input{object: toMap(a.Object, a), oldObject: toMap(a.OldObject, a), request: requestMap(a)}
	if a.Namespace != "" {
		if ns, err := p.src.GetNamespace(ctx, a.Namespace); err == nil {
			in.namespaceObject = toMap(ns, nil)
		}
	}
	if p.authz != nil {
		in.authorizer = cel.NewAuthorizer(ctx, p.authz, a.User)
		in.requestResource = cel.NewResourceCheck(in.authorizer, a.Resource.Group, a.Resource.Resource, a.Subresource, a.Namespace, a.Name)
	}
	return in
}

// toMap is obj as JSON would have it, with its apiVersion and kind.
func toMap(obj runtime.Object, a *admission.Attributes) interface{} {
	if obj == nil {
		return nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil
	}
	if _, ok := m["kind"]; !ok {
		gvk := obj.GetObjectKind().GroupVersionKind()
		if gvk.Empty() && a != nil {
			gvk = a.Kind
		} else if gvk.Empty() {
			gvk = corev1.SchemeGroupVersion.WithKind("Namespace")
		}
		m["apiVersion"], m["kind"] = gvk.GroupVersion().String(), gvk.Kind
	}
	return m
}

// requestMap is the request variable: the AdmissionRequest kube builds,
// as JSON has it (empty optional fields left out).
func requestMap(a *admission.Attributes) map[string]interface{} {
	kind := map[string]interface{}{"group": a.Kind.Group, "version": a.Kind.Version, "kind": a.Kind.Kind}
	resource := map[string]interface{}{"group": a.Resource.Group, "version": a.Resource.Version, "resource": a.Resource.Resource}
	userInfo := map[string]interface{}{}
	if u := a.User; u != nil {
		if u.Name != "" {
			userInfo["username"] = u.Name
		}
		if u.UID != "" {
			userInfo["uid"] = u.UID
		}
		if len(u.Groups) > 0 {
			groups := make([]interface{}, len(u.Groups))
			for i, g := range u.Groups {
				groups[i] = g
			}
			userInfo["groups"] = groups
		}
		if len(u.Extra) > 0 {
			extra := map[string]interface{}{}
			for k, vs := range u.Extra {
				l := make([]interface{}, len(vs))
				for i, v := range vs {
					l[i] = v
				}
				extra[k] = l
			}
			userInfo["extra"] = extra
		}
	}
	r := map[string]interface{}{
		"kind": kind, "resource": resource, "requestKind": kind, "requestResource": resource,
		"operation": string(a.Operation), "userInfo": userInfo, "dryRun": a.DryRun,
	}
	for k, v := range map[string]string{"subResource": a.Subresource, "requestSubResource": a.Subresource, "name": a.Name, "namespace": a.Namespace} {
		if v != "" {
			r[k] = v
		}
	}
	if a.Options != nil {
		r["options"] = toMap(a.Options, &admission.Attributes{Kind: metav1.SchemeGroupVersion.WithKind(optionsKind(a.Operation))})
	}
	return r
}

func optionsKind(op admission.Operation) string {
	switch op {
	case admission.Create:
		return "CreateOptions"
	case admission.Update:
		return "UpdateOptions"
	}
	return "DeleteOptions"
}

// --- compiled policies ---

type compiledPolicy struct {
	resourceVersion string
	matchConditions []compiledExpr
	varNames        []string
	vars            map[string]*cel.PolicyProgram
	varErrs         map[string]error
	validations     []compiledValidation
	audits          []compiledExpr
}

// compiledExpr is one expression; err why it did not compile.
type compiledExpr struct {
	name string
	src  string
	prg  *cel.PolicyProgram
	err  error
}

type compiledValidation struct {
	v       v1beta1.Validation
	expr    compiledExpr
	message *compiledExpr
}

func compileExpr(comp *cel.PolicyCompiler, name, src string, want cel.PolicyResult, authorizer bool) compiledExpr {
	prg, err := comp.Compile(src, want, authorizer)
	return compiledExpr{name: name, src: src, prg: prg, err: err}
}

// compile returns the policy compiled, from the cache while its
// resourceVersion stays. Variables come first, as kube compiles them,
// so that the expressions after them see their types.
func (p *Plugin) compile(pol *v1beta1.ValidatingAdmissionPolicy) *compiledPolicy {
	p.mu.Lock()
	c, ok := p.compiled[pol.UID]
	p.mu.Unlock()
	if ok && c.resourceVersion == pol.ResourceVersion {
		return c
	}
	c = &compiledPolicy{resourceVersion: pol.ResourceVersion, vars: map[string]*cel.PolicyProgram{}, varErrs: map[string]error{}}
	comp := cel.NewPolicyCompiler(pol.Spec.ParamKind != nil)
	for _, v := range pol.Spec.Variables {
		c.varNames = append(c.varNames, v.Name)
		if prg, err := comp.CompileVariable(v.Name, v.Expression); err != nil {
			c.varErrs[v.Name] = err
		} else {
			c.vars[v.Name] = prg
		}
	}
	for _, m := range pol.Spec.MatchConditions {
		c.matchConditions = append(c.matchConditions, compileExpr(comp, m.Name, m.Expression, cel.PolicyBool, true))
	}
	for _, v := range pol.Spec.Validations {
		cv := compiledValidation{v: v, expr: compileExpr(comp, "", v.Expression, cel.PolicyBool, true)}
		if strings.TrimSpace(v.MessageExpression) != "" {
			m := compileExpr(comp, "", v.MessageExpression, cel.PolicyString, false)
			cv.message = &m
		}
		c.validations = append(c.validations, cv)
	}
	for _, a := range pol.Spec.AuditAnnotations {
		c.audits = append(c.audits, compileExpr(comp, a.Key, a.ValueExpression, cel.PolicyStringOrNull, false))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// Policies deleted leave their entries; a bound on the cache drops
	// them all now and then.
	if len(p.compiled) > 1000 {
		p.compiled = map[apitypes.UID]*compiledPolicy{}
	}
	p.compiled[pol.UID] = c
	return c
}

// errBudget is kube's error once a policy's evaluation has spent the
// runtime cost budget.
var errBudget = errors.New("validation failed due to running out of cost budget, no further validation rules will be run")

// evaluation runs the expressions of one policy for one param.
type evaluation struct {
	ctx    context.Context
	act    *cel.PolicyActivation
	vars   *cel.Variables
	budget int64
}

// run evaluates e; a failure to compile or to evaluate is an error in
// kube's words, and spending the budget is errBudget.
func (ev *evaluation) run(e compiledExpr) (ref.Val, error) {
	if e.err != nil {
		return nil, fmt.Errorf("compilation error: %v", e.err)
	}
	before := ev.vars.Cost
	out, cost, err := e.prg.Eval(ev.ctx, ev.act)
	cost += ev.vars.Cost - before
	if cost > math.MaxInt64 || int64(cost) > ev.budget {
		return nil, errBudget
	}
	ev.budget -= int64(cost)
	if err != nil {
		return nil, fmt.Errorf("expression '%s' resulted in error: %v", e.src, err)
	}
	return out, nil
}

func (c *compiledPolicy) newEvaluation(ctx context.Context, in *input, param map[string]interface{}) *evaluation {
	act := &cel.PolicyActivation{
		Object: in.object, OldObject: in.oldObject, Request: in.request, NamespaceObject: in.namespaceObject,
		Authorizer: in.authorizer, RequestResource: in.requestResource,
	}
	if param != nil {
		act.Params = param
	}
	vars := cel.NewVariables(ctx, act, c.varNames, c.vars, c.varErrs)
	return &evaluation{ctx: ctx, act: act, vars: vars, budget: cel.RuntimeCELCostBudget}
}

// evaluate runs the policy for one param: the failed validations (and
// failures to evaluate, under failurePolicy Fail) and the audit
// annotations to publish.
func (c *compiledPolicy) evaluate(ctx context.Context, in *input, param map[string]interface{}, fp v1beta1.FailurePolicyType) ([]decision, map[string]string) {
	fail := func(err error) []decision {
		if fp == v1beta1.Ignore {
			return nil
		}
		return []decision{{message: err.Error()}}
	}
	// matchConditions: any false skips the policy; errors fail it once
	// none is false.
	ev := c.newEvaluation(ctx, in, param)
	var matchErrs []string
	for _, m := range c.matchConditions {
		out, err := ev.run(m)
		if err != nil {
			matchErrs = append(matchErrs, err.Error())
			continue
		}
		if out == types.False {
			return nil, nil
		}
	}
	switch len(matchErrs) {
	case 0:
	case 1:
		return fail(errors.New(matchErrs[0])), nil
	default:
		// as kube's aggregate of errors says them
		return fail(errors.New("[" + strings.Join(matchErrs, ", ") + "]")), nil
	}

	ev = c.newEvaluation(ctx, in, param)
	var decisions []decision
	type failed struct {
		i int
		v compiledValidation
	}
	var failures []failed
	for i, v := range c.validations {
		out, err := ev.run(v.expr)
		switch {
		case errors.Is(err, errBudget):
			return fail(err), nil
		case err != nil:
			if fp == v1beta1.Fail {
				decisions = append(decisions, decision{message: err.Error(), index: i})
			}
		case out != types.True:
			failures = append(failures, failed{i, v})
		}
	}
	for _, f := range failures {
		d := decision{index: f.i, reason: metav1.StatusReasonInvalid}
		if f.v.v.Reason != nil {
			d.reason = metav1.StatusReason(*f.v.v.Reason)
		}
		if f.v.message != nil {
			out, err := ev.run(*f.v.message)
			if errors.Is(err, errBudget) {
				return fail(err), nil
			}
			if err == nil {
				if s, ok := out.Value().(string); ok && validMessage(strings.TrimSpace(s)) {
					d.message = strings.TrimSpace(s)
				}
			}
		}
		if d.message == "" {
			d.message = strings.TrimSpace(f.v.v.Message)
		}
		if d.message == "" {
			d.message = "failed expression: " + strings.TrimSpace(f.v.v.Expression)
		}
		decisions = append(decisions, d)
	}
	sort.SliceStable(decisions, func(i, j int) bool { return decisions[i].index < decisions[j].index })

	// auditAnnotations, with a budget of their own
	ev = c.newEvaluation(ctx, in, param)
	published := map[string]string{}
	for _, a := range c.audits {
		out, err := ev.run(a)
		if errors.Is(err, errBudget) {
			return append(decisions, fail(err)...), published
		}
		if err != nil {
			decisions = append(decisions, fail(err)...)
			continue
		}
		switch v := out.Value().(type) {
		case string:
			if v = strings.TrimSpace(v); v != "" {
				if len(v) > maxAuditAnnotationValueLength {
					v = v[:maxAuditAnnotationValueLength]
				}
				published[a.name] = v
			}
		default:
			if out != types.NullValue {
				decisions = append(decisions, fail(fmt.Errorf("valueExpression '%v' resulted in unsupported return type: %v. Return type must be either string or null.", a.src, out.Type()))...)
			}
		}
	}
	return decisions, published
}

// validMessage: a messageExpression's result is used when it is a
// non-empty line of at most 5 KiB.
func validMessage(s string) bool {
	return s != "" && len(s) <= 5*1024 && !strings.ContainsAny(s, "\n\r")
}

package webhook

import (
	"context"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/admission"
)

// invocation is a webhook to call and the version of the resource it
// sees: the request's own, or an equivalent one its rules name.
type invocation struct {
	hook       *hook
	index      int
	resource   schema.GroupVersionResource
	kind       schema.GroupVersionKind
	equivalent *Equivalent
}

// match decides whether h is called for a, as kube decides it: rules
// (through an equivalent version under matchPolicy Equivalent), then
// the namespace and object selectors, then the matchConditions. A
// condition that fails to evaluate is a call error, which the failure
// policy decides on.
func (d *dispatcher) match(ctx context.Context, h *hook, index int, a *admission.Attributes) (*invocation, error) {
	inv := &invocation{hook: h, index: index, resource: a.Resource, kind: a.Kind}
	if !rulesMatch(h.rules, a.Operation, a.Resource, a.Subresource, a.Namespace) {
		if h.matchPolicy != admissionregistrationv1.Equivalent {
			return nil, nil
		}
		found := false
		for _, e := range d.Resources.Equivalents(a.Resource) {
			if rulesMatch(h.rules, a.Operation, e.Resource, a.Subresource, a.Namespace) {
				e := e
				inv.resource, inv.kind, inv.equivalent, found = e.Resource, e.Kind, &e, true
				break
			}
		}
		if !found {
			return nil, nil
		}
	}
	if h.selectorErr != nil {
		return nil, apierrors.NewInternalError(h.selectorErr)
	}
	if ok, err := d.namespaceMatches(ctx, h, a); err != nil || !ok {
		return nil, err
	}
	if !objectMatches(h.objSelector, a) {
		return nil, nil
	}
	return inv, nil
}

// rulesMatch reports whether any rule names the operation on the
// resource (and subresource) in its scope.
func rulesMatch(rules []admissionregistrationv1.RuleWithOperations, op admission.Operation, gvr schema.GroupVersionResource, sub, namespace string) bool {
	for _, r := range rules {
		if ruleMatches(r, op, gvr, sub, namespace) {
			return true
		}
	}
	return false
}

func ruleMatches(r admissionregistrationv1.RuleWithOperations, op admission.Operation, gvr schema.GroupVersionResource, sub, namespace string) bool {
	opOK := false
	for _, o := range r.Operations {
		if o == admissionregistrationv1.OperationAll || string(o) == string(op) {
			opOK = true
		}
	}
	if !opOK || !listMatches(r.APIGroups, gvr.Group) || !listMatches(r.APIVersions, gvr.Version) {
		return false
	}
	if r.Scope != nil {
		// A namespace is cluster-scoped, whatever namespace its request names.
		clusterScoped := namespace == "" || (gvr.Group == "" && gvr.Resource == "namespaces")
		switch *r.Scope {
		case admissionregistrationv1.ClusterScope:
			if !clusterScoped {
				return false
			}
		case admissionregistrationv1.NamespacedScope:
			if clusterScoped {
				return false
			}
		}
	}
	for _, res := range r.Resources {
		name, subName, hasSub := strings.Cut(res, "/")
		switch {
		case !hasSub:
			if sub == "" && (name == "*" || name == gvr.Resource) {
				return true
			}
		case (name == "*" || name == gvr.Resource) && (subName == "*" || subName == sub) && sub != "":
			return true
		}
	}
	return false
}

func listMatches(list []string, s string) bool {
	for _, x := range list {
		if x == "*" || x == s {
			return true
		}
	}
	return false
}

// namespaceMatches applies the namespace selector: to the namespace of a
// namespaced object, to a namespace's own labels, and never excludes
// other cluster-scoped objects.
func (d *dispatcher) namespaceMatches(ctx context.Context, h *hook, a *admission.Attributes) (bool, error) {
	if h.nsSelector.Empty() {
		return true, nil
	}
	if a.Resource.Group == "" && a.Resource.Resource == "namespaces" {
		if a.Subresource != "" {
			return true, nil
		}
		return labelsMatch(h.nsSelector, a.Object, a.OldObject), nil
	}
	if a.Namespace == "" {
		return true, nil
	}
	ns, err := d.Namespaces.GetNamespace(ctx, a.Namespace, false)
	if apierrors.IsNotFound(err) {
		ns, err = d.Namespaces.GetNamespace(ctx, a.Namespace, true)
	}
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	return h.nsSelector.Matches(labels.Set(ns.Labels)), nil
}

// objectMatches applies the object selector to the new or the old
// object: either matching calls the webhook.
func objectMatches(s labels.Selector, a *admission.Attributes) bool {
	if s.Empty() {
		return true
	}
	return labelsMatch(s, a.Object, a.OldObject)
}

func labelsMatch(s labels.Selector, objs ...runtime.Object) bool {
	for _, o := range objs {
		if o == nil {
			continue
		}
		if m, err := meta.Accessor(o); err == nil && s.Matches(labels.Set(m.GetLabels())) {
			return true
		}
	}
	return false
}

// conditionsMatch evaluates the webhook's matchConditions: any false one
// excludes the request; otherwise an error is returned if one failed.
// request is only built when there are conditions.
func conditionsMatch(ctx context.Context, conds []condition, object, oldObject runtime.Object, request func() map[string]interface{}) (bool, error) {
	if len(conds) == 0 {
		return true, nil
	}
	vars := map[string]interface{}{"object": toMap(object), "oldObject": toMap(oldObject), "request": request()}
	var firstErr error
	for _, c := range conds {
		err := c.err
		if err == nil {
			var out interface{}
			val, _, evalErr := c.program.ContextEval(ctx, vars)
			if evalErr == nil {
				out = val.Value()
			}
			switch b, ok := out.(bool); {
			case evalErr != nil:
				err = evalErr
			case !ok:
				err = fmt.Errorf("expected bool, got %T", out)
			case !b:
				return false, nil
			}
		}
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("failed to evaluate match condition %q: %w", c.name, err)
		}
	}
	return firstErr == nil, firstErr
}

func toMap(obj runtime.Object) interface{} {
	if obj == nil {
		return nil
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.Object
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil
	}
	return m
}

// prepare converts the objects to the version the webhook sees, builds
// its request and evaluates its match conditions, then applies the
// dry-run rule; a nil request means the webhook is not called.
func prepare(ctx context.Context, inv *invocation, a *admission.Attributes) (runtime.Object, *admissionv1.AdmissionRequest, error) {
	h := inv.hook
	obj, old := a.Object, a.OldObject
	if e := inv.equivalent; e != nil {
		var err error
		if obj, err = convert(e.To, obj); err != nil {
			return nil, nil, apierrors.NewInternalError(err)
		}
		if old, err = convert(e.To, old); err != nil {
			return nil, nil, apierrors.NewInternalError(err)
		}
	}
	req, err := request(inv, a, obj, old)
	if err != nil {
		return nil, nil, &callError{name: h.name, reason: fmt.Errorf("could not create admission objects: %w", err), status: apierrors.NewBadRequest("error creating admission objects")}
	}
	if ok, err := conditionsMatch(ctx, h.conditions, obj, old, func() map[string]interface{} { return requestMap(req) }); err != nil || !ok {
		if err != nil {
			return nil, nil, &callError{name: h.name, reason: err, status: apierrors.NewBadRequest("error evaluating match conditions")}
		}
		return nil, nil, nil
	}
	if a.DryRun && h.sideEffects != admissionregistrationv1.SideEffectClassNone && h.sideEffects != admissionregistrationv1.SideEffectClassNoneOnDryRun {
		return nil, nil, dryRunUnsupported(h.name)
	}
	return obj, req, nil
}

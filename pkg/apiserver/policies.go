package apiserver

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/api/admissionregistration/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/cel"
	"github.com/cronplane/cronplane/pkg/registry"
	"github.com/cronplane/cronplane/pkg/registry/rest"
	cronschema "github.com/cronplane/cronplane/pkg/schema"
	"github.com/cronplane/cronplane/pkg/storage"
)

var (
	policiesGVR = v1beta1.SchemeGroupVersion.WithResource("validatingadmissionpolicies")
	bindingsGVR = v1beta1.SchemeGroupVersion.WithResource("validatingadmissionpolicybindings")
)

// policySource reads what the ValidatingAdmissionPolicy plugin needs
// from the watch caches of whatever serves it.
type policySource struct{ registry *registry.Registry }

func (s policySource) Policies(ctx context.Context) ([]*v1beta1.ValidatingAdmissionPolicy, error) {
	objs, err := cachedList(ctx, s.registry, policiesGVR, "", nil)
	out := make([]*v1beta1.ValidatingAdmissionPolicy, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*v1beta1.ValidatingAdmissionPolicy))
	}
	return out, err
}

func (s policySource) Bindings(ctx context.Context) ([]*v1beta1.ValidatingAdmissionPolicyBinding, error) {
	objs, err := cachedList(ctx, s.registry, bindingsGVR, "", nil)
	out := make([]*v1beta1.ValidatingAdmissionPolicyBinding, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*v1beta1.ValidatingAdmissionPolicyBinding))
	}
	return out, err
}

func (s policySource) GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	return namespaceGetter(s).GetNamespace(ctx, name, false)
}

// kindEntry finds what serves a kind.
func (s policySource) kindEntry(apiVersion, kind string) (*registry.Entry, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, err
	}
	for _, e := range s.registry.Entries() {
		if e.GroupVersionKind == gv.WithKind(kind) {
			return e, nil
		}
	}
	return nil, fmt.Errorf("no resource of kind %s", gv.WithKind(kind))
}

func (s policySource) ParamNamespaced(apiVersion, kind string) (bool, error) {
	e, err := s.kindEntry(apiVersion, kind)
	if err != nil {
		return false, err
	}
	return e.Namespaced, nil
}

func (s policySource) GetParam(ctx context.Context, apiVersion, kind, namespace, name string) (map[string]interface{}, error) {
	e, err := s.kindEntry(apiVersion, kind)
	if err != nil {
		return nil, err
	}
	obj, err := cachedGet(ctx, s.registry, e.GroupVersionResource(), namespace, name)
	if err != nil {
		return nil, err
	}
	return paramMap(obj, e)
}

func (s policySource) ListParams(ctx context.Context, apiVersion, kind, namespace string, sel labels.Selector) ([]map[string]interface{}, error) {
	e, err := s.kindEntry(apiVersion, kind)
	if err != nil {
		return nil, err
	}
	objs, err := cachedList(ctx, s.registry, e.GroupVersionResource(), namespace, sel)
	if err != nil {
		return nil, err
	}
	out := make([]map[string]interface{}, 0, len(objs))
	for _, o := range objs {
		m, err := paramMap(o, e)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// paramMap is a param object as JSON has it, with apiVersion and kind.
func paramMap(obj runtime.Object, e *registry.Entry) (map[string]interface{}, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	m["apiVersion"], m["kind"] = e.GroupVersion().String(), e.Kind
	return m, nil
}

// cachedList lists a resource's objects from the watch cache.
func cachedList(ctx context.Context, r *registry.Registry, gvr schema.GroupVersionResource, namespace string, sel labels.Selector) ([]runtime.Object, error) {
	e, ok := r.Lookup(gvr)
	if !ok {
		return nil, fmt.Errorf("%s are not served", gvr.Resource)
	}
	if sel == nil {
		sel = labels.Everything()
	}
	list, err := e.Storage.(rest.Lister).List(ctx, namespace, &rest.ListOptions{ListOptions: metav1.ListOptions{ResourceVersion: "0"}, Label: sel})
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	for i := range items {
		items[i] = storage.Unwrap(items[i])
	}
	return items, nil
}

// policyTypeChecker type-checks the expressions of a policy against the
// schemas of the kinds its resource rules name (explicitly: wildcards
// are left out) and of its paramKind, as kube's status controller does.
func policyTypeChecker(r *registry.Registry) func(p *v1beta1.ValidatingAdmissionPolicy) *v1beta1.TypeChecking {
	src := policySource{r}
	return func(p *v1beta1.ValidatingAdmissionPolicy) *v1beta1.TypeChecking {
		tc := &v1beta1.TypeChecking{}
		m := p.Spec.MatchConstraints
		if m == nil {
			return tc
		}
		var params *registry.Entry
		if pk := p.Spec.ParamKind; pk != nil {
			params, _ = src.kindEntry(pk.APIVersion, pk.Kind)
		}
		var entries []*registry.Entry
		seen := map[schema.GroupVersionKind]bool{}
		for _, rule := range m.ResourceRules {
			for _, g := range rule.APIGroups {
				for _, v := range rule.APIVersions {
					for _, res := range rule.Resources {
						if g == "*" || v == "*" || strings.Contains(res, "*") || strings.Contains(res, "/") {
							continue
						}
						e, ok := r.Lookup(schema.GroupVersionResource{Group: g, Version: v, Resource: res})
						if ok && !seen[e.GroupVersionKind] {
							seen[e.GroupVersionKind] = true
							entries = append(entries, e)
						}
					}
				}
			}
		}
		if len(entries) == 0 {
			return tc
		}
		type expr struct{ ref, src string }
		var exprs []expr
		for i, v := range p.Spec.Validations {
			exprs = append(exprs, expr{fmt.Sprintf("spec.validations[%d].expression", i), v.Expression})
			if v.MessageExpression != "" {
				exprs = append(exprs, expr{fmt.Sprintf("spec.validations[%d].messageExpression", i), v.MessageExpression})
			}
		}
		for i, a := range p.Spec.AuditAnnotations {
			exprs = append(exprs, expr{fmt.Sprintf("spec.auditAnnotations[%d].valueExpression", i), a.ValueExpression})
		}
		checkers := make([]*cel.PolicyTypeChecker, len(entries))
		for i, e := range entries {
			var ps *cronschema.Structural
			if params != nil {
				ps = params.Schema
			}
			c, err := cel.NewPolicyTypeChecker(e.Schema, ps, p.Spec.ParamKind != nil)
			if err != nil {
				return tc
			}
			checkers[i] = c
		}
		for _, x := range exprs {
			var b strings.Builder
			for i, c := range checkers {
				if issues := c.Check(x.src); issues != "" {
					fmt.Fprintf(&b, "%s: %s\n", entries[i].GroupVersionKind, issues)
				}
			}
			if b.Len() > 0 {
				tc.ExpressionWarnings = append(tc.ExpressionWarnings, v1beta1.ExpressionWarning{FieldRef: x.ref, Warning: b.String()})
			}
		}
		return tc
	}
}

// Package cel compiles and evaluates the x-kubernetes-validations rules
// of a structural schema (a CustomResourceDefinition version's) with
// cel-go, as kube-apiserver v1.29 does: self and oldSelf typed from the
// schema (objects with escaped field names, maps, lists, formats as
// bytes, timestamps and durations, int-or-string as dyn), kube's
// libraries (lists, regex, URLs, quantities, extended strings), costs
// estimated when a definition is written (Check) and counted when an
// object is (Validator.Validate), with kube's limits and words.
package cel

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/schema"
)

// maxMessageExpressionLength is the longest message a messageExpression
// may give.
const maxMessageExpressionLength = 5 * 1024

// Validator holds the compiled rules of one schema. It is safe for
// concurrent use: programs are immutable once built.
type Validator struct {
	st   *schema.Structural
	root *vnode
}

// Options are what kube-apiserver v1.29's CRDValidationRatcheting gate
// changes in Validate; all off is kube's default.
type Options struct {
	// OptionalOldSelf runs the rules with optionalOldSelf where there is
	// no old value too (on create, or for a value an update adds), with
	// oldSelf none.
	OptionalOldSelf bool
	// Ratchet forgives the violations of rules that do not use oldSelf
	// at values an update left unchanged (equal to their counterpart in
	// old: the same property or map key, the item with the same keys of
	// a list-type map, for other lists the same index of an unchanged
	// list). Evaluation errors are not forgiven.
	Ratchet bool
}

// Compile compiles every rule of st for validating objects, as kube
// compiles a stored definition: in the environment of stored rules. It
// does not fail: a rule that does not compile is reported by Validate
// for each object, as kube reports it. Definitions are checked by Check
// before they are stored.
func Compile(st *schema.Structural) *Validator {
	root := buildNodes(st)
	if root == nil {
		return nil
	}
	c := &runtimeCompiler{st: st, done: map[*vnode]bool{}}
	c.node(root, newDeclType(st, st.Resolve(st.Root), true))
	if !root.walk {
		return nil
	}
	return &Validator{st: st, root: root}
}

type runtimeCompiler struct {
	st   *schema.Structural
	done map[*vnode]bool
}

// node compiles the rules at n and below, n's self typed as dt; it
// marks the nodes an object must be walked through.
func (c *runtimeCompiler) node(n *vnode, dt *declType) bool {
	if n == nil || dt == nil {
		return false
	}
	if c.done[n] {
		return n.walk
	}
	c.done[n] = true
	if len(n.s.XValidations) > 0 {
		nc := newNodeCompiler(dt)
		for _, r := range n.s.XValidations {
			// fieldPath is relative to the schema as written
			n.rules = append(n.rules, nc.compile(n.orig, r, storedExpressions, storedExpressions))
		}
		n.walk = true
	}
	for k, p := range n.props {
		var pdt *declType
		if esc, ok := Escape(k); ok {
			f, found := dt.field(esc)
			if !found {
				// rules cannot see it; kube validates nothing below
				continue
			}
			pdt = f.typ
		} else {
			pdt = newDeclType(c.st, p.s, p.resource)
		}
		if c.node(p, pdt) {
			n.walk = true
			n.walkProps = append(n.walkProps, k)
		}
	}
	sort.Strings(n.walkProps)
	if n.items != nil && dt.kind == kindList && c.node(n.items, dt.elem) {
		n.walk = true
	}
	if n.additional != nil && dt.kind == kindMap && c.node(n.additional, dt.elem) {
		n.walk = true
	}
	return n.walk
}

// Validate checks obj (and, on update, old) against every rule at every
// node present in obj, under kube's budgets: PerCallLimit for one run of
// one rule, RuntimeCELCostBudget for all of them; once either is
// exceeded nothing more is evaluated. The violations opts forgive are
// returned apart, for the client to be warned of.
func (v *Validator) Validate(ctx context.Context, obj, old map[string]interface{}, opts Options) (errs, forgiven field.ErrorList) {
	if v == nil || v.root == nil || obj == nil {
		return nil, nil
	}
	e := &evaluation{ctx: ctx, st: v.st, opts: opts, budget: RuntimeCELCostBudget}
	var oldVal interface{}
	if old != nil {
		oldVal = old
	}
	e.walk(v.root, nil, obj, oldVal, false)
	return e.errs, e.forgiven
}

type evaluation struct {
	ctx    context.Context
	st     *schema.Structural
	opts   Options
	budget int64
	// stopped is set once a budget is exhausted: nothing more runs.
	stopped  bool
	errs     field.ErrorList
	forgiven field.ErrorList
}

// walk evaluates the rules at n and below for val; old is its
// counterpart before an update, nil if none; same says val is known
// to be unchanged (an item of an unchanged list, which has no old value
// for transition rules).
func (e *evaluation) walk(n *vnode, path *field.Path, val, old interface{}, same bool) {
	if n == nil || !n.walk || val == nil || e.stopped {
		return
	}
	if len(n.rules) > 0 {
		e.rules(n, path, val, old, same)
		if e.stopped {
			return
		}
	}
	switch x := val.(type) {
	case []interface{}:
		if n.items == nil || !n.items.walk {
			return
		}
		oldItem := e.st.CorrelateMapList(n.s, old)
		itemsSame := same
		if e.opts.Ratchet && n.s.ListType != "map" && !same && old != nil {
			itemsSame = reflect.DeepEqual(val, old)
		}
		for i, item := range x {
			e.walk(n.items, path.Index(i), item, oldItem(item), itemsSame)
			if e.stopped {
				return
			}
		}
	case map[string]interface{}:
		om, _ := old.(map[string]interface{})
		if n.additional != nil && n.additional.walk {
			for _, k := range sortedKeys(x) {
				e.walk(n.additional, path.Key(k), x[k], mapValue(om, k), same)
				if e.stopped {
					return
				}
			}
		}
		for _, k := range n.walkProps {
			if v, ok := x[k]; ok {
				e.walk(n.props[k], path.Child(k), v, mapValue(om, k), same)
				if e.stopped {
					return
				}
			}
		}
	}
}

func mapValue(m map[string]interface{}, k string) interface{} {
	if m == nil {
		return nil
	}
	return m[k]
}

// activation resolves self and oldSelf.
type activation struct {
	self, old ref.Val
	hasOld    bool
}

func (a *activation) ResolveName(name string) (interface{}, bool) {
	switch name {
	case selfVar:
		return a.self, true
	case oldSelfVar:
		return a.old, a.hasOld
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }

// rules evaluates the rules at n against val (and old).
func (e *evaluation) rules(n *vnode, path *field.Path, val, old interface{}, same bool) {
	kind := n.s.Type
	if e.budget <= 0 {
		e.errs = append(e.errs, field.Invalid(path, kind, "validation failed due to running out of cost budget, no further validation rules will be run"))
		e.stopped = true
		return
	}
	act := &activation{self: toVal(val, n)}
	if old != nil {
		act.old, act.hasOld = toVal(old, n), true
	}
	var optAct *activation
	// isUnchanged says whether val is as it was before an update, for
	// ratcheting, comparing at most once; as in kube, the object itself
	// (the root, at path nil) never counts as unchanged.
	unchanged, compared := same, same || path == nil
	isUnchanged := func() bool {
		if !compared {
			compared, unchanged = true, old != nil && reflect.DeepEqual(val, old)
		}
		return unchanged
	}
	for _, r := range n.rules {
		if r.err != nil {
			e.errs = append(e.errs, field.Invalid(path, kind, "rule compile error: "+r.err.detail))
			continue
		}
		if r.program == nil {
			continue
		}
		if r.usesOldSelf && old == nil && !(r.optionalOldSelf && e.opts.OptionalOldSelf) {
			// transition rules need an old value to compare with
			continue
		}
		a := act
		if r.optionalOldSelf {
			if optAct == nil {
				optAct = &activation{self: act.self, old: types.OptionalNone, hasOld: true}
				if act.hasOld {
					optAct.old = types.OptionalOf(act.old)
				}
			}
			a = optAct
		}
		out, cost, err := r.program.eval(e.ctx, a)
		if cost > math.MaxInt64 || int64(cost) > e.budget {
			e.errs = append(e.errs, field.Invalid(path, kind, "validation failed due to running out of cost budget, no further validation rules will be run"))
			e.stopped = true
			return
		}
		e.budget -= int64(cost)
		if err != nil {
			switch msg := err.Error(); {
			case strings.HasPrefix(msg, "no such overload"):
				// only where types are left to run time: int-or-string
				e.errs = append(e.errs, field.Invalid(path, kind, fmt.Sprintf("'%v': call arguments did not match a supported operator, function or macro signature for rule: %v", err, ruleErrorString(r.src))))
			case strings.HasPrefix(msg, "operation cancelled: actual cost limit exceeded"):
				e.errs = append(e.errs, field.Invalid(path, kind, fmt.Sprintf("'%v': no further validation rules will be run due to call cost exceeds limit for rule: %v", err, ruleErrorString(r.src))))
				e.stopped = true
				return
			default:
				// no such key, index out of bounds, overflow, division by zero...
				e.errs = append(e.errs, field.Invalid(path, kind, fmt.Sprintf("%v evaluating rule: %v", err, ruleErrorString(r.src))))
			}
			continue
		}
		if out == types.True {
			continue
		}
		if r.fieldPath != "" {
			// kube-apiserver v1.29 reports this violation and those of
			// the node's later rules under the fieldPath
			path = path.Child(r.fieldPath)
		}
		report := func(err *field.Error) {
			if e.opts.Ratchet && !r.usesOldSelf && isUnchanged() {
				e.forgiven = append(e.forgiven, err)
				return
			}
			e.errs = append(e.errs, err)
		}
		if r.message == nil {
			report(violation(r.src.Reason, path, kind, ruleMessageOrDefault(r.src)))
			continue
		}
		// As kube, the message is evaluated with oldSelf as it is, not
		// as an optional: one that reads an optional oldSelf fails, and
		// the rule's message is given instead.
		msg, fatal, err := e.messageExpression(r, act, path, kind)
		switch {
		case fatal != nil:
			e.errs = append(e.errs, fatal)
			e.stopped = true
			return
		case err != nil:
			report(violation(r.src.Reason, path, kind, ruleMessageOrDefault(r.src)))
		default:
			report(violation(r.src.Reason, path, kind, msg))
		}
	}
}

// messageExpression evaluates a failed rule's messageExpression: its
// message, or an error (the rule's message is given instead), or a
// fatal error that stops evaluation.
func (e *evaluation) messageExpression(r *compiledRule, a *activation, path *field.Path, kind interface{}) (string, *field.Error, error) {
	out, cost, err := r.message.eval(e.ctx, a)
	if cost > math.MaxInt64 || int64(cost) > e.budget {
		return "", field.Invalid(path, kind, "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run"), nil
	}
	if err != nil {
		if strings.HasPrefix(err.Error(), "operation cancelled: actual cost limit exceeded") {
			return "", field.Invalid(path, kind, fmt.Sprintf("no further validation rules will be run due to call cost exceeds limit for messageExpression: %q", r.src.MessageExpression)), nil
		}
		e.budget -= int64(cost)
		return "", nil, fmt.Errorf("messageExpression evaluation failed due to: %v", err)
	}
	e.budget -= int64(cost)
	s, ok := out.Value().(string)
	if !ok {
		return "", nil, fmt.Errorf("messageExpression failed to convert to string")
	}
	s = strings.TrimSpace(s)
	switch {
	case len(s) > maxMessageExpressionLength:
		return "", nil, fmt.Errorf("messageExpression beyond allowable length of %d", maxMessageExpressionLength)
	case hasNewlines(s):
		return "", nil, fmt.Errorf("messageExpression should not contain line breaks")
	case s == "":
		return "", nil, fmt.Errorf("messageExpression should evaluate to a non-empty string")
	}
	return s, nil, nil
}

func ruleErrorString(r schema.ValidationRule) string {
	if r.Message != "" {
		return strings.TrimSpace(r.Message)
	}
	return strings.TrimSpace(r.Rule)
}

func ruleMessageOrDefault(r schema.ValidationRule) string {
	if r.Message == "" {
		return "failed rule: " + ruleErrorString(r)
	}
	return strings.TrimSpace(r.Message)
}

// violation is the error of a failed rule in kube's form for its reason;
// the value reported is the schema type of the node, as kube reports it.
func violation(reason string, path *field.Path, kind interface{}, detail string) *field.Error {
	switch reason {
	case "FieldValueForbidden":
		return field.Forbidden(path, detail)
	case "FieldValueRequired":
		return field.Required(path, detail)
	case "FieldValueDuplicate":
		return field.Duplicate(path, kind)
	}
	return field.Invalid(path, kind, detail)
}

// ValidateDefault evaluates the rules of s and of the schemas below it
// on val, the default of s, as kube does when a definition is written:
// val is its own old value too, so that transition rules hold, and the
// rules compile as stored rules. resource types s as a resource root
// (the schema's root or an embedded resource: apiVersion, kind and
// metadata are known). The violations are below path, the default's
// path. budget is what is left of RuntimeCELCostBudget for all the
// defaults of a definition; what is left after val is returned, below
// zero once a budget or limit stopped evaluation.
func ValidateDefault(ctx context.Context, st *schema.Structural, s *schema.Schema, resource bool, path *field.Path, val interface{}, budget int64) (field.ErrorList, int64) {
	s = st.Resolve(s)
	if s == nil || val == nil {
		return nil, budget
	}
	root := (&nodeBuilder{st: st, seen: map[nodeKey]*vnode{}}).node(s, resource)
	c := &runtimeCompiler{st: st, done: map[*vnode]bool{}}
	if !c.node(root, newDeclType(st, s, resource)) {
		return nil, budget
	}
	e := &evaluation{ctx: ctx, st: st, budget: budget}
	e.walk(root, path, val, val, false)
	if e.stopped {
		return e.errs, -1
	}
	return e.errs, e.budget
}

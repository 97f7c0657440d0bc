package cel

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/schema"
)

// CheckOptions tune Check for an update of a definition.
type CheckOptions struct {
	// Preexisting are the rules (rule and messageExpression texts) the
	// definition had before the update: compiled as stored rules, with
	// everything the server has, not only what its previous version had.
	Preexisting map[string]bool
}

// supportedReasons are the reasons a rule may give, as kube lists them.
var supportedReasons = []string{"FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"}

// Check reports what kube-apiserver v1.29 refuses in the
// x-kubernetes-validations of a definition version's schema st, whose
// root is at fldPath (...openAPIV3Schema): an empty rule, messages with
// line breaks, a bad reason or fieldPath; then, where a node and its
// descendants have none of those, rules that do not compile or are not
// boolean, oldSelf under a list whose items cannot be correlated, and
// estimated costs over the per-rule and per-schema limits. The value of
// a rule error is the rule (a schema.ValidationRule), as kube reports
// its own rule struct.
func Check(st *schema.Structural, fldPath *field.Path, opts CheckOptions) field.ErrorList {
	root := st.Resolve(st.Root)
	if root == nil {
		return nil
	}
	c := &schemaChecker{st: st, opts: opts}
	one := uint64(1)
	schemaErrs, celErrs := c.visit(root, fldPath, newDeclType(st, root, true), &one, nil)
	errs := append(schemaErrs, celErrs...)
	if c.total > StaticEstimatedCRDCostLimit {
		for _, r := range c.mostExpensive {
			errs = append(errs, field.Forbidden(r.path, "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"))
		}
		errs = append(errs, field.Forbidden(fldPath, costErrorMessage("x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema", c.total, StaticEstimatedCRDCostLimit)))
	}
	return errs
}

type schemaChecker struct {
	st   *schema.Structural
	opts CheckOptions
	// total adds up the estimates of every rule and messageExpression;
	// mostExpensive keeps the 4 costliest of at least 1% of the limit.
	total         uint64
	mostExpensive []ruleCost
}

type ruleCost struct {
	path *field.Path
	cost uint64
}

func (c *schemaChecker) observe(path *field.Path, cost uint64) {
	if math.MaxUint64-c.total < cost {
		c.total = math.MaxUint64
	} else {
		c.total += cost
	}
	if cost < StaticEstimatedCRDCostLimit/100 {
		return
	}
	c.mostExpensive = append(c.mostExpensive, ruleCost{path: path, cost: cost})
	sort.SliceStable(c.mostExpensive, func(i, j int) bool { return c.mostExpensive[i].cost > c.mostExpensive[j].cost })
	if len(c.mostExpensive) > 4 {
		c.mostExpensive = c.mostExpensive[:4]
	}
}

// visit checks s at path and below, children first as kube walks a
// schema. dt is s's declared type (nil when rules cannot see s),
// cardinality how many times s can occur in one object (nil: no bound
// from maxItems and maxProperties), uncorrelatable the first list above
// whose items old and new objects cannot pair.
func (c *schemaChecker) visit(s *schema.Schema, path *field.Path, dt *declType, cardinality *uint64, uncorrelatable *field.Path) (schemaErrs, celErrs field.ErrorList) {
	add := func(se, ce field.ErrorList) {
		schemaErrs = append(schemaErrs, se...)
		celErrs = append(celErrs, ce...)
	}
	if s.AdditionalProperties != nil {
		as := c.st.Resolve(s.AdditionalProperties)
		var cdt *declType
		if dt != nil && dt.kind == kindMap {
			cdt = dt.elem
		} else {
			cdt = newDeclType(c.st, as, as.EmbeddedResource)
		}
		add(c.visit(as, path.Child("additionalProperties"), cdt, times(cardinality, s.MaxProperties), uncorrelatable))
	}
	names := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		ps := c.st.Resolve(s.Properties[k])
		add(c.visit(ps, path.Child("properties").Key(k), c.propertyType(dt, k, ps), cardinality, uncorrelatable))
	}
	if s.Items != nil {
		is := c.st.Resolve(s.Items)
		var cdt *declType
		if dt != nil && dt.kind == kindList {
			cdt = dt.elem
		} else {
			cdt = newDeclType(c.st, is, is.EmbeddedResource)
		}
		unc := uncorrelatable
		if unc == nil && s.ListType != "map" {
			unc = path
		}
		add(c.visit(is, path.Child("items"), cdt, times(cardinality, s.MaxItems), unc))
	}
	if len(s.XValidations) == 0 {
		return schemaErrs, celErrs
	}
	xv := path.Child("x-kubernetes-validations")
	for i, r := range s.XValidations {
		rp := xv.Index(i)
		rule, msg := strings.TrimSpace(r.Rule), strings.TrimSpace(r.Message)
		switch {
		case rule == "":
			schemaErrs = append(schemaErrs, field.Required(rp.Child("rule"), "rule is not specified"))
		case r.Message != "" && msg == "":
			schemaErrs = append(schemaErrs, field.Invalid(rp.Child("message"), r.Message, "message must be non-empty if specified"))
		case hasNewlines(msg):
			schemaErrs = append(schemaErrs, field.Invalid(rp.Child("message"), r.Message, "message must not contain line breaks"))
		case hasNewlines(rule) && msg == "":
			schemaErrs = append(schemaErrs, field.Required(rp.Child("message"), "message must be specified if rule contains line breaks"))
		}
		if r.MessageExpression != "" && strings.TrimSpace(r.MessageExpression) == "" {
			schemaErrs = append(schemaErrs, field.Required(rp.Child("messageExpression"), "messageExpression must be non-empty if specified"))
		}
		if r.Reason != "" && !slices.Contains(supportedReasons, r.Reason) {
			schemaErrs = append(schemaErrs, field.NotSupported(rp.Child("reason"), r.Reason, supportedReasons))
		}
		if r.FieldPath != "" && strings.TrimSpace(r.FieldPath) == "" {
			schemaErrs = append(schemaErrs, field.Invalid(rp.Child("fieldPath"), r.FieldPath, "fieldPath must be non-empty if specified"))
		}
		if hasNewlines(r.FieldPath) {
			schemaErrs = append(schemaErrs, field.Invalid(rp.Child("fieldPath"), r.FieldPath, "fieldPath must not contain line breaks"))
		}
		if r.FieldPath != "" {
			if _, _, err := validFieldPath(r.FieldPath, s); err != nil {
				schemaErrs = append(schemaErrs, field.Invalid(rp.Child("fieldPath"), r.FieldPath, "fieldPath must be a valid path"))
			}
		}
	}
	// Rules are compiled only when the schema here and below is sound:
	// otherwise their errors would only confuse.
	if len(schemaErrs) > 0 {
		return schemaErrs, celErrs
	}
	if dt == nil {
		celErrs = append(celErrs, field.InternalError(xv, fmt.Errorf("internal error: failed to construct type information for x-kubernetes-validations rules: unable to convert structural schema to CEL declarations")))
		return schemaErrs, celErrs
	}
	nc := newNodeCompiler(dt)
	for i, r := range s.XValidations {
		rp := xv.Index(i)
		cr := nc.compile(s, r, c.envKind(r.Rule), c.envKind(r.MessageExpression))
		cost := cr.maxCost
		if cardinality != nil {
			cost = multiplyNoOverflow(cost, *cardinality)
		} else {
			cost = multiplyNoOverflow(cost, maxCardinality(dt.minSize))
		}
		if cost > StaticEstimatedCostLimit {
			celErrs = append(celErrs, field.Forbidden(rp.Child("rule"), costErrorMessage("estimated rule cost", cost, StaticEstimatedCostLimit)))
		}
		c.observe(rp.Child("rule"), cost)
		if cr.err != nil {
			celErrs = append(celErrs, field.Invalid(rp.Child("rule"), r, cr.err.detail))
		}
		if cr.messageErr != nil {
			celErrs = append(celErrs, field.Invalid(rp.Child("messageExpression"), r, cr.messageErr.detail))
		} else if cr.message != nil {
			if cr.messageMaxCost > StaticEstimatedCostLimit {
				celErrs = append(celErrs, field.Forbidden(rp.Child("messageExpression"), costErrorMessage("estimated messageExpression cost", cr.messageMaxCost, StaticEstimatedCostLimit)))
			}
			c.observe(rp.Child("messageExpression"), cr.messageMaxCost)
		}
		if cr.usesOldSelf {
			if uncorrelatable != nil {
				celErrs = append(celErrs, field.Invalid(rp.Child("rule"), r.Rule, fmt.Sprintf("oldSelf cannot be used on the uncorrelatable portion of the schema within %v", uncorrelatable)))
			}
		} else if r.OptionalOldSelf {
			// as in kube, oldSelf counts as used only by a rule that
			// compiles
			celErrs = append(celErrs, field.Invalid(rp.Child("optionalOldSelf"), true, "may not be set if oldSelf is not used in rule"))
		}
	}
	return schemaErrs, celErrs
}

// envKind is the environment an expression is compiled in: a new one
// for what 1.28 had, one the definition had before for all of 1.29.
func (c *schemaChecker) envKind(expr string) int {
	if c.opts.Preexisting[expr] {
		return storedExpressions
	}
	return newExpressions
}

// propertyType is the declared type of property k of a node of type
// dt: its field, or for a name rules cannot reach, its own.
func (c *schemaChecker) propertyType(dt *declType, k string, ps *schema.Schema) *declType {
	if dt != nil && dt.kind == kindObject {
		if esc, ok := Escape(k); ok {
			if f, ok := dt.fields[esc]; ok {
				return f.typ
			}
		}
	}
	return newDeclType(c.st, ps, ps.EmbeddedResource)
}

func times(cardinality *uint64, bound *int64) *uint64 {
	if cardinality == nil || bound == nil {
		return nil
	}
	v := multiplyNoOverflow(*cardinality, uint64(zeroIfNegative(*bound)))
	return &v
}

func hasNewlines(s string) bool { return strings.ContainsAny(s, "\n\r") }

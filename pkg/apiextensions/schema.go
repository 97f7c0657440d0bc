package apiextensions

import (
	"context"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/cel"
	cronschema "github.com/cronplane/cronplane/pkg/schema"
	"github.com/cronplane/cronplane/pkg/warning"
)

// CheckSchema reports what kube refuses in a version's openAPIV3Schema,
// in kube's order: a nullable root, a schema that is not structural or
// has bad keywords, defaults that do not validate (validation rules
// included, within one runtime cost budget for them all), then validation rules
// that are malformed, do not compile or cost too much. old are the
// definition's schemas before an update (none on create): rules they
// already had compile as kube compiles stored rules, with every function
// the server has, not only those of the release before.
func CheckSchema(v map[string]interface{}, old []map[string]interface{}, _ bool, path *field.Path) field.ErrorList {
	budget := int64(cel.RuntimeCELCostBudget)
	s, errs := cronschema.CheckCRDSchema(v, path, func(st *cronschema.Structural, s *cronschema.Schema, resource bool, p *field.Path, val interface{}) field.ErrorList {
		if budget < 0 {
			return nil
		}
		var errs field.ErrorList
		errs, budget = cel.ValidateDefault(context.Background(), st, s, resource, p, val, budget)
		return errs
	})
	if len(errs) > 0 {
		return errs
	}
	st := &cronschema.Structural{Root: s}
	opts := cel.CheckOptions{}
	if len(old) > 0 {
		opts.Preexisting = map[string]bool{}
		for _, o := range old {
			if os, oerrs := cronschema.ParseOpenAPIV3(o, path); len(oerrs) == 0 {
				rulesOf(os, opts.Preexisting)
			}
		}
	}
	for _, e := range cel.Check(st, path, opts) {
		if r, ok := e.BadValue.(cronschema.ValidationRule); ok {
			e.BadValue = kubeRule(r)
		}
		errs = append(errs, e)
	}
	return errs
}

// rulesOf collects the rule and messageExpression texts of s.
func rulesOf(s *cronschema.Schema, into map[string]bool) map[string]bool {
	if s == nil {
		return into
	}
	for _, r := range s.XValidations {
		into[r.Rule] = true
		if r.MessageExpression != "" {
			into[r.MessageExpression] = true
		}
	}
	for _, p := range s.Properties {
		rulesOf(p, into)
	}
	rulesOf(s.Items, into)
	rulesOf(s.AdditionalProperties, into)
	return into
}

// ValidationRule is a rule as kube-apiserver prints it in the error of a
// rule that does not compile: the value of kube's internal
// apiextensions.ValidationRule, printed with %#v, so that the messages
// read the same.
type ValidationRule struct {
	Rule              string
	Message           string
	MessageExpression string
	Reason            *FieldValueErrorReason
	FieldPath         string
	OptionalOldSelf   *bool
}

// FieldValueErrorReason is a rule's reason.
type FieldValueErrorReason string

func kubeRule(r cronschema.ValidationRule) ValidationRule {
	out := ValidationRule{Rule: r.Rule, Message: r.Message, MessageExpression: r.MessageExpression, FieldPath: r.FieldPath}
	if r.Reason != "" {
		reason := FieldValueErrorReason(r.Reason)
		out.Reason = &reason
	}
	if r.OptionalOldSelf {
		t := true
		out.OptionalOldSelf = &t
	}
	return out
}

// versionSchema is one served version's schema and its compiled
// validation rules, built once per version of a definition.
type versionSchema struct {
	st    *cronschema.Structural
	rules *cel.Validator
	// ratcheting is kube's CRDValidationRatcheting gate: rules with
	// optionalOldSelf run where there is no old value too, and an
	// update through the main resource is forgiven what is wrong with
	// the values it leaves unchanged.
	ratcheting bool
}

// newVersionSchema parses a stored version's schema; its rules are
// compiled when it is served.
func newVersionSchema(v map[string]interface{}, served, ratcheting bool) (*versionSchema, error) {
	// Stored definitions are served as they are: a schema kube accepted
	// under older rules is not checked again.
	s, errs := cronschema.ParseOpenAPIV3(v, field.NewPath("openAPIV3Schema"))
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	st := &cronschema.Structural{Root: s}
	if !served {
		return &versionSchema{st: st}, nil
	}
	// A stored rule that does not compile fails each object it applies
	// to, as in kube; it does not stop the version from being served.
	return &versionSchema{st: st, rules: cel.Compile(st), ratcheting: ratcheting}, nil
}

// validate checks a custom object written through the main resource (old
// is nil on create): its values, the metadata of its embedded resources
// and its set and map lists, then its validation rules. With ratcheting,
// an update is forgiven the errors of values it leaves unchanged (see
// cronschema.Structural.ValidateUpdate and cel.Options.Ratchet); as
// kube, the forgiven violations of rules are sent as warnings to the
// client of ctx.
func (vs *versionSchema) validate(ctx context.Context, obj, old map[string]interface{}) field.ErrorList {
	if old == nil {
		return vs.withRules(ctx, vs.st.Validate(obj), obj, nil, false)
	}
	return vs.withRules(ctx, vs.st.ValidateUpdate(obj, old, vs.ratcheting), obj, old, vs.ratcheting)
}

// validateStatus checks an update through the status subresource as
// kube does: the status alone against its schema, the lists, then the
// rules over the whole object. Nothing is forgiven there.
func (vs *versionSchema) validateStatus(obj, old map[string]interface{}) field.ErrorList {
	return vs.withRules(context.Background(), vs.st.ValidateStatusUpdate(obj, old), obj, old, false)
}

// withRules adds to errs, what the schema found, the violations of the
// validation rules. As kube, rules are not evaluated when errs has
// errors that make them meaningless (a required field missing, a wrong
// type, a value not in the enum, too long, too many): one error says so
// instead.
func (vs *versionSchema) withRules(ctx context.Context, errs field.ErrorList, obj, old map[string]interface{}, ratchet bool) field.ErrorList {
	if vs.rules == nil {
		return errs
	}
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return append(errs, field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"))
		}
	}
	ruleErrs, forgiven := vs.rules.Validate(context.Background(), obj, old, cel.Options{OptionalOldSelf: vs.ratcheting, Ratchet: ratchet})
	for _, f := range forgiven {
		warning.Add(ctx, f.Error())
	}
	return append(errs, ruleErrs...)
}

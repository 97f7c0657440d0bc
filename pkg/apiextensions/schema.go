package apiextensions

import (
	"context"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/cel"
	cronschema "github.com/cronplane/cronplane/pkg/schema"
)

// CheckSchema reports what kube refuses in a version's openAPIV3Schema,
// in kube's order: a nullable root, a schema that is not structural or
// has bad keywords, defaults that do not validate, then validation rules
// that are malformed, do not compile or cost too much. old are the
// definition's schemas before an update (none on create): rules they
// already had compile as kube compiles stored rules, with every function
// the server has, not only those of the release before.
func CheckSchema(v map[string]interface{}, old []map[string]interface{}, _ bool, path *field.Path) field.ErrorList {
	s, errs := cronschema.CheckCRDSchema(v, path)
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
}

// newVersionSchema parses a stored version's schema; its rules are
// compiled when it is served.
func newVersionSchema(v map[string]interface{}, served bool) (*versionSchema, error) {
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
	return &versionSchema{st: st, rules: cel.Compile(st)}, nil
}

// validate checks a custom object's values, then its validation rules
// (old is nil on create). As kube, rules are not evaluated when the
// values have errors that make them meaningless (a required field
// missing, a wrong type, a value not in the enum, too long, too many):
// one error says so instead.
func (vs *versionSchema) validate(obj, old map[string]interface{}) field.ErrorList {
	errs := vs.st.Validate(obj)
	if vs.rules == nil {
		return errs
	}
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return append(errs, field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"))
		}
	}
	return append(errs, vs.rules.Validate(context.Background(), obj, old)...)
}

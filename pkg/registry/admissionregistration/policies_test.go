package admissionregistration

import (
	"strings"
	"testing"

	"k8s.io/api/admissionregistration/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func errorStrings(errs field.ErrorList) string {
	s := make([]string, len(errs))
	for i, e := range errs {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// The answers below are kube-apiserver v1.29's to the same objects.
func TestValidatePolicy_GivesKubesErrorsInKubesOrder(t *testing.T) {
	rule := v1beta1.NamedRuleWithOperations{RuleWithOperations: v1beta1.RuleWithOperations{
		Operations: []v1beta1.OperationType{"*", "CREATE"},
		Rule:       v1beta1.Rule{APIGroups: []string{"*", "a"}, APIVersions: []string{"", "*"}, Resources: []string{"*", "pods", "pods"}},
	}}
	for _, tc := range []struct {
		name string
		spec v1beta1.ValidatingAdmissionPolicySpec
		want string
	}{{
		name: "empty",
		want: `spec.matchConstraints: Required value
spec.validations: Required value: validations or auditAnnotations must contain at least one item
spec.auditAnnotations: Required value: validations or auditAnnotations must contain at least one item`,
	}, {
		name: "rules, expressions and annotations",
		spec: v1beta1.ValidatingAdmissionPolicySpec{
			ParamKind:        &v1beta1.ParamKind{APIVersion: "a/b/c", Kind: "x"},
			MatchConstraints: &v1beta1.MatchResources{ResourceRules: []v1beta1.NamedRuleWithOperations{rule}},
			Validations: []v1beta1.Validation{
				{Expression: "1", Message: "a\nb", MessageExpression: "1", Reason: ptr(metav1.StatusReason("X"))},
				{Expression: "has(params.x)", Message: "  "},
				{Expression: "x"},
			},
			AuditAnnotations: []v1beta1.AuditAnnotation{{Key: "k", ValueExpression: "1"}, {Key: "k", ValueExpression: "null"}},
			Variables:        []v1beta1.Variable{{Name: "1x", Expression: "1"}},
			MatchConditions:  []v1beta1.MatchCondition{{Name: "m", Expression: "true"}, {Name: "m", Expression: "authorizer.requestResource.check('get').allowed()"}},
		},
		want: `spec.paramKind.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c
spec.matchConstraints.resourceRules[0].operations: Invalid value: []admissionregistration.OperationType{"*", "CREATE"}: if '*' is present, must not specify other operations
spec.matchConstraints.resourceRules[0].apiGroups: Invalid value: []string{"*", "a"}: if '*' is present, must not specify other API groups
spec.matchConstraints.resourceRules[0].apiVersions: Invalid value: []string{"", "*"}: if '*' is present, must not specify other API versions
spec.matchConstraints.resourceRules[0].apiVersions[0]: Required value
spec.matchConstraints.resourceRules[0].resources: Invalid value: []string{"*", "pods", "pods"}: if '*' is present, must not specify other resources without subresources
spec.matchConditions[1].name: Duplicate value: "m"
spec.variables[0].name: Invalid value: "1x": name is not a valid CEL identifier
spec.validations[0].expression: Invalid value: "1": must evaluate to bool
spec.validations[0].messageExpression: Invalid value: "1": must evaluate to string
spec.validations[0].message: Invalid value: "a\nb": message must not contain line breaks
spec.validations[0].reason: Unsupported value: "X": supported values: "Forbidden", "Invalid", "RequestEntityTooLarge"
spec.validations[1].message: Invalid value: "  ": message must be non-empty if specified
spec.validations[2].expression: Invalid value: "x": compilation failed: ERROR: <input>:1:1: undeclared reference to 'x' (in container '')
 | x
 | ^
spec.auditAnnotations[0].valueExpression: Invalid value: "1": must evaluate to one of [string null_type]
spec.auditAnnotations[1].key: Duplicate value: "k"`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p := &v1beta1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: tc.spec}
			defaultPolicy(p)
			if got := errorStrings(ValidatePolicy(p)); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestValidateBinding_GivesKubesErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec v1beta1.ValidatingAdmissionPolicyBindingSpec
		want string
	}{{
		name: "empty",
		want: "spec.policyName: Required value\nspec.validationActions: Required value: at least one validation action is required",
	}, {
		name: "params and actions",
		spec: v1beta1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        "p",
			ParamRef:          &v1beta1.ParamRef{Name: "a", Selector: &metav1.LabelSelector{}, ParameterNotFoundAction: ptr(v1beta1.ParameterNotFoundActionType("X"))},
			ValidationActions: []v1beta1.ValidationAction{"Deny", "Deny", "Nope", "Warn"},
			MatchResources:    &v1beta1.MatchResources{},
		},
		want: `spec.paramRef.name: Forbidden: name and selector are mutually exclusive
spec.paramRef.selector: Forbidden: name and selector are mutually exclusive
spec.paramRef.parameterNotFoundAction: Unsupported value: "X": supported values: "Deny", "Allow"
spec.validationActions[1]: Duplicate value: "Deny"
spec.validationActions[2]: Unsupported value: "Nope": supported values: "Audit", "Deny", "Warn"
spec.validationActions: Invalid value: []admissionregistration.ValidationAction{"Deny", "Deny", "Nope", "Warn"}: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			b := &v1beta1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: tc.spec}
			defaultMatchResources(b.Spec.MatchResources)
			if got := errorStrings(validateBinding(b)); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

package apiextensions

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func decodeMap(t *testing.T, js string) map[string]interface{} {
	t.Helper()
	var v map[string]interface{}
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestCheckSchema_RuleErrorsAsKube: a rule that does not compile is
// reported as kube-apiserver v1.29 reports it, its value printed as
// kube prints its own rule struct.
func TestCheckSchema_RuleErrorsAsKube(t *testing.T) {
	errs := CheckSchema(decodeMap(t, `{"type":"object","properties":{"spec":{"type":"object","properties":{"name":{"type":"string"}},
	 "x-kubernetes-validations":[{"rule":"self.name == 1"}]}}}`), nil, false, field.NewPath("spec", "validation", "openAPIV3Schema"))
	want := `spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:"self.name == 1", Message:"", MessageExpression:"", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:11: found no matching overload for '_==_' applied to '(string, int)'` +
		"\n | self.name == 1\n | ..........^"
	if len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("got %v\nwant %s", errs, want)
	}
}

// TestCheckSchema_CostOverBudget: the words and figures kube-apiserver
// v1.29 gives for this schema.
func TestCheckSchema_CostOverBudget(t *testing.T) {
	errs := CheckSchema(decodeMap(t, `{"type":"object","properties":{"spec":{"type":"object","properties":{
	 "l":{"type":"array","items":{"type":"string","x-kubernetes-validations":[{"rule":"self.size() > 1 && self.size() < 9 && self.size() != 4 && self.size() != 5"}]}}}}}}`),
		nil, false, field.NewPath("spec", "validation", "openAPIV3Schema"))
	want := "spec.validation.openAPIV3Schema.properties[spec].properties[l].items.x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of 1.258291x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
	if len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("got %v\nwant %s", errs, want)
	}
}

// TestCheckSchema_PreexistingRules: a rule the version already had
// may use what stored rules may use (format is newer than what new
// rules get).
func TestCheckSchema_PreexistingRules(t *testing.T) {
	s := decodeMap(t, `{"type":"object","x-kubernetes-validations":[{"rule":"'%d'.format([1]) == '1'"}]}`)
	if errs := CheckSchema(s, nil, false, field.NewPath("openAPIV3Schema")); len(errs) != 1 {
		t.Errorf("create: %v, want format refused", errs)
	}
	if errs := CheckSchema(s, []map[string]interface{}{s}, false, field.NewPath("openAPIV3Schema")); len(errs) != 0 {
		t.Errorf("update keeping the rule: %v", errs)
	}
}

// TestValidate_RulesSkippedAfterBlockingErrors: with a missing required
// field, a wrong type, a value outside the enum, a string too long or a
// list too long, rules are not run and kube's note says so; other
// errors (a pattern) leave them running. Answers of kube-apiserver
// v1.29.
func TestValidate_RulesSkippedAfterBlockingErrors(t *testing.T) {
	vs, err := newVersionSchema(decodeMap(t, `{"type":"object","properties":{"spec":{"type":"object","required":["r"],
	 "properties":{"r":{"type":"string"},"q":{"type":"string","maxLength":2},"i":{"type":"integer"},"en":{"type":"string","enum":["a"]},"pat":{"type":"string","pattern":"^a"},
	  "l":{"type":"array","maxItems":1,"items":{"type":"integer"}}},
	 "x-kubernetes-validations":[{"rule":"false","message":"always"}]}}}`), true, false)
	if err != nil {
		t.Fatal(err)
	}
	const skipped = `<nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`
	tests := []struct{ spec, want string }{
		{`{"r":"x","q":"abc"}`, `[spec.q: Too long: may not be longer than 2, ` + skipped + `]`},
		{`{"q":"a"}`, `[spec.r: Required value, ` + skipped + `]`},
		{`{"r":"x","en":"b"}`, `[spec.en: Unsupported value: "b": supported values: "a", ` + skipped + `]`},
		{`{"r":"x","l":[1,2]}`, `[spec.l: Too many: 2: must have at most 1 items, ` + skipped + `]`},
		{`{"r":"x","pat":"b"}`, `[spec.pat: Invalid value: "b": spec.pat in body should match '^a', spec: Invalid value: "object": always]`},
		{`{"r":"x"}`, `spec: Invalid value: "object": always`},
	}
	for _, tt := range tests {
		obj := decodeMap(t, `{"apiVersion":"example.org/v1","kind":"Rt","metadata":{"name":"rt1"},"spec":`+tt.spec+`}`)
		if got := vs.validate(context.Background(), obj, nil).ToAggregate().Error(); got != tt.want {
			t.Errorf("%s:\n got  %s\n want %s", tt.spec, got, tt.want)
		}
	}
	// a wrong type
	obj := decodeMap(t, `{"spec":{"r":"x","i":"str"}}`)
	if got := vs.validate(context.Background(), obj, nil).ToAggregate().Error(); !strings.HasSuffix(got, skipped+"]") {
		t.Errorf("wrong type: %s", got)
	}
}

package apiextensions

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
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

// TestCheckSchema_DefaultsMustSatisfyRules: a default that fails a
// validation rule of its schema, or of a schema below it, refuses the
// definition in kube-apiserver v1.29's words; a transition rule holds
// (the default is its own old value) and a default that fails its value
// validations is not evaluated further.
func TestCheckSchema_DefaultsMustSatisfyRules(t *testing.T) {
	const base = "spec.validation.openAPIV3Schema.properties[spec]"
	tests := []struct{ name, spec, want string }{
		{"RuleOnTheDefault", `{"n":{"type":"integer","default":3,"x-kubernetes-validations":[{"rule":"self > 5"}]}}`,
			base + `.properties[n].default: Invalid value: "integer": failed rule: self > 5`},
		{"RuleBelowTheDefault", `{"o":{"type":"object","default":{"n":1},"properties":{"n":{"type":"integer","x-kubernetes-validations":[{"rule":"self > 5","message":"too small"}]}}}}`,
			base + `.properties[o].default.n: Invalid value: "integer": too small`},
		{"TransitionRuleHolds", `{"n":{"type":"integer","default":3,"x-kubernetes-validations":[{"rule":"self == oldSelf","message":"immutable"}]}}`, ``},
		{"ReasonAndFieldPath", `{"o":{"type":"object","default":{"a":1},"properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"x-kubernetes-validations":[{"rule":"has(self.b)","reason":"FieldValueRequired","fieldPath":".b","message":"b needed"}]}}`,
			base + `.properties[o].default.b: Required value: b needed`},
		{"MessageExpressionAndItems", `{"s":{"type":"string","default":"ab","x-kubernetes-validations":[{"rule":"self.size() > 3","messageExpression":"'short: ' + self"}]}}`,
			base + `.properties[s].default: Invalid value: "string": short: ab`},
		{"EachItem", `{"l":{"type":"array","items":{"type":"integer","x-kubernetes-validations":[{"rule":"self > 0"}]},"default":[1,0,-1]}}`,
			`[` + base + `.properties[l].default[1]: Invalid value: "integer": failed rule: self > 0, ` + base + `.properties[l].default[2]: Invalid value: "integer": failed rule: self > 0]`},
		{"RuleThatDoesNotCompile", `{"n":{"type":"integer","default":3,"x-kubernetes-validations":[{"rule":"self.foo > 1"}]}}`,
			base + ".properties[n].default: Invalid value: \"integer\": rule compile error: compilation failed: ERROR: <input>:1:5: type 'int' does not support field selection\n | self.foo > 1\n | ....^"},
		{"InvalidValueFirst", `{"n":{"type":"integer","default":3,"maximum":2,"x-kubernetes-validations":[{"rule":"self > 5"}]}}`,
			base + `.properties[n].default: Invalid value: 3:  in body should be less than or equal to 2`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// whole numbers as int64, as definitions are decoded
			var v map[string]interface{}
			if err := sigsjson.UnmarshalCaseSensitivePreserveInts([]byte(`{"type":"object","properties":{"spec":{"type":"object","properties":`+tt.spec+`}}}`), &v); err != nil {
				t.Fatal(err)
			}
			errs := CheckSchema(v, nil, false, field.NewPath("spec", "validation", "openAPIV3Schema"))
			got := ""
			if agg := errs.ToAggregate(); agg != nil {
				got = agg.Error()
			}
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

package v1beta1

import (
	"encoding/json"
	"testing"
)

// TestJSONSchemaProps_RuleFieldsOmittedAsKube: a rule encodes in kube's
// field order; its strings are left out when empty, optionalOldSelf (a
// pointer in kube) only when absent, so that false stays.
func TestJSONSchemaProps_RuleFieldsOmittedAsKube(t *testing.T) {
	for _, tt := range []struct{ rule, want string }{
		{`{"optionalOldSelf":false,"message":"","rule":"self == oldSelf"}`, `{"rule":"self == oldSelf","optionalOldSelf":false}`},
		{`{"optionalOldSelf":true,"fieldPath":".a","reason":"FieldValueForbidden","rule":"r","messageExpression":"m"}`,
			`{"rule":"r","messageExpression":"m","reason":"FieldValueForbidden","fieldPath":".a","optionalOldSelf":true}`},
		{`{"rule":"r","optionalOldSelf":null}`, `{"rule":"r"}`},
	} {
		var s JSONSchemaProps
		if err := json.Unmarshal([]byte(`{"type":"object","x-kubernetes-validations":[`+tt.rule+`]}`), &s); err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"type":"object","x-kubernetes-validations":[` + tt.want + `]}`; string(got) != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
}

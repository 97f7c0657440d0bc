package cel

import (
	"strings"
	"testing"
)

func TestPolicyCompiler_VariablesHaveTheirExpressionsTypes(t *testing.T) {
	cases := []struct {
		name    string
		vars    [][2]string
		expr    string
		want    PolicyResult
		wantErr string
	}{
		{name: "a bool variable is a validation", vars: [][2]string{{"replicas", "object.spec.replicas"}, {"odd", "variables.replicas % 2 == 1"}}, expr: "variables.odd", want: PolicyBool},
		{name: "a string variable is a message", vars: [][2]string{{"who", "'name ' + object.metadata.name"}}, expr: "variables.who", want: PolicyString},
		{name: "a string variable is not a validation", vars: [][2]string{{"who", "'x'"}}, expr: "variables.who", want: PolicyBool, wantErr: "must evaluate to bool"},
		{name: "a dyn variable is not a validation", vars: [][2]string{{"spec", "object.spec"}}, expr: "variables.spec", want: PolicyBool, wantErr: "must evaluate to bool"},
		{name: "an undeclared variable does not compile", expr: "variables.nope == 1", want: PolicyBool, wantErr: "undefined field 'nope'"},
		{name: "a variable that failed to compile is dyn", vars: [][2]string{{"bad", "object.("}}, expr: "variables.bad == 1", want: PolicyBool},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewPolicyCompiler(false)
			for _, v := range tc.vars {
				_, _ = c.CompileVariable(v[0], v[1])
			}
			_, err := c.Compile(tc.expr, tc.want, true)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Compile(%q): %v", tc.expr, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Compile(%q) = %v, want an error with %q", tc.expr, err, tc.wantErr)
			}
		})
	}
}

func TestPolicyCompiler_AVariableSeesOnlyThoseBeforeIt(t *testing.T) {
	c := NewPolicyCompiler(false)
	if _, err := c.CompileVariable("first", "variables.second == 1"); err == nil || !strings.Contains(err.Error(), "undefined field 'second'") {
		t.Fatalf("a forward reference compiled: %v", err)
	}
	if _, err := c.CompileVariable("second", "1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compile("variables.second == 1", PolicyBool, false); err != nil {
		t.Fatalf("a declared variable did not compile: %v", err)
	}
}

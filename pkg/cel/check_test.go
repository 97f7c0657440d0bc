package cel

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/schema"
)

var crdSchemaPath = field.NewPath("spec", "validation", "openAPIV3Schema")

// checkSpec checks a root schema whose spec is the given schema (JSON)
// and returns each error as kube-apiserver prints it, with the number
// of self types ("selfType123") left out.
func checkSpec(t *testing.T, spec string) []string {
	t.Helper()
	return checkRoot(t, `{"type":"object","properties":{"spec":`+spec+`}}`)
}

var selfTypeNumber = regexp.MustCompile(`selfType[0-9]+`)

func checkRoot(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	for _, e := range Check(mustSchema(t, root), crdSchemaPath, CheckOptions{}) {
		out = append(out, selfTypeNumber.ReplaceAllString(errorString(e), "selfTypeN"))
	}
	return out
}

// errorString prints e as kube does, with the rule struct kube puts in
// a compile error left out: the CRD-level test in pkg/apiextensions
// checks that part.
func errorString(e *field.Error) string {
	if _, ok := e.BadValue.(schema.ValidationRule); ok {
		return e.Field + ": " + e.Type.String() + ": RULE: " + e.Detail
	}
	return e.Error()
}

func rulesJSON(rules ...string) string {
	var l []map[string]string
	for _, r := range rules {
		l = append(l, map[string]string{"rule": r})
	}
	b, _ := json.Marshal(l)
	return string(b)
}

const ruleAt = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: "

// typesSpec has a property of each kind kube types.
const typesSpec = `{"type":"object","properties":{
 "name":{"type":"string","maxLength":10},
 "obj":{"type":"object","properties":{"a":{"type":"integer"}}},
 "pu":{"type":"object","x-kubernetes-preserve-unknown-fields":true},
 "pun":{"x-kubernetes-preserve-unknown-fields":true},
 "ios":{"x-kubernetes-int-or-string":true},
 "emb":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true},
 "a-b":{"type":"integer"},"a.b":{"type":"integer"},"x__y":{"type":"integer"},"a/b":{"type":"integer"},
 "namespace":{"type":"integer"},"in":{"type":"integer"},"var":{"type":"integer"},"while":{"type":"integer"},"int":{"type":"integer"},
 "1abc":{"type":"integer"},"a b":{"type":"integer"},"_x":{"type":"integer"},"-x":{"type":"integer"},"a@b":{"type":"integer"},
 "ts":{"type":"string","format":"date-time"},"d":{"type":"string","format":"date"},"dur":{"type":"string","format":"duration"},"by":{"type":"string","format":"byte"},
 "m":{"type":"object","additionalProperties":{"type":"string"}},
 "l":{"type":"array","maxItems":5,"items":{"type":"object","properties":{"a":{"type":"integer"}}}},
 "mo":{"type":"object","additionalProperties":{"type":"object","properties":{"a":{"type":"integer"}}}},
 "ll":{"type":"array","maxItems":5,"items":{"type":"array","maxItems":5,"items":{"type":"object","properties":{"a":{"type":"integer"}}}}}
}}`

// TestCheck_TypeErrors: rules are type-checked against the schema's
// types; the errors are kube-apiserver v1.29's, at the rule's path.
func TestCheck_TypeErrors(t *testing.T) {
	tests := []struct {
		rule string
		want string // "" when the rule is accepted
	}{
		// objects: declared fields only
		{"self.nope > 0", "compilation failed: ERROR: <input>:1:5: undefined field 'nope'\n | self.nope > 0\n | ....^"},
		{"self.obj == 1", "compilation failed: ERROR: <input>:1:10: found no matching overload for '_==_' applied to '(selfTypeN.obj, int)'\n | self.obj == 1\n | .........^"},
		{"self.obj.a == 'x'", "compilation failed: ERROR: <input>:1:12: found no matching overload for '_==_' applied to '(int, string)'\n | self.obj.a == 'x'\n | ...........^"},
		{"self.name == 1", "compilation failed: ERROR: <input>:1:11: found no matching overload for '_==_' applied to '(string, int)'\n | self.name == 1\n | ..........^"},
		{"self.name", "cel expression must evaluate to a bool"},
		// lists, maps and the names of their element types
		{"self.l[0] == 1", "compilation failed: ERROR: <input>:1:11: found no matching overload for '_==_' applied to '(selfTypeN.l.@idx, int)'\n | self.l[0] == 1\n | ..........^"},
		{"self.l == 1", "compilation failed: ERROR: <input>:1:8: found no matching overload for '_==_' applied to '(list(selfTypeN.l.@idx), int)'\n | self.l == 1\n | .......^"},
		{"self.mo['x'] == 1", "compilation failed: ERROR: <input>:1:14: found no matching overload for '_==_' applied to '(selfTypeN.mo.@elem, int)'\n | self.mo['x'] == 1\n | .............^"},
		{"self.ll[0][0] == 1", "compilation failed: ERROR: <input>:1:15: found no matching overload for '_==_' applied to '(selfTypeN.ll.@idx.@idx, int)'\n | self.ll[0][0] == 1\n | ..............^"},
		{"self.m == 1", "compilation failed: ERROR: <input>:1:8: found no matching overload for '_==_' applied to '(map(string, string), int)'\n | self.m == 1\n | .......^"},
		{"self.m.x == 'y'", ""},
		// formats
		{"self.ts == 1", "compilation failed: ERROR: <input>:1:9: found no matching overload for '_==_' applied to '(timestamp, int)'\n | self.ts == 1\n | ........^"},
		{"self.d == 1", "compilation failed: ERROR: <input>:1:8: found no matching overload for '_==_' applied to '(timestamp, int)'\n | self.d == 1\n | .......^"},
		{"self.dur == 1", "compilation failed: ERROR: <input>:1:10: found no matching overload for '_==_' applied to '(duration, int)'\n | self.dur == 1\n | .........^"},
		{"self.by == 1", "compilation failed: ERROR: <input>:1:9: found no matching overload for '_==_' applied to '(bytes, int)'\n | self.by == 1\n | ........^"},
		// int-or-string is dyn
		{"self.ios == 1 || self.ios == 'a'", ""},
		// preserve-unknown-fields: an object without fields, or nothing
		{"has(self.pu.foo)", "compilation failed: ERROR: <input>:1:4: undefined field 'foo'\n | has(self.pu.foo)\n | ...^"},
		{"self.pu == self.pu", ""},
		{"self.pun == 1", "compilation failed: ERROR: <input>:1:5: undefined field 'pun'\n | self.pun == 1\n | ....^"},
		// embedded resources: apiVersion, kind, metadata.name and .generateName
		{"self.emb.metadata.name == 'x' && self.emb.kind == 'k' && self.emb.apiVersion == 'v' && self.emb.metadata.generateName == 'g'", ""},
		{"self.emb.metadata.labels == {}", "compilation failed: ERROR: <input>:1:18: undefined field 'labels'\n | self.emb.metadata.labels == {}\n | .................^"},
		{"self.emb.spec == 1", "compilation failed: ERROR: <input>:1:9: undefined field 'spec'\n | self.emb.spec == 1\n | ........^"},
		{"self.emb.metadata == 1", "compilation failed: ERROR: <input>:1:19: found no matching overload for '_==_' applied to '(selfTypeN.emb.metadata, int)'\n | self.emb.metadata == 1\n | ..................^"},
		// transition rules
		{"self == oldSelf", ""},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			spec := strings.Replace(typesSpec, `{"type":"object","properties":{`, `{"type":"object","x-kubernetes-validations":`+rulesJSON(tt.rule)+`,"properties":{`, 1)
			got := checkSpec(t, spec)
			if tt.want == "" {
				if len(got) != 0 {
					t.Fatalf("got %q, want the rule accepted", got)
				}
				return
			}
			if want := ruleAt + "Invalid value: RULE: " + tt.want; len(got) != 1 || got[0] != want {
				t.Fatalf("got %q\nwant %q", got, want)
			}
		})
	}
}

// TestCheck_Escaping: property names reach rules escaped, as kube
// escapes them; names CEL cannot spell are not reachable.
func TestCheck_Escaping(t *testing.T) {
	tests := []struct {
		rule   string
		accept bool
	}{
		{"self.a__dash__b > 0", true},
		{"self.a__dot__b > 0", true},
		{"self.x__underscores__y > 0", true},
		{"self.a__slash__b > 0", true},
		{"self.__namespace__ + self.__in__ + self.__var__ + self.__while__ > 0", true},
		{"self.int > 0", true}, // not reserved
		{"self.__int__ > 0", false},
		{"self._x > 0", true},
		{"self.__dash__x > 0", true},
		{"has(self.a__at__b)", false}, // "@" is not allowed: not reachable
		{"self.namespace > 0", false},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			spec := strings.Replace(typesSpec, `{"type":"object","properties":{`, `{"type":"object","x-kubernetes-validations":`+rulesJSON(tt.rule)+`,"properties":{`, 1)
			got := checkSpec(t, spec)
			if tt.accept != (len(got) == 0) {
				t.Fatalf("got %q, want accepted: %v", got, tt.accept)
			}
		})
	}
}

func TestEscape(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"name", "name", true},
		{"a-b", "a__dash__b", true},
		{"a.b", "a__dot__b", true},
		{"a/b", "a__slash__b", true},
		{"x__y", "x__underscores__y", true},
		{"x___y", "x__underscores___y", true},
		{"_x", "_x", true},
		{"-x", "__dash__x", true},
		{"namespace", "__namespace__", true},
		{"true", "__true__", true},
		{"in", "__in__", true},
		{"while", "__while__", true},
		{"int", "int", true},
		{"1abc", "", false},
		{"a b", "", false},
		{"a@b", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		got, ok := Escape(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Escape(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// TestCheck_Libraries: what a new rule may call, as kube-apiserver v1.29
// compiles new rules (for 1.28: extended strings at version 0, no
// sets).
func TestCheck_Libraries(t *testing.T) {
	tests := []struct {
		rule string
		want string
	}{
		{"'abc'.find('b') == 'b'", ""},
		{"self.name.findAll('a', 2) == ['a']", ""},
		{"[1, 2].sum() == 3 && [1.0].sum() == 1.0 && [duration('1s')].sum() == duration('1s') && [1u].sum() == 1u", ""},
		{"[3, 1].min() == 1 && [3, 1].max() == 3 && [1, 3].isSorted() && [1, 2].indexOf(2) == 1 && [1, 1].lastIndexOf(1) == 1", ""},
		{"isURL('https://x') && url('https://x:8/p?q=1').getPort() == '8'", ""},
		{"isQuantity('1Gi') && quantity('1Gi').isInteger() && sign(quantity('1')) == 1", ""},
		{"'abc'.lastIndexOf('c') == 2 && 'abc'.charAt(1) == 'b' && 'a,b'.split(',', 1) == ['a,b']", ""},
		{"optional.of(1).hasValue() && self.?name.orValue('') == ''", ""},
		{"1 < 1.5 && 2u > 1", ""},
		{"'a'.format([]) == 'a'", "compilation failed: ERROR: <input>:1:11: undeclared reference to 'format' (in container '')\n | 'a'.format([]) == 'a'\n | ..........^"},
		{"strings.quote('a') == 'a'", "compilation failed: ERROR: <input>:1:1: undeclared reference to 'strings' (in container '')\n | strings.quote('a') == 'a'\n | ^\nERROR: <input>:1:14: undeclared reference to 'quote' (in container '')\n | strings.quote('a') == 'a'\n | .............^"},
		{"sets.contains([1],[1])", "compilation failed: ERROR: <input>:1:1: undeclared reference to 'sets' (in container '')\n | sets.contains([1],[1])\n | ^\nERROR: <input>:1:14: found no matching overload for 'contains' applied to '!error!.(list(int), list(int))'\n | sets.contains([1],[1])\n | .............^"},
		{"quantity(self.name).sign() == 1", "compilation failed: ERROR: <input>:1:25: found no matching overload for 'sign' applied to 'kubernetes.Quantity.()'\n | quantity(self.name).sign() == 1\n | ........................^"},
		{"quantity('1') < quantity('2')", "compilation failed: ERROR: <input>:1:15: found no matching overload for '_<_' applied to '(kubernetes.Quantity, kubernetes.Quantity)'\n | quantity('1') < quantity('2')\n | ..............^"},
		{"url('http://x') == 1", "compilation failed: ERROR: <input>:1:17: found no matching overload for '_==_' applied to '(kubernetes.URL, int)'\n | url('http://x') == 1\n | ................^"},
		{"quantity('1').foo == 1", "compilation failed: ERROR: <input>:1:14: unexpected failed resolution of 'kubernetes.Quantity'\n | quantity('1').foo == 1\n | .............^"},
		{"[[1]].min() == [1]", "compilation failed: ERROR: <input>:1:10: found no matching overload for 'min' applied to 'list(list(int)).()'\n | [[1]].min() == [1]\n | .........^"},
		{"self.name.check('x')", "compilation failed: ERROR: <input>:1:16: found no matching overload for 'check' applied to 'string.(string)'\n | self.name.check('x')\n | ...............^"},
		{"self.name.errored()", "compilation failed: ERROR: <input>:1:18: found no matching overload for 'errored' applied to 'string.()'\n | self.name.errored()\n | .................^"},
		{"'a'.matches('[')", "program instantiation failed: error parsing regexp: missing closing ]: `[`"},
		{"'a'.find('[') == ''", "program instantiation failed: error parsing regexp: missing closing ]: `[`"},
		{"duration('1x') == duration('1s')", "program instantiation failed: type conversion error from 'string' to 'google.protobuf.Duration'"},
		{"[1, 'a'].size() == 2", "compilation failed: ERROR: <input>:1:5: expected type 'int' but found 'string'\n | [1, 'a'].size() == 2\n | ....^"},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			got := checkSpec(t, `{"type":"object","properties":{"name":{"type":"string","maxLength":10}},"x-kubernetes-validations":`+rulesJSON(tt.rule)+`}`)
			if tt.want == "" {
				if len(got) != 0 {
					t.Fatalf("got %q, want the rule accepted", got)
				}
				return
			}
			if want := ruleAt + "Invalid value: RULE: " + tt.want; len(got) != 1 || got[0] != want {
				t.Fatalf("got %q\nwant %q", got, want)
			}
		})
	}
}

// TestCheck_RuleFields: the checks of a rule's own fields, in
// kube-apiserver's words; a node with any of them has its rules not
// compiled (the last rule here is not valid CEL).
func TestCheck_RuleFields(t *testing.T) {
	got := checkSpec(t, `{"type":"object","properties":{"a":{"type":"integer"},"m":{"type":"object","additionalProperties":{"type":"string"}}},"x-kubernetes-validations":[
	 {"rule":""},{"rule":"   "},{"rule":"true","message":"a\nb"},{"rule":"true","message":"   "},{"rule":"true\n&& true"},
	 {"rule":"true","messageExpression":"  "},{"rule":"true","fieldPath":".nope"},{"rule":"true","fieldPath":"  "},
	 {"rule":"true","fieldPath":".a\n"},{"rule":"true","reason":"Bogus"},{"rule":"true","fieldPath":"a"},{"rule":"self.a >"},
	 {"rule":"true","fieldPath":".m['x.y']"},{"rule":"true","fieldPath":".a"},{"rule":"true","fieldPath":".m.k"},{"rule":"true","fieldPath":".a.b"}]}`)
	const p = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations"
	want := []string{
		p + `[0].rule: Required value: rule is not specified`,
		p + `[1].rule: Required value: rule is not specified`,
		p + `[2].message: Invalid value: "a\nb": message must not contain line breaks`,
		p + `[3].message: Invalid value: "   ": message must be non-empty if specified`,
		p + `[4].message: Required value: message must be specified if rule contains line breaks`,
		p + `[5].messageExpression: Required value: messageExpression must be non-empty if specified`,
		p + `[6].fieldPath: Invalid value: ".nope": fieldPath must be a valid path`,
		p + `[7].fieldPath: Invalid value: "  ": fieldPath must be non-empty if specified`,
		p + `[7].fieldPath: Invalid value: "  ": fieldPath must be a valid path`,
		p + `[8].fieldPath: Invalid value: ".a\n": fieldPath must not contain line breaks`,
		p + `[8].fieldPath: Invalid value: ".a\n": fieldPath must be a valid path`,
		p + `[9].reason: Unsupported value: "Bogus": supported values: "FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"`,
		p + `[10].fieldPath: Invalid value: "a": fieldPath must be a valid path`,
		p + `[15].fieldPath: Invalid value: ".a.b": fieldPath must be a valid path`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCheck_Uncorrelatable: oldSelf under a list that is not a map list
// is refused, naming the list.
func TestCheck_Uncorrelatable(t *testing.T) {
	got := checkSpec(t, `{"type":"object","properties":{
	 "l":{"type":"array","maxItems":5,"items":{"type":"object","properties":{"a":{"type":"integer"},
	   "ll":{"type":"array","maxItems":5,"x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["k"],"items":{"type":"object","required":["k"],"properties":{"k":{"type":"string","maxLength":5}},"x-kubernetes-validations":[{"rule":"self == oldSelf"}]}}},
	   "x-kubernetes-validations":[{"rule":"self.a == oldSelf.a"}]}},
	 "s":{"type":"array","maxItems":5,"x-kubernetes-list-type":"set","items":{"type":"string","maxLength":5,"x-kubernetes-validations":[{"rule":"self == oldSelf"}]}},
	 "m":{"type":"object","maxProperties":5,"additionalProperties":{"type":"string","maxLength":5,"x-kubernetes-validations":[{"rule":"self == oldSelf"}]}},
	 "ml":{"type":"array","maxItems":5,"x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["k"],"items":{"type":"object","required":["k"],"properties":{"k":{"type":"string","maxLength":5}},"x-kubernetes-validations":[{"rule":"self == oldSelf"}]}}}}`)
	const p = "spec.validation.openAPIV3Schema.properties[spec].properties"
	want := []string{
		p + `[l].items.properties[ll].items.x-kubernetes-validations[0].rule: Invalid value: "self == oldSelf": oldSelf cannot be used on the uncorrelatable portion of the schema within ` + p + `[l]`,
		p + `[l].items.x-kubernetes-validations[0].rule: Invalid value: "self.a == oldSelf.a": oldSelf cannot be used on the uncorrelatable portion of the schema within ` + p + `[l]`,
		p + `[s].items.x-kubernetes-validations[0].rule: Invalid value: "self == oldSelf": oldSelf cannot be used on the uncorrelatable portion of the schema within ` + p + `[s]`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

const costAdvice = " (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"

// TestCheck_CostLimits: a rule's estimate times how many times it may
// run in one object, against kube's per-rule limit, and all of them
// against the per-schema limit, with kube-apiserver v1.29's figures.
func TestCheck_CostLimits(t *testing.T) {
	const items = "spec.validation.openAPIV3Schema.properties[spec].properties[l].items.x-kubernetes-validations"
	tests := []struct {
		name, spec string
		want       []string
	}{
		{"unbounded list of strings: runs up to 3 MiB / 3 times", `{"type":"object","properties":{"l":{"type":"array","items":{"type":"string","x-kubernetes-validations":[{"rule":"self.size() > 1 && self.size() < 9 && self.size() != 4 && self.size() != 5"}]}}}}`,
			[]string{items + "[0].rule: Forbidden: estimated rule cost exceeds budget by factor of 1.258291x" + costAdvice}},
		{"maxItems bounds it", `{"type":"object","properties":{"l":{"type":"array","maxItems":100000,"items":{"type":"string","x-kubernetes-validations":[{"rule":"self.size() > 1 && self.size() < 9 && self.size() != 4 && self.size() != 5"}]}}}}`,
			nil},
		{"map values with a required field", `{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"object","required":["abc"],"properties":{"abc":{"type":"integer"}},"x-kubernetes-validations":[{"rule":"self.abc > 1 && self.abc < 9 && self.abc != 4 && self.abc != 5 && self.abc != 6 && self.abc != 7 && self.abc != 8 && self.abc != 10 && self.abc != 11 && self.abc != 12 && self.abc != 13 && self.abc != 14 && self.abc != 15 && self.abc != 16 && self.abc != 17 && self.abc != 18 && self.abc != 19 && self.abc != 20"}]}}}}`,
			[]string{"spec.validation.openAPIV3Schema.properties[spec].properties[m].additionalProperties.x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of 1.086705x" + costAdvice}},
		{"quadratic", `{"type":"object","properties":{"l":{"type":"array","items":{"type":"string"}}},"x-kubernetes-validations":[{"rule":"self.l.all(x, self.l.all(y, x == y))"}]}`,
			[]string{
				ruleAt + "Forbidden: estimated rule cost exceeds budget by factor of more than 100x" + costAdvice,
				ruleAt + "Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
				"spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x" + costAdvice,
			}},
		{"a list literal's elements have no bound", `{"type":"object","x-kubernetes-validations":[{"rule":"['a','b'].join('-') == 'a-b'"}]}`,
			[]string{
				ruleAt + "Forbidden: estimated rule cost exceeds budget by factor of more than 100x" + costAdvice,
				ruleAt + "Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
				"spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x" + costAdvice,
			}},
		{"messageExpression, not multiplied", `{"type":"object","properties":{"x":{"type":"string","x-kubernetes-validations":[{"rule":"self == \"a\"","messageExpression":"self + self + self + self + self + self + self + self + self + self + self + self + self + self + self + self + self + self + self + self + self + self + self + self + self + self + self + self + self + self + self + self + self + self + self + self + self + self + self + self + self + self + self"}]}}}`,
			[]string{
				"spec.validation.openAPIV3Schema.properties[spec].properties[x].x-kubernetes-validations[0].messageExpression: Forbidden: estimated messageExpression cost exceeds budget by factor of 29.7x" + costAdvice,
				"spec.validation.openAPIV3Schema.properties[spec].properties[x].x-kubernetes-validations[0].messageExpression: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
				"spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of 3.0x" + costAdvice,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkSpec(t, tt.spec)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestCheck_TotalCost: 51 rules of 2,000,000 each: none over the
// per-rule limit, their sum over the per-schema one; the 4 costliest
// are named.
func TestCheck_TotalCost(t *testing.T) {
	rules := make([]string, 51)
	for i := range rules {
		rules[i] = "self == 'a'"
	}
	got := checkSpec(t, `{"type":"object","properties":{"w":{"type":"array","maxItems":1000000,"items":{"type":"string","maxLength":5,"x-kubernetes-validations":`+rulesJSON(rules...)+`}}}}`)
	const p = "spec.validation.openAPIV3Schema.properties[spec].properties[w].items.x-kubernetes-validations"
	want := []string{
		p + "[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
		p + "[1].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
		p + "[2].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
		p + "[3].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
		"spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of 1.020000x" + costAdvice,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCheck_NoTypeForRules: a rule where rules cannot see values is an
// internal error, as in kube; a property whose name rules cannot spell
// still has its own rules.
func TestCheck_NoTypeForRules(t *testing.T) {
	got := checkSpec(t, `{"type":"object","properties":{"a b":{"type":"integer","x-kubernetes-validations":[{"rule":"self > 0"}]},"pun":{"x-kubernetes-preserve-unknown-fields":true,"x-kubernetes-validations":[{"rule":"self == 1"}]},"ios":{"x-kubernetes-int-or-string":true,"x-kubernetes-validations":[{"rule":"self == 1"}]}}}`)
	want := []string{"spec.validation.openAPIV3Schema.properties[spec].properties[pun].x-kubernetes-validations: Internal error: internal error: failed to construct type information for x-kubernetes-validations rules: unable to convert structural schema to CEL declarations"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCheck_RootRules: at the root, metadata shows only name and
// generateName.
func TestCheck_RootRules(t *testing.T) {
	root := func(rule string) string {
		return `{"type":"object","properties":{"spec":{"type":"object","properties":{"x":{"type":"integer"}}}},"x-kubernetes-validations":` + rulesJSON(rule) + `}`
	}
	for _, ok := range []string{"self.metadata.name == 'a'", "self.metadata.generateName == 'a' && self.kind == 'K' && self.apiVersion == 'v'", "self.spec.x == 1", "has(self.metadata.name)"} {
		if got := checkRoot(t, root(ok)); len(got) != 0 {
			t.Errorf("%s: %q, want accepted", ok, got)
		}
	}
	got := checkRoot(t, root("self.metadata.labels == {}"))
	want := "spec.validation.openAPIV3Schema.x-kubernetes-validations[0].rule: Invalid value: RULE: compilation failed: ERROR: <input>:1:14: undefined field 'labels'\n | self.metadata.labels == {}\n | .............^"
	if len(got) != 1 || got[0] != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// TestCheck_PreexistingRules: a rule the definition already had is
// compiled with what stored rules may use.
func TestCheck_PreexistingRules(t *testing.T) {
	st := mustSchema(t, `{"type":"object","x-kubernetes-validations":[{"rule":"'%d'.format([1]) == '1'"}]}`)
	if errs := Check(st, crdSchemaPath, CheckOptions{}); len(errs) != 1 {
		t.Errorf("new rule: %v, want format undeclared", errs)
	}
	if errs := Check(st, crdSchemaPath, CheckOptions{Preexisting: map[string]bool{"'%d'.format([1]) == '1'": true}}); len(errs) != 0 {
		t.Errorf("stored rule: %v, want accepted", errs)
	}
}

// TestCheck_OptionalOldSelf: optionalOldSelf types oldSelf as an
// optional, and may only be set on a rule that uses oldSelf; as in
// kube-apiserver v1.29, a rule that does not compile uses nothing, so
// both errors are given.
func TestCheck_OptionalOldSelf(t *testing.T) {
	got := checkSpec(t, `{"type":"object","properties":{
	 "ok":{"type":"integer","x-kubernetes-validations":[{"rule":"!oldSelf.hasValue() || self >= oldSelf.value()","optionalOldSelf":true}]},
	 "unused":{"type":"integer","x-kubernetes-validations":[{"rule":"self > 0","optionalOldSelf":true}]},
	 "broken":{"type":"integer","x-kubernetes-validations":[{"rule":"self >= oldSelf","optionalOldSelf":true}]},
	 "off":{"type":"integer","x-kubernetes-validations":[{"rule":"self >= oldSelf","optionalOldSelf":false}]}}}`)
	const p = "spec.validation.openAPIV3Schema.properties[spec].properties"
	want := []string{
		p + "[broken].x-kubernetes-validations[0].rule: Invalid value: RULE: compilation failed: ERROR: <input>:1:6: found no matching overload for '_>=_' applied to '(int, optional(int))'\n | self >= oldSelf\n | .....^",
		p + "[broken].x-kubernetes-validations[0].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule",
		p + "[unused].x-kubernetes-validations[0].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

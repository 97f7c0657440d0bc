package cel

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/schema"
)

// compileSpec compiles a root schema whose spec is the given schema.
func compileSpec(t testing.TB, spec string) *Validator {
	t.Helper()
	v := Compile(mustSchema(t, `{"type":"object","properties":{"spec":`+spec+`}}`))
	if v == nil {
		t.Fatal("no rules compiled")
	}
	return v
}

// obj decodes JSON as the server does (integers as int64).
func obj(t testing.TB, js string) map[string]interface{} {
	t.Helper()
	if js == "" {
		return nil
	}
	var v interface{}
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatal(err)
	}
	return fixInts(v).(map[string]interface{})
}

func fixInts(x interface{}) interface{} {
	switch v := x.(type) {
	case float64:
		if v == float64(int64(v)) {
			return int64(v)
		}
	case []interface{}:
		for i := range v {
			v[i] = fixInts(v[i])
		}
	case map[string]interface{}:
		for k := range v {
			v[k] = fixInts(v[k])
		}
	}
	return x
}

// validate returns the errors of obj (and old) as one string, "" for
// none.
func validate(t testing.TB, v *Validator, objJSON, oldJSON string) string {
	t.Helper()
	errs, _ := v.Validate(context.Background(), obj(t, objJSON), obj(t, oldJSON), Options{})
	if len(errs) == 0 {
		return ""
	}
	return errs.ToAggregate().Error()
}

// ruleCase is one rule at spec, an object's spec and what kube answers.
type ruleCase struct {
	rule      string
	spec, old string // old "" on create
	want      string // "" passes; else the errors
}

func runRuleCases(t *testing.T, specSchema string, tests []ruleCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			v := compileSpec(t, strings.Replace(specSchema, `{"type":"object",`, `{"type":"object","x-kubernetes-validations":`+rulesJSON(tt.rule)+`,`, 1))
			old := ""
			if tt.old != "" {
				old = `{"spec":` + tt.old + `}`
			}
			got := validate(t, v, `{"spec":`+tt.spec+`}`, old)
			want := tt.want
			if want == "fail" {
				want = `spec: Invalid value: "object": failed rule: ` + tt.rule
			}
			if got != want {
				t.Errorf("got  %q\nwant %q", got, want)
			}
			var oldSpec interface{}
			if old != "" {
				oldSpec = obj(t, old)["spec"]
			}
			assertCostsAsCelGo(t, v, obj(t, `{"spec":`+tt.spec+`}`)["spec"], oldSpec)
		})
	}
}

const valuesSpec = `{"type":"object","properties":{
 "ts":{"type":"string","format":"date-time"},"d":{"type":"string","format":"date"},"dur":{"type":"string","format":"duration"},
 "by":{"type":"string","format":"byte","maxLength":20},"n":{"type":"number"},"i":{"type":"integer"},"ios":{"x-kubernetes-int-or-string":true},
 "emb":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true},
 "m":{"type":"object","maxProperties":5,"additionalProperties":{"type":"string","maxLength":5}},
 "nul":{"type":"string","nullable":true,"maxLength":5},"a-b":{"type":"integer"},"namespace":{"type":"string","maxLength":5}}}`

// TestValidate_Types: values reach rules as the schema types them;
// formatted strings are converted (the cases kube-apiserver v1.29 was
// given).
func TestValidate_Types(t *testing.T) {
	runRuleCases(t, valuesSpec, []ruleCase{
		{rule: `self.ts < timestamp("2030-01-01T00:00:00Z")`, spec: `{"ts":"2020-01-01T00:00:00.5+01:00"}`},
		{rule: `self.ts < timestamp("2030-01-01T00:00:00Z")`, spec: `{"ts":"2040-01-01T00:00:00Z"}`, want: "fail"},
		{rule: `self.ts.getFullYear() == 2020 && self.ts.getHours() == 23`, spec: `{"ts":"2020-01-01T00:00:00+01:00"}`, want: "fail"},
		{rule: `self.ts.getFullYear() == 2019 && self.ts.getHours() == 23`, spec: `{"ts":"2020-01-01T00:00:00+01:00"}`},
		{rule: `self.d == timestamp("2020-01-02T00:00:00Z")`, spec: `{"d":"2020-01-02"}`},
		{rule: `self.d == timestamp("2020-01-02T00:00:00Z")`, spec: `{"d":"2020-01-03"}`, want: "fail"},
		{rule: `self.dur > duration("1h")`, spec: `{"dur":"1d"}`},
		{rule: `self.dur == duration("336h")`, spec: `{"dur":"2 weeks"}`},
		{rule: `self.dur > duration("1h")`, spec: `{"dur":"30m"}`, want: "fail"},
		{rule: `self.by == b"hello"`, spec: `{"by":"aGVsbG8="}`},
		{rule: `self.by == b"hello"`, spec: `{"by":"aGVsbA=="}`, want: "fail"},
		{rule: `size(self.by) == 5`, spec: `{"by":"aGVsbG8="}`},
		{rule: `self.n == 2.0`, spec: `{"n":2}`},
		{rule: `self.i + 1 == 3`, spec: `{"i":2}`},
		{rule: `type(self.ios) == int ? self.ios < 5 : self.ios.endsWith('%')`, spec: `{"ios":3}`},
		{rule: `type(self.ios) == int ? self.ios < 5 : self.ios.endsWith('%')`, spec: `{"ios":"50%"}`},
		{rule: `type(self.ios) == int ? self.ios < 5 : self.ios.endsWith('%')`, spec: `{"ios":"50"}`, want: "fail"},
		{rule: `self.ios == 'a'`, spec: `{"ios":3}`, want: "fail"},
		{rule: `self.ios + 1 > 0`, spec: `{"ios":"a"}`, want: `spec: Invalid value: "object": 'no such overload': call arguments did not match a supported operator, function or macro signature for rule: self.ios + 1 > 0`},
		{rule: `self.emb.metadata.name == 'x' && self.emb.kind == 'K' && self.emb.apiVersion == 'v1'`, spec: `{"emb":{"apiVersion":"v1","kind":"K","metadata":{"name":"x","labels":{"a":"b"}},"extra":1}}`},
		{rule: `self.m.x == 'y' && 'x' in self.m && self.m.all(k, k == 'x')`, spec: `{"m":{"x":"y"}}`},
		{rule: `!has(self.nul)`, spec: `{"nul":null}`},
		{rule: `self.a__dash__b == 1 && self.__namespace__ == 'ns'`, spec: `{"a-b":1,"namespace":"ns"}`},
		{rule: `has(self.a__dash__b)`, spec: `{}`, want: "fail"},
		{rule: `self.a__dash__b == 1`, spec: `{}`, want: `spec: Invalid value: "object": no such key: a__dash__b evaluating rule: self.a__dash__b == 1`},
	})
}

// TestValidate_RootMetadata: at the root, rules see apiVersion, kind and
// metadata's name and generateName.
func TestValidate_RootMetadata(t *testing.T) {
	v := Compile(mustSchema(t, `{"type":"object","x-kubernetes-validations":[{"rule":"self.metadata.name.startsWith('web') && self.kind == 'Widget'","message":"name must start with web"}],"properties":{"spec":{"type":"object"}}}`))
	if got := validate(t, v, `{"apiVersion":"example.org/v1","kind":"Widget","metadata":{"name":"web-1","namespace":"ns"}}`, ""); got != "" {
		t.Errorf("web-1: %s", got)
	}
	if got, want := validate(t, v, `{"apiVersion":"example.org/v1","kind":"Widget","metadata":{"name":"db-1"}}`, ""), `<nil>: Invalid value: "object": name must start with web`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

const libSpec = `{"type":"object","properties":{
 "s":{"type":"string","maxLength":30},"u":{"type":"string","maxLength":60},"q":{"type":"string","maxLength":10},
 "li":{"type":"array","maxItems":10,"items":{"type":"integer"}},"ls":{"type":"array","maxItems":10,"items":{"type":"string","maxLength":10}},
 "e":{"type":"array","maxItems":10,"items":{"type":"integer"}}}}`

// TestValidate_Libraries: each function family at run time.
func TestValidate_Libraries(t *testing.T) {
	runRuleCases(t, libSpec, []ruleCase{
		// regex
		{rule: `self.s.find('[0-9]+') == '123'`, spec: `{"s":"abc123def456"}`},
		{rule: `self.s.find('x') == ''`, spec: `{"s":"abc123def456"}`},
		{rule: `self.s.findAll('[0-9]+') == ['123', '456']`, spec: `{"s":"abc123def456"}`},
		{rule: `self.s.findAll('[0-9]+', 1) == ['123']`, spec: `{"s":"abc123def456"}`},
		{rule: `self.s.find(self.u) == ''`, spec: `{"s":"a","u":"["}`, want: "spec: Invalid value: \"object\": Illegal regex: error parsing regexp: missing closing ]: `[` evaluating rule: self.s.find(self.u) == ''"},
		// lists
		{rule: `self.li.sum() == 6 && self.li.min() == 1 && self.li.max() == 3`, spec: `{"li":[2,1,3]}`},
		{rule: `self.li.isSorted()`, spec: `{"li":[1,2,2,3]}`},
		{rule: `self.li.isSorted()`, spec: `{"li":[2,1]}`, want: "fail"},
		{rule: `self.li.indexOf(2) == 1 && self.li.lastIndexOf(2) == 2 && self.li.indexOf(9) == -1`, spec: `{"li":[1,2,2,3]}`},
		{rule: `self.ls.min() == 'a' && self.ls.max() == 'c' && !self.ls.isSorted()`, spec: `{"ls":["b","a","c"]}`},
		{rule: `self.e.min() >= 0`, spec: `{"e":[]}`, want: `spec: Invalid value: "object": min called on empty list evaluating rule: self.e.min() >= 0`},
		{rule: `self.e.sum() == 0`, spec: `{"e":[]}`},
		// URLs
		{rule: `isURL(self.u) && !isURL('not a url')`, spec: `{"u":"https://example.com:8443/a%20b?q=1&q=2"}`},
		{rule: `url(self.u).getScheme() == 'https' && url(self.u).getHost() == 'example.com:8443' && url(self.u).getHostname() == 'example.com' && url(self.u).getPort() == '8443'`, spec: `{"u":"https://example.com:8443/a%20b?q=1&q=2"}`},
		{rule: `url(self.u).getEscapedPath() == '/a%20b' && url(self.u).getQuery() == {'q': ['1', '2']}`, spec: `{"u":"https://example.com:8443/a%20b?q=1&q=2"}`},
		{rule: `url(self.u).getHost() == ''`, spec: `{"u":"not a url"}`, want: `spec: Invalid value: "object": URL parse error during conversion from string: parse "not a url": invalid URI for request evaluating rule: url(self.u).getHost() == ''`},
		// quantities
		{rule: `isQuantity(self.q) && quantity(self.q).isInteger() && quantity(self.q).asInteger() == 1073741824`, spec: `{"q":"1Gi"}`},
		{rule: `!isQuantity(self.q)`, spec: `{"q":"1Gx"}`},
		{rule: `quantity(self.q).asApproximateFloat() == 0.5 && sign(quantity(self.q)) == 1 && !quantity(self.q).isInteger()`, spec: `{"q":"500m"}`},
		{rule: `quantity(self.q).add(quantity('500m')).compareTo(quantity('1')) == 0 && quantity(self.q).add(1).isGreaterThan(quantity('1'))`, spec: `{"q":"500m"}`},
		{rule: `quantity(self.q).sub(1).isLessThan(quantity('0')) && quantity(self.q).sub(quantity('1')).compareTo(quantity('-500m')) == 0`, spec: `{"q":"500m"}`},
		{rule: `quantity(self.q).asInteger() == 0`, spec: `{"q":"500m"}`, want: `spec: Invalid value: "object": cannot convert value to integer evaluating rule: quantity(self.q).asInteger() == 0`},
		{rule: `quantity(self.q).isInteger()`, spec: `{"q":"x"}`, want: `spec: Invalid value: "object": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' evaluating rule: quantity(self.q).isInteger()`},
		// extended strings
		{rule: `self.s.lowerAscii() == 'abc' && self.s.upperAscii() == 'ABC' && self.s.charAt(1) == 'B' && self.s.indexOf('c') == 2`, spec: `{"s":"aBc"}`},
		{rule: `self.s.replace('-', '_') == 'a_b_c' && self.s.split('-') == ['a', 'b', 'c'] && self.ls.join('+') == 'x+y' && ' x '.trim() == 'x' && self.s.substring(2, 3) == 'b'`, spec: `{"s":"a-b-c","ls":["x","y"]}`},
		// stored rules have what 1.29 has: format, quote, sets
		{rule: `'%s has %d'.format([self.s, size(self.s)]) == 'abc has 3' && strings.quote(self.s) == '"abc"'`, spec: `{"s":"abc"}`},
		{rule: `sets.contains(self.li, [1]) && sets.intersects(self.li, [3, 4]) && sets.equivalent(self.li, [3, 1, 1])`, spec: `{"li":[1,3]}`},
		// optionals and numbers
		{rule: `self.?s.orValue('none') == 'none' && optional.of(1).hasValue()`, spec: `{}`},
		{rule: `self.li[0] < 1.5 && self.li[0] > 0u`, spec: `{"li":[1]}`},
	})
}

const listsSpec = `{"type":"object","properties":{
 "s":{"type":"array","maxItems":5,"x-kubernetes-list-type":"set","items":{"type":"string","maxLength":5}},
 "a":{"type":"array","maxItems":5,"items":{"type":"string","maxLength":5}},
 "ml":{"type":"array","maxItems":5,"x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["k"],"items":{"type":"object","required":["k"],"properties":{"k":{"type":"string","maxLength":5},"v":{"type":"integer"}}}}}}`

// TestValidate_ListEquality: set and map lists compare without regard
// to order, atomic lists in order; + on them merges (kube-apiserver
// v1.29's answers to these objects).
func TestValidate_ListEquality(t *testing.T) {
	const created = `{"s":["x","y"],"a":["x","y"],"ml":[{"k":"a","v":1},{"k":"b","v":2}]}`
	const reordered = `{"s":["y","x"],"a":["y","x"],"ml":[{"k":"b","v":2},{"k":"a","v":1}]}`
	const changed = `{"s":["y","x"],"a":["x","y"],"ml":[{"k":"b","v":2},{"k":"a","v":3}]}`
	runRuleCases(t, listsSpec, []ruleCase{
		{rule: `self.s == ["y", "x"]`, spec: created},
		{rule: `["y", "x"] == self.s`, spec: created, want: "fail"}, // a literal compares in order
		{rule: `self.a == ["y", "x"]`, spec: created, want: "fail"},
		{rule: `self.s + ["z", "x"] == ["x", "y", "z"]`, spec: created},
		{rule: `self.a + ["x"] == ["x", "y", "x"]`, spec: created},
		{rule: `self.s == oldSelf.s`, spec: reordered, old: created},
		{rule: `self.ml == oldSelf.ml`, spec: reordered, old: created},
		{rule: `self.a == oldSelf.a`, spec: reordered, old: created, want: "fail"},
		{rule: `self.ml == oldSelf.ml`, spec: changed, old: created, want: "fail"},
		{rule: `self.ml + oldSelf.ml == self.ml`, spec: changed, old: created, want: "fail"},
		{rule: `self.ml + oldSelf.ml == oldSelf.ml`, spec: changed, old: created},
		{rule: `self.ml.exists(e, e.k == 'a' && e.v == 3) && 'x' in self.s`, spec: changed},
	})
}

// TestValidate_TransitionRules: rules with oldSelf run on update only,
// where an old value exists: map list items are paired by key, map
// values by key, object fields by name.
func TestValidate_TransitionRules(t *testing.T) {
	v := compileSpec(t, `{"type":"object","x-kubernetes-validations":[{"rule":"self.replicas >= oldSelf.replicas","message":"no scale down"}],"properties":{
	 "replicas":{"type":"integer"},
	 "ports":{"type":"array","maxItems":8,"x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],"items":{"type":"object","required":["name"],"properties":{"name":{"type":"string","maxLength":8},"port":{"type":"integer"}},
	   "x-kubernetes-validations":[{"rule":"self.port == oldSelf.port","message":"port is immutable"}]}},
	 "labels":{"type":"object","maxProperties":8,"additionalProperties":{"type":"string","maxLength":8,"x-kubernetes-validations":[{"rule":"self == oldSelf","message":"labels are immutable"}]}}}}`)
	tests := []struct{ name, spec, old, want string }{
		{"create", `{"replicas":1,"ports":[{"name":"a","port":1}],"labels":{"x":"1"}}`, "", ""},
		{"update", `{"replicas":2}`, `{"replicas":1}`, ""},
		{"scale down", `{"replicas":1}`, `{"replicas":2}`, `spec: Invalid value: "object": no scale down`},
		{"field new in this update", `{"replicas":1}`, `{}`, `spec: Invalid value: "object": no such key: replicas evaluating rule: no scale down`},
		{"items paired by key", `{"replicas":1,"ports":[{"name":"b","port":2},{"name":"a","port":9},{"name":"c","port":3}]}`,
			`{"replicas":1,"ports":[{"name":"a","port":1},{"name":"b","port":2}]}`, `spec.ports[1]: Invalid value: "object": port is immutable`},
		{"map values by key", `{"replicas":1,"labels":{"x":"2","y":"1"}}`, `{"replicas":1,"labels":{"x":"1"}}`, `spec.labels[x]: Invalid value: "string": labels are immutable`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := ""
			if tt.old != "" {
				old = `{"spec":` + tt.old + `}`
			}
			if got := validate(t, v, `{"spec":`+tt.spec+`}`, old); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestValidate_ObjectEquality: objects compare field by field, whatever
// their names (kube-apiserver v1.29's answers).
func TestValidate_ObjectEquality(t *testing.T) {
	runRuleCases(t, `{"type":"object","properties":{"o":{"type":"object","properties":{"a-b":{"type":"integer"},"a b":{"type":"integer"},"c":{"type":"integer"},"p":{"x-kubernetes-preserve-unknown-fields":true}}}}}`, []ruleCase{
		{rule: `self.o == oldSelf.o`, spec: `{"o":{"a-b":1,"a b":2,"c":3,"p":{"z":[1]}}}`, old: `{"o":{"a-b":1,"a b":2,"c":3,"p":{"z":[1]}}}`},
		{rule: `self.o == oldSelf.o`, spec: `{"o":{"a-b":1,"a b":3,"c":3}}`, old: `{"o":{"a-b":1,"a b":2,"c":3}}`, want: "fail"},
		{rule: `self.o == oldSelf.o`, spec: `{"o":{"p":{"z":[2]}}}`, old: `{"o":{"p":{"z":[1]}}}`, want: "fail"},
		{rule: `self.o == oldSelf.o`, spec: `{"o":{"c":1}}`, old: `{"o":{"a-b":1}}`, want: "fail"},
	})
}

// TestValidate_Messages: message, messageExpression (falling back to
// the message when it fails), reason and fieldPath, as kube-apiserver
// v1.29 reports them: a violation with a fieldPath moves the node's
// later violations under it too.
func TestValidate_Messages(t *testing.T) {
	v := Compile(mustSchema(t, `{"type":"object","x-kubernetes-validations":[
	 {"rule":"self.metadata.name.startsWith('web')","message":"name must start with web"},
	 {"rule":"self.spec.m.all(k, k.size() < 3)","fieldPath":".spec.m['k.x']","reason":"FieldValueForbidden"},
	 {"rule":"!has(self.spec.d) || self.spec.d.size() < 2","reason":"FieldValueDuplicate"},
	 {"rule":"!has(self.spec.d) || self.spec.d.size() < 2","messageExpression":"self.spec.d + ' is too long'"},
	 {"rule":"!has(self.spec.d) || self.spec.d.size() < 2","message":"fallback","messageExpression":"self.spec.m['zz']"},
	 {"rule":"!has(self.spec.d) || self.spec.d.size() < 2","message":"nl","messageExpression":"'a\\nb'"},
	 {"rule":"!has(self.spec.d) || self.spec.d.size() < 2","message":"empty","messageExpression":"'  '"},
	 {"rule":"!has(self.spec.d) || self.spec.d.size() < 2","reason":"FieldValueRequired","fieldPath":".spec.d","message":"d required short"}],
	 "properties":{"spec":{"type":"object","properties":{"m":{"type":"object","maxProperties":5,"additionalProperties":{"type":"string","maxLength":5}},"d":{"type":"string","maxLength":5}}}}}`))
	got := validate(t, v, `{"metadata":{"name":"x"},"spec":{"m":{"abc":"1"},"d":"abc"}}`, "")
	want := `[<nil>: Invalid value: "object": name must start with web, spec.m[k.x]: Forbidden: failed rule: self.spec.m.all(k, k.size() < 3), spec.m[k.x]: Duplicate value: "object", spec.m[k.x]: Invalid value: "object": abc is too long, spec.m[k.x]: Invalid value: "object": fallback, spec.m[k.x]: Invalid value: "object": nl, spec.m[k.x]: Invalid value: "object": empty, spec.m[k.x].spec.d: Required value: d required short]`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}

	// a fieldPath rule that passes moves nothing
	v = compileSpec(t, `{"type":"object","properties":{"o":{"type":"object","properties":{"c":{"type":"integer"}}},"q":{"type":"object"}},"x-kubernetes-validations":[
	 {"rule":"self.o.c == 2 || self.o.c == 3","fieldPath":".o","message":"first"},{"rule":"self.o.c == 2","message":"second"},{"rule":"self.o.c == 2 || self.o.c == 3","fieldPath":".q","message":"third"}]}`)
	for spec, want := range map[string]string{
		`{"o":{"c":4}}`: `[spec.o: Invalid value: "object": first, spec.o: Invalid value: "object": second, spec.o.q: Invalid value: "object": third]`,
		`{"o":{"c":3}}`: `spec: Invalid value: "object": second`,
	} {
		if got := validate(t, v, `{"spec":`+spec+`}`, ""); got != want {
			t.Errorf("%s: got  %s\nwant %s", spec, got, want)
		}
	}
}

// TestValidate_PerCallLimitStopsEvaluation: a rule over kube's per-call
// limit is stopped, and no other rule runs (kube-apiserver v1.29's
// words for this object).
func TestValidate_PerCallLimitStopsEvaluation(t *testing.T) {
	v := compileSpec(t, `{"type":"object","properties":{"l":{"type":"array","maxItems":1000,"items":{"type":"integer"}},"e":{"type":"array","items":{"type":"integer"},"maxItems":5}},
	 "x-kubernetes-validations":[{"rule":"self.l.all(x, self.l.all(y, x + y >= 0))","message":"costly"},{"rule":"!has(self.e) || self.e.min() >= 0"}]}`)
	l := make([]string, 1000)
	for i := range l {
		l[i] = "1"
	}
	got := validate(t, v, `{"spec":{"e":[],"l":[`+strings.Join(l, ",")+`]}}`, "")
	want := `spec: Invalid value: "object": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: costly`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// under the limit, both rules run
	got = validate(t, v, `{"spec":{"e":[],"l":[`+strings.Join(l[:100], ",")+`]}}`, "")
	if want := `spec: Invalid value: "object": min called on empty list evaluating rule: !has(self.e) || self.e.min() >= 0`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestValidate_ObjectBudgetStopsEvaluation: ten rules on each of 100
// items, each well under the per-call limit, exhaust the per-object
// budget at the same item as in kube-apiserver v1.29 (items[14]).
func TestValidate_ObjectBudgetStopsEvaluation(t *testing.T) {
	rules := make([]string, 10)
	for i := range rules {
		rules[i] = "self.v.all(x, self.v.all(y, x + y >= 0))"
	}
	v := compileSpec(t, `{"type":"object","properties":{"items":{"type":"array","maxItems":100,"items":{"type":"object","properties":{"v":{"type":"array","maxItems":100,"items":{"type":"integer"}}},"x-kubernetes-validations":`+rulesJSON(rules...)+`}}}}`)
	vs := make([]string, 100)
	for i := range vs {
		vs[i] = "1"
	}
	items := make([]string, 100)
	for i := range items {
		items[i] = `{"v":[` + strings.Join(vs, ",") + `]}`
	}
	got := validate(t, v, `{"spec":{"items":[`+strings.Join(items, ",")+`]}}`, "")
	want := `spec.items[14]: Invalid value: "object": validation failed due to running out of cost budget, no further validation rules will be run`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestValidate_StoredRuleThatDoesNotCompile is reported for each object,
// as kube reports a stored rule its environment refuses.
func TestValidate_StoredRuleThatDoesNotCompile(t *testing.T) {
	v := compileSpec(t, `{"type":"object","properties":{"n":{"type":"integer"}},"x-kubernetes-validations":[{"rule":"self.n == 'a'"},{"rule":"self.n > 0"}]}`)
	got := validate(t, v, `{"spec":{"n":0}}`, "")
	want := "[spec: Invalid value: \"object\": rule compile error: compilation failed: ERROR: <input>:1:8: found no matching overload for '_==_' applied to '(int, string)'\n | self.n == 'a'\n | .......^, spec: Invalid value: \"object\": failed rule: self.n > 0]"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestValidate_OptionalOldSelf: a rule with optionalOldSelf sees oldSelf
// as an optional. As in kube-apiserver v1.29, it runs where there is no
// old value (a create, a value the update adds) only with the
// CRDValidationRatcheting gate on (Options.OptionalOldSelf); its
// messageExpression sees oldSelf as it is, not as an optional, so one
// that reads the optional fails and the rule's message is given.
func TestValidate_OptionalOldSelf(t *testing.T) {
	st := mustSchema(t, `{"type":"object","properties":{"spec":{"type":"object","properties":{"n":{"type":"integer"},"m":{"type":"string","maxLength":10}}}}}`)
	st.Root.Properties["spec"].Properties["n"].XValidations = []schema.ValidationRule{
		{Rule: "oldSelf.hasValue() ? self >= oldSelf.value() : self < 100", OptionalOldSelf: true, Message: "n bad"}}
	st.Root.Properties["spec"].Properties["m"].XValidations = []schema.ValidationRule{
		{Rule: "!oldSelf.hasValue() || oldSelf.value() == self", OptionalOldSelf: true, MessageExpression: "oldSelf.hasValue() ? 'm changed' : 'm new'"},
		{Rule: "oldSelf.hasValue() || self != 'bad'", OptionalOldSelf: true, MessageExpression: "'m is ' + self"}}
	v := Compile(st)
	for _, tt := range []struct {
		name, obj, old string
		gate           bool
		want           string
	}{
		{"GateOffCreateDoesNotRun", `{"spec":{"n":500,"m":"bad"}}`, "", false, ""},
		{"GateOnCreateRunsWithOldSelfNone", `{"spec":{"n":500}}`, "", true, `spec.n: Invalid value: "integer": n bad`},
		{"GateOnCreateWithinBounds", `{"spec":{"n":50}}`, "", true, ""},
		{"GateOnAddedValueRunsWithOldSelfNone", `{"spec":{"n":500}}`, `{"spec":{}}`, true, `spec.n: Invalid value: "integer": n bad`},
		{"GateOffAddedValueDoesNotRun", `{"spec":{"n":500}}`, `{"spec":{}}`, false, ""},
		{"UpdateSeesOldSelfAsOptional", `{"spec":{"n":40}}`, `{"spec":{"n":50}}`, false, `spec.n: Invalid value: "integer": n bad`},
		{"MessageReadingTheOptionalFallsBackOnUpdate", `{"spec":{"m":"b"}}`, `{"spec":{"m":"a"}}`, true,
			`spec.m: Invalid value: "string": failed rule: !oldSelf.hasValue() || oldSelf.value() == self`},
		{"MessageNotReadingOldSelfIsEvaluated", `{"spec":{"m":"bad"}}`, "", true, `spec.m: Invalid value: "string": m is bad`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			errs, _ := v.Validate(context.Background(), obj(t, tt.obj), obj(t, tt.old), Options{OptionalOldSelf: tt.gate})
			got := ""
			if len(errs) > 0 {
				got = errs.ToAggregate().Error()
			}
			if got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestValidate_RatchetForgivesRulesAtUnchangedValues: with
// Options.Ratchet, as kube-apiserver v1.29 with CRDValidationRatcheting,
// the violations of rules that do not use oldSelf at values an update
// left unchanged are returned apart (for warnings), not as errors:
// values pair by property, map key and map-list keys; the items of
// other lists only while the whole list is unchanged. Transition rules,
// rules at the root and evaluation errors are never forgiven.
func TestValidate_RatchetForgivesRulesAtUnchangedValues(t *testing.T) {
	v := Compile(mustSchema(t, `{"type":"object","x-kubernetes-validations":[{"rule":"!has(self.spec.other) || self.spec.other != 'root'","message":"root rule"}],"properties":{"spec":{"type":"object","properties":{
	 "other":{"type":"string"},
	 "c":{"type":"string","x-kubernetes-validations":[{"rule":"size(self) <= 3","message":"c too long"}]},
	 "o":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"x-kubernetes-validations":[{"rule":"!has(self.a) || size(self.a) <= 3","message":"o.a too long","fieldPath":".a","reason":"FieldValueForbidden"}]},
	 "atomic":{"type":"array","items":{"type":"string","x-kubernetes-validations":[{"rule":"size(self) <= 3","message":"item too long"}]}},
	 "set":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string","x-kubernetes-validations":[{"rule":"size(self) <= 3","message":"item too long"}]}},
	 "ml":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["k"],"items":{"type":"object","required":["k"],"properties":{"k":{"type":"string"},"v":{"type":"string"}},
	   "x-kubernetes-validations":[{"rule":"!has(self.v) || size(self.v) <= 3","message":"v too long"}]}},
	 "m":{"type":"object","additionalProperties":{"type":"string","x-kubernetes-validations":[{"rule":"size(self) <= 3","message":"value too long"}]}},
	 "t":{"type":"integer","x-kubernetes-validations":[{"rule":"self > oldSelf","message":"t must grow"}]},
	 "rk":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"x-kubernetes-validations":[{"rule":"self.a == 'x'","message":"rk.a must be x"}]}}}}}`))
	for _, tt := range []struct {
		name, old, obj       string
		wantErrs, wantWarned string
	}{
		{"UnchangedValue", `{"c":"toolong"}`, `{"c":"toolong","other":"q"}`, "", `spec.c: Invalid value: "string": c too long`},
		{"ChangedValue", `{"c":"toolong"}`, `{"c":"toolon2"}`, `spec.c: Invalid value: "string": c too long`, ""},
		{"NewValue", `{}`, `{"c":"toolong"}`, `spec.c: Invalid value: "string": c too long`, ""},
		{"ObjectWithAChangedFieldIsChanged", `{"o":{"a":"toolong","b":"x"}}`, `{"o":{"a":"toolong","b":"q"}}`, `spec.o.a: Forbidden: o.a too long`, ""},
		{"UnchangedObjectUnderItsFieldPath", `{"o":{"a":"toolong"}}`, `{"o":{"a":"toolong"},"other":"q"}`, "", `spec.o.a: Forbidden: o.a too long`},
		{"ItemsOfAnUnchangedAtomicList", `{"atomic":["toolong"]}`, `{"atomic":["toolong"],"other":"q"}`, "", `spec.atomic[0]: Invalid value: "string": item too long`},
		{"ItemsOfAChangedAtomicList", `{"atomic":["toolong"]}`, `{"atomic":["toolong","a"]}`, `spec.atomic[0]: Invalid value: "string": item too long`, ""},
		{"ItemsOfAChangedSet", `{"set":["toolong"]}`, `{"set":["toolong","a"]}`, `spec.set[0]: Invalid value: "string": item too long`, ""},
		{"MapListItemsPairByKey", `{"ml":[{"k":"a","v":"toolong"}]}`, `{"ml":[{"k":"b"},{"k":"a","v":"toolong"}]}`, "", `spec.ml[1]: Invalid value: "object": v too long`},
		{"MapValuesPairByKey", `{"m":{"a":"toolong"}}`, `{"m":{"a":"toolong","b":"x"}}`, "", `spec.m[a]: Invalid value: "string": value too long`},
		{"TransitionRulesAreNeverForgiven", `{"t":5}`, `{"t":5,"other":"q"}`, `spec.t: Invalid value: "integer": t must grow`, ""},
		{"RulesAtTheRootAreNeverForgiven", `{"other":"root"}`, `{"other":"root"}`, `<nil>: Invalid value: "object": root rule`, ""},
		{"EvaluationErrorsAreNeverForgiven", `{"rk":{"b":"x"}}`, `{"rk":{"b":"x"},"other":"q"}`, `spec.rk: Invalid value: "object": no such key: a evaluating rule: rk.a must be x`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			obj, old := obj(t, `{"spec":`+tt.obj+`}`), obj(t, `{"spec":`+tt.old+`}`)
			errs, warned := v.Validate(context.Background(), obj, old, Options{Ratchet: true})
			if got := joined(errs); got != tt.wantErrs {
				t.Errorf("errors: got  %q\nwant %q", got, tt.wantErrs)
			}
			if got := joined(warned); got != tt.wantWarned {
				t.Errorf("forgiven: got  %q\nwant %q", got, tt.wantWarned)
			}
			// without ratcheting, nothing is forgiven (each case has one
			// violation or none)
			errs, warned = v.Validate(context.Background(), obj, old, Options{})
			if got, want := joined(errs), tt.wantErrs+tt.wantWarned; len(warned) > 0 || got != want {
				t.Errorf("without ratcheting: errors %q forgiven %q, want errors %q", got, joined(warned), want)
			}
		})
	}
}

func joined(errs field.ErrorList) string {
	s := make([]string, len(errs))
	for i, e := range errs {
		s[i] = e.Error()
	}
	return strings.Join(s, "; ")
}

// BenchmarkValidate_FiveRules is the evaluation cost of five rules per
// object.
func BenchmarkValidate_FiveRules(b *testing.B) {
	v := compileSpec(b, `{"type":"object","x-kubernetes-validations":[
	 {"rule":"self.replicas >= self.minReplicas"},{"rule":"self.name.startsWith('web')"},{"rule":"self.ports.all(p, p.port > 0 && p.port < 65536)"},
	 {"rule":"size(self.name) <= 63"},{"rule":"self.?minReplicas.orValue(0) <= 10"}],"properties":{
	 "replicas":{"type":"integer"},"minReplicas":{"type":"integer"},"name":{"type":"string","maxLength":63},
	 "ports":{"type":"array","maxItems":16,"x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],"items":{"type":"object","required":["name"],
	  "properties":{"name":{"type":"string","maxLength":15},"port":{"type":"integer"}},
	  "x-kubernetes-validations":[{"rule":"self.port == oldSelf.port","message":"port is immutable"}]}}}}`)
	o := obj(b, `{"spec":{"replicas":3,"minReplicas":1,"name":"web-1","ports":[{"name":"http","port":80}]}}`)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if errs, _ := v.Validate(context.Background(), o, nil, Options{}); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}

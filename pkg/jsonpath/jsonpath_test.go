package jsonpath

import (
	"encoding/json"
	"testing"

	sigsjson "sigs.k8s.io/json"
)

// probe is a custom object as kube-apiserver v1.29 stored it; the cases
// below are what kube-apiserver put in the Table cell of a printer column
// of type string with each path (its first found value, printed), or no
// value, or the column left out because the path does not parse.
const probe = `{"apiVersion":"example.org/v1","kind":"Probe","metadata":{"name":"p1","namespace":"default"},"spec":{"123":"digits","T":"upper","a":"x","a!b":"bang","a\"b":"dq","a#b":"hash","a$b":"dollar","a%b":"pct","a'b":"sq","a(b":"lp","a)b":"rp","a*b":"star","a+b":"plus","a-b":"dash","a/b":"slash","a:b":"colon","a<b":"lt","a=b":"eq","a?b":"q","a@b":"at","a\\b":"bs","a_b":"us","ab":"ab-escaped","a~b":"tilde","b":true,"badwhen":"yesterday","big":1e+21,"bools":[{"on":true},{"on":false}],"cond":[{"lastTransitionTime":"2024-01-02T03:04:05Z","status":"True","type":"Ready"}],"datewhen":"2024-01-02","dot.key":"dk","empty":"","emptylist":[],"f":2.7,"floats":[1.5,2],"floats2":[1.5,2.5],"future":"2099-01-01T00:00:00Z","html":{"x":"<&>"},"intwhen":5,"list":[{"name":"a","status":"True","type":"Ready","v":1},{"name":"b","status":"False","type":"Other","v":2},{"name":"c","v":3}],"lists":[{"arr":[]},{"arr":[1,2]}],"lists2":[{"arr":[1]},{"arr":[1,2]}],"lists3":[{"arr":[1]},{"arr":[]},{"arr":[2]}],"m":{"k1":"v1","k2":"v2"},"mixed":[{"k":1},{"k":"1"},{"k":1}],"n":3,"neg":-2.5,"nested":{"x":{"y":"z"}},"nested2":{"l":[{"m":{"n":1}},{"m":{"n":2}}]},"nums":[1,2,3],"one":{"only":{"num":7}},"soon":"2026-11-25T05:59:00Z","sp ace":"s","strs":["p","q"],"when":"2024-01-02T03:04:05Z","whole":3,"é":"accent"}}`

type outcome int

const (
	found outcome = iota
	nothing
	parseError
)

var kubeCases = []struct {
	path    string
	outcome outcome
	want    string
}{
	{`.spec.a`, found, `x`},
	{`.spec.n`, found, `3`},
	{`.spec.f`, found, `2.7`},
	{`.spec.neg`, found, `-2.5`},
	{`.spec.big`, found, `1e+21`},
	{`.spec.whole`, found, `3`},
	{`.spec.b`, found, `true`},
	{`.spec.nul`, nothing, ""},
	{`.spec.empty`, found, ``},
	{`.spec.missing`, nothing, ""},
	{`.spec.a.b`, nothing, ""},
	{`.spec.list`, found, `[{"name":"a","status":"True","type":"Ready","v":1},{"name":"b","status":"False","type":"Other","v":2},{"name":"c","v":3}]`},
	{`.spec.m`, found, `{"k1":"v1","k2":"v2"}`},
	{`.spec.nums`, found, `[1,2,3]`},
	{`.spec.list[0].name`, found, `a`},
	{`.spec.list[-1].name`, found, `c`},
	{`.spec.list[5].name`, nothing, ""},
	{`.spec.list[1:].name`, found, `b`},
	{`.spec.list[:2].name`, found, `a`},
	{`.spec.list[::2].name`, found, `a`},
	{`.spec.list[-2:].name`, found, `b`},
	{`.spec.list[*].name`, found, `a`},
	{`.spec.list[*]`, found, `{"name":"a","status":"True","type":"Ready","v":1}`},
	{`.spec.list.*`, found, `{"name":"a","status":"True","type":"Ready","v":1}`},
	{`.spec.m.*`, found, `v1`},
	{`.spec.m[*]`, nothing, ""},
	{`.spec.list[0,2].name`, found, `a`},
	{`.spec.list[2,0].name`, found, `c`},
	{`.spec['a']`, found, `x`},
	{`.spec["a"]`, parseError, ""},
	{`.spec['a','n']`, found, `x`},
	{`.spec['dot.key']`, nothing, ""},
	{`.spec.dot\.key`, found, `dk`},
	{`.spec['sp ace']`, nothing, ""},
	{`.spec[?(@.name=="b")].v`, nothing, ""},
	{`.spec.list[?(@.name=="b")].v`, found, `2`},
	{`.spec.list[?(@.name=='b')].v`, found, `2`},
	{`.spec.list[?(@.name!="a")].name`, found, `b`},
	{`.spec.list[?(@.v>1)].name`, found, `b`},
	{`.spec.list[?(@.v>=2)].name`, found, `b`},
	{`.spec.list[?(@.v<2)].name`, found, `a`},
	{`.spec.list[?(@.v<=1)].name`, found, `a`},
	{`.spec.list[?(@.v==2)].name`, found, `b`},
	{`.spec.list[?(@.v==2.0)].name`, nothing, ""},
	{`.spec.list[?(@.status)].name`, found, `a`},
	{`.spec.list[?(@.type=="Ready")].status`, found, `True`},
	{`.spec.list[?(@.type=="Nope")].status`, nothing, ""},
	{`.spec.list[?(@.status=="False")].name`, found, `b`},
	{`.spec.mixed[?(@.k==1)].k`, nothing, ""},
	{`.spec.mixed[?(@.k=="1")].k`, nothing, ""},
	{`.spec.bools[?(@.on==true)].on`, found, `true`},
	{`.spec.bools[?(@.on==false)].on`, found, `false`},
	{`.spec.bools[?(@.on)].on`, found, `true`},
	{`.spec.nums[?(@==2)]`, found, `2`},
	{`.spec.nums[?(@>1)]`, found, `2`},
	{`.spec.m[?(@.k1)]`, nothing, ""},
	{`..num`, found, `7`},
	{`.spec..num`, found, `7`},
	{`..y`, found, `z`},
	{`.spec.nested..y`, found, `z`},
	{`.spec.emptylist[*]`, nothing, ""},
	{`.spec.emptylist[0]`, nothing, ""},
	{`.spec.lists[*].arr[*]`, nothing, ""},
	{`.spec.lists2[*].arr[1]`, nothing, ""},
	{`.spec.a[0]`, nothing, ""},
	{`.spec.strs[*]`, found, `p`},
	{`.spec.a }`, found, `x`},
	{`.spec .a`, found, `x`},
	{`.spec.a}`, found, `x`},
	{`.spec.a}{.spec.n`, found, `x`},
	{`.spec.a}x{.spec.n`, found, `x`},
	{`.spec.list[0]['name']`, found, `a`},
	{`.spec.list[*]['name','v']`, found, `a`},
	{`.spec.nul.x`, nothing, ""},
	{`.spec.list[?(@.v>1.5)].name`, nothing, ""},
	{`.spec.floats[?(@>1)]`, nothing, ""},
	{`.spec.floats[?(@>1.0)]`, nothing, ""},
	{`.spec.lists3[*].arr[*]`, found, `1`},
	{`.spec.list[?(@.name=="b" )].v`, found, `2`},
	{`.spec.list[?( @.name == "b" )].v`, found, `2`},
	{`.spec.list[?(@.name=="a)b")].v`, nothing, ""},
	{`.spec.list[ 0 ].name`, parseError, ""},
	{`.spec.list[a].name`, parseError, ""},
	{`.spec.list[0`, parseError, ""},
	{`.spec.list[-4].name`, nothing, ""},
	{`.spec.list[-3].name`, found, `a`},
	{`.spec.list[1:1].name`, nothing, ""},
	{`.spec.list[2:1].name`, nothing, ""},
	{`.spec.list[::0].name`, nothing, ""},
	{`.spec.list[::-1].name`, nothing, ""},
	{`.spec.list[0:5].name`, nothing, ""},
	{`.spec.list[0:3].name`, found, `a`},
	{`.spec.list[-1:].name`, found, `c`},
	{`.spec.list[:-1].name`, found, `a`},
	{`.spec.list[*].*`, found, `a`},
	{`..name`, found, `p1`},
	{`.spec.list[?(@.v)].name`, found, `a`},
	{`.spec.list[?(@.nope)].name`, nothing, ""},
	{`.spec.nested.x.y`, found, `z`},
	{`.spec.m.k1`, found, `v1`},
	{`.spec.123`, found, `digits`},
	{`.spec.a-b`, found, `dash`},
	{`.spec.a/b`, found, `slash`},
	{`.spec.a_b`, found, `us`},
	{`.spec.a:b`, found, `colon`},
	{`.spec.T`, found, `upper`},
	{`.spec.é`, found, `accent`},
	{`.spec.a{`, parseError, ""},
	{`.spec.list[?(@.v==1)]`, found, `{"name":"a","status":"True","type":"Ready","v":1}`},
	{`.spec.list[?(@.name<"b")].name`, found, `a`},
	{`.spec.list[?(@.name>"a")].name`, found, `b`},
	{`.spec.list[?(@.v=="1")].name`, nothing, ""},
	{`.spec.list[?(@.v===1)].name`, nothing, ""},
	{`.spec.list[?(@.v=>1)].name`, nothing, ""},
	{`.spec.list[?(@.v!=1)].name`, found, `b`},
	{`.spec.list[?(@.name in ["a"])].name`, parseError, ""},
	{`.spec.list[?(@.v>1 && @.v<3)].name`, parseError, ""},
	{`.spec.n[0]`, nothing, ""},
	{`.spec.strs}{range .spec.list[*]}{.name}{end`, found, `["p","q"]`},
	{`.spec.a}{"text"`, found, `x`},
	{`.spec.a}{'text'`, found, `x`},
	{`.spec.a,`, parseError, ""},
	{`.spec.a b`, nothing, ""},
	{`.spec.a true`, found, `true`},
	{`.spec.a 5`, found, `5`},
	{`.spec.a "lit"`, found, `lit`},
	{`.spec.a[?(@=="x")]`, nothing, ""},
	{`.spec.`, nothing, ""},
	{`.`, nothing, ""},
	{`.spec.list[?(@.v==+2)].name`, found, `b`},
	{`.spec.list[?(@.v==-1)].name`, nothing, ""},
	{`.spec.list[?(@.v>-1)].name`, found, `a`},
	{`.spec.list[?(@.v>1e0)].name`, nothing, ""},
	{`.spec.list[?(@.name)].name`, found, `a`},
	{`.spec.list[?(@.name=="a"||@.name=="b")].name`, parseError, ""},
	{`.spec.list[?(@.name==@.name)].name`, found, `a`},
	{`.spec.list[?(@.v<2)]['name']`, found, `a`},
	{`.spec.list[0:2]`, found, `{"name":"a","status":"True","type":"Ready","v":1}`},
	{`.spec.list[*].name[0]`, nothing, ""},
	{`.spec['a']['b']`, nothing, ""},
	{`.spec[0]`, nothing, ""},
	{`.spec.list[0][0]`, nothing, ""},
	{`.spec.m['k1']`, found, `v1`},
	{`.spec.m['k1','k2']`, found, `v1`},
	{`.spec.m['k2','k1']`, found, `v2`},
	{`.spec.strs[*]}{.spec.n`, found, `p`},
	{`.spec.nums[?(@!=1)]`, found, `2`},
	{`.spec.list[?(@.status!="True")].name`, found, `b`},
	{`.spec.list[?(@.missing!="x")].name`, nothing, ""},
	{`.spec.list[?(@.v)]`, found, `{"name":"a","status":"True","type":"Ready","v":1}`},
	{`.spec.strs[*]['x']`, nothing, ""},
	{`.spec.list..v`, found, `1`},
	{`.spec.list..*`, parseError, ""},
	{`.spec.one..*`, parseError, ""},
	{`.spec..only`, found, `{"num":7}`},
	{`.spec.list[?(@.v>0)].name`, found, `a`},
	{`.spec.list[?(@.v>0)][?(@.x)]`, nothing, ""},
	{`.spec.list[0:0]`, nothing, ""},
	{`.spec.lists[0].arr[0:0]`, nothing, ""},
	{`.spec.list[?(@.type=="Ready")].status}{.spec.a`, found, `True`},
	{`.spec.a@b`, nothing, ""},
	{`.spec.a$b`, nothing, ""},
	{`.spec.a(b`, found, `lp`},
	{`.spec.a)b`, found, `rp`},
	{`.spec.a=b`, found, `eq`},
	{`.spec.a'b`, found, `sq`},
	{`.spec.a"b`, found, `dq`},
	{`.spec.a*b`, found, `star`},
	{`.spec.a!b`, found, `bang`},
	{`.spec.a\\b`, found, `ab-escaped`},
	{`.spec.a\b`, found, `ab-escaped`},
	{`.spec.a?b`, found, `q`},
	{`.spec.a<b`, found, `lt`},
	{`.spec.a~b`, found, `tilde`},
	{`.spec.a+b`, found, `plus`},
	{`.spec.a#b`, found, `hash`},
	{`.spec.a%b`, found, `pct`},
	{`.spec.a True`, nothing, ""},
	{`.spec.a TRUE`, nothing, ""},
	{`.spec.a t`, nothing, ""},
	{`.spec.a 1.5`, found, `1.5`},
	{`.spec.a -3`, found, `-3`},
	{`.spec.a +3`, found, `3`},
	{`.spec.a 1.2.3`, parseError, ""},
	{`.spec.a 0x10`, nothing, ""},
	{`.spec.a "a\"b"`, found, `a"b`},
	{`.spec.a "a\tb"`, found, `a	b`},
	{`.spec.a 'x"y'`, found, `x"y`},
	{`.spec.missing 5`, nothing, ""},
	{`.spec.missing "lit"`, found, `lit`},
	{`.spec.html`, found, `{"x":"\u003c\u0026\u003e"}`},
	{`.spec.html.x`, found, `<&>`},
	{`.spec.list[*]..v`, found, `1`},
	{`.spec..[0]`, nothing, ""},
	{`....a`, parseError, ""},
	{`...a`, found, `x`},
	{`.spec.nested2..n`, found, `1`},
	{`.spec.nested2.l[*].m.n`, found, `1`},
	{`.spec.list[?(@.v > 1)].name`, found, `b`},
	{`.spec.list[?(@.v>1)].name}{end`, nothing, ""},
	{`.spec.list[?(@.v==$.spec.n)].name`, nothing, ""},
	{`.spec.list[?(@.x[?(@.y)])].name`, parseError, ""},
	{`.spec.floats2[?(@==1.5)]`, found, `1.5`},
	{`.spec.floats2[?(@==2.5)]`, found, `2.5`},
	{`.spec.floats[?(@==1.5)]`, nothing, ""},
	{`.spec.bools[?(@.on<true)].on`, nothing, ""},
	{`.spec.list[?(@.nul=="x")].name`, nothing, ""},
	{`.spec[?(@)]`, nothing, ""},
	{`.spec.list[?(@)].name`, found, `a`},
	{`.spec.nul[?(@)]`, nothing, ""},
	{`.spec.a.*`, found, `120`},
	{`.spec.a..`, found, `x`},
	{`.spec.list[]`, found, `{"name":"a","status":"True","type":"Ready","v":1}`},
	{`.spec.list[].name`, found, `a`},
	{`.spec.list[:].name`, found, `a`},
	{`.spec.list[1:2:].name`, found, `b`},
	{`.spec.list[-5:].name`, nothing, ""},
	{`.spec.list[ 'a' ]`, parseError, ""},
	{`.spec.m[ 'k1', 'k2' ]`, found, `v1`},
	{`.spec.m['k1' ,'k2']`, found, `v1`},
	{`.spec.cond[?(@.type=="Ready")].lastTransitionTime`, found, `2024-01-02T03:04:05Z`},
	{`.spec.a}{.spec.n[0]`, nothing, ""},
	{`.spec.a}{.spec.missing[0]`, found, `x`},
	{`.spec.a}{end`, nothing, ""},
	{`.spec.a range`, nothing, ""},
	{`.spec.a end`, nothing, ""},
	{`.spec.list[*].name range`, nothing, ""},
	{`.spec.a\.b`, nothing, ""},
	{`.spec.\a`, found, `x`},
	{`.spec.a\`, parseError, ""},
	{`.spec.list[?(@.name=="a")].v}{"\n"`, found, `1`},
	{`.spec.list[?(@.name=="a" )]`, found, `{"name":"a","status":"True","type":"Ready","v":1}`},
	{`.spec.list[?(@.name =="a")].v`, found, `1`},
	{`.spec.list[?(@.name== "a")].v`, found, `1`},
	{`.spec.list[?(@.name=="a")] .v`, found, `1`},
	{`.spec.list [0].name`, found, `a`},
	{`.spec.list[0] .name`, found, `a`},
	{`.spec[?(@.x)]`, nothing, ""},
	{`.spec.list[?(@.type)].type`, found, `Ready`},
	{".spec.a\ttrue", parseError, ""},
}

func decode(t *testing.T, s string) map[string]interface{} {
	t.Helper()
	var obj map[string]interface{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts([]byte(s), &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// first is what a printer column of type string shows.
func first(path string, obj map[string]interface{}) (string, outcome) {
	p, err := Parse("{" + path + "}")
	if err != nil {
		return err.Error(), parseError
	}
	results, err := p.AllowMissingKeys(true).FindResults(obj)
	if err != nil || len(results) == 0 || len(results[0]) == 0 {
		return "", nothing
	}
	s, err := Text(results[0][0])
	if err != nil {
		return "", nothing
	}
	return s, found
}

func TestPrinterColumnPathsAsKube(t *testing.T) {
	obj := decode(t, probe)
	for _, tc := range kubeCases {
		got, outcome := first(tc.path, obj)
		if outcome != tc.outcome || (outcome == found && got != tc.want) {
			t.Errorf("%s: got %q (outcome %d), want %q (outcome %d)", tc.path, got, outcome, tc.want, tc.outcome)
		}
	}
}

func TestRangeAndText(t *testing.T) {
	obj := decode(t, `{"items":[{"n":"a","v":1},{"n":"b","v":2.5}],"none":[]}`)
	for _, tc := range []struct {
		template string
		allow    bool   // missing keys
		want     string // the results, as JSON
		err      bool
	}{
		{`{range .items[*]}[{.n}]{end}`, false, `[["["],["a"],["]"],["["],["b"],["]"]]`, false},
		{`{range .none[*]}{.n}{end}x`, true, `[["x"]]`, false},
		{`{range .none[*]}{.n}{end}x`, false, ``, true},
		{`{.items[0].n}{end}`, true, ``, true},
		{`{.items[*].v}`, false, `[[1,2.5]]`, false},
		{`n={.items[1].n}`, false, `[["n="],["b"]]`, false},
		{`{.items[*]['n','v']}`, false, `[["a","b",1,2.5]]`, false},
		{`{.missing}`, false, ``, true},
		{`{.missing}`, true, `[[]]`, false},
	} {
		p, err := Parse(tc.template)
		if err != nil {
			t.Fatalf("%s: %v", tc.template, err)
		}
		results, err := p.AllowMissingKeys(tc.allow).FindResults(obj)
		if tc.err {
			if err == nil {
				t.Errorf("%s: found %v, want an error", tc.template, results)
			}
			continue
		}
		got, _ := json.Marshal(results)
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: %s %v, want %s", tc.template, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		v    interface{}
		want string
	}{
		{nil, "<no value>"},
		{"s", "s"},
		{int64(3), "3"},
		{2.7, "2.7"},
		{1e21, "1e+21"},
		{true, "true"},
		{uint8('x'), "120"},
		{map[string]interface{}{"b": "<&>", "a": 1}, `{"a":1,"b":"\u003c\u0026\u003e"}`},
		{[]interface{}{int64(1), nil}, `[1,null]`},
	} {
		if got, err := Text(tc.v); err != nil || got != tc.want {
			t.Errorf("Text(%#v) = %q, %v; want %q", tc.v, got, err, tc.want)
		}
	}
}

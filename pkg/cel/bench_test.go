package cel

import (
	"context"
	"strings"
	"testing"
)

// nestedLists is n lists of m ones each, as the server decodes them.
func nestedLists(n, m int) []interface{} {
	out := make([]interface{}, n)
	for i := range out {
		l := make([]interface{}, m)
		for j := range l {
			l[j] = int64(1)
		}
		out[i] = l
	}
	return out
}

// BenchmarkValidate_Heavy is the evaluation of rules that walk many
// values: a quadratic rule on each of 60 lists of 100 integers and a
// rule over all of them (issue 27, item 14), the per-call limit reached
// (kube's e2e spec: 725 items, quadratic) and the per-object budget
// reached (ten quadratic rules on each of 100 lists of 100).
func BenchmarkValidate_Heavy(b *testing.B) {
	quadratic := func(n int) string {
		rules := make([]string, n)
		for i := range rules {
			rules[i] = `{"rule":"self.v.all(x, self.v.all(y, x + y >= 0))"}`
		}
		return "[" + strings.Join(rules, ",") + "]"
	}
	large := make([]interface{}, 725)
	for i := range large {
		large[i] = int64(20)
	}
	withV := func(lists []interface{}) []interface{} {
		for i, l := range lists {
			lists[i] = map[string]interface{}{"v": l}
		}
		return lists
	}
	for _, bb := range []struct {
		name, spec string
		obj        map[string]interface{}
		wantErr    string
	}{
		{"NestedLists60x100", `{"type":"object","x-kubernetes-validations":[{"rule":"self.lists.all(l, l.all(x, x > 0))"}],"properties":{
		  "lists":{"type":"array","maxItems":60,"items":{"type":"array","maxItems":100,"items":{"type":"integer"},
		   "x-kubernetes-validations":[{"rule":"self.all(x, self.all(y, x + y > 0))"}]}}}}`,
			map[string]interface{}{"lists": nestedLists(60, 100)}, ""},
		{"PerCallLimit", `{"type":"object","x-kubernetes-validations":[{"rule":"self.largeArray.all(x, self.largeArray.all(y, y == x))"}],"properties":{
		  "largeArray":{"type":"array","maxItems":725,"items":{"type":"integer"}}}}`,
			map[string]interface{}{"largeArray": large}, "call cost exceeds limit"},
		{"ObjectBudget", `{"type":"object","properties":{"items":{"type":"array","maxItems":100,"items":{"type":"object","properties":{
		  "v":{"type":"array","maxItems":100,"items":{"type":"integer"}}},"x-kubernetes-validations":` + quadratic(10) + `}}}}`,
			map[string]interface{}{"items": withV(nestedLists(100, 100))}, "running out of cost budget"},
	} {
		b.Run(bb.name, func(b *testing.B) {
			v := compileSpec(b, bb.spec)
			o := map[string]interface{}{"spec": bb.obj}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				errs, _ := v.Validate(context.Background(), o, nil, Options{})
				if got := joined(errs); !strings.Contains(got, bb.wantErr) || (bb.wantErr == "") != (got == "") {
					b.Fatalf("got %q, want %q", got, bb.wantErr)
				}
			}
		})
	}
}

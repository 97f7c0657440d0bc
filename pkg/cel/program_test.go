package cel

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/interpreter"
)

// celGoProgram is p as kube-apiserver v1.29 runs it: with cel-go's own
// cost tracking, which program reproduces.
func celGoProgram(t testing.TB, p *program) cel.Program {
	t.Helper()
	prg, err := p.env.Program(p.ast,
		cel.EvalOptions(cel.OptOptimize, cel.OptTrackCost),
		cel.CostLimit(PerCallLimit),
		cel.CostTrackerOptions(interpreter.PresenceTestHasCost(false)),
		cel.CostTracking(p.estimator),
		cel.OptimizeRegex(findRegexOptimization, findAllRegexOptimization),
		cel.InterruptCheckFrequency(checkFrequency))
	if err != nil {
		t.Fatal(err)
	}
	return prg
}

// assertCostsAsCelGo runs every rule (and messageExpression) at spec's
// node of v on spec (old: the old spec, nil if none) with program and
// with cel-go's tracking, and fails unless both give the same value,
// error and cost.
func assertCostsAsCelGo(t testing.TB, v *Validator, spec, old interface{}) {
	t.Helper()
	assertNodeCostsAsCelGo(t, v.root.props["spec"], spec, old)
}

// assertNodeCostsAsCelGo is assertCostsAsCelGo for the rules at node n
// and its value.
func assertNodeCostsAsCelGo(t testing.TB, n *vnode, val, old interface{}) {
	t.Helper()
	act := &activation{self: toVal(val, n)}
	optAct := &activation{self: act.self, old: types.OptionalNone, hasOld: true}
	if old != nil {
		act.old, act.hasOld = toVal(old, n), true
		optAct.old = types.OptionalOf(act.old)
	}
	for _, r := range n.rules {
		a := act
		if r.optionalOldSelf {
			a = optAct
		}
		for _, p := range []*program{r.program, r.message} {
			if p == nil {
				continue
			}
			out, cost, err := p.eval(context.Background(), a)
			wantOut, details, wantErr := celGoProgram(t, p).ContextEval(context.Background(), a)
			if details == nil || details.ActualCost() == nil {
				t.Fatalf("%s: cel-go counted no cost", r.src.Rule)
			}
			if want := *details.ActualCost(); cost != want || fmt.Sprint(out) != fmt.Sprint(wantOut) || fmt.Sprint(err) != fmt.Sprint(wantErr) {
				t.Errorf("%s: got %v, %v, cost %d; cel-go: %v, %v, cost %d", r.src.Rule, out, err, cost, wantOut, wantErr, want)
			}
		}
	}
}

// TestProgram_CostsAsCelGo: what rules cost at run time is what
// cel-go's own tracking (kube's) counts, to the unit, for every kind of
// program step: selections, has(), optionals, conditionals (of values
// and of attributes), logical operators, comprehensions nested and
// short-circuited, literals (constant and not), calls of every cost
// class, constant regexes, errors, the per-call limit exceeded, and the
// messageExpression.
func TestProgram_CostsAsCelGo(t *testing.T) {
	const spec = `{"type":"object","properties":{
	 "s":{"type":"string","maxLength":40},"t":{"type":"string","maxLength":40},"i":{"type":"integer"},"b":{"type":"boolean"},
	 "by":{"type":"string","format":"byte","maxLength":40},"ts":{"type":"string","format":"date-time"},
	 "li":{"type":"array","maxItems":50,"items":{"type":"integer"}},
	 "ls":{"type":"array","maxItems":50,"items":{"type":"string","maxLength":20}},
	 "ll":{"type":"array","maxItems":50,"items":{"type":"array","maxItems":50,"items":{"type":"integer"}}},
	 "big":{"type":"array","maxItems":2000,"items":{"type":"integer"}},
	 "set":{"type":"array","maxItems":10,"x-kubernetes-list-type":"set","items":{"type":"string","maxLength":5}},
	 "ml":{"type":"array","maxItems":10,"x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["k"],"items":{"type":"object","required":["k"],"properties":{"k":{"type":"string","maxLength":5},"v":{"type":"integer"}}}},
	 "m":{"type":"object","maxProperties":10,"additionalProperties":{"type":"string","maxLength":10}},
	 "o":{"type":"object","properties":{"a":{"type":"integer"},"p":{"type":"object","properties":{"q":{"type":"string","maxLength":10}}}}},
	 "ios":{"x-kubernetes-int-or-string":true},"q":{"type":"string","maxLength":10},"u":{"type":"string","maxLength":60}}}`
	big := make([]interface{}, 500)
	for i := range big {
		big[i] = int64(1)
	}
	const object = `{"s":"hello world","t":"wor","i":7,"b":true,"by":"aGVsbG8=","ts":"2024-01-02T03:04:05Z",
	 "li":[3,1,2,5,4],"ls":["b","a","c"],"ll":[[1,2,3],[4,5],[6]],
	 "set":["x","y"],"ml":[{"k":"a","v":1},{"k":"b","v":2}],"m":{"x":"1","y":"22"},"o":{"a":1,"p":{"q":"qq"}},
	 "ios":"50%","q":"1500m","u":"https://example.com/a?b=c"}`
	rules := []struct{ rule, message string }{
		{`self.i + 1 > self.o.a && self.s.size() > 3`, ""},
		{`self.s.startsWith('he') && self.s.endsWith('ld') && self.s.contains(self.t) && self.s.matches('^h.*d$')`, ""},
		{`self.s.matches(self.t) || self.s < self.t || self.s + self.t == 'x' || self.by + self.by == b'x'`, ""},
		{`has(self.o.p) && has(self.o.p.q) && !has(self.o.a) || has(self.m.x) || has(self.m.z)`, ""},
		{`self.?o.?p.?q.orValue('') == 'qq' && self.?o.?a.hasValue() && !self.m[?'z'].hasValue() && self.m[?'x'] == optional.of('1')`, ""},
		{`(self.b ? self.o : self.o).p.q == 'qq' && (self.i > 3 ? self.li : self.ls.map(x, 1))[0] == 3`, ""},
		{`(self.b ? self.o.p : self.o.p).q.size() + (self.i > 100 ? 1 : 2) == 4`, ""},
		{`self.li.all(x, x > 0) && self.li.exists(x, x == 5) && self.li.exists_one(x, x == 4) && self.li.filter(x, x > 2).size() == 3`, ""},
		{`self.ll.all(l, l.all(x, self.ll.exists(m, x in m))) && self.ll.map(l, l.size()).sum() == 6`, ""},
		{`self.li.all(x, self.li.all(y, x + y < 0 || x == y || x != y))`, ""},
		{`self.m.all(k, self.m[k].size() > 0) && 'x' in self.m && self.ml.exists(e, e.k == 'b' && e.v == 2)`, ""},
		{`[1, 2, 3].all(x, x in self.li) && [self.i, self.i + 1].size() == 2 && {'a': self.i}.a == 7 && {'a': 1}.size() == 1`, ""},
		{`self.i in [1, 7, 9] && self.s in ['a', 'hello world'] && self.ls[0] in self.set`, ""},
		{`self.set == ['y', 'x'] && self.ml + oldSelf.ml != self.ml && self.li + [6] == [3, 1, 2, 5, 4, 6]`, ""},
		{`self.s.find('[a-z]+') == 'hello' && self.s.findAll('o').size() == 2 && self.s.find(self.t) == 'wor'`, ""},
		{`self.li.sum() + self.li.max() - self.li.min() > 0 && !self.li.isSorted() && self.ls.indexOf('a') == 1 && self.ls.lastIndexOf('z') == -1`, ""},
		{`self.s.lowerAscii().upperAscii().replace('L', 'x').split(' ').join('-').substring(1, 4).trim() != '' && self.s.charAt(0) == 'h' && self.s.indexOf('o') == 4`, ""},
		{`'%s/%d'.format([self.s, self.i]) != '' && strings.quote(self.t) != '' && sets.contains(self.li, [1, 2]) && sets.intersects(self.ls, ['c']) && sets.equivalent(self.li, self.li)`, ""},
		{`isURL(self.u) && url(self.u).getHost() == 'example.com' && isQuantity(self.q) && quantity(self.q).isLessThan(quantity('2'))`, ""},
		{`self.ts < timestamp('2030-01-01T00:00:00Z') && self.ts + duration('1h') > self.ts && string(self.i) == '7' && int(self.s.size()) > 0 && type(self.i) == int`, ""},
		{`type(self.ios) == string ? self.ios.endsWith('%') : self.ios > 0`, ""},
		{`self.ll[5][0] == 1`, ""},
		{`self.m.zz == 'a'`, ""},
		{`self.i / (self.i - 7) == 1`, ""},
		{`self.ios + 1 > 0`, ""},
		{`self.big.all(x, self.big.all(y, x == y))`, ""},
		{`self.big.map(x, self.s + self.s).size() > 0`, ""},
		{`self.i < 0`, `'i is ' + string(self.i) + ' and s is ' + self.s`},
		{`self.i < 0`, `self.ls.map(x, x + self.s).join(',')`},
	}
	for _, r := range rules {
		t.Run(r.rule, func(t *testing.T) {
			rj := `{"rule":` + fmt.Sprintf("%q", r.rule)
			if r.message != "" {
				rj += `,"messageExpression":` + fmt.Sprintf("%q", r.message)
			}
			v := compileSpec(t, strings.Replace(spec, `{"type":"object",`, `{"type":"object","x-kubernetes-validations":[`+rj+`}],`, 1))
			if r := v.root.props["spec"].rules[0]; r.err != nil || r.messageErr != nil {
				t.Fatalf("does not compile: %v %v", r.err, r.messageErr)
			}
			o := obj(t, `{"spec":`+object+`}`)["spec"].(map[string]interface{})
			o["big"] = big
			assertCostsAsCelGo(t, v, o, o)
		})
	}
}

// TestProgram_HeavyObjectCostsAsCelGo: the rules of issue 27's heavy
// object (a rule over 60 lists of 100 integers, a quadratic rule on
// each list) cost what cel-go's own tracking counts.
func TestProgram_HeavyObjectCostsAsCelGo(t *testing.T) {
	v := compileSpec(t, `{"type":"object","x-kubernetes-validations":[{"rule":"self.lists.all(l, l.all(x, x > 0))"}],"properties":{
	 "lists":{"type":"array","maxItems":60,"items":{"type":"array","maxItems":100,"items":{"type":"integer"},
	  "x-kubernetes-validations":[{"rule":"self.all(x, self.all(y, x + y > 0))"}]}}}}`)
	lists := nestedLists(60, 100)
	if raceDetector {
		// cel-go's tracking is slow there; the arithmetic is the same
		lists = lists[:3]
	}
	spec := map[string]interface{}{"lists": lists}
	assertCostsAsCelGo(t, v, spec, nil)
	assertNodeCostsAsCelGo(t, v.root.props["spec"].props["lists"].items, lists[0], nil)
}

// TestProgram_ConcurrentEvaluationsKeepTheirOwnCosts: evaluations of
// one rule at once (pooled programs, each with its tracker) each count
// their own object's cost: the object over the per-call limit is
// refused and the one under it is not, whatever runs beside them.
func TestProgram_ConcurrentEvaluationsKeepTheirOwnCosts(t *testing.T) {
	v := compileSpec(t, `{"type":"object","x-kubernetes-validations":[{"rule":"self.l.all(x, self.l.all(y, x == y))"}],"properties":{
	 "l":{"type":"array","maxItems":1000,"items":{"type":"integer"}}}}`)
	list := func(n int) map[string]interface{} {
		l := make([]interface{}, n)
		for i := range l {
			l[i] = int64(1)
		}
		return map[string]interface{}{"spec": map[string]interface{}{"l": l}}
	}
	// 200 items cost about 200,000; 500 more than the per-call limit
	under, over := list(200), list(500)
	const goroutines = 4
	runs := 2
	if raceDetector {
		runs = 1
	}
	errc := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		go func(g int) {
			o, wantRefused := under, false
			if g%2 == 1 {
				o, wantRefused = over, true
			}
			for i := 0; i < runs; i++ {
				errs, _ := v.Validate(context.Background(), o, nil, Options{})
				if refused := strings.Contains(joined(errs), "call cost exceeds limit"); refused != wantRefused {
					errc <- fmt.Errorf("goroutine %d: %q", g, joined(errs))
					return
				}
			}
			errc <- nil
		}(g)
	}
	for g := 0; g < goroutines; g++ {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
}

package cel

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"sync"
	"unsafe"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
)

// program is a compiled expression that runs with its cost counted as
// kube-apiserver v1.29 counts it: cel-go v0.17.7's runtime cost
// tracking (interpreter.CostObserver, kube's PerCallLimit, has() free),
// to the unit.
//
// cel-go's own tracking is slow in two ways this avoids. It plans the
// expression again for every evaluation, to bind a new tracker to it;
// here planned instances are pooled, each with its tracker. And its
// tracker keeps the values it observed on a stack that it searches
// from the top for an expression ID, a search that usually fails
// (the stack grows by a few entries per comprehension step and an ID
// is looked for again after a call consumed it), so that a rule over
// n values costs time in n times the stack's depth; here each ID's
// topmost entry is indexed. The stack and what is charged are the
// same: the observer below is cel-go's, step for step.
type program struct {
	env       *cel.Env
	ast       *cel.Ast
	estimator interpreter.ActualCostEstimator
	pool      sync.Pool // of *instance
}

// instance is a program planned for one tracker; one evaluation at a
// time uses it.
type instance struct {
	prg cel.Program
	tr  *costTracker
}

func newProgram(env *cel.Env, ast *cel.Ast, estimator interpreter.ActualCostEstimator) (*program, error) {
	p := &program{env: env, ast: ast, estimator: estimator}
	in, err := p.instance()
	if err != nil {
		return nil, err
	}
	p.pool.Put(in)
	return p, nil
}

// regexOptimizations compile the constant patterns of regex functions
// when a program is planned: cel-go's matches and kube's find and
// findAll.
var regexOptimizations = []*interpreter.RegexOptimization{findRegexOptimization, findAllRegexOptimization, interpreter.MatchesRegexOptimization}

func (p *program) instance() (*instance, error) {
	if err := loadStepTypes(); err != nil {
		return nil, err
	}
	tr := &costTracker{estimator: p.estimator, limit: PerCallLimit, others: map[interface{}]*step{}}
	// The decorators cel-go applies when it tracks costs, in its order
	// (after those of the environment's libraries): interruptible
	// comprehensions, constant folding, regex compilation, then the
	// observer, which must see the optimized plan.
	prg, err := p.env.Program(p.ast,
		cel.CustomDecorator(interpreter.InterruptableEval()),
		cel.CustomDecorator(interpreter.Optimize()),
		cel.CustomDecorator(interpreter.CompileRegexConstants(regexOptimizations...)),
		cel.CustomDecorator(interpreter.Observe(tr.observe)),
		cel.InterruptCheckFrequency(checkFrequency))
	if err != nil {
		return nil, err
	}
	return &instance{prg: prg, tr: tr}, nil
}

// eval runs the program on act; cost is what the run cost, up to where
// it stopped (the per-call limit exceeded is an error).
func (p *program) eval(ctx context.Context, act interpreter.Activation) (out ref.Val, cost uint64, err error) {
	in, _ := p.pool.Get().(*instance)
	if in == nil {
		if in, err = p.instance(); err != nil {
			return nil, 0, err
		}
	}
	out, _, err = in.prg.ContextEval(ctx, act)
	cost = in.tr.cost
	// drop the values observed, which may be large, before pooling
	in.tr.reset()
	p.pool.Put(in)
	return out, cost, err
}

// costTracker is cel-go's interpreter.CostTracker for one instance: the
// cost so far and the stack of observed values.
type costTracker struct {
	estimator interpreter.ActualCostEstimator
	limit     uint64
	cost      uint64

	stack []stackEntry
	// used is how much of stack's array holds values since the last
	// reset; truncate leaves them, reset clears them.
	used int
	// top is, for each ID below len(top), the index of its topmost entry
	// on the stack, -1 if none; entries of other IDs are searched for.
	top []int32
	// args is reused for the arguments of a call being charged.
	args []ref.Val

	// steps and others keep what the observer reads of the planned
	// steps (see stepOf).
	steps  [][2]step
	others map[interface{}]*step
}

// step is what cel-go's observer reads of a program step when it is
// done, read once: the program is planned, so the IDs of its parts
// (which cel-go reads each time) no longer change.
type step struct {
	step interface{}
	kind stepKind
	// ids are the IDs the step drops from the stack: an attribute's,
	// the parts of a conditional attribute, the terms of a logical
	// operator, a comprehension's range, a call's or a literal's
	// arguments (taken as its arguments' values).
	ids []int64
	// testOnly is has(): free.
	testOnly bool
	// conditional is a conditional attribute: it costs its parts.
	conditional bool
	call        interpreter.InterpretableCall
	// literal is what a list, map or object literal costs.
	literal uint64
}

type stepKind uint8

const (
	stepFree stepKind = iota
	stepCounted
	stepAttribute
	stepDrop
	stepCall
	stepLiteral
)

// stepOf is what the observer reads of s, whose ID is id, kept in
// steps at id, or in others if both places there are taken.
func (t *costTracker) stepOf(id int64, s interface{}) *step {
	if id >= 0 && id < int64(len(t.steps)) {
		slot := &t.steps[id]
		if slot[0].step == s {
			return &slot[0]
		}
		if slot[1].step == s {
			return &slot[1]
		}
	}
	if st, ok := t.others[s]; ok {
		return st
	}
	st := readStep(s)
	if id >= 0 && id < maxIndexedID {
		for int64(len(t.steps)) <= id {
			t.steps = append(t.steps, [2]step{})
		}
		for i := range t.steps[id] {
			if t.steps[id][i].step == nil {
				t.steps[id][i] = st
				return &t.steps[id][i]
			}
		}
	}
	t.others[s] = &st
	return &st
}

// readStep reads s as cel-go's observer does, in its order of cases.
func readStep(s interface{}) step {
	st := step{step: s}
	switch x := s.(type) {
	case interpreter.ConstantQualifier:
		st.kind = stepCounted
		return st
	case interpreter.InterpretableConst:
		return st
	case interpreter.InterpretableAttribute:
		st.kind = stepAttribute
		a := x.Attr()
		if reflect.TypeOf(a) == stepTypes.conditional {
			st.conditional = true
			st.ids = []int64{privateField(a, "falsy").(interpreter.Attribute).ID(), privateField(a, "truthy").(interpreter.Attribute).ID(), privateField(a, "expr").(interpreter.Interpretable).ID()}
		} else {
			st.ids = []int64{a.ID()}
		}
		st.testOnly = reflect.TypeOf(s) == stepTypes.testOnly
		return st
	}
	switch reflect.TypeOf(s) {
	case stepTypes.and, stepTypes.or:
		st.kind = stepDrop
		st.ids = ids(privateField(s, "terms").([]interpreter.Interpretable))
		return st
	case stepTypes.fold:
		st.kind = stepDrop
		st.ids = []int64{privateField(s, "iterRange").(interpreter.Interpretable).ID()}
		return st
	}
	switch x := s.(type) {
	case interpreter.Qualifier:
		st.kind = stepCounted
	case interpreter.InterpretableCall:
		st.kind, st.call, st.ids = stepCall, x, ids(x.Args())
	case interpreter.InterpretableConstructor:
		st.kind, st.ids = stepLiteral, ids(x.InitVals())
		switch x.Type() {
		case types.ListType:
			st.literal = common.ListCreateBaseCost
		case types.MapType:
			st.literal = common.MapCreateBaseCost
		default:
			st.literal = common.StructCreateBaseCost
		}
	}
	return st
}

func ids(parts []interpreter.Interpretable) []int64 {
	out := make([]int64, len(parts))
	for i, p := range parts {
		out[i] = p.ID()
	}
	return out
}

type stackEntry struct {
	val ref.Val
	id  int64
	// below is the index of the next entry of the same ID down the
	// stack, -1 if none.
	below int32
}

// maxIndexedID bounds the IDs indexed in top: an expression's IDs are
// small and dense; larger ones are searched for, as cel-go does.
const maxIndexedID = 1 << 16

func (t *costTracker) reset() {
	t.truncate(0)
	clear(t.stack[:t.used])
	clear(t.args)
	t.used = 0
	t.cost = 0
}

func (t *costTracker) push(val ref.Val, id int64) {
	below := int32(-1)
	if id >= 0 && id < maxIndexedID {
		for int64(len(t.top)) <= id {
			t.top = append(t.top, -1)
		}
		below = t.top[id]
		t.top[id] = int32(len(t.stack))
	}
	t.stack = append(t.stack, stackEntry{val: val, id: id, below: below})
	t.used = max(t.used, len(t.stack))
}

// find is the index of the topmost entry of id, -1 if none.
func (t *costTracker) find(id int64) int {
	if id >= 0 && id < maxIndexedID {
		if id < int64(len(t.top)) {
			return int(t.top[id])
		}
		return -1
	}
	for i := len(t.stack) - 1; i >= 0; i-- {
		if t.stack[i].id == id {
			return i
		}
	}
	return -1
}

// truncate removes the entries from index n up.
func (t *costTracker) truncate(n int) {
	for i := len(t.stack) - 1; i >= n; i-- {
		if e := &t.stack[i]; e.id >= 0 && e.id < maxIndexedID {
			t.top[e.id] = e.below
		}
	}
	t.stack = t.stack[:n]
}

// drop removes, for each ID, its topmost entry and all above it.
func (t *costTracker) drop(ids []int64) {
	for _, id := range ids {
		if i := t.find(id); i >= 0 {
			t.truncate(i)
		}
	}
}

// dropArgs takes the values of ids (a call's arguments) off the
// stack, the last first, with everything above each; false if one is
// missing (what was taken before stays taken).
func (t *costTracker) dropArgs(ids []int64) ([]ref.Val, bool) {
	if cap(t.args) < len(ids) {
		t.args = make([]ref.Val, len(ids))
	}
	vals := t.args[:len(ids)]
	for n := len(ids) - 1; n >= 0; n-- {
		i := t.find(ids[n])
		if i < 0 {
			return nil, false
		}
		vals[n] = t.stack[i].val
		t.truncate(i)
	}
	return vals, true
}

// Types of cel-go's planned steps that its cost observer recognizes by
// type; found once by planning an expression that has each.
var (
	stepTypesOnce sync.Once
	stepTypes     struct {
		and, or, fold, testOnly, conditional reflect.Type
		err                                  error
	}
)

func loadStepTypes() error {
	stepTypesOnce.Do(func() {
		env, err := cel.NewEnv(cel.Variable("m", cel.MapType(cel.StringType, cel.IntType)), cel.Variable("b", cel.BoolType))
		if err != nil {
			stepTypes.err = err
			return
		}
		ast, iss := env.Compile("(b && has(m.a) || [1].all(x, x > 0)) ? m : (b ? m : m)")
		if iss.Err() != nil {
			stepTypes.err = iss.Err()
			return
		}
		record := func(i interpreter.Interpretable) (interpreter.Interpretable, error) {
			switch reflect.TypeOf(i).String() {
			case "*interpreter.evalAnd":
				stepTypes.and = reflect.TypeOf(i)
			case "*interpreter.evalOr":
				stepTypes.or = reflect.TypeOf(i)
			case "*interpreter.evalFold":
				stepTypes.fold = reflect.TypeOf(i)
			case "*interpreter.evalTestOnly":
				stepTypes.testOnly = reflect.TypeOf(i)
			}
			if a, ok := i.(interpreter.InterpretableAttribute); ok && reflect.TypeOf(a.Attr()).String() == "*interpreter.conditionalAttribute" {
				stepTypes.conditional = reflect.TypeOf(a.Attr())
			}
			return i, nil
		}
		if _, err := env.Program(ast, cel.CustomDecorator(record)); err != nil {
			stepTypes.err = err
			return
		}
		if stepTypes.and == nil || stepTypes.or == nil || stepTypes.fold == nil || stepTypes.testOnly == nil || stepTypes.conditional == nil {
			stepTypes.err = fmt.Errorf("cel-go's program steps are not those of v0.17.7")
		}
	})
	return stepTypes.err
}

// privateField is the value of s's private field name (s a pointer to a
// struct), read as cel-go's observer reads it.
func privateField(s interface{}, name string) interface{} {
	f := reflect.ValueOf(s).Elem().FieldByName(name)
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface()
}

// observe is cel-go v0.17.7's cost observer (interpreter.CostObserver
// with has() free): what each step costs and does to the stack.
func (t *costTracker) observe(id int64, s interface{}, val ref.Val) {
	st := t.stepOf(id, s)
	switch st.kind {
	case stepCounted:
		t.cost++
	case stepAttribute:
		t.drop(st.ids)
		if !st.conditional {
			t.cost += common.SelectAndIdentCost
		}
		if st.testOnly {
			t.cost -= common.SelectAndIdentCost
		}
	case stepDrop:
		t.drop(st.ids)
	case stepCall:
		if args, ok := t.dropArgs(st.ids); ok {
			t.cost += t.callCost(st.call, args, val)
		}
	case stepLiteral:
		t.dropArgs(st.ids)
		t.cost += st.literal
	}
	t.push(val, id)
	if t.cost > t.limit {
		panic(interpreter.EvalCancelledError{Cause: interpreter.CostLimitExceeded, Message: "operation cancelled: actual cost limit exceeded"})
	}
}

// callCost is what a call costs: what cel-go's sets library gives its
// functions, else kube's estimate for its functions, else cel-go's for
// the standard ones.
func (t *costTracker) callCost(call interpreter.InterpretableCall, args []ref.Val, result ref.Val) uint64 {
	switch call.OverloadID() {
	case "list_sets_contains_list", "list_sets_intersects_list":
		return 1 + stackSize(args[0])*stackSize(args[1])
	case "list_sets_equivalent_list":
		return 1 + uint64(float64(stackSize(args[0])*stackSize(args[1]))*2)
	}
	if t.estimator != nil {
		if c := t.estimator.CallCost(call.Function(), call.OverloadID(), args, result); c != nil {
			return *c
		}
	}
	traversal := func(size uint64) uint64 {
		return uint64(math.Ceil(float64(size) * common.StringTraversalCostFactor))
	}
	switch call.OverloadID() {
	case overloads.StartsWithString, overloads.EndsWithString, overloads.StringToBytes, overloads.BytesToString, overloads.ExtQuoteString, overloads.ExtFormatString:
		return traversal(stackSize(args[0]))
	case overloads.InList:
		return stackSize(args[1])
	case overloads.LessString, overloads.GreaterString, overloads.LessEqualsString, overloads.GreaterEqualsString,
		overloads.LessBytes, overloads.GreaterBytes, overloads.LessEqualsBytes, overloads.GreaterEqualsBytes,
		overloads.Equals, overloads.NotEquals:
		return traversal(min(stackSize(args[0]), stackSize(args[1])))
	case overloads.AddString, overloads.AddBytes:
		return traversal(stackSize(args[0]) + stackSize(args[1]))
	case overloads.MatchesString:
		str := uint64(math.Ceil((1.0 + float64(stackSize(args[0]))) * common.StringTraversalCostFactor))
		re := uint64(math.Ceil(float64(stackSize(args[1])) * common.RegexStringLengthCostFactor))
		return str * re
	case overloads.ContainsString:
		return traversal(stackSize(args[0])) * traversal(stackSize(args[1]))
	}
	return 1
}

// stackSize is a value's size as cel-go's tracker reads it: a sizer's
// size, else 1.
func stackSize(v ref.Val) uint64 {
	if s, ok := v.(traits.Sizer); ok {
		return uint64(s.Size().(types.Int))
	}
	return 1
}

package cel

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
	corev1 "k8s.io/api/core/v1"

	"github.com/cronplane/cronplane/pkg/schema"
)

// The variables of a ValidatingAdmissionPolicy's expressions. At run
// time kube types them dynamically (object, oldObject, params and
// namespaceObject as what they hold, request as a map), as here; the
// type checker of policies (TypeCheckPolicyExpression) types object and
// oldObject from the matched resource's schema.
const (
	objectVar          = "object"
	oldObjectVar       = "oldObject"
	requestVar         = "request"
	paramsVar          = "params"
	namespaceObjectVar = "namespaceObject"
	authorizerVar      = "authorizer"
	requestResourceVar = "authorizer.requestResource"
	variablesVar       = "variables"
)

// PolicyResult is what a policy expression must evaluate to.
type PolicyResult int

const (
	// PolicyAny is for variables, which may be anything.
	PolicyAny PolicyResult = iota
	// PolicyBool is for validations and matchConditions.
	PolicyBool
	// PolicyString is for messageExpressions.
	PolicyString
	// PolicyStringOrNull is for auditAnnotations' valueExpressions.
	PolicyStringOrNull
)

// policyDecls say which of the optional variables an expression sees:
// params only when the policy has a paramKind, the authorizer in
// matchConditions, variables and validations (not in messageExpressions
// and auditAnnotations), as kube declares them.
type policyDecls struct {
	Params, Authorizer bool
}

var (
	policyEnvMu sync.Mutex
	policyEnvs  = map[policyDecls]*cel.Env{}
)

func policyEnvironment(d policyDecls) (*cel.Env, error) {
	policyEnvMu.Lock()
	defer policyEnvMu.Unlock()
	if env, ok := policyEnvs[d]; ok {
		return env, nil
	}
	base, err := baseEnv(storedExpressions)
	if err != nil {
		return nil, err
	}
	opts := []cel.EnvOption{
		cel.Variable(objectVar, cel.DynType),
		cel.Variable(oldObjectVar, cel.DynType),
		cel.Variable(requestVar, cel.DynType),
	}
	opts = append(opts, namespaceObjectDecl()...)
	if d.Params {
		opts = append(opts, cel.Variable(paramsVar, cel.DynType))
	}
	if d.Authorizer {
		opts = append(opts, cel.Variable(authorizerVar, authorizerType), cel.Variable(requestResourceVar, resourceCheckType))
	}
	env, err := base.Extend(opts...)
	if err != nil {
		return nil, err
	}
	policyEnvs[d] = env
	return env, nil
}

// namespaceObjectDecl declares namespaceObject as kube types it: a
// Namespace (kubernetes.Namespace), so that its fields have their types.
func namespaceObjectDecl() []cel.EnvOption {
	st := schema.FromGoType(&corev1.Namespace{})
	// all of metadata, not the name and generateName of a custom
	// resource's root
	dt := newDeclType(st, st.Resolve(st.Root), false)
	if dt == nil {
		return []cel.EnvOption{cel.Variable(namespaceObjectVar, cel.DynType)}
	}
	ts := &typeSet{objects: map[string]*objectDecl{}}
	t := ts.celType(dt, "kubernetes.Namespace")
	return []cel.EnvOption{
		func(e *cel.Env) (*cel.Env, error) {
			return cel.CustomTypeProvider(&provider{base: e.CELTypeProvider(), objects: ts.objects})(e)
		},
		cel.Variable(namespaceObjectVar, t),
	}
}

// PolicyProgram is one compiled expression of a policy. It is safe for
// concurrent use.
type PolicyProgram struct {
	src string
	p   *program
	out *cel.Type
}

// variablesTypeName is the type kube gives `variables`.
const variablesTypeName = "kubernetes.variables"

// PolicyCompiler compiles the expressions of one policy. As kube's, it
// types `variables` as an object whose fields are the variables compiled
// so far, each of its expression's type (dyn when it did not compile):
// `variables.odd` is a bool where a validation must be one, and a
// variable not declared before is a compile error. Not safe for
// concurrent use; the programs it returns are.
type PolicyCompiler struct {
	params bool
	vars   *objectDecl
	envs   map[bool]*cel.Env
}

// NewPolicyCompiler returns a compiler for a policy that has a paramKind
// when params.
func NewPolicyCompiler(params bool) *PolicyCompiler {
	return &PolicyCompiler{
		params: params,
		vars:   &objectDecl{t: cel.ObjectType(variablesTypeName), fields: map[string]*types.FieldType{}},
		envs:   map[bool]*cel.Env{},
	}
}

// env is the environment with the authorizer declared or not.
func (c *PolicyCompiler) env(authorizer bool) (*cel.Env, error) {
	if env, ok := c.envs[authorizer]; ok {
		return env, nil
	}
	base, err := policyEnvironment(policyDecls{Params: c.params, Authorizer: authorizer})
	if err != nil {
		return nil, err
	}
	objects := map[string]*objectDecl{variablesTypeName: c.vars}
	env, err := base.Extend(
		func(e *cel.Env) (*cel.Env, error) {
			return cel.CustomTypeProvider(&provider{base: e.CELTypeProvider(), objects: objects})(e)
		},
		cel.Variable(variablesVar, c.vars.t))
	if err != nil {
		return nil, err
	}
	c.envs[authorizer] = env
	return env, nil
}

// Compile compiles expr, which must evaluate to want; authorizer
// declares the authorizer, as kube does in matchConditions, variables
// and validations (not in messageExpressions and auditAnnotations).
// A failure comes back as kube words it in a policy's validation
// ("compilation failed: ...", "must evaluate to bool").
func (c *PolicyCompiler) Compile(expr string, want PolicyResult, authorizer bool) (*PolicyProgram, error) {
	env, err := c.env(authorizer)
	if err != nil {
		return nil, fmt.Errorf("compiler initialization failed: %v", err)
	}
	ast, iss := env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return nil, fmt.Errorf("compilation failed: %s", iss.String())
	}
	if err := checkResult(ast.OutputType(), want); err != nil {
		return nil, err
	}
	p, err := newProgram(env, ast, &costEstimator{})
	if err != nil {
		return nil, fmt.Errorf("program instantiation failed: %v", err)
	}
	return &PolicyProgram{src: expr, p: p, out: ast.OutputType()}, nil
}

// CompileVariable compiles the expression of variable name and declares
// the variable, with its type, to the expressions compiled after it.
func (c *PolicyCompiler) CompileVariable(name, expr string) (*PolicyProgram, error) {
	p, err := c.Compile(expr, PolicyAny, true)
	t := cel.DynType
	if err == nil {
		t = p.out
	}
	c.vars.fields[name] = &types.FieldType{Type: t}
	return p, err
}

func checkResult(t *cel.Type, want PolicyResult) error {
	switch want {
	case PolicyBool:
		if !t.IsExactType(cel.BoolType) {
			return fmt.Errorf("must evaluate to bool")
		}
	case PolicyString:
		if !t.IsExactType(cel.StringType) {
			return fmt.Errorf("must evaluate to string")
		}
	case PolicyStringOrNull:
		if !t.IsExactType(cel.StringType) && !t.IsExactType(cel.NullType) {
			return fmt.Errorf("must evaluate to one of [string null_type]")
		}
	}
	return nil
}

// Source is the expression's text.
func (p *PolicyProgram) Source() string { return p.src }

// Eval runs the program; cost is what it cost, and err an evaluation
// error (the per-call limit exceeded among them: "operation cancelled:
// actual cost limit exceeded").
func (p *PolicyProgram) Eval(ctx context.Context, a *PolicyActivation) (out ref.Val, cost uint64, err error) {
	return p.p.eval(ctx, a)
}

// PolicyActivation holds the values of one admission request's
// variables. Object, OldObject, Request, Params and NamespaceObject are
// JSON-like values (maps, slices, strings, int64, float64, bool) or nil
// for null.
type PolicyActivation struct {
	Object, OldObject, Request, Params, NamespaceObject interface{}
	// Authorizer is from NewAuthorizer and RequestResource from
	// NewResourceCheck; nil when there is no authorizer.
	Authorizer, RequestResource ref.Val
	Variables                   *Variables
}

func (a *PolicyActivation) ResolveName(name string) (interface{}, bool) {
	switch name {
	case objectVar:
		return orNull(a.Object), true
	case oldObjectVar:
		return orNull(a.OldObject), true
	case requestVar:
		return orNull(a.Request), true
	case paramsVar:
		return orNull(a.Params), true
	case namespaceObjectVar:
		return orNull(a.NamespaceObject), true
	case authorizerVar:
		if a.Authorizer == nil {
			return types.NullValue, true
		}
		return a.Authorizer, true
	case requestResourceVar:
		if a.RequestResource == nil {
			return types.NullValue, true
		}
		return a.RequestResource, true
	case variablesVar:
		if a.Variables == nil {
			return types.NewDynamicMap(types.DefaultTypeAdapter, map[string]interface{}{}), true
		}
		return a.Variables, true
	}
	return nil, false
}

func (a *PolicyActivation) Parent() interpreter.Activation { return nil }

func orNull(v interface{}) interface{} {
	if v == nil {
		return types.NullValue
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}

// Variables are a policy's variables for one evaluation: each is
// evaluated when an expression first reads it, once, as kube does, so
// that a variable nobody reads costs nothing and fails nothing.
type Variables struct {
	ctx   context.Context
	act   *PolicyActivation
	names []string
	progs map[string]*PolicyProgram
	errs  map[string]error
	done  map[string]ref.Val
	// Cost is what the variables evaluated so far cost.
	Cost uint64
}

// NewVariables binds the compiled variables (a nil program with its
// compile error in errs) to act, and act's Variables to them.
func NewVariables(ctx context.Context, act *PolicyActivation, names []string, progs map[string]*PolicyProgram, errs map[string]error) *Variables {
	v := &Variables{ctx: ctx, act: act, names: names, progs: progs, errs: errs, done: map[string]ref.Val{}}
	act.Variables = v
	return v
}

func (v *Variables) value(name string) (ref.Val, bool) {
	if out, ok := v.done[name]; ok {
		return out, true
	}
	p, ok := v.progs[name]
	if !ok {
		if err, failed := v.errs[name]; failed {
			out := types.NewErr("variable %q failed to compile: %v", name, err)
			v.done[name] = out
			return out, true
		}
		return nil, false
	}
	out, cost, err := p.Eval(v.ctx, v.act)
	v.Cost += cost
	if err != nil {
		out = types.NewErr("%v", err)
	}
	v.done[name] = out
	return out, true
}

func (v *Variables) ConvertToNative(t reflect.Type) (any, error) {
	return nil, fmt.Errorf("type conversion error from variables to %v", t)
}
func (v *Variables) ConvertToType(t ref.Type) ref.Val {
	if t == types.MapType {
		return v
	}
	if t == types.TypeType {
		return types.MapType
	}
	return types.NewErr("type conversion error from map to %v", t)
}
func (v *Variables) Equal(o ref.Val) ref.Val { return types.Bool(o == v) }
func (v *Variables) Type() ref.Type          { return types.MapType }
func (v *Variables) Value() any              { return v }
func (v *Variables) Size() ref.Val           { return types.Int(len(v.names)) }
func (v *Variables) Contains(key ref.Val) ref.Val {
	_, found := v.Find(key)
	return types.Bool(found)
}
func (v *Variables) Get(key ref.Val) ref.Val {
	out, found := v.Find(key)
	if !found {
		return types.NewErr("no such key: %v", key)
	}
	return out
}
func (v *Variables) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		return nil, false
	}
	return v.value(string(k))
}
func (v *Variables) Iterator() traits.Iterator {
	names := append([]string(nil), v.names...)
	sort.Strings(names)
	vals := make([]ref.Val, len(names))
	for i, n := range names {
		vals[i] = types.String(n)
	}
	return &valIterator{vals: vals}
}

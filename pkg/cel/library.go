package cel

import (
	"fmt"
	"net/url"
	"reflect"
	"regexp"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The function libraries kube adds to CEL for validation rules: lists,
// regex find/findAll, URLs, quantities, and the authorizer's functions
// (declared: no rule of a custom resource has an authorizer to call
// them on). Each is a cel.Library; their costs are in cost.go.

// library is a cel.Library made of function declarations. Its program
// options are none: programs are planned with theirs in
// program.instance.
type library struct {
	name  string
	funcs []cel.EnvOption
}

func (l *library) LibraryName() string                 { return l.name }
func (l *library) CompileOptions() []cel.EnvOption     { return l.funcs }
func (l *library) ProgramOptions() []cel.ProgramOption { return nil }

// --- lists ---

var (
	typeParamA     = cel.TypeParamType("A")
	summableTypes  = []*cel.Type{cel.IntType, cel.UintType, cel.DoubleType, cel.DurationType}
	comparableList = []*cel.Type{cel.IntType, cel.UintType, cel.DoubleType, cel.BoolType, cel.DurationType, cel.TimestampType, cel.StringType, cel.BytesType}
	zeroOf         = map[*cel.Type]ref.Val{
		cel.IntType: types.Int(0), cel.UintType: types.Uint(0), cel.DoubleType: types.Double(0), cel.DurationType: types.Duration{},
	}
)

func listsLibrary() cel.EnvOption {
	overloads := func(name string, ts []*cel.Type, result func(*cel.Type) *cel.Type, impl func(*cel.Type) func(ref.Val) ref.Val) cel.EnvOption {
		var opts []cel.FunctionOpt
		for _, t := range ts {
			tn := t.String()
			opts = append(opts, cel.MemberOverload(fmt.Sprintf("list_%s_%s", tn, name), []*cel.Type{cel.ListType(t)}, result(t), cel.UnaryBinding(impl(t))))
		}
		return cel.Function(name, opts...)
	}
	same := func(t *cel.Type) *cel.Type { return t }
	boolean := func(*cel.Type) *cel.Type { return cel.BoolType }
	return cel.Lib(&library{name: "k8s.lists", funcs: []cel.EnvOption{
		overloads("isSorted", comparableList, boolean, func(*cel.Type) func(ref.Val) ref.Val { return isSorted }),
		overloads("sum", summableTypes, same, func(t *cel.Type) func(ref.Val) ref.Val {
			zero := zeroOf[t]
			return func(l ref.Val) ref.Val { return sum(zero, l) }
		}),
		overloads("min", comparableList, same, func(*cel.Type) func(ref.Val) ref.Val { return extreme("min", types.IntOne) }),
		overloads("max", comparableList, same, func(*cel.Type) func(ref.Val) ref.Val { return extreme("max", types.IntNegOne) }),
		cel.Function("indexOf", cel.MemberOverload("list_a_index_of_int", []*cel.Type{cel.ListType(typeParamA), typeParamA}, cel.IntType,
			cel.BinaryBinding(func(l, v ref.Val) ref.Val { return listIndex(l, v, false) }))),
		cel.Function("lastIndexOf", cel.MemberOverload("list_a_last_index_of_int", []*cel.Type{cel.ListType(typeParamA), typeParamA}, cel.IntType,
			cel.BinaryBinding(func(l, v ref.Val) ref.Val { return listIndex(l, v, true) }))),
	}})
}

func isSorted(l ref.Val) ref.Val {
	it, ok := l.(traits.Iterable)
	if !ok {
		return types.MaybeNoSuchOverloadErr(l)
	}
	var prev traits.Comparer
	for i := it.Iterator(); i.HasNext() == types.True; {
		next := i.Next()
		c, ok := next.(traits.Comparer)
		if !ok {
			return types.MaybeNoSuchOverloadErr(next)
		}
		if prev != nil && prev.Compare(next) == types.IntOne {
			return types.False
		}
		prev = c
	}
	return types.True
}

func sum(zero, l ref.Val) ref.Val {
	it, ok := l.(traits.Iterable)
	if !ok {
		return types.MaybeNoSuchOverloadErr(l)
	}
	acc := zero
	for i := it.Iterator(); i.HasNext() == types.True; {
		a, ok := acc.(traits.Adder)
		if !ok {
			return types.MaybeNoSuchOverloadErr(acc)
		}
		acc = a.Add(i.Next())
	}
	return acc
}

// extreme returns min (prefer the element the current one compares
// greater than: IntOne) or max (IntNegOne).
func extreme(name string, prefer ref.Val) func(ref.Val) ref.Val {
	return func(l ref.Val) ref.Val {
		it, ok := l.(traits.Iterable)
		if !ok {
			return types.MaybeNoSuchOverloadErr(l)
		}
		var best traits.Comparer
		for i := it.Iterator(); i.HasNext() == types.True; {
			next := i.Next()
			c, ok := next.(traits.Comparer)
			if !ok {
				return types.MaybeNoSuchOverloadErr(next)
			}
			if best == nil || best.Compare(next) == prefer {
				best = c
			}
		}
		if best == nil {
			return types.NewErr("%s called on empty list", name)
		}
		return best.(ref.Val)
	}
}

func listIndex(l, v ref.Val, last bool) ref.Val {
	lister, ok := l.(traits.Lister)
	if !ok {
		return types.MaybeNoSuchOverloadErr(l)
	}
	n := int64(lister.Size().(types.Int))
	for k := int64(0); k < n; k++ {
		i := k
		if last {
			i = n - 1 - k
		}
		if lister.Get(types.Int(i)).Equal(v) == types.True {
			return types.Int(i)
		}
	}
	return types.Int(-1)
}

// --- regex ---

func regexLibrary() cel.EnvOption {
	return cel.Lib(&library{name: "k8s.regex",
		funcs: []cel.EnvOption{
			cel.Function("find", cel.MemberOverload("string_find_string", []*cel.Type{cel.StringType, cel.StringType}, cel.StringType,
				cel.BinaryBinding(func(s, re ref.Val) ref.Val {
					r, err := compileRegex(re)
					if err != nil {
						return err
					}
					return findIn(r, s)
				}))),
			cel.Function("findAll",
				cel.MemberOverload("string_find_all_string", []*cel.Type{cel.StringType, cel.StringType}, cel.ListType(cel.StringType),
					cel.BinaryBinding(func(s, re ref.Val) ref.Val {
						r, err := compileRegex(re)
						if err != nil {
							return err
						}
						return findAllIn(r, s, types.Int(-1))
					})),
				cel.MemberOverload("string_find_all_string_int", []*cel.Type{cel.StringType, cel.StringType, cel.IntType}, cel.ListType(cel.StringType),
					cel.FunctionBinding(func(args ...ref.Val) ref.Val {
						r, err := compileRegex(args[1])
						if err != nil {
							return err
						}
						return findAllIn(r, args[0], args[2])
					}))),
		},
	})
}

// find and findAll with a constant pattern compile it when the program
// is planned (see program.instance).
var (
	findRegexOptimization    = constantRegex("find", func(r *regexp.Regexp, args []ref.Val) ref.Val { return findIn(r, args[0]) })
	findAllRegexOptimization = constantRegex("findAll", func(r *regexp.Regexp, args []ref.Val) ref.Val {
		limit := ref.Val(types.Int(-1))
		if len(args) == 3 {
			limit = args[2]
		}
		return findAllIn(r, args[0], limit)
	})
)

func compileRegex(v ref.Val) (*regexp.Regexp, ref.Val) {
	s, ok := v.(types.String)
	if !ok {
		return nil, types.MaybeNoSuchOverloadErr(v)
	}
	r, err := regexp.Compile(string(s))
	if err != nil {
		return nil, types.NewErr("Illegal regex: %v", err.Error())
	}
	return r, nil
}

func findIn(r *regexp.Regexp, v ref.Val) ref.Val {
	s, ok := v.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(v)
	}
	return types.String(r.FindString(string(s)))
}

func findAllIn(r *regexp.Regexp, v, limit ref.Val) ref.Val {
	s, ok := v.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(v)
	}
	n, ok := limit.(types.Int)
	if !ok {
		return types.MaybeNoSuchOverloadErr(limit)
	}
	return types.NewStringList(types.DefaultTypeAdapter, r.FindAllString(string(s), int(n)))
}

// constantRegex compiles a constant pattern once, when the program is
// built (a bad pattern fails the program then, as for matches).
func constantRegex(function string, impl func(*regexp.Regexp, []ref.Val) ref.Val) *interpreter.RegexOptimization {
	return &interpreter.RegexOptimization{
		Function:   function,
		RegexIndex: 1,
		Factory: func(call interpreter.InterpretableCall, pattern string) (interpreter.InterpretableCall, error) {
			r, err := regexp.Compile(pattern)
			if err != nil {
				return nil, err
			}
			return interpreter.NewCall(call.ID(), call.Function(), call.OverloadID(), call.Args(), func(args ...ref.Val) ref.Val {
				if len(args) < 2 {
					return types.NoSuchOverloadErr()
				}
				return impl(r, args)
			}), nil
		},
	}
}

// --- URLs ---

// URLType is the type url() returns.
var URLType = cel.ObjectType("kubernetes.URL")

// URL is a parsed URL value.
type URL struct{ *url.URL }

func (u URL) ConvertToNative(typeDesc reflect.Type) (any, error) {
	switch {
	case reflect.TypeOf(u.URL).AssignableTo(typeDesc):
		return u.URL, nil
	case reflect.TypeOf("").AssignableTo(typeDesc):
		return u.URL.String(), nil
	}
	return nil, fmt.Errorf("type conversion error from 'URL' to '%v'", typeDesc)
}

func (u URL) ConvertToType(typeVal ref.Type) ref.Val {
	switch typeVal {
	case URLType:
		return u
	case types.TypeType:
		return URLType
	}
	return types.NewErr("type conversion error from '%s' to '%s'", URLType, typeVal)
}

func (u URL) Equal(other ref.Val) ref.Val {
	o, ok := other.(URL)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(u.URL.String() == o.URL.String())
}

func (u URL) Type() ref.Type { return URLType }
func (u URL) Value() any     { return u.URL }

func urlsLibrary() cel.EnvOption {
	accessor := func(name string, result *cel.Type, get func(*url.URL) ref.Val) cel.EnvOption {
		return cel.Function(name, cel.MemberOverload("url_"+name, []*cel.Type{URLType}, result,
			cel.UnaryBinding(func(v ref.Val) ref.Val {
				u, ok := v.Value().(*url.URL)
				if !ok {
					return types.MaybeNoSuchOverloadErr(v)
				}
				return get(u)
			})))
	}
	return cel.Lib(&library{name: "k8s.urls", funcs: []cel.EnvOption{
		cel.Function("url", cel.Overload("string_to_url", []*cel.Type{cel.StringType}, URLType, cel.UnaryBinding(stringToURL))),
		accessor("getScheme", cel.StringType, func(u *url.URL) ref.Val { return types.String(u.Scheme) }),
		accessor("getHost", cel.StringType, func(u *url.URL) ref.Val { return types.String(u.Host) }),
		accessor("getHostname", cel.StringType, func(u *url.URL) ref.Val { return types.String(u.Hostname()) }),
		accessor("getPort", cel.StringType, func(u *url.URL) ref.Val { return types.String(u.Port()) }),
		accessor("getEscapedPath", cel.StringType, func(u *url.URL) ref.Val { return types.String(u.EscapedPath()) }),
		accessor("getQuery", cel.MapType(cel.StringType, cel.ListType(cel.StringType)), func(u *url.URL) ref.Val {
			q := map[ref.Val]ref.Val{}
			for k, v := range u.Query() {
				q[types.String(k)] = types.NewStringList(types.DefaultTypeAdapter, v)
			}
			return types.NewRefValMap(types.DefaultTypeAdapter, q)
		}),
		cel.Function("isURL", cel.Overload("is_url_string", []*cel.Type{cel.StringType}, cel.BoolType, cel.UnaryBinding(func(v ref.Val) ref.Val {
			s, ok := v.(types.String)
			if !ok {
				return types.MaybeNoSuchOverloadErr(v)
			}
			_, err := url.ParseRequestURI(string(s))
			return types.Bool(err == nil)
		}))),
	}})
}

func stringToURL(v ref.Val) ref.Val {
	s, ok := v.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(v)
	}
	// An absolute URL, as the OpenAPI uri format takes it; parsed again
	// leniently since ParseRequestURI keeps a fragment in the path.
	if _, err := url.ParseRequestURI(string(s)); err != nil {
		return types.NewErr("URL parse error during conversion from string: %v", err)
	}
	u, err := url.Parse(string(s))
	if err != nil {
		return types.NewErr("URL parse error during conversion from string: %v", err)
	}
	return URL{u}
}

// --- quantities ---

// QuantityType is the type quantity() returns.
var QuantityType = cel.ObjectType("kubernetes.Quantity")

// Quantity is a resource.Quantity value.
type Quantity struct{ *resource.Quantity }

func (q Quantity) ConvertToNative(typeDesc reflect.Type) (any, error) {
	if reflect.TypeOf(q.Quantity).AssignableTo(typeDesc) {
		return q.Quantity, nil
	}
	if reflect.TypeOf("").AssignableTo(typeDesc) {
		return q.Quantity.String(), nil
	}
	return nil, fmt.Errorf("type conversion error from 'Quantity' to '%v'", typeDesc)
}

func (q Quantity) ConvertToType(typeVal ref.Type) ref.Val {
	switch typeVal {
	case QuantityType:
		return q
	case types.TypeType:
		return QuantityType
	}
	return types.NewErr("type conversion error from '%s' to '%s'", QuantityType, typeVal)
}

func (q Quantity) Equal(other ref.Val) ref.Val {
	o, ok := other.(Quantity)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(q.Quantity.Equal(*o.Quantity))
}

func (q Quantity) Type() ref.Type { return QuantityType }
func (q Quantity) Value() any     { return q.Quantity }

func quantityLibrary() cel.EnvOption {
	q := func(v ref.Val) (*resource.Quantity, ref.Val) {
		x, ok := v.Value().(*resource.Quantity)
		if !ok {
			return nil, types.MaybeNoSuchOverloadErr(v)
		}
		return x, nil
	}
	unary := func(name, id string, result *cel.Type, f func(*resource.Quantity) ref.Val) cel.EnvOption {
		return cel.Function(name, cel.MemberOverload(id, []*cel.Type{QuantityType}, result, cel.UnaryBinding(func(v ref.Val) ref.Val {
			x, err := q(v)
			if err != nil {
				return err
			}
			return f(x)
		})))
	}
	binary := func(id string, other *cel.Type, result *cel.Type, f func(a *resource.Quantity, b ref.Val) ref.Val) cel.FunctionOpt {
		return cel.MemberOverload(id, []*cel.Type{QuantityType, other}, result, cel.BinaryBinding(func(a, b ref.Val) ref.Val {
			x, err := q(a)
			if err != nil {
				return err
			}
			return f(x, b)
		}))
	}
	compare := func(f func(int) ref.Val) func(*resource.Quantity, ref.Val) ref.Val {
		return func(a *resource.Quantity, b ref.Val) ref.Val {
			y, err := q(b)
			if err != nil {
				return err
			}
			return f(a.Cmp(*y))
		}
	}
	arith := func(sub bool) func(*resource.Quantity, ref.Val) ref.Val {
		return func(a *resource.Quantity, b ref.Val) ref.Val {
			var y resource.Quantity
			switch bv := b.Value().(type) {
			case *resource.Quantity:
				y = *bv
			case int64:
				y = *resource.NewQuantity(bv, resource.DecimalExponent)
			default:
				return types.MaybeNoSuchOverloadErr(b)
			}
			out := a.DeepCopy()
			if sub {
				out.Sub(y)
			} else {
				out.Add(y)
			}
			return Quantity{&out}
		}
	}
	return cel.Lib(&library{name: "k8s.quantity", funcs: []cel.EnvOption{
		cel.Function("quantity", cel.Overload("string_to_quantity", []*cel.Type{cel.StringType}, QuantityType, cel.UnaryBinding(func(v ref.Val) ref.Val {
			s, ok := v.(types.String)
			if !ok {
				return types.MaybeNoSuchOverloadErr(v)
			}
			x, err := resource.ParseQuantity(string(s))
			if err != nil {
				return types.WrapErr(err)
			}
			return Quantity{&x}
		}))),
		cel.Function("isQuantity", cel.Overload("is_quantity_string", []*cel.Type{cel.StringType}, cel.BoolType, cel.UnaryBinding(func(v ref.Val) ref.Val {
			s, ok := v.(types.String)
			if !ok {
				return types.MaybeNoSuchOverloadErr(v)
			}
			_, err := resource.ParseQuantity(string(s))
			return types.Bool(err == nil)
		}))),
		// In 1.29 sign is a global function: sign(quantity("-1")).
		cel.Function("sign", cel.Overload("quantity_sign", []*cel.Type{QuantityType}, cel.IntType, cel.UnaryBinding(func(v ref.Val) ref.Val {
			x, err := q(v)
			if err != nil {
				return err
			}
			return types.Int(x.Sign())
		}))),
		unary("isInteger", "quantity_is_integer", cel.BoolType, func(x *resource.Quantity) ref.Val {
			_, ok := x.AsInt64()
			return types.Bool(ok)
		}),
		unary("asInteger", "quantity_get_int", cel.IntType, func(x *resource.Quantity) ref.Val {
			i, ok := x.AsInt64()
			if !ok {
				return types.NewErr("cannot convert value to integer")
			}
			return types.Int(i)
		}),
		unary("asApproximateFloat", "quantity_get_float", cel.DoubleType, func(x *resource.Quantity) ref.Val {
			return types.Double(x.AsApproximateFloat64())
		}),
		cel.Function("isGreaterThan", binary("quantity_is_greater_than", QuantityType, cel.BoolType, compare(func(c int) ref.Val { return types.Bool(c == 1) }))),
		cel.Function("isLessThan", binary("quantity_is_less_than", QuantityType, cel.BoolType, compare(func(c int) ref.Val { return types.Bool(c == -1) }))),
		cel.Function("compareTo", binary("quantity_compare_to", QuantityType, cel.IntType, compare(func(c int) ref.Val { return types.Int(c) }))),
		cel.Function("add",
			binary("quantity_add", QuantityType, QuantityType, arith(false)),
			binary("quantity_add_int", cel.IntType, QuantityType, arith(false))),
		cel.Function("sub",
			binary("quantity_sub", QuantityType, QuantityType, arith(true)),
			binary("quantity_sub_int", cel.IntType, QuantityType, arith(true))),
	}})
}

// --- authorizer ---

// The authorizer's types. A custom resource's rules have no authorizer
// variable, but kube declares its functions in every environment, which
// shows in the type checker's messages ("found no matching overload for
// 'check' ..."); admission policies have one (authz.go).
var (
	authorizerType    = cel.ObjectType("kubernetes.authorization.Authorizer")
	pathCheckType     = cel.ObjectType("kubernetes.authorization.PathCheck")
	groupCheckType    = cel.ObjectType("kubernetes.authorization.GroupCheck")
	resourceCheckType = cel.ObjectType("kubernetes.authorization.ResourceCheck")
	decisionType      = cel.ObjectType("kubernetes.authorization.Decision")
)

func authzLibrary() cel.EnvOption {
	member := func(id string, args []*cel.Type, result *cel.Type) cel.FunctionOpt {
		if len(args) == 3 {
			return cel.MemberOverload(id, args, result, cel.FunctionBinding(authzFunctions[id]))
		}
		bind := authzFunctions[id]
		if len(args) == 1 {
			return cel.MemberOverload(id, args, result, cel.UnaryBinding(func(v ref.Val) ref.Val { return bind(v) }))
		}
		return cel.MemberOverload(id, args, result, cel.BinaryBinding(func(a, b ref.Val) ref.Val { return bind(a, b) }))
	}
	str := cel.StringType
	return cel.Lib(&library{name: "k8s.authz", funcs: []cel.EnvOption{
		cel.Function("path", member("authorizer_path", []*cel.Type{authorizerType, str}, pathCheckType)),
		cel.Function("group", member("authorizer_group", []*cel.Type{authorizerType, str}, groupCheckType)),
		cel.Function("serviceAccount", member("authorizer_serviceaccount", []*cel.Type{authorizerType, str, str}, authorizerType)),
		cel.Function("resource", member("groupcheck_resource", []*cel.Type{groupCheckType, str}, resourceCheckType)),
		cel.Function("subresource", member("resourcecheck_subresource", []*cel.Type{resourceCheckType, str}, resourceCheckType)),
		cel.Function("namespace", member("resourcecheck_namespace", []*cel.Type{resourceCheckType, str}, resourceCheckType)),
		cel.Function("name", member("resourcecheck_name", []*cel.Type{resourceCheckType, str}, resourceCheckType)),
		cel.Function("check",
			member("pathcheck_check", []*cel.Type{pathCheckType, str}, decisionType),
			member("resourcecheck_check", []*cel.Type{resourceCheckType, str}, decisionType)),
		cel.Function("errored", member("decision_errored", []*cel.Type{decisionType}, cel.BoolType)),
		cel.Function("error", member("decision_error", []*cel.Type{decisionType}, str)),
		cel.Function("allowed", member("decision_allowed", []*cel.Type{decisionType}, cel.BoolType)),
		cel.Function("reason", member("decision_reason", []*cel.Type{decisionType}, str)),
	}})
}

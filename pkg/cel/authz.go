package cel

import (
	"context"
	"fmt"
	"reflect"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/cronplane/cronplane/pkg/auth/authorizer"
	"github.com/cronplane/cronplane/pkg/auth/user"
)

// The values of the authorizer library: only admission policies have
// them (NewAuthorizer); a custom resource's rules never see one.
type (
	authzVal struct {
		ctx   context.Context
		authz authorizer.Authorizer
		user  *user.Info
	}
	pathCheckVal struct {
		a    *authzVal
		path string
	}
	groupCheckVal struct {
		a     *authzVal
		group string
	}
	resourceCheckVal struct {
		a                                             *authzVal
		group, resource, subresource, namespace, name string
	}
	decisionVal struct {
		d      authorizer.Decision
		reason string
		err    error
	}
)

// NewAuthorizer is the authorizer variable of a policy expression: it
// asks authz what u may do, under ctx.
func NewAuthorizer(ctx context.Context, authz authorizer.Authorizer, u *user.Info) ref.Val {
	return &authzVal{ctx: ctx, authz: authz, user: u}
}

// NewResourceCheck is authorizer.requestResource: a check of the
// request's own resource, to which only a verb is left to add.
func NewResourceCheck(a ref.Val, group, resource, subresource, namespace, name string) ref.Val {
	return &resourceCheckVal{a: a.(*authzVal), group: group, resource: resource, subresource: subresource, namespace: namespace, name: name}
}

func (a *authzVal) decide(attrs authorizer.Attributes) ref.Val {
	attrs.User = a.user
	d, reason, err := a.authz.Authorize(a.ctx, attrs)
	return &decisionVal{d: d, reason: reason, err: err}
}

// opaque implements ref.Val for the values above, which convert to
// nothing and equal only themselves.
type opaque struct{}

func (opaque) ConvertToNative(t reflect.Type) (any, error) {
	return nil, fmt.Errorf("type conversion error to %v", t)
}
func (opaque) ConvertToType(ref.Type) ref.Val { return types.NewErr("type conversion error") }

func (v *authzVal) ConvertToNative(t reflect.Type) (any, error) { return opaque{}.ConvertToNative(t) }
func (v *authzVal) ConvertToType(t ref.Type) ref.Val            { return opaque{}.ConvertToType(t) }
func (v *authzVal) Equal(o ref.Val) ref.Val                     { return types.Bool(o == v) }
func (v *authzVal) Type() ref.Type                              { return authorizerType }
func (v *authzVal) Value() any                                  { return v }

func (v *pathCheckVal) ConvertToNative(t reflect.Type) (any, error) {
	return opaque{}.ConvertToNative(t)
}
func (v *pathCheckVal) ConvertToType(t ref.Type) ref.Val { return opaque{}.ConvertToType(t) }
func (v *pathCheckVal) Equal(o ref.Val) ref.Val          { return types.Bool(o == v) }
func (v *pathCheckVal) Type() ref.Type                   { return pathCheckType }
func (v *pathCheckVal) Value() any                       { return v }

func (v *groupCheckVal) ConvertToNative(t reflect.Type) (any, error) {
	return opaque{}.ConvertToNative(t)
}
func (v *groupCheckVal) ConvertToType(t ref.Type) ref.Val { return opaque{}.ConvertToType(t) }
func (v *groupCheckVal) Equal(o ref.Val) ref.Val          { return types.Bool(o == v) }
func (v *groupCheckVal) Type() ref.Type                   { return groupCheckType }
func (v *groupCheckVal) Value() any                       { return v }

func (v *resourceCheckVal) ConvertToNative(t reflect.Type) (any, error) {
	return opaque{}.ConvertToNative(t)
}
func (v *resourceCheckVal) ConvertToType(t ref.Type) ref.Val { return opaque{}.ConvertToType(t) }
func (v *resourceCheckVal) Equal(o ref.Val) ref.Val          { return types.Bool(o == v) }
func (v *resourceCheckVal) Type() ref.Type                   { return resourceCheckType }
func (v *resourceCheckVal) Value() any                       { return v }

func (v *decisionVal) ConvertToNative(t reflect.Type) (any, error) {
	return opaque{}.ConvertToNative(t)
}
func (v *decisionVal) ConvertToType(t ref.Type) ref.Val { return opaque{}.ConvertToType(t) }
func (v *decisionVal) Equal(o ref.Val) ref.Val          { return types.Bool(o == v) }
func (v *decisionVal) Type() ref.Type                   { return decisionType }
func (v *decisionVal) Value() any                       { return v }

// authzFunctions are the bindings of the library's overloads, by id.
var authzFunctions = map[string]func(args ...ref.Val) ref.Val{
	"authorizer_path": func(args ...ref.Val) ref.Val {
		a, p, ok := authzArgs(args)
		if !ok {
			return types.MaybeNoSuchOverloadErr(args[0])
		}
		return &pathCheckVal{a: a, path: p}
	},
	"authorizer_group": func(args ...ref.Val) ref.Val {
		a, g, ok := authzArgs(args)
		if !ok {
			return types.MaybeNoSuchOverloadErr(args[0])
		}
		return &groupCheckVal{a: a, group: g}
	},
	"authorizer_serviceaccount": func(args ...ref.Val) ref.Val {
		a, ok1 := args[0].(*authzVal)
		ns, ok2 := args[1].(types.String)
		name, ok3 := args[2].(types.String)
		if !ok1 || !ok2 || !ok3 {
			return types.MaybeNoSuchOverloadErr(args[0])
		}
		u := &user.Info{
			Name:   fmt.Sprintf("system:serviceaccount:%s:%s", ns, name),
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + string(ns)},
		}
		return &authzVal{ctx: a.ctx, authz: a.authz, user: u}
	},
	"groupcheck_resource": func(args ...ref.Val) ref.Val {
		g, ok1 := args[0].(*groupCheckVal)
		r, ok2 := args[1].(types.String)
		if !ok1 || !ok2 {
			return types.MaybeNoSuchOverloadErr(args[0])
		}
		return &resourceCheckVal{a: g.a, group: g.group, resource: string(r)}
	},
	"resourcecheck_subresource": resourceCheckWith(func(c *resourceCheckVal, s string) { c.subresource = s }),
	"resourcecheck_namespace":   resourceCheckWith(func(c *resourceCheckVal, s string) { c.namespace = s }),
	"resourcecheck_name":        resourceCheckWith(func(c *resourceCheckVal, s string) { c.name = s }),
	"pathcheck_check": func(args ...ref.Val) ref.Val {
		p, ok1 := args[0].(*pathCheckVal)
		verb, ok2 := args[1].(types.String)
		if !ok1 || !ok2 {
			return types.MaybeNoSuchOverloadErr(args[0])
		}
		return p.a.decide(authorizer.Attributes{Verb: string(verb), Path: p.path})
	},
	"resourcecheck_check": func(args ...ref.Val) ref.Val {
		c, ok1 := args[0].(*resourceCheckVal)
		verb, ok2 := args[1].(types.String)
		if !ok1 || !ok2 {
			return types.MaybeNoSuchOverloadErr(args[0])
		}
		return c.a.decide(authorizer.Attributes{
			Verb: string(verb), ResourceRequest: true, APIGroup: c.group, APIVersion: "*",
			Resource: c.resource, Subresource: c.subresource, Namespace: c.namespace, Name: c.name,
		})
	},
	"decision_errored": decisionField(func(d *decisionVal) ref.Val { return types.Bool(d.err != nil) }),
	"decision_error": decisionField(func(d *decisionVal) ref.Val {
		if d.err == nil {
			return types.String("")
		}
		return types.String(d.err.Error())
	}),
	"decision_allowed": decisionField(func(d *decisionVal) ref.Val { return types.Bool(d.d == authorizer.Allow) }),
	"decision_reason":  decisionField(func(d *decisionVal) ref.Val { return types.String(d.reason) }),
}

func authzArgs(args []ref.Val) (*authzVal, string, bool) {
	a, ok1 := args[0].(*authzVal)
	s, ok2 := args[1].(types.String)
	return a, string(s), ok1 && ok2
}

func resourceCheckWith(set func(*resourceCheckVal, string)) func(args ...ref.Val) ref.Val {
	return func(args ...ref.Val) ref.Val {
		c, ok1 := args[0].(*resourceCheckVal)
		s, ok2 := args[1].(types.String)
		if !ok1 || !ok2 {
			return types.MaybeNoSuchOverloadErr(args[0])
		}
		next := *c
		set(&next, string(s))
		return &next
	}
}

func decisionField(get func(*decisionVal) ref.Val) func(args ...ref.Val) ref.Val {
	return func(args ...ref.Val) ref.Val {
		d, ok := args[0].(*decisionVal)
		if !ok {
			return types.MaybeNoSuchOverloadErr(args[0])
		}
		return get(d)
	}
}

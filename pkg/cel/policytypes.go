package cel

import (
	"github.com/google/cel-go/cel"

	"github.com/cronplane/cronplane/pkg/schema"
)

// PolicyTypeChecker type-checks a policy's expressions with object and
// oldObject typed by the schema of one matched kind and params by that
// of the paramKind, as kube's policy status controller does for
// status.typeChecking. As kube v1.29's, it declares no variables, and
// params only when the policy has a paramKind.
type PolicyTypeChecker struct{ env *cel.Env }

// NewPolicyTypeChecker returns a checker for objects of schema object
// and params of schema params (nil: dyn) when hasParams.
func NewPolicyTypeChecker(object, params *schema.Structural, hasParams bool) (*PolicyTypeChecker, error) {
	base, err := baseEnv(storedExpressions)
	if err != nil {
		return nil, err
	}
	ts := &typeSet{objects: map[string]*objectDecl{}}
	typeOf := func(st *schema.Structural) *cel.Type {
		if st == nil {
			return cel.DynType
		}
		dt := newDeclType(st, st.Resolve(st.Root), true)
		if dt == nil {
			return cel.DynType
		}
		return ts.celType(dt, selfTypeName())
	}
	objType, paramsType := typeOf(object), typeOf(params)
	opts := []cel.EnvOption{
		func(e *cel.Env) (*cel.Env, error) {
			return cel.CustomTypeProvider(&provider{base: e.CELTypeProvider(), objects: ts.objects})(e)
		},
		cel.Variable(objectVar, objType),
		cel.Variable(oldObjectVar, objType),
		cel.Variable(requestVar, cel.DynType),
		cel.Variable(authorizerVar, authorizerType),
		cel.Variable(requestResourceVar, resourceCheckType),
	}
	opts = append(opts, namespaceObjectDecl()...)
	if hasParams {
		opts = append(opts, cel.Variable(paramsVar, paramsType))
	}
	env, err := base.Extend(opts...)
	if err != nil {
		return nil, err
	}
	return &PolicyTypeChecker{env: env}, nil
}

// Check returns the type checker's issues with expr, "" for none.
func (c *PolicyTypeChecker) Check(expr string) string {
	if _, iss := c.env.Compile(expr); iss != nil && iss.Err() != nil {
		return iss.String()
	}
	return ""
}

package cel

import (
	"strings"

	"github.com/google/cel-go/cel"

	"github.com/cronplane/cronplane/pkg/schema"
)

const (
	selfVar    = "self"
	oldSelfVar = "oldSelf"
)

// ruleError is why a rule or its messageExpression did not compile:
// invalid (the author's error) or internal.
type ruleError struct {
	internal bool
	detail   string
}

func (e *ruleError) Error() string { return e.detail }

// compiledRule is one x-kubernetes-validations entry ready to run.
type compiledRule struct {
	src schema.ValidationRule
	// program is nil for an empty rule, which is never run.
	program         *program
	message         *program
	usesOldSelf     bool
	optionalOldSelf bool
	// fieldPath is the rule's fieldPath as kube reports a violation
	// under it ("a.b", "m[key]"), "" when not set or not valid.
	fieldPath string
	// maxCost is the estimated cost of one run, messageMaxCost that of
	// the messageExpression.
	maxCost        uint64
	messageMaxCost uint64
	err            *ruleError
	messageErr     *ruleError
}

// nodeCompiler compiles the rules of one schema node: self is typed by
// dt, in the environments rules of the node need (a new or a stored
// rule; oldSelf plain or optional), each made once.
type nodeCompiler struct {
	dt        *declType
	envs      map[[2]int]*cel.Env
	estimator *costEstimator
}

func newNodeCompiler(dt *declType) *nodeCompiler {
	return &nodeCompiler{dt: dt, envs: map[[2]int]*cel.Env{}, estimator: &costEstimator{self: dt}}
}

func (c *nodeCompiler) env(kind int, optional bool) (*cel.Env, error) {
	key := [2]int{kind, 0}
	if optional {
		key[1] = 1
	}
	if e, ok := c.envs[key]; ok {
		return e, nil
	}
	base, err := baseEnv(kind)
	if err != nil {
		return nil, err
	}
	e, err := base.Extend(declare(c.dt, optional))
	if err != nil {
		return nil, err
	}
	c.envs[key] = e
	return e, nil
}

// compile compiles r at node s, the rule in the environment of kind,
// its messageExpression in that of msgKind.
func (c *nodeCompiler) compile(s *schema.Schema, r schema.ValidationRule, kind, msgKind int) *compiledRule {
	cr := &compiledRule{src: r}
	if strings.TrimSpace(r.Rule) == "" {
		return cr
	}
	env, err := c.env(kind, r.OptionalOldSelf)
	if err != nil {
		cr.err = &ruleError{internal: true, detail: "rule compiler initialization error: " + err.Error()}
		return cr
	}
	ast, iss := env.Compile(r.Rule)
	if iss != nil && iss.Err() != nil {
		cr.err = &ruleError{detail: "compilation failed: " + iss.String()}
		return cr
	}
	if ast.OutputType() != cel.BoolType {
		cr.err = &ruleError{detail: "cel expression must evaluate to a bool"}
		return cr
	}
	cr.usesOldSelf = referencesOldSelf(ast)
	cr.optionalOldSelf = r.OptionalOldSelf
	prg, err := newProgram(env, ast, c.estimator)
	if err != nil {
		cr.err = &ruleError{detail: "program instantiation failed: " + err.Error()}
		return cr
	}
	est, err := env.EstimateCost(ast, c.estimator)
	if err != nil {
		cr.err = &ruleError{internal: true, detail: "cost estimation failed: " + err.Error()}
		return cr
	}
	cr.maxCost = est.Max
	cr.program = prg
	if r.FieldPath != "" {
		if p, _, err := validFieldPath(r.FieldPath, s); err == nil {
			cr.fieldPath = p.String()
		}
	}
	if r.MessageExpression != "" {
		if env, err = c.env(msgKind, r.OptionalOldSelf); err != nil {
			cr.messageErr = &ruleError{internal: true, detail: "messageExpression compiler initialization error: " + err.Error()}
			return cr
		}
		mast, iss := env.Compile(r.MessageExpression)
		if iss != nil && iss.Err() != nil {
			cr.messageErr = &ruleError{detail: "messageExpression compilation failed: " + iss.String()}
			return cr
		}
		if mast.OutputType() != cel.StringType {
			cr.messageErr = &ruleError{detail: "messageExpression must evaluate to a string"}
			return cr
		}
		mprg, err := newProgram(env, mast, c.estimator)
		if err != nil {
			cr.messageErr = &ruleError{detail: "messageExpression instantiation failed: " + err.Error()}
			return cr
		}
		mest, err := env.EstimateCost(mast, c.estimator)
		if err != nil {
			cr.messageErr = &ruleError{internal: true, detail: "cost estimation for messageExpression failed: " + err.Error()}
			return cr
		}
		cr.message = mprg
		cr.messageMaxCost = mest.Max
	}
	return cr
}

func referencesOldSelf(ast *cel.Ast) bool {
	checked, err := cel.AstToCheckedExpr(ast)
	if err != nil {
		return false
	}
	for _, r := range checked.GetReferenceMap() {
		if r.GetName() == oldSelfVar {
			return true
		}
	}
	return false
}

package cel

import (
	"fmt"
	"math"

	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	exprpb "google.golang.org/genproto/googleapis/api/expr/v1alpha1"
)

// kube's cost limits (k8s.io/apiserver/pkg/apis/cel and apiextensions'
// validation): one evaluation of one rule at run time, all rules of one
// object at run time, the estimate of one rule (times the number of
// times it may run in one object), and the estimates of all rules of one
// schema added up.
const (
	PerCallLimit                = 1000000
	RuntimeCELCostBudget        = 10000000
	StaticEstimatedCostLimit    = 10000000
	StaticEstimatedCRDCostLimit = 100000000

	// checkFrequency is how many comprehension iterations run between
	// checks of the context and of the cost limit.
	checkFrequency = 100
)

// costEstimator sizes what rules read (from the bounds of self's
// declared type: maxLength, maxItems, maxProperties, or what a request
// of the largest size can hold) and costs kube's library functions, both
// when a rule is estimated and when it runs.
type costEstimator struct {
	self *declType
}

// EstimateSize bounds the value a path from self reaches.
func (c *costEstimator) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	path := n.Path()
	if len(path) == 0 || c.self == nil {
		return nil
	}
	cur := c.self
	for _, step := range path[1:] {
		switch step {
		case "@items", "@values":
			if cur.elem == nil {
				return nil
			}
			cur = cur.elem
		case "@keys":
			if cur.kind != kindMap {
				return nil
			}
			cur = mapKeyType
		default:
			f, ok := cur.fields[step]
			if !ok {
				return nil
			}
			cur = f.typ
		}
	}
	return &checker.SizeEstimate{Min: 0, Max: uint64(cur.maxElements)}
}

func (c *costEstimator) size(n checker.AstNode) checker.SizeEstimate {
	if sz := n.ComputedSize(); sz != nil {
		return *sz
	}
	if sz := c.EstimateSize(n); sz != nil {
		return *sz
	}
	return checker.SizeEstimate{Min: 0, Max: math.MaxUint64}
}

// elementNode is the element of a list a call's target is, with the
// target's path extended by @items, so that its bounds are found.
type elementNode struct {
	path []string
	t    *types.Type
}

func (e *elementNode) Path() []string                      { return e.path }
func (e *elementNode) Type() *types.Type                   { return e.t }
func (e *elementNode) Expr() *exprpb.Expr                  { return nil }
func (e *elementNode) ComputedSize() *checker.SizeEstimate { return nil }

func listElement(list checker.AstNode) checker.AstNode {
	t := list.Type()
	if t == nil || t.Kind() != types.ListKind || len(t.Parameters()) == 0 {
		return nil
	}
	var path []string
	if p := list.Path(); p != nil {
		path = append(append(make([]string, 0, len(p)+1), p...), "@items")
	}
	return &elementNode{path: path, t: t.Parameters()[0]}
}

// EstimateCallCost costs the library functions whose cost depends on
// their input.
func (c *costEstimator) EstimateCallCost(function, overloadID string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	fixed := func(cost uint64) *checker.CallEstimate {
		return &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: cost, Max: cost}}
	}
	switch function {
	case "check":
		// an authorization check; two per expression at most
		return fixed(350000)
	case "serviceAccount", "path", "group", "resource", "subresource", "namespace", "name", "allowed", "reason", "error", "errored":
		return fixed(1)
	case "isSorted", "sum", "max", "min", "indexOf", "lastIndexOf":
		if target == nil {
			return nil
		}
		if el := listElement(*target); el != nil {
			// one comparison per element, plus walking strings and bytes
			elCost := checker.CostEstimate{Min: 1, Max: 1}
			if k := el.Type().Kind(); k == types.StringKind || k == types.BytesKind {
				elCost = elCost.Add(c.size(el).MultiplyByCostFactor(common.StringTraversalCostFactor))
			}
			return &checker.CallEstimate{CostEstimate: c.size(*target).MultiplyByCost(elCost)}
		}
		// a string's indexOf and lastIndexOf
		return &checker.CallEstimate{CostEstimate: c.size(*target).MultiplyByCostFactor(common.StringTraversalCostFactor)}
	case "url":
		if len(args) == 1 {
			return &checker.CallEstimate{CostEstimate: c.size(args[0]).MultiplyByCostFactor(common.StringTraversalCostFactor)}
		}
	case "lowerAscii", "upperAscii", "substring", "trim":
		if target != nil {
			sz := c.size(*target)
			return &checker.CallEstimate{CostEstimate: sz.MultiplyByCostFactor(common.StringTraversalCostFactor), ResultSize: &sz}
		}
	case "replace":
		if target != nil && len(args) >= 2 {
			sz := c.size(*target)
			from := c.size(args[0])
			to := c.size(args[1])
			// fewest characters: the shortest input made of the longest
			// matches, replaced by the shortest replacement; most: the
			// reverse
			minSz := uint64(math.Ceil(float64(sz.Min)/float64(from.Max))) * to.Min
			maxSz := uint64(math.Ceil(float64(sz.Max)/float64(from.Min))) * to.Max
			return &checker.CallEstimate{
				CostEstimate: checker.CostEstimate{Min: minSz, Max: maxSz}.MultiplyByCostFactor(common.StringTraversalCostFactor),
				ResultSize:   &checker.SizeEstimate{Min: minSz, Max: maxSz},
			}
		}
	case "split":
		if target != nil {
			sz := c.size(*target)
			// at worst every character is an element
			max := sz.Max
			if len(args) > 1 {
				if k := args[1].Expr().GetConstExpr(); k != nil {
					max = uint64(k.GetInt64Value())
				}
			}
			return &checker.CallEstimate{CostEstimate: sz.MultiplyByCostFactor(2 * common.StringTraversalCostFactor), ResultSize: &checker.SizeEstimate{Min: 0, Max: max}}
		}
	case "join":
		if target != nil {
			var sz checker.SizeEstimate
			n := c.size(*target)
			if el := listElement(*target); el != nil {
				sz = n.Multiply(c.size(el))
			}
			if len(args) > 0 {
				sep := c.size(args[0])
				var minSeps, maxSeps uint64
				if n.Min > 0 {
					minSeps = n.Min - 1
				}
				if n.Max > 0 {
					maxSeps = n.Max - 1
				}
				sz = sz.Add(sep.Multiply(checker.SizeEstimate{Min: minSeps, Max: maxSeps}))
			}
			return &checker.CallEstimate{CostEstimate: sz.MultiplyByCostFactor(common.StringTraversalCostFactor), ResultSize: &sz}
		}
	case "find", "findAll":
		if target != nil && len(args) >= 1 {
			sz := c.size(*target)
			// one more than the length, so that an empty input still
			// costs the regex
			str := sz.Add(checker.SizeEstimate{Min: 1, Max: 1}).MultiplyByCostFactor(common.StringTraversalCostFactor)
			re := c.size(args[0]).MultiplyByCostFactor(common.RegexStringLengthCostFactor)
			return &checker.CallEstimate{CostEstimate: str.Multiply(re), ResultSize: &checker.SizeEstimate{Min: 0, Max: sz.Max}}
		}
	}
	return nil
}

// CallCost is the run-time counterpart of EstimateCallCost.
func (c *costEstimator) CallCost(function, overloadID string, args []ref.Val, result ref.Val) *uint64 {
	cost := func(v uint64) *uint64 { return &v }
	switch function {
	case "check":
		return cost(350000)
	case "serviceAccount", "path", "group", "resource", "subresource", "namespace", "name", "allowed", "reason", "error", "errored":
		return cost(1)
	case "isSorted", "sum", "max", "min", "indexOf", "lastIndexOf":
		if len(args) > 0 {
			return cost(traversalCost(args[0]))
		}
		return cost(0)
	case "url", "lowerAscii", "upperAscii", "substring", "trim":
		if len(args) >= 1 {
			return cost(uint64(math.Ceil(float64(actualSize(args[0])) * common.StringTraversalCostFactor)))
		}
	case "replace", "split":
		if len(args) >= 1 {
			// the walk, then building the result
			return cost(uint64(math.Ceil(float64(actualSize(args[0])) * 2 * common.StringTraversalCostFactor)))
		}
	case "join":
		if len(args) >= 1 {
			return cost(uint64(math.Ceil(float64(actualSize(result)) * 2 * common.StringTraversalCostFactor)))
		}
	case "find", "findAll":
		if len(args) >= 2 {
			str := uint64(math.Ceil((1.0 + float64(actualSize(args[0]))) * common.StringTraversalCostFactor))
			re := uint64(math.Ceil(float64(actualSize(args[1])) * common.RegexStringLengthCostFactor))
			return cost(str * re)
		}
	}
	return nil
}

func actualSize(v ref.Val) uint64 {
	if s, ok := v.(traits.Sizer); ok {
		if n, ok := s.Size().(types.Int); ok {
			return uint64(n)
		}
	}
	return 1
}

// traversalCost is the cost of walking a value once: a list's elements
// each (a string by its length, anything else 1), a string by its
// length, rounded down.
func traversalCost(v ref.Val) uint64 {
	switch x := v.(type) {
	case traits.Lister:
		cost := uint64(0)
		for it := x.Iterator(); it.HasNext() == types.True; {
			cost += traversalCost(it.Next())
		}
		return cost
	case types.String:
		return uint64(float64(len([]rune(string(x)))) * common.StringTraversalCostFactor)
	case types.Bytes:
		return uint64(float64(len(x)) * common.StringTraversalCostFactor)
	}
	return 1
}

// maxCardinality is how many times data of the given smallest JSON size
// fits in a request of the largest size: how often a rule under lists
// and maps without bounds may run for one object.
func maxCardinality(minSize int64) uint64 {
	return uint64(maxRequestSizeBytes / (minSize + 1))
}

func multiplyNoOverflow(x, y uint64) uint64 {
	if y != 0 && x > math.MaxUint64/y {
		return math.MaxUint64
	}
	return x * y
}

// costErrorMessage is kube's words for an estimate over its limit.
func costErrorMessage(what string, cost, limit uint64) string {
	factor := float64(cost) / float64(limit)
	var by string
	switch {
	case factor > 100.0:
		// quadratic or worse: the figure says nothing more
		by = "more than 100x"
	case factor < 1.5:
		by = fmt.Sprintf("%fx", factor)
	default:
		by = fmt.Sprintf("%.1fx", factor)
	}
	return fmt.Sprintf("%s exceeds budget by factor of %s (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)", what, by)
}

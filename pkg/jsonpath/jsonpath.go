package jsonpath

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
)

// JSONPath is a parsed template.
type JSONPath struct {
	root             *listNode
	allowMissingKeys bool
}

// Parse parses a template: text with {actions}. A printer column's
// jsonPath is the action "{" + path + "}".
func Parse(template string) (*JSONPath, error) {
	root, err := parseTemplate(template)
	if err != nil {
		return nil, err
	}
	return &JSONPath{root: root}, nil
}

// AllowMissingKeys makes a field that no input has find nothing instead
// of failing, as printer columns evaluate.
func (j *JSONPath) AllowMissingKeys(allow bool) *JSONPath {
	j.allowMissingKeys = allow
	return j
}

// FindResults evaluates the template on data, decoded JSON
// (map[string]interface{}, []interface{}, string, int64, float64, bool,
// nil): one list of values per top-level element (an action, or text),
// as kube's FindResults returns them. Text yields itself; numbers and
// booleans written in an action yield int, float64 and bool; a string's
// elements are its bytes (uint8).
func (j *JSONPath) FindResults(data interface{}) ([][]interface{}, error) {
	e := &evaluation{allowMissingKeys: j.allowMissingKeys}
	return e.findResults(data, j.root.nodes)
}

// evaluation carries the state of range/end over one FindResults.
type evaluation struct {
	allowMissingKeys bool
	beginRange       int
	inRange          int
	endRange         int
	lastEnd          *node
}

func (e *evaluation) findResults(data interface{}, nodes []node) ([][]interface{}, error) {
	full := [][]interface{}{}
	cur := []interface{}{data}
	for i := 0; i < len(nodes); i++ {
		results, err := e.walk(cur, nodes[i])
		if err != nil {
			return nil, err
		}
		// An end closes the innermost range's block.
		if e.endRange > 0 && e.endRange <= e.inRange {
			e.endRange--
			e.lastEnd = &nodes[i]
			break
		}
		// A range evaluates the rest of the template on each value.
		if e.beginRange > 0 {
			e.beginRange--
			e.inRange++
			if len(results) > 0 {
				for _, v := range results {
					next, err := e.findResults(v, nodes[i+1:])
					if err != nil {
						return nil, err
					}
					full = append(full, next...)
				}
			} else if _, err := e.findResults(nil, nodes[i+1:]); err != nil {
				return nil, err
			}
			e.inRange--
			for k := i + 1; k < len(nodes); k++ {
				if &nodes[k] == e.lastEnd {
					i = k
					break
				}
			}
			continue
		}
		full = append(full, results)
	}
	return full, nil
}

func (e *evaluation) walk(input []interface{}, n node) ([]interface{}, error) {
	switch n := n.(type) {
	case *listNode:
		return e.evalList(input, n)
	case *textNode:
		return []interface{}{n.text}, nil
	case *fieldNode:
		return e.evalField(input, n)
	case *arrayNode:
		return evalArray(input, n)
	case *filterNode:
		return e.evalFilter(input, n)
	case *intNode:
		return repeat(input, n.value), nil
	case *floatNode:
		return repeat(input, n.value), nil
	case *boolNode:
		return repeat(input, n.value), nil
	case *wildcardNode:
		return evalWildcard(input), nil
	case *recursiveNode:
		return evalRecursive(input), nil
	case *unionNode:
		return e.evalUnion(input, n)
	case *identifierNode:
		return e.evalIdentifier(input, n)
	}
	return input, fmt.Errorf("unexpected node %T", n)
}

func (e *evaluation) evalList(input []interface{}, l *listNode) ([]interface{}, error) {
	cur := input
	for _, n := range l.nodes {
		var err error
		if cur, err = e.walk(cur, n); err != nil {
			return cur, err
		}
	}
	return cur, nil
}

// repeat is a literal's value, once per input value.
func repeat(input []interface{}, v interface{}) []interface{} {
	out := make([]interface{}, len(input))
	for i := range out {
		out[i] = v
	}
	return out
}

func (e *evaluation) evalIdentifier(input []interface{}, n *identifierNode) ([]interface{}, error) {
	switch n.name {
	case "range":
		e.beginRange++
		return input, nil
	case "end":
		if e.inRange > 0 {
			e.endRange++
			return []interface{}{}, nil
		}
		return []interface{}{}, fmt.Errorf("not in range, nothing to end")
	}
	return input, fmt.Errorf("unrecognized identifier %v", n.name)
}

func (e *evaluation) evalField(input []interface{}, n *fieldNode) ([]interface{}, error) {
	results := []interface{}{}
	if len(input) == 0 {
		return results, nil
	}
	for _, v := range input {
		if m, ok := v.(map[string]interface{}); ok {
			if x, ok := m[n.name]; ok {
				results = append(results, x)
			}
		}
	}
	if len(results) == 0 && !e.allowMissingKeys {
		return results, fmt.Errorf("%s is not found", n.name)
	}
	return results, nil
}

// evalArray applies a subscript to each list. As kube's, a subscript that
// selects nothing ends the evaluation with what was found so far.
func evalArray(input []interface{}, n *arrayNode) ([]interface{}, error) {
	result := []interface{}{}
	for _, v := range input {
		if v == nil {
			continue
		}
		list, ok := v.([]interface{})
		if !ok {
			return input, fmt.Errorf("%v is not array or slice", typeName(v))
		}
		params := n.params
		length := len(list)
		if !params[0].known {
			params[0].value = 0
		}
		if params[0].value < 0 {
			params[0].value += length
		}
		if !params[1].known {
			params[1].value = length
		}
		if params[1].value < 0 || (params[1].value == 0 && params[1].derived) {
			params[1].value += length
		}
		if params[1].value == params[0].value {
			return result, nil
		}
		if params[0].value >= length || params[0].value < 0 {
			return input, fmt.Errorf("array index out of bounds: index %d, length %d", params[0].value, length)
		}
		if params[1].value > length || params[1].value < 0 {
			return input, fmt.Errorf("array index out of bounds: index %d, length %d", params[1].value-1, length)
		}
		if params[0].value > params[1].value {
			return input, fmt.Errorf("starting index %d is greater than ending index %d", params[0].value, params[1].value)
		}
		step := 1
		if params[2].known {
			if params[2].value <= 0 {
				return input, fmt.Errorf("step must be > 0")
			}
			step = params[2].value
		}
		for i := params[0].value; i < params[1].value; i += step {
			result = append(result, list[i])
		}
	}
	return result, nil
}

func (e *evaluation) evalUnion(input []interface{}, n *unionNode) ([]interface{}, error) {
	result := []interface{}{}
	for _, b := range n.branches {
		found, err := e.evalList(input, b)
		if err != nil {
			return input, err
		}
		result = append(result, found...)
	}
	return result, nil
}

// children are the values inside v: a map's (by key), a list's, a
// string's bytes.
func children(v interface{}) []interface{} {
	switch v := v.(type) {
	case map[string]interface{}:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make([]interface{}, len(keys))
		for i, k := range keys {
			out[i] = v[k]
		}
		return out
	case []interface{}:
		return v
	case string:
		out := make([]interface{}, len(v))
		for i := 0; i < len(v); i++ {
			out[i] = v[i]
		}
		return out
	}
	return nil
}

func evalWildcard(input []interface{}) []interface{} {
	result := []interface{}{}
	for _, v := range input {
		result = append(result, children(v)...)
	}
	return result
}

// evalRecursive returns every value that has values inside, depth first,
// each before what it holds.
func evalRecursive(input []interface{}) []interface{} {
	result := []interface{}{}
	for _, v := range input {
		if c := children(v); len(c) > 0 {
			result = append(result, v)
			result = append(result, evalRecursive(c)...)
		}
	}
	return result
}

func (e *evaluation) evalFilter(input []interface{}, n *filterNode) ([]interface{}, error) {
	results := []interface{}{}
	for _, v := range input {
		list, ok := v.([]interface{})
		if !ok {
			return input, fmt.Errorf("%v is not array or slice and cannot be filtered", v)
		}
		for _, item := range list {
			temp := []interface{}{item}
			lefts, err := e.evalList(temp, n.left)
			if n.op == "exists" {
				if len(lefts) > 0 {
					results = append(results, item)
				}
				continue
			}
			if err != nil {
				return input, err
			}
			switch {
			case len(lefts) == 0:
				continue
			case len(lefts) > 1:
				return input, fmt.Errorf("can only compare one element at a time")
			}
			rights, err := e.evalList(temp, n.right)
			if err != nil {
				return input, err
			}
			switch {
			case len(rights) == 0:
				continue
			case len(rights) > 1:
				return input, fmt.Errorf("can only compare one element at a time")
			}
			pass, err := compare(n.op, lefts[0], rights[0])
			if err != nil {
				return results, err
			}
			if pass {
				results = append(results, item)
			}
		}
	}
	return results, nil
}

type kind int

const (
	invalidKind kind = iota
	boolKind
	intKind
	uintKind
	floatKind
	complexKind
	stringKind
)

func basicKind(v interface{}) (kind, reflect.Value, error) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Bool:
		return boolKind, rv, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return intKind, rv, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return uintKind, rv, nil
	case reflect.Float32, reflect.Float64:
		return floatKind, rv, nil
	case reflect.Complex64, reflect.Complex128:
		return complexKind, rv, nil
	case reflect.String:
		return stringKind, rv, nil
	}
	return invalidKind, rv, fmt.Errorf("invalid type for comparison")
}

// compare applies a filter's operator; values of different kinds, or
// that have no order, do not compare.
func compare(op string, left, right interface{}) (bool, error) {
	k1, v1, err := basicKind(left)
	if err != nil {
		return false, err
	}
	k2, v2, err := basicKind(right)
	if err != nil {
		return false, err
	}
	if k1 != k2 {
		return false, fmt.Errorf("incompatible types for comparison")
	}
	var eq, less bool
	ordered := true
	switch k1 {
	case boolKind:
		eq, ordered = v1.Bool() == v2.Bool(), false
	case complexKind:
		eq, ordered = v1.Complex() == v2.Complex(), false
	case intKind:
		eq, less = v1.Int() == v2.Int(), v1.Int() < v2.Int()
	case uintKind:
		eq, less = v1.Uint() == v2.Uint(), v1.Uint() < v2.Uint()
	case floatKind:
		eq, less = v1.Float() == v2.Float(), v1.Float() < v2.Float()
	case stringKind:
		eq, less = v1.String() == v2.String(), v1.String() < v2.String()
	}
	switch op {
	case "==":
		return eq, nil
	case "!=":
		return !eq, nil
	case "<", ">", "<=", ">=":
		if !ordered {
			return false, fmt.Errorf("invalid type for comparison")
		}
		switch op {
		case "<":
			return less, nil
		case ">":
			return !less && !eq, nil
		case "<=":
			return less || eq, nil
		default:
			return !less, nil
		}
	}
	return false, fmt.Errorf("unrecognized filter operator %s", op)
}

func typeName(v interface{}) string {
	switch v.(type) {
	case map[string]interface{}:
		return "map[string]interface {}"
	case nil:
		return "<nil>"
	}
	return reflect.TypeOf(v).String()
}

// Text prints one found value as kube's PrintResults does: maps and
// lists as compact JSON, nil as "<no value>", anything else with fmt.
func Text(v interface{}) (string, error) {
	switch v.(type) {
	case nil:
		return "<no value>", nil
	case map[string]interface{}, []interface{}:
		b, err := json.Marshal(v)
		return string(b), err
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map, reflect.Slice, reflect.Array, reflect.Struct:
		b, err := json.Marshal(v)
		return string(b), err
	case reflect.Chan, reflect.Func:
		return "", fmt.Errorf("can't print type %s", rv.Type())
	}
	return fmt.Sprint(v), nil
}

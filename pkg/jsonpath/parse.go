// Package jsonpath implements the JSONPath dialect of Kubernetes: the
// templates of kubectl's -o jsonpath and of a CustomResourceDefinition's
// printer columns. A template is text with actions in braces
// ("{.status.phase}"); an action is a path of fields (".a.b", "['a']",
// with "\." escaping a dot), array subscripts ("[0]", "[-1]", "[1:3:2]",
// "[*]"), unions ("[0,2]", "['a','b']"), wildcards (".*"), recursive
// descent (".."), filters ("[?(@.type==\"Ready\")]" with ==, !=, <, <=,
// >, >= or a bare path for existence), literals, and range/end.
//
// Parsing and evaluation follow kube-apiserver's: the same templates
// parse, the same values are found in the same order (map keys in sorted
// order where kube's order is unspecified), and evaluation fails where
// kube's does (an index out of range, a filter over something that is
// not a list, values of different kinds compared).
package jsonpath

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// node is one element of a parsed template.
type node interface{}

type (
	// listNode is an action, or the whole template: its nodes apply one
	// after the other.
	listNode struct{ nodes []node }
	textNode struct{ text string }
	// fieldNode looks a key up in maps.
	fieldNode      struct{ name string }
	wildcardNode   struct{}
	recursiveNode  struct{}
	identifierNode struct{ name string }
	intNode        struct{ value int }
	floatNode      struct{ value float64 }
	boolNode       struct{ value bool }
	// arrayNode is a subscript [start:end:step].
	arrayNode struct{ params [3]param }
	// unionNode evaluates each branch on the same input.
	unionNode struct{ branches []*listNode }
	// filterNode keeps the list elements for which left op right holds;
	// op "exists" keeps those for which left finds something.
	filterNode struct {
		left, right *listNode
		op          string
	}
)

// param is one bound of a subscript. derived marks the end of a single
// index ([i] is [i:i+1]).
type param struct {
	value   int
	known   bool
	derived bool
}

const eof = -1

type parser struct {
	input string
	root  *listNode
	pos   int
	start int
	width int
}

// parseTemplate parses a whole template: text and {actions}.
func parseTemplate(text string) (*listNode, error) {
	p := &parser{input: text, root: &listNode{}}
	if err := p.parseText(); err != nil {
		return nil, err
	}
	return p.root, nil
}

// parseAction parses text as the body of one action, as kube reparses the
// parts of unions, dictionary keys and filters.
func parseAction(text string) (*listNode, error) {
	return parseTemplate("{" + text + "}")
}

func (p *parser) next() rune {
	if p.pos >= len(p.input) {
		p.width = 0
		return eof
	}
	r, w := utf8.DecodeRuneInString(p.input[p.pos:])
	p.width = w
	p.pos += w
	return r
}

func (p *parser) peek() rune {
	r := p.next()
	p.backup()
	return r
}

func (p *parser) backup() { p.pos -= p.width }

func (p *parser) consumeText() string {
	s := p.input[p.start:p.pos]
	p.start = p.pos
	return s
}

func (p *parser) parseText() error {
	for {
		if strings.HasPrefix(p.input[p.pos:], "{") {
			if p.pos > p.start {
				p.root.nodes = append(p.root.nodes, &textNode{text: p.consumeText()})
			}
			p.pos++
			p.consumeText()
			action := &listNode{}
			p.root.nodes = append(p.root.nodes, action)
			return p.parseInsideAction(action)
		}
		if p.next() == eof {
			break
		}
	}
	if p.pos > p.start {
		p.root.nodes = append(p.root.nodes, &textNode{text: p.consumeText()})
	}
	return nil
}

// parseInsideAction parses an action's elements up to its closing brace;
// what follows the brace is text again, at the top level.
func (p *parser) parseInsideAction(cur *listNode) error {
	for {
		rest := p.input[p.pos:]
		switch {
		case strings.HasPrefix(rest, "}"):
			p.pos++
			p.consumeText()
			return p.parseText()
		case strings.HasPrefix(rest, "[?("):
			if err := p.parseFilter(cur); err != nil {
				return err
			}
			continue
		case strings.HasPrefix(rest, ".."):
			if err := p.parseRecursive(cur); err != nil {
				return err
			}
			continue
		}
		var err error
		switch r := p.next(); {
		case r == eof || r == '\r' || r == '\n':
			return fmt.Errorf("unclosed action")
		case r == ' ', r == '@', r == '$':
			// Spaces separate; @ and $ are the current object.
			p.consumeText()
		case r == '[':
			err = p.parseArray(cur)
		case r == '"' || r == '\'':
			err = p.parseQuote(cur, r)
		case r == '.':
			p.consumeText()
			err = p.parseField(cur)
		case r == '+' || r == '-' || unicode.IsDigit(r):
			p.backup()
			err = p.parseNumber(cur)
		case isAlphaNumeric(r):
			p.backup()
			err = p.parseIdentifier(cur)
		default:
			return fmt.Errorf("unrecognized character in action: %#U", r)
		}
		if err != nil {
			return err
		}
	}
}

// parseIdentifier reads a word: true or false, or a keyword (range, end)
// that evaluation interprets.
func (p *parser) parseIdentifier(cur *listNode) error {
	for {
		if r := p.next(); isTerminator(r) {
			p.backup()
			break
		}
	}
	value := p.consumeText()
	switch value {
	case "true", "false":
		cur.nodes = append(cur.nodes, &boolNode{value: value == "true"})
	default:
		cur.nodes = append(cur.nodes, &identifierNode{name: value})
	}
	return nil
}

func (p *parser) parseRecursive(cur *listNode) error {
	if n := len(cur.nodes); n > 0 {
		if _, ok := cur.nodes[n-1].(*recursiveNode); ok {
			return fmt.Errorf("invalid multiple recursive descent")
		}
	}
	p.pos += len("..")
	p.consumeText()
	cur.nodes = append(cur.nodes, &recursiveNode{})
	if isAlphaNumeric(p.peek()) {
		return p.parseField(cur)
	}
	return nil
}

func (p *parser) parseNumber(cur *listNode) error {
	if r := p.peek(); r == '+' || r == '-' {
		p.next()
	}
	for {
		if r := p.next(); r != '.' && !unicode.IsDigit(r) {
			p.backup()
			break
		}
	}
	value := p.consumeText()
	if i, err := strconv.Atoi(value); err == nil {
		cur.nodes = append(cur.nodes, &intNode{value: i})
		return nil
	}
	if f, err := strconv.ParseFloat(value, 64); err == nil {
		cur.nodes = append(cur.nodes, &floatNode{value: f})
		return nil
	}
	return fmt.Errorf("cannot parse number %s", value)
}

var (
	dictKeyRegexp = regexp.MustCompile(`^'([^']*)'$`)
	sliceRegexp   = regexp.MustCompile(`^(-?[\d]*)(:-?[\d]*)?(:-?[\d]*)?$`)
	filterRegexp  = regexp.MustCompile(`^([^!<>=]+)([!<>=]+)(.+?)$`)
)

// parseArray reads a subscript up to the first ']': a union, a quoted
// key, or a slice.
func (p *parser) parseArray(cur *listNode) error {
	for {
		r := p.next()
		if r == eof || r == '\n' {
			return fmt.Errorf("unterminated array")
		}
		if r == ']' {
			break
		}
	}
	text := p.consumeText()
	text = text[1 : len(text)-1]
	if text == "*" {
		text = ":"
	}
	if parts := strings.Split(text, ","); len(parts) > 1 {
		union := &unionNode{}
		for _, part := range parts {
			branch, err := parseAction("[" + strings.Trim(part, " ") + "]")
			if err != nil {
				return err
			}
			union.branches = append(union.branches, branch)
		}
		cur.nodes = append(cur.nodes, union)
		return nil
	}
	if m := dictKeyRegexp.FindStringSubmatch(text); m != nil {
		// A quoted key is read as a path of fields: "['a.b']" is ".a.b".
		key, err := parseAction("." + m[1])
		if err != nil {
			return err
		}
		cur.nodes = append(cur.nodes, key.nodes[0].(*listNode).nodes...)
		return nil
	}
	m := sliceRegexp.FindStringSubmatch(text)
	if m == nil {
		return fmt.Errorf("invalid array index %s", text)
	}
	var params [3]param
	for i, s := range m[1:] {
		if i > 0 && s != "" {
			s = s[1:]
			if s == "" {
				continue
			}
		}
		switch {
		case s != "":
			v, err := strconv.Atoi(s)
			if err != nil {
				return fmt.Errorf("array index %s is not a number", s)
			}
			params[i] = param{value: v, known: true}
		case i == 1:
			params[i] = param{value: params[0].value + 1, known: true, derived: true}
		}
	}
	cur.nodes = append(cur.nodes, &arrayNode{params: params})
	return nil
}

// parseFilter reads "[?(left op right)]"; a closing parenthesis inside
// the first quoted string does not end it.
func (p *parser) parseFilter(cur *listNode) error {
	p.pos += len("[?(")
	p.consumeText()
	begin, end := false, false
	var pair rune
loop:
	for {
		r := p.next()
		switch r {
		case eof, '\n':
			return fmt.Errorf("unterminated filter")
		case '"', '\'':
			if !begin {
				begin, pair = true, r
				continue
			}
			if p.input[p.pos-2] != '\\' && r == pair {
				end = true
			}
		case ')':
			if begin == end {
				break loop
			}
		}
	}
	if p.next() != ']' {
		return fmt.Errorf("unclosed array expect ]")
	}
	text := p.consumeText()
	text = text[:len(text)-2]
	m := filterRegexp.FindStringSubmatch(text)
	if m == nil {
		left, err := parseAction(text)
		if err != nil {
			return err
		}
		cur.nodes = append(cur.nodes, &filterNode{left: left, right: &listNode{}, op: "exists"})
		return nil
	}
	left, err := parseAction(m[1])
	if err != nil {
		return err
	}
	right, err := parseAction(m[3])
	if err != nil {
		return err
	}
	cur.nodes = append(cur.nodes, &filterNode{left: left, right: right, op: m[2]})
	return nil
}

// parseQuote reads a quoted string literal, with Go's escapes.
func (p *parser) parseQuote(cur *listNode, end rune) error {
loop:
	for {
		switch p.next() {
		case eof, '\n':
			return fmt.Errorf("unterminated quoted string")
		case '\\':
			if p.next() == eof {
				return fmt.Errorf("unterminated quoted string")
			}
		case end:
			break loop
		}
	}
	value := p.consumeText()
	s, err := unquote(value)
	if err != nil {
		return fmt.Errorf("unquote string %s error %v", value, err)
	}
	cur.nodes = append(cur.nodes, &textNode{text: s})
	return nil
}

// unquote is strconv.Unquote for double- or single-quoted strings of any
// length.
func unquote(s string) (string, error) {
	n := len(s)
	if n < 2 || s[0] != s[n-1] || (s[0] != '"' && s[0] != '\'') {
		return "", strconv.ErrSyntax
	}
	quote := s[0]
	s = s[1 : n-1]
	if !strings.ContainsRune(s, '\\') && !strings.ContainsRune(s, rune(quote)) {
		return s, nil
	}
	var b strings.Builder
	for len(s) > 0 {
		c, multibyte, rest, err := strconv.UnquoteChar(s, quote)
		if err != nil {
			return "", err
		}
		s = rest
		if c < utf8.RuneSelf || !multibyte {
			b.WriteByte(byte(c))
		} else {
			b.WriteRune(c)
		}
	}
	return b.String(), nil
}

// parseField reads a field name up to an unescaped terminator; "*" is the
// wildcard, and backslashes only escape.
func (p *parser) parseField(cur *listNode) error {
	for {
		r := p.next()
		if r == '\\' {
			p.next()
			continue
		}
		if isTerminator(r) {
			p.backup()
			break
		}
	}
	value := p.consumeText()
	if value == "*" {
		cur.nodes = append(cur.nodes, &wildcardNode{})
	} else {
		cur.nodes = append(cur.nodes, &fieldNode{name: strings.ReplaceAll(value, `\`, "")})
	}
	return nil
}

func isTerminator(r rune) bool {
	switch r {
	case eof, ' ', '\t', '\r', '\n', '.', ',', '[', ']', '$', '@', '{', '}':
		return true
	}
	return false
}

func isAlphaNumeric(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

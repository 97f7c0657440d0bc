package cel

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/schema"
)

// validFieldPath checks a rule's fieldPath, a JSON path relative to s
// made of field (.a, ['a.b']) and map key (.k, ['k']) steps only, and
// returns it as a field path with the schema it reaches.
func validFieldPath(p string, s *schema.Schema) (*field.Path, *schema.Schema, error) {
	toks, err := fieldPathTokens(p)
	if err != nil {
		return nil, nil, err
	}
	var out *field.Path
	step := func(name string) error {
		switch {
		case s.Properties != nil:
			next, ok := s.Properties[name]
			if !ok {
				return fmt.Errorf("does not refer to a valid field")
			}
			out = out.Child(name)
			s = next
		case s.AdditionalProperties != nil:
			out = out.Key(name)
			s = s.AdditionalProperties
		default:
			return fmt.Errorf("does not refer to a valid field")
		}
		return nil
	}
	for i := 0; i < len(toks); i++ {
		switch toks[i] {
		case ".":
			i++
			if i >= len(toks) {
				return nil, nil, fmt.Errorf("unexpected end of JSON path")
			}
			if err := step(toks[i]); err != nil {
				return nil, nil, err
			}
		case "[":
			i++
			if i >= len(toks) {
				return nil, nil, fmt.Errorf("unexpected end of JSON path")
			}
			t := toks[i]
			if len(t) < 2 || t[0] != '\'' || t[len(t)-1] != '\'' {
				return nil, nil, fmt.Errorf("expected single quoted string but got %s", t)
			}
			name, err := unquoteSingle(t[1 : len(t)-1])
			if err != nil {
				return nil, nil, fmt.Errorf("invalid string literal: %v", err)
			}
			if err := step(name); err != nil {
				return nil, nil, err
			}
			i++
			if i >= len(toks) {
				return nil, nil, fmt.Errorf("unexpected end of JSON path")
			}
			if toks[i] != "]" {
				return nil, nil, fmt.Errorf("expected ] but got %s", toks[i])
			}
		default:
			return nil, nil, fmt.Errorf("expected [ or . but got: %s", toks[i])
		}
	}
	return out, s, nil
}

// fieldPathTokens splits a path into ".", "[", "]", single-quoted
// strings (quotes kept) and the names between them.
func fieldPathTokens(p string) ([]string, error) {
	var toks []string
	for len(p) > 0 {
		if p[0] == '\'' {
			end := -1
			for i := 1; i < len(p); i++ {
				if p[i] == '\'' && p[i-1] != '\\' {
					end = i
					break
				}
			}
			if end < 0 {
				// an unclosed quote runs to the end
				toks = append(toks, p)
				break
			}
			toks = append(toks, p[:end+1])
			p = p[end+1:]
			continue
		}
		i := strings.IndexAny(p, ".[]")
		switch {
		case i == 0:
			toks = append(toks, p[:1])
			p = p[1:]
		case i < 0:
			toks = append(toks, p)
			p = ""
		default:
			toks = append(toks, p[:i])
			p = p[i:]
		}
	}
	return toks, nil
}

// unquoteSingle undoes \' and \\ in a single-quoted path step.
func unquoteSingle(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			return "", fmt.Errorf("unterminated escape sequence")
		}
		switch s[i] {
		case '\'', '\\':
			b.WriteByte(s[i])
		default:
			return "", fmt.Errorf("invalid escape sequence \\%c", s[i])
		}
	}
	return b.String(), nil
}

package cel

import "strings"

// reservedWords are the identifiers CEL reserves: a property named like
// one is reachable in a rule as __<word>__.
var reservedWords = map[string]bool{
	"true": true, "false": true, "null": true, "in": true,
	"as": true, "break": true, "const": true, "continue": true, "else": true,
	"for": true, "function": true, "if": true, "import": true, "let": true,
	"loop": true, "package": true, "namespace": true, "return": true,
	"var": true, "void": true, "while": true,
}

// Escape returns the CEL identifier under which a rule reaches the
// property name, and false when the name is not reachable: names must
// match [a-zA-Z_.-/][a-zA-Z0-9_.-/]*. "__" becomes __underscores__, "."
// __dot__, "-" __dash__, "/" __slash__, and a reserved word w __w__.
func Escape(name string) (string, bool) {
	if name == "" || ('0' <= name[0] && name[0] <= '9') {
		return "", false
	}
	if reservedWords[name] {
		return "__" + name + "__", true
	}
	plain := true
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '_':
			if i+1 < len(name) && name[i+1] == '_' {
				plain = false
			}
		case c == '.', c == '-', c == '/':
			plain = false
		default:
			return "", false
		}
	}
	if plain {
		return name, true
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c == '_' && i+1 < len(name) && name[i+1] == '_':
			b.WriteString("__underscores__")
			i++
		case c == '.':
			b.WriteString("__dot__")
		case c == '-':
			b.WriteString("__dash__")
		case c == '/':
			b.WriteString("__slash__")
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

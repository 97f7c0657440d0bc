package audit

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"unicode/utf8"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// appendJSON appends ev as encoding/json encodes it, byte for byte. Every
// audited request is encoded at least twice (RequestReceived and
// ResponseComplete), and reflection made that the larger part of what
// auditing a request cost; the nested Status, the only part whose shape
// varies much, still goes through encoding/json when it says more than
// its code.
func (ev *Event) appendJSON(b []byte) ([]byte, error) {
	b = append(b, '{')
	if ev.Kind != "" {
		b = appendKey(b, "kind", true)
		b = appendString(b, ev.Kind)
	}
	if ev.APIVersion != "" {
		b = appendKey(b, "apiVersion", ev.Kind == "")
		b = appendString(b, ev.APIVersion)
	}
	b = appendKey(b, "level", ev.Kind == "" && ev.APIVersion == "")
	b = appendString(b, string(ev.Level))
	b = appendKey(b, "auditID", false)
	b = appendString(b, string(ev.AuditID))
	b = appendKey(b, "stage", false)
	b = appendString(b, string(ev.Stage))
	b = appendKey(b, "requestURI", false)
	b = appendString(b, ev.RequestURI)
	b = appendKey(b, "verb", false)
	b = appendString(b, ev.Verb)
	b = appendKey(b, "user", false)
	b = appendUser(b, &ev.User)
	if ev.ImpersonatedUser != nil {
		b = appendKey(b, "impersonatedUser", false)
		b = appendUser(b, ev.ImpersonatedUser)
	}
	if len(ev.SourceIPs) > 0 {
		b = appendKey(b, "sourceIPs", false)
		b = appendStrings(b, ev.SourceIPs)
	}
	if ev.UserAgent != "" {
		b = appendKey(b, "userAgent", false)
		b = appendString(b, ev.UserAgent)
	}
	if ref := ev.ObjectRef; ref != nil {
		b = appendKey(b, "objectRef", false)
		b = appendObjectRef(b, ref)
	}
	if s := ev.ResponseStatus; s != nil {
		b = appendKey(b, "responseStatus", false)
		var err error
		if b, err = appendStatus(b, s); err != nil {
			return nil, err
		}
	}
	for _, raw := range []struct {
		key string
		v   json.RawMessage
	}{{"requestObject", ev.RequestObject}, {"responseObject", ev.ResponseObject}} {
		if len(raw.v) == 0 {
			continue
		}
		b = appendKey(b, raw.key, false)
		var compact bytes.Buffer
		if err := json.Compact(&compact, raw.v); err != nil {
			return nil, err
		}
		buf := bytes.NewBuffer(b)
		json.HTMLEscape(buf, compact.Bytes())
		b = buf.Bytes()
	}
	b = appendKey(b, "requestReceivedTimestamp", false)
	b = appendMicroTime(b, ev.RequestReceivedTimestamp)
	b = appendKey(b, "stageTimestamp", false)
	b = appendMicroTime(b, ev.StageTimestamp)
	if len(ev.Annotations) > 0 {
		b = appendKey(b, "annotations", false)
		b = appendStringMap(b, ev.Annotations)
	}
	return append(b, '}'), nil
}

func appendKey(b []byte, key string, first bool) []byte {
	if !first {
		b = append(b, ',')
	}
	b = appendString(b, key)
	return append(b, ':')
}

func appendUser(b []byte, u *authenticationv1.UserInfo) []byte {
	b = append(b, '{')
	first := true
	field := func(key string) {
		b = appendKey(b, key, first)
		first = false
	}
	if u.Username != "" {
		field("username")
		b = appendString(b, u.Username)
	}
	if u.UID != "" {
		field("uid")
		b = appendString(b, u.UID)
	}
	if len(u.Groups) > 0 {
		field("groups")
		b = appendStrings(b, u.Groups)
	}
	if len(u.Extra) > 0 {
		field("extra")
		keys := make([]string, 0, len(u.Extra))
		for k := range u.Extra {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = append(b, '{')
		for i, k := range keys {
			b = appendKey(b, k, i == 0)
			if u.Extra[k] == nil {
				b = append(b, "null"...)
			} else {
				b = appendStrings(b, u.Extra[k])
			}
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

func appendObjectRef(b []byte, ref *ObjectReference) []byte {
	b = append(b, '{')
	first := true
	for _, f := range []struct{ key, value string }{
		{"resource", ref.Resource}, {"namespace", ref.Namespace}, {"name", ref.Name}, {"uid", string(ref.UID)},
		{"apiGroup", ref.APIGroup}, {"apiVersion", ref.APIVersion}, {"resourceVersion", ref.ResourceVersion},
		{"subresource", ref.Subresource},
	} {
		if f.value != "" {
			b = appendKey(b, f.key, first)
			b = appendString(b, f.value)
			first = false
		}
	}
	return append(b, '}')
}

// appendStatus writes the common status, a code alone, itself; any other
// through encoding/json.
func appendStatus(b []byte, s *metav1.Status) ([]byte, error) {
	if s.TypeMeta == (metav1.TypeMeta{}) && s.ListMeta == (metav1.ListMeta{}) &&
		s.Status == "" && s.Message == "" && s.Reason == "" && s.Details == nil {
		b = append(b, `{"metadata":{},"code":`...)
		b = strconv.AppendInt(b, int64(s.Code), 10)
		return append(b, '}'), nil
	}
	data, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	return append(b, data...), nil
}

func appendMicroTime(b []byte, t metav1.MicroTime) []byte {
	if t.IsZero() {
		return append(b, "null"...)
	}
	// RFC3339Micro in UTC, written out: time.AppendFormat parses its
	// layout on every call.
	u := t.UTC()
	year, month, day := u.Date()
	hour, minute, sec := u.Clock()
	if year < 0 || year > 9999 {
		b = append(b, '"')
		b = u.AppendFormat(b, metav1.RFC3339Micro)
		return append(b, '"')
	}
	b = append(b, '"')
	b = appendDigits(b, year, 4)
	b = append(b, '-')
	b = appendDigits(b, int(month), 2)
	b = append(b, '-')
	b = appendDigits(b, day, 2)
	b = append(b, 'T')
	b = appendDigits(b, hour, 2)
	b = append(b, ':')
	b = appendDigits(b, minute, 2)
	b = append(b, ':')
	b = appendDigits(b, sec, 2)
	b = append(b, '.')
	b = appendDigits(b, u.Nanosecond()/1000, 6)
	return append(b, 'Z', '"')
}

// appendDigits writes n, non-negative, in width digits, zero-padded.
func appendDigits(b []byte, n, width int) []byte {
	var d [9]byte
	for i := width - 1; i >= 0; i-- {
		d[i] = byte('0' + n%10)
		n /= 10
	}
	return append(b, d[:width]...)
}

func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

func appendStringMap(b []byte, m map[string]string) []byte {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b = append(b, '{')
	for i, k := range keys {
		b = appendKey(b, k, i == 0)
		b = appendString(b, m[k])
	}
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// appendString quotes s as encoding/json does: HTML characters, control
// characters, U+2028/U+2029 escaped, invalid UTF-8 replaced.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

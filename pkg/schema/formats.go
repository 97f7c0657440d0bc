package schema

import (
	"encoding/hex"
	"net"
	"net/mail"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"

	netutils "k8s.io/utils/net"
)

// formatCheckers are the string formats kube validates in a custom
// resource (apiextensions' supported list, names without dashes as
// go-openapi normalizes them); any other format is documentation only.
// Each check accepts exactly what kube's format registry accepts, quirks
// included, so that an object valid on kube stays valid here.
var formatCheckers = map[string]func(string) bool{
	"bsonobjectid": isBSONObjectID,
	"uri":          isURI,
	"email":        isEmail,
	"hostname":     isHostname,
	"ipv4":         isIPv4,
	"ipv6":         isIPv6,
	"cidr":         func(s string) bool { _, _, err := netutils.ParseCIDRSloppy(s); return err == nil },
	"mac":          func(s string) bool { _, err := net.ParseMAC(s); return err == nil },
	"uuid":         regexp.MustCompile(`(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$`).MatchString,
	"uuid3":        regexp.MustCompile(`(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$`).MatchString,
	"uuid4":        regexp.MustCompile(`(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$`).MatchString,
	"uuid5":        regexp.MustCompile(`(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$`).MatchString,
	"isbn":         func(s string) bool { return isISBN10(s) || isISBN13(s) },
	"isbn10":       isISBN10,
	"isbn13":       isISBN13,
	"creditcard":   isCreditCard,
	"ssn":          func(s string) bool { return len(s) == 11 && ssnRE.MatchString(s) },
	"hexcolor":     regexp.MustCompile(`^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$`).MatchString,
	"rgbcolor":     regexp.MustCompile(`^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$`).MatchString,
	"byte":         isBase64,
	"password":     func(string) bool { return true },
	"date":         isDate,
	"duration":     isDuration,
	"datetime":     isDateTime,
}

// formatChecker returns the check of format f, nil when kube ignores f.
func formatChecker(f string) func(string) bool {
	return formatCheckers[strings.ReplaceAll(f, "-", "")]
}

// ssnRE is the digit grouping of a U.S. social security number; kube also
// requires the 11 characters of the dashed form, so "123456789" fails.
var ssnRE = regexp.MustCompile(`^\d{3}[- ]?\d{2}[- ]?\d{4}$`)

// isBSONObjectID is twelve bytes in hexadecimal.
func isBSONObjectID(s string) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == 12
}

func isURI(s string) bool {
	_, err := url.ParseRequestURI(s)
	return err == nil
}

func isEmail(s string) bool {
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address != ""
}

// isIPv4 and isCIDR parse as kube's network utilities do, which accept
// the leading zeros ("010.001.1.1") that Go's net package refuses; an
// IPv4 is any address written with a dot, so "::ffff:1.2.3.4" is one.
func isIPv4(s string) bool {
	return netutils.ParseIPSloppy(s) != nil && strings.Contains(s, ".")
}

func isIPv6(s string) bool {
	return net.ParseIP(s) != nil && strings.Contains(s, ":")
}

// isBase64 is standard padded base64 with at least one quantum and no
// whitespace: the empty string is not "byte" data for kube.
func isBase64(s string) bool {
	if s == "" || len(s)%4 != 0 {
		return false
	}
	body := s
	for i := 0; i < 2 && strings.HasSuffix(body, "="); i++ {
		body = body[:len(body)-1]
	}
	for _, r := range body {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '+' || r == '/') {
			return false
		}
	}
	return true
}

// hostChar is a character kube allows in a host name label: ASCII
// letters and digits and any Unicode letter or symbol.
func hostChar(r rune) bool {
	return r < unicode.MaxASCII && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') ||
		unicode.IsLetter(r) || unicode.IsSymbol(r)
}

// isHostname accepts kube's host names: a single label of at most 63
// characters with at most one hyphen, right after its first character;
// or labels of 1 to 63 characters that start and end with a host
// character, each followed by a dot, then a last label of 2 to 63
// letters (no digits, no trailing dot). 255 bytes at most, 63 bytes a
// label.
func isHostname(s string) bool {
	if len(s) > 255 {
		return false
	}
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if len(l) > 63 {
			return false
		}
	}
	if len(labels) == 1 {
		return isSingleLabel([]rune(s))
	}
	for _, l := range labels[:len(labels)-1] {
		if !isInnerLabel([]rune(l)) {
			return false
		}
	}
	last := []rune(labels[len(labels)-1])
	if len(last) < 2 || len(last) > 63 {
		return false
	}
	for _, r := range last {
		if !(r < unicode.MaxASCII && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') || unicode.IsLetter(r)) {
			return false
		}
	}
	return true
}

func isSingleLabel(l []rune) bool {
	if len(l) == 0 || !hostChar(l[0]) {
		return false
	}
	rest := l[1:]
	if len(rest) > 0 && rest[0] == '-' {
		rest = rest[1:]
	}
	if len(rest) > 62 {
		return false
	}
	for _, r := range rest {
		if !hostChar(r) {
			return false
		}
	}
	return true
}

func isInnerLabel(l []rune) bool {
	if len(l) == 0 || len(l) > 63 || !hostChar(l[0]) || !hostChar(l[len(l)-1]) {
		return false
	}
	for _, r := range l {
		if r != '-' && !hostChar(r) {
			return false
		}
	}
	return true
}

func isDate(s string) bool {
	_, err := time.Parse("2006-01-02", s)
	return err == nil
}

// clockRE is the time part of kube's date-time: a zone is required, any
// one character may introduce the fraction.
var clockRE = regexp.MustCompile(`^(\d{2}):(\d{2}):(\d{2})(.\d+)?(z|[+-]\d{2}:\d{2})$`)

// isDateTime checks a date-time as kube does: the text, lower-cased, cut
// at each "t"; the first piece is a full date, the second a time with a
// zone and fields in range (further pieces are not looked at). A space
// instead of the "T", or a missing zone, is refused.
func isDateTime(s string) bool {
	if len(s) < 4 {
		return false
	}
	parts := strings.Split(strings.ToLower(s), "t")
	if len(parts) < 2 || !isDate(parts[0]) {
		return false
	}
	m := clockRE.FindStringSubmatch(parts[1])
	return m != nil && m[1] <= "23" && m[2] <= "59" && m[3] <= "59"
}

// durationTerm is one "<count> <unit>" of a Scala-like duration; kube
// finds them anywhere in the text, so "P1D" is one day.
var durationTerm = regexp.MustCompile(`(\d+)\s*([A-Za-zµ]+)`)

// durationUnits are the unit spellings kube knows, by unit; the last of
// each also matches as a prefix ("sec" matches "seconds").
var durationUnits = [][]string{
	{"ns", "nano"}, {"us", "µs", "micro"}, {"ms", "milli"}, {"s", "sec"},
	{"m", "min"}, {"h", "hr", "hour"}, {"d", "day"}, {"w", "wk", "week"},
}

// isDuration accepts Go durations, and any text in which some count is
// followed by a known unit.
func isDuration(s string) bool {
	if _, err := time.ParseDuration(s); err == nil {
		return true
	}
	known := false
	for _, m := range durationTerm.FindAllStringSubmatch(s, -1) {
		if _, err := strconv.Atoi(m[1]); err != nil {
			return false
		}
		unit := strings.ToLower(m[2])
		for _, spellings := range durationUnits {
			for i, u := range spellings {
				if strings.EqualFold(u, unit) || i == len(spellings)-1 && strings.HasPrefix(unit, u) {
					known = true
				}
			}
		}
	}
	return known
}

// isISBN10 is ten digits, the last possibly "X", once ASCII white space
// (but not the vertical tab) and dashes are dropped, with the ISBN-10 checksum.
func isISBN10(s string) bool {
	d := dropSpacesAndDashes(s)
	if len(d) != 10 {
		return false
	}
	sum := 0
	for i := 0; i < 10; i++ {
		var v int
		switch c := d[i]; {
		case c >= '0' && c <= '9':
			v = int(c - '0')
		case c == 'X' && i == 9:
			v = 10
		default:
			return false
		}
		sum += (i + 1) * v
	}
	return sum%11 == 0
}

// isISBN13 is thirteen digits, once spaces and dashes are dropped, with
// the EAN-13 checksum.
func isISBN13(s string) bool {
	d := dropSpacesAndDashes(s)
	if len(d) != 13 {
		return false
	}
	sum := 0
	for i := 0; i < 13; i++ {
		c := d[i]
		if c < '0' || c > '9' {
			return false
		}
		w := 1
		if i%2 == 1 {
			w = 3
		}
		sum += w * int(c-'0')
	}
	return sum%10 == 0
}

func dropSpacesAndDashes(s string) string {
	return strings.Map(func(r rune) rune {
		if strings.ContainsRune("-\t\n\f\r ", r) {
			return -1
		}
		return r
	}, s)
}

var creditCardRE = regexp.MustCompile(`^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11})$`)

// isCreditCard matches the card-number forms after dropping every
// non-digit, and checks the Luhn digit.
func isCreditCard(s string) bool {
	d := strings.Map(func(r rune) rune {
		if r < '0' || r > '9' {
			return -1
		}
		return r
	}, s)
	if !creditCardRE.MatchString(d) {
		return false
	}
	sum := 0
	for i := len(d) - 1; i >= 0; i-- {
		v := int(d[i] - '0')
		if (len(d)-1-i)%2 == 1 {
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
	}
	return sum%10 == 0
}

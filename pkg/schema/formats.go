package schema

import (
	"encoding/base64"
	"net"
	"net/mail"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// formatCheckers are the string formats kube validates in a custom
// resource (apiextensions' supported list, names without dashes as
// go-openapi normalizes them); any other format is documentation only.
var formatCheckers = map[string]func(string) bool{
	"bsonobjectid": regexp.MustCompile(`^[0-9a-fA-F]{24}$`).MatchString,
	"uri":          isURI,
	"email":        isEmail,
	"hostname":     isHostname,
	"ipv4":         func(s string) bool { ip := net.ParseIP(s); return ip != nil && strings.Contains(s, ".") },
	"ipv6":         func(s string) bool { ip := net.ParseIP(s); return ip != nil && strings.Contains(s, ":") },
	"cidr":         func(s string) bool { _, _, err := net.ParseCIDR(s); return err == nil },
	"mac":          func(s string) bool { _, err := net.ParseMAC(s); return err == nil },
	"uuid":         regexp.MustCompile(`(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$`).MatchString,
	"uuid3":        regexp.MustCompile(`(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$`).MatchString,
	"uuid4":        regexp.MustCompile(`(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$`).MatchString,
	"uuid5":        regexp.MustCompile(`(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$`).MatchString,
	"isbn":         func(s string) bool { return isISBN10(s) || isISBN13(s) },
	"isbn10":       isISBN10,
	"isbn13":       isISBN13,
	"creditcard":   isCreditCard,
	"ssn":          regexp.MustCompile(`^\d{3}[- ]?\d{2}[- ]?\d{4}$`).MatchString,
	"hexcolor":     regexp.MustCompile(`^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$`).MatchString,
	"rgbcolor":     regexp.MustCompile(`^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$`).MatchString,
	"byte":         func(s string) bool { _, err := base64.StdEncoding.DecodeString(s); return err == nil },
	"password":     func(string) bool { return true },
	"date":         func(s string) bool { _, err := time.Parse("2006-01-02", s); return err == nil },
	"duration":     isDuration,
	"datetime":     isDateTime,
}

// formatChecker returns the check of format f, nil when kube ignores f.
func formatChecker(f string) func(string) bool {
	return formatCheckers[strings.ReplaceAll(f, "-", "")]
}

func isURI(s string) bool {
	_, err := url.ParseRequestURI(s)
	return err == nil
}

func isEmail(s string) bool {
	_, err := mail.ParseAddress(s)
	return err == nil
}

var hostnameLabel = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$`)

// isHostname follows RFC 1034/1123: dot-separated labels of at most 63
// characters, 255 in all, with an optional trailing dot.
func isHostname(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 255 {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if !hostnameLabel.MatchString(l) {
			return false
		}
	}
	return true
}

var durationRE = regexp.MustCompile(`^(\d+(\.\d+)?\s*(ns|us|µs|ms|s|m|h|d|w|nanoseconds?|microseconds?|milliseconds?|seconds?|minutes?|hours?|days?|weeks?)\s*)+$`)

// isDuration accepts Go durations and the Scala-like "22 ns", "3 days".
func isDuration(s string) bool {
	if _, err := time.ParseDuration(s); err == nil {
		return true
	}
	return durationRE.MatchString(s)
}

// isDateTime accepts RFC 3339 date-times, with or without fractional
// seconds, and the "T"-less and lower-case forms RFC 3339 tolerates.
func isDateTime(s string) bool {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05Z07:00", "2006-01-02 15:04:05Z07:00", "2006-01-02T15:04:05.999999999", "2006-01-02T15:04:05"} {
		if _, err := time.Parse(layout, strings.ToUpper(s)); err == nil {
			return true
		}
	}
	return false
}

func digitsOnly(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == ' ' {
			return -1
		}
		return r
	}, s)
}

func isISBN10(s string) bool {
	d := digitsOnly(s)
	if len(d) != 10 {
		return false
	}
	sum := 0
	for i, r := range d {
		var v int
		switch {
		case r >= '0' && r <= '9':
			v = int(r - '0')
		case (r == 'X' || r == 'x') && i == 9:
			v = 10
		default:
			return false
		}
		sum += (10 - i) * v
	}
	return sum%11 == 0
}

func isISBN13(s string) bool {
	d := digitsOnly(s)
	if len(d) != 13 {
		return false
	}
	sum := 0
	for i, r := range d {
		if r < '0' || r > '9' {
			return false
		}
		w := 1
		if i%2 == 1 {
			w = 3
		}
		sum += w * int(r-'0')
	}
	return sum%10 == 0
}

var creditCardRE = regexp.MustCompile(`^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11})$`)

// isCreditCard matches the card-number forms after dropping the
// separators people type.
func isCreditCard(s string) bool {
	d := strings.Map(func(r rune) rune {
		if r < '0' || r > '9' {
			return -1
		}
		return r
	}, s)
	return creditCardRE.MatchString(d)
}

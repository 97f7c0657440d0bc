package handlers

import (
	"strings"
	"testing"
)

// TestManagerOrUserAgent_AsKubeNamesTheWriter: the field manager of a
// write is the fieldManager option, else the User-Agent up to its first
// slash, printable and at most 128 bytes; kube records "unknown" when
// that leaves nothing (no User-Agent, or one that starts with a slash).
func TestManagerOrUserAgent_AsKubeNamesTheWriter(t *testing.T) {
	for _, tc := range []struct{ manager, userAgent, want string }{
		{"m", "kubectl/v1.29.14 (linux/amd64) kubernetes/abc", "m"},
		{"", "kubectl/v1.29.14 (linux/amd64) kubernetes/abc", "kubectl"},
		{"", "curl/8.5.0", "curl"},
		{"", "plain", "plain"},
		{"", "a\u200bb/1", "ab"},
		{"", strings.Repeat("x", 200), strings.Repeat("x", 128)},
		{"", "", "unknown"},
		{"", "/x", "unknown"},
	} {
		if got := managerOrUserAgent(tc.manager, tc.userAgent); got != tc.want {
			t.Errorf("manager %q, User-Agent %q: %q, want %q", tc.manager, tc.userAgent, got, tc.want)
		}
	}
}

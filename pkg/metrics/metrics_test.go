package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

func scrape(t *testing.T, r *Registry) string {
	t.Helper()
	w := httptest.NewRecorder()
	r.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(w.Body)
	return string(body)
}

func TestRegistry_StabilityDeprecationAndHiding(t *testing.T) {
	for _, tc := range []struct {
		show                        string
		wantRecent, wantOld, wantTy bool
	}{
		{"", true, false, true},
		{"1.28", true, true, true},
	} {
		r := NewRegistry()
		if err := r.ShowHiddenMetricsForVersion(tc.show); err != nil {
			t.Fatal(err)
		}
		r.Counter(Opts{Name: "test_stable_total", Help: "Stable.", Stability: Stable}).WithLabelValues().Inc()
		r.Counter(Opts{Name: "test_recent_total", Help: "Recent.", DeprecatedVersion: "1.28"}).WithLabelValues().Inc()
		// Deprecated three releases ago: hidden, unless shown for 1.28.
		r.Counter(Opts{Name: "test_old_total", Help: "Old.", DeprecatedVersion: "1.26"}).WithLabelValues().Inc()
		// Deprecated four releases ago: gone for good.
		r.Counter(Opts{Name: "test_older_total", Help: "Older.", DeprecatedVersion: "1.25"}).WithLabelValues().Inc()
		out := scrape(t, r)
		if !strings.Contains(out, "# HELP test_stable_total [STABLE] Stable.") {
			t.Errorf("stable HELP missing:\n%s", out)
		}
		if strings.Contains(out, "# HELP test_recent_total (Deprecated from 1.28) [ALPHA] Recent.") != tc.wantRecent {
			t.Errorf("show=%q: recent deprecated metric shown=%v", tc.show, !tc.wantRecent)
		}
		if strings.Contains(out, "test_old_total") != tc.wantOld {
			t.Errorf("show=%q: metric deprecated in 1.26 shown=%v, want %v", tc.show, !tc.wantOld, tc.wantOld)
		}
		if strings.Contains(out, "test_older_total") {
			t.Errorf("show=%q: metric deprecated in 1.25 shown", tc.show)
		}
	}
	if err := NewRegistry().ShowHiddenMetricsForVersion("1.27"); err == nil {
		t.Error("showing the metrics of 1.27 was accepted")
	}
}

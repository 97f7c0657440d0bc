package healthz

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func failing(name string) Checker {
	return Named(name, func(*http.Request) error { return errors.New("broken " + name) })
}

func TestHandler_AnswersAsKube(t *testing.T) {
	ok := []Checker{Ping, Named("etcd", func(*http.Request) error { return nil }), Named("poststarthook/a/b", func(*http.Request) error { return nil })}
	bad := []Checker{Ping, failing("etcd"), Named("shutdown", func(*http.Request) error { return nil })}
	overrides := []Checker{Named("etcd", func(*http.Request) error { return nil }), InGroup(failing("etcd-override-0"), "etcd"),
		Named("etcd-readiness", func(*http.Request) error { return nil })}
	plain := "text/plain; charset=utf-8"
	for _, tc := range []struct {
		name     string
		checks   []Checker
		path     string
		code     int
		body     string
		nosniff  bool
		typeWant string
	}{
		{"all pass", ok, "/readyz", 200, "ok", true, plain},
		{"verbose", ok, "/readyz?verbose", 200, "[+]ping ok\n[+]etcd ok\n[+]poststarthook/a/b ok\nreadyz check passed\n", true, plain},
		{"verbose with a value", ok, "/readyz?verbose=false", 200, "[+]ping ok\n[+]etcd ok\n[+]poststarthook/a/b ok\nreadyz check passed\n", true, plain},
		{"one fails: always verbose, reason withheld", bad, "/readyz", 500, "[+]ping ok\n[-]etcd failed: reason withheld\n[+]shutdown ok\nreadyz check failed\n", true, plain},
		{"excluded failing check", bad, "/readyz?exclude=etcd", 200, "ok", true, plain},
		{"excluded, verbose", bad, "/readyz?exclude=etcd&verbose", 200, "[+]ping ok\n[+]etcd excluded: ok\n[+]shutdown ok\nreadyz check passed\n", true, plain},
		{"repeated exclude, unknown names warned sorted", bad, "/readyz?exclude=zz&exclude=etcd&exclude=aa&exclude=etcd&verbose", 200,
			"[+]ping ok\n[+]etcd excluded: ok\n[+]shutdown ok\nwarn: some health checks cannot be excluded: no matches for \"aa\",\"zz\"\nreadyz check passed\n", true, plain},
		{"unknown exclude on failure", bad, "/readyz?exclude=nope", 500,
			"[+]ping ok\n[-]etcd failed: reason withheld\n[+]shutdown ok\nwarn: some health checks cannot be excluded: no matches for \"nope\"\nreadyz check failed\n", true, plain},
		{"a group's exclude leaves its members out", overrides, "/readyz?exclude=etcd&verbose", 200,
			"[+]etcd excluded: ok\n[+]etcd-override-0 excluded: ok\n[+]etcd-readiness ok\nreadyz check passed\n", true, plain},
		{"a member excluded alone", overrides, "/readyz?exclude=etcd-override-0&exclude=etcd&verbose", 200,
			"[+]etcd excluded: ok\n[+]etcd-override-0 excluded: ok\n[+]etcd-readiness ok\nreadyz check passed\n", true, plain},
		{"a failing member fails the endpoint", overrides, "/readyz", 500,
			"[+]etcd ok\n[-]etcd-override-0 failed: reason withheld\n[+]etcd-readiness ok\nreadyz check failed\n", true, plain},
		{"a member checked alone", overrides, "/readyz/etcd-override-0", 500, "internal server error: broken etcd-override-0\n", true, plain},
		{"one check", ok, "/readyz/etcd", 200, "ok", false, plain},
		{"one check with a slash in its name", ok, "/readyz/poststarthook/a/b", 200, "ok", false, plain},
		{"one failing check shows its reason", bad, "/readyz/etcd", 500, "internal server error: broken etcd\n", true, plain},
		{"one failing check, excluded means nothing", bad, "/readyz/etcd?exclude=etcd", 500, "internal server error: broken etcd\n", true, plain},
		{"unknown check", ok, "/readyz/nope", 404, "404 page not found\n", true, plain},
		{"trailing slash", ok, "/readyz/", 404, "404 page not found\n", true, plain},
		{"a check's subpath", ok, "/readyz/etcd/x", 404, "404 page not found\n", true, plain},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checks := tc.checks
			h := &Handler{Name: "readyz", Checks: func() []Checker { return checks }}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
			if rec.Code != tc.code || rec.Body.String() != tc.body {
				t.Fatalf("got %d %q, want %d %q", rec.Code, rec.Body.String(), tc.code, tc.body)
			}
			if got := rec.Header().Get("Content-Type"); got != tc.typeWant && !(got == "" && !tc.nosniff) {
				t.Errorf("Content-Type %q, want %q", got, tc.typeWant)
			}
			if got := rec.Header().Get("X-Content-Type-Options") == "nosniff"; got != tc.nosniff {
				t.Errorf("X-Content-Type-Options nosniff: %v, want %v", got, tc.nosniff)
			}
		})
	}
}

func TestHandler_ReadsChecksOnEveryRequest(t *testing.T) {
	var checks []Checker
	h := &Handler{Name: "livez", Checks: func() []Checker { return checks }}
	get := func() (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/livez", nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := get(); code != 200 || body != "ok" {
		t.Fatalf("no checks: %d %q", code, body)
	}
	checks = append(checks, failing("late"))
	if code, body := get(); code != 500 || body != "[-]late failed: reason withheld\nlivez check failed\n" {
		t.Fatalf("added check: %d %q", code, body)
	}
}

func TestDelayed_PassesUntilItsStart(t *testing.T) {
	now := time.Now()
	d := delayed{Checker: failing("poststarthook/x"), from: now.Add(time.Minute), now: func() time.Time { return now }}
	if err := d.Check(nil); err != nil {
		t.Fatalf("within the grace period: %v", err)
	}
	if d.Name() != "poststarthook/x" {
		t.Fatalf("name %q", d.Name())
	}
	d.now = func() time.Time { return now.Add(2 * time.Minute) }
	if err := d.Check(nil); err == nil {
		t.Fatal("after the grace period the check runs")
	}
	if err := Delayed(failing("y"), time.Now().Add(-time.Second)).Check(nil); err == nil {
		t.Fatal("no grace period left: the check runs")
	}
}

func TestLog_FailsWhenFlushingBlocks(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	block := make(chan struct{})
	flushed := make(chan struct{}, 10)
	l := NewLog(func() {
		flushed <- struct{}{}
		<-block
	}, 20*time.Millisecond, stop)
	defer close(block)
	if l.Name() != "log" {
		t.Fatalf("name %q", l.Name())
	}
	if err := l.Check(nil); err != nil {
		t.Fatalf("first check: %v", err)
	}
	select {
	case <-flushed:
	case <-time.After(5 * time.Second):
		t.Fatal("no flush")
	}
	// The flush blocks: after twice the interval the check fails.
	deadline := time.Now().Add(5 * time.Second)
	for l.Check(nil) == nil {
		if time.Now().After(deadline) {
			t.Fatal("the log check still passes while flushing blocks")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := l.Check(nil); err.Error() != "logging blocked" {
		t.Fatalf("error %q", err)
	}
}

func TestLog_PassesWhileFlushing(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	l := NewLog(func() {}, 10*time.Millisecond, stop)
	for i := 0; i < 10; i++ {
		if err := l.Check(nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

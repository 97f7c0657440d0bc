// Package healthz serves the health endpoints (/healthz, /livez, /readyz)
// the way a Kubernetes operator and kubelet probes expect them: each
// endpoint runs a list of named checks; the endpoint answers 200 "ok" when
// all pass, and 500 with one line per check (a failed check's reason is
// withheld from the public answer and logged instead) when one fails.
// ?verbose lists the checks on success too, ?exclude=<name> (repeatable)
// skips a check, and /<endpoint>/<check> runs one check alone. The
// endpoint's checks are read on every request, so checks added while the
// server runs are served at once.
package healthz

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
)

// Checker is one named health check.
type Checker interface {
	Name() string
	// Check returns nil when healthy; the error says why not.
	Check(r *http.Request) error
}

type namedCheck struct {
	name  string
	check func(*http.Request) error
}

func (c namedCheck) Name() string                { return c.name }
func (c namedCheck) Check(r *http.Request) error { return c.check(r) }

// Named returns a check of that name running check.
func Named(name string, check func(r *http.Request) error) Checker {
	return namedCheck{name: name, check: check}
}

// Ping always passes: the server answers at all.
var Ping = Named("ping", func(*http.Request) error { return nil })

// Delayed passes until the moment from (a start-up grace period), and
// from then on runs c. /livez uses it so that a slow start does not make
// a prober restart the process (--livez-grace-period).
func Delayed(c Checker, from time.Time) Checker {
	return delayed{Checker: c, from: from, now: time.Now}
}

type delayed struct {
	Checker
	from time.Time
	now  func() time.Time
}

func (d delayed) Check(r *http.Request) error {
	if d.now().Before(d.from) {
		return nil
	}
	return d.Checker.Check(r)
}

// Log is the "log" check: it fails when the logs have not been flushed
// for twice the flush interval, that is, when writing logs blocks.
type Log struct {
	flush    func()
	interval time.Duration
	start    sync.Once
	// last is when the logs were last flushed, in Unix nanoseconds.
	last atomic.Int64
	stop <-chan struct{}
}

// NewLog returns the log check, flushing with flush (klog.Flush when nil)
// every interval (a minute when 0) until stop is closed. Flushing starts
// with the first check.
func NewLog(flush func(), interval time.Duration, stop <-chan struct{}) *Log {
	if flush == nil {
		flush = klog.Flush
	}
	if interval <= 0 {
		interval = time.Minute
	}
	return &Log{flush: flush, interval: interval, stop: stop}
}

func (l *Log) Name() string { return "log" }

func (l *Log) Check(*http.Request) error {
	l.start.Do(func() {
		l.last.Store(time.Now().UnixNano())
		go l.run()
	})
	if time.Since(time.Unix(0, l.last.Load())) < 2*l.interval {
		return nil
	}
	return fmt.Errorf("logging blocked")
}

func (l *Log) run() {
	t := time.NewTicker(l.interval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.flush()
			l.last.Store(time.Now().UnixNano())
		}
	}
}

// InGroup returns c, excluded by ?exclude=<group> as well as by its own
// name: kube checks each --etcd-servers-overrides cluster apart, and
// ?exclude=etcd leaves them all out.
func InGroup(c Checker, group string) Checker { return grouped{Checker: c, group: group} }

type grouped struct {
	Checker
	group string
}

// excludedBy is the excluded name (c's own, or its group's) that leaves c
// out, or "".
func excludedBy(c Checker, excluded map[string]bool) string {
	if excluded[c.Name()] {
		return c.Name()
	}
	if g, ok := c.(grouped); ok && excluded[g.group] {
		return g.group
	}
	return ""
}

// Handler serves one health endpoint: /<Name> runs all its checks,
// /<Name>/<check> one of them.
type Handler struct {
	// Name is the endpoint: healthz, livez or readyz.
	Name string
	// Checks returns the endpoint's checks, in the order they are listed.
	Checks func() []Checker
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	root := "/" + h.Name
	if r.URL.Path == root {
		h.serveAll(w, r)
		return
	}
	name, ok := strings.CutPrefix(r.URL.Path, root+"/")
	if ok {
		for _, c := range h.Checks() {
			if c.Name() == name {
				serveOne(w, r, c)
				return
			}
		}
	}
	// Unknown checks are the plain-text 404 of an unregistered path.
	http.NotFound(w, r)
}

// serveOne answers one check: "ok", or 500 with its reason. Only users
// allowed to read /<endpoint>/<check> (not anonymous ones, by the default
// policy) reach it, so the reason is shown.
func serveOne(w http.ResponseWriter, r *http.Request, c Checker) {
	if err := c.Check(r); err != nil {
		http.Error(w, fmt.Sprintf("internal server error: %v", err), http.StatusInternalServerError)
		return
	}
	fmt.Fprint(w, "ok")
}

func (h *Handler) serveAll(w http.ResponseWriter, r *http.Request) {
	query := r.URL.Query()
	excluded := map[string]bool{}
	for _, name := range query["exclude"] {
		excluded[name] = true
	}
	matched := map[string]bool{}
	var out, reasons strings.Builder
	var failed []string
	for _, c := range h.Checks() {
		name := c.Name()
		if by := excludedBy(c, excluded); by != "" {
			matched[by] = true
			fmt.Fprintf(&out, "[+]%s excluded: ok\n", name)
			continue
		}
		if err := c.Check(r); err != nil {
			// The endpoint is public: the reason goes to the log only.
			fmt.Fprintf(&out, "[-]%s failed: reason withheld\n", name)
			fmt.Fprintf(&reasons, "[-]%s failed: %v\n", name, err)
			failed = append(failed, name)
			continue
		}
		fmt.Fprintf(&out, "[+]%s ok\n", name)
	}
	var unknown []string
	for name := range excluded {
		if !matched[name] {
			unknown = append(unknown, fmt.Sprintf("%q", name))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		fmt.Fprintf(&out, "warn: some health checks cannot be excluded: no matches for %s\n", strings.Join(unknown, ","))
	}
	if len(failed) > 0 {
		klog.V(2).InfoS("Health check failed", "endpoint", h.Name, "checks", failed, "reasons", reasons.String())
		http.Error(w, fmt.Sprintf("%s%s check failed", out.String(), h.Name), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if _, verbose := query["verbose"]; !verbose {
		fmt.Fprint(w, "ok")
		return
	}
	fmt.Fprintf(w, "%s%s check passed\n", out.String(), h.Name)
}

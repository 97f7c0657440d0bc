package filters

import (
	"context"
	"net/http"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/pkg/audit"
	"github.com/cronplane/cronplane/pkg/auth/user"
)

// WithLogging logs every request at verbosity 3, once it is answered, as
// kube's httplog does: verb (a resource request's API verb in capitals,
// as in the request metrics), URI, user, latency, user agent, audit ID,
// client address and response code. It goes outside the filters that
// answer in the server's defense (request deadline, drain, in-flight
// limits) and authentication, so that the line has the code the client
// got; authentication, further in, tells it the user. Below -v=3 it is
// not in the chain at all.
func WithLogging(next http.Handler, logger klog.Logger) http.Handler {
	logger = logger.V(3)
	if !logger.Enabled() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &codeRecorder{ResponseWriter: w}
		entry := &logEntry{}
		next.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), logEntryKey{}, entry)))
		logger.Info("HTTP", "verb", terminationLabels(r).verb, "URI", r.RequestURI, "user", entry.userName(), "latency", time.Since(start).String(),
			"userAgent", r.UserAgent(), "audit-ID", w.Header().Get(audit.HeaderAuditID), "srcIP", r.RemoteAddr, "resp", rec.status())
	})
}

// logEntry is what filters further in tell the request's log line. It
// is shared with a handler the request deadline may have left running.
type logEntry struct {
	mu   sync.Mutex
	user string
}

type logEntryKey struct{}

// logUser records the authenticated user on the request's log line, if
// it is logged.
func logUser(ctx context.Context, u *user.Info) {
	if e, ok := ctx.Value(logEntryKey{}).(*logEntry); ok {
		e.mu.Lock()
		e.user = u.Name
		e.mu.Unlock()
	}
}

func (e *logEntry) userName() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.user
}

// codeRecorder remembers the response code.
type codeRecorder struct {
	http.ResponseWriter
	code int
}

func (w *codeRecorder) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *codeRecorder) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush lets watches stream through.
func (w *codeRecorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *codeRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// status is the code answered; 200 when the handler wrote nothing.
func (w *codeRecorder) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}

package filters

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cronplane/cronplane/pkg/audit"
	"github.com/cronplane/cronplane/pkg/auth/user"
	"github.com/cronplane/cronplane/pkg/endpoints/request"
)

// maxAuditedRequestBody is the largest request body recorded: kube's
// object limit, beyond which the request fails anyway.
const maxAuditedRequestBody = 3*1024*1024 + 1

// maxStatusBody is the most of a response read as a possible Status.
const maxStatusBody = 64 * 1024

// WithAuditInit gives every request its audit ID, the client's Audit-ID
// header or else a new UUID, returned in the Audit-Id response header,
// and the audit record later stages annotate (audit.AddAnnotation). It
// goes outermost, so that every answer carries the ID.
//
// With an auditor it also records failed authentications, as kube does:
// a 401 answered before the request reached WithAudit can only come from
// authentication, and is recorded at stage ResponseStarted, without a
// user.
func WithAuditInit(next http.Handler, a *audit.Auditor) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received := time.Now()
		id := r.Header.Get(audit.HeaderAuditID)
		if id == "" {
			id = uuid.New().String()
		}
		ctx, ac := audit.WithContext(r.Context(), id, received)
		if w.Header().Get(audit.HeaderAuditID) == "" {
			w.Header().Set(audit.HeaderAuditID, id)
		}
		r = r.WithContext(ctx)
		if a == nil {
			next.ServeHTTP(w, r)
			return
		}
		uw := &unauthorizedWriter{ResponseWriter: w, ac: ac}
		next.ServeHTTP(uw, r)
		if uw.failed {
			attrs := AuthorizationAttributes(nil, request.NewRequestInfo(r))
			if a.Begin(ac, r, attrs) != audit.LevelNone {
				ac.SetResponseCode(http.StatusUnauthorized)
				ac.LogResponseBody(w.Header().Get("Content-Type"), w.Header().Get("Content-Encoding"), uw.body.Bytes())
				a.Emit(ac, audit.StageResponseStarted)
			}
		}
	})
}

// unauthorizedWriter keeps the body of a 401 written before the audit
// filter saw the request.
type unauthorizedWriter struct {
	http.ResponseWriter
	ac      *audit.Context
	written bool
	failed  bool
	body    bytes.Buffer
}

func (w *unauthorizedWriter) WriteHeader(code int) {
	if !w.written {
		w.written = true
		w.failed = code == http.StatusUnauthorized && !w.ac.Evaluated()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *unauthorizedWriter) Write(b []byte) (int, error) {
	if !w.written {
		w.WriteHeader(http.StatusOK)
	}
	if w.failed && w.body.Len()+len(b) <= maxStatusBody {
		w.body.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

func (w *unauthorizedWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *unauthorizedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// WithAudit records authenticated requests at the level the auditor's
// policy chooses: stage RequestReceived before the request goes on,
// ResponseStarted when a long-running one (a watch) sends its headers,
// ResponseComplete when it is answered, Panic if the handler panics (the
// panic goes on, for the recovery filter to answer). Bodies are recorded
// as they cross this filter: the request's from level Request on, the
// response's at RequestResponse except a watch's stream. It goes after
// authentication and before impersonation, which, like authorization,
// adds to the record; it needs WithAuditInit further out. A nil auditor
// records nothing.
func WithAudit(next http.Handler, a *audit.Auditor, longRunning func(*http.Request) bool) http.Handler {
	if a == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ac := audit.ContextFrom(r.Context())
		info, ok := request.RequestInfoFrom(r.Context())
		if ac == nil || !ok {
			next.ServeHTTP(w, r)
			return
		}
		u, _ := user.From(r.Context())
		level := a.Begin(ac, r, AuthorizationAttributes(u, info))
		if level == audit.LevelNone {
			next.ServeHTTP(w, r)
			return
		}
		a.Emit(ac, audit.StageRequestReceived)

		aw := &auditWriter{ResponseWriter: w, a: a, ac: ac, level: level, verb: info.Verb, longRunning: longRunning(r)}
		var body *recordingBody
		// At level Metadata a created or updated object's body still
		// names it in the object reference.
		if r.Body != nil && r.Body != http.NoBody && (!level.Less(audit.LevelRequest) || info.Verb == "create" || info.Verb == "update") {
			body = &recordingBody{ReadCloser: r.Body}
			// A shallow copy, so that the caller's request keeps its body.
			r = r.WithContext(r.Context())
			r.Body = body
		}
		defer func() {
			if body != nil {
				ac.LogRequestBody(r.Header.Get("Content-Type"), body.data)
			}
			if v := recover(); v != nil {
				ac.SetResponseStatus(&metav1.Status{
					Code: http.StatusInternalServerError, Status: metav1.StatusFailure, Reason: metav1.StatusReasonInternalError,
					Message: fmt.Sprintf("APIServer panic'd: %v", v),
				})
				a.Emit(ac, audit.StagePanic)
				panic(v)
			}
			aw.finish()
			a.Emit(ac, audit.StageResponseComplete)
		}()
		next.ServeHTTP(aw, r)
	})
}

// recordingBody keeps what the handler reads of the request body.
type recordingBody struct {
	io.ReadCloser
	data     []byte
	tooLarge bool
}

func (b *recordingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case b.tooLarge:
	case len(b.data)+n > maxAuditedRequestBody:
		b.tooLarge, b.data = true, nil
	default:
		b.data = append(b.data, p[:n]...)
	}
	return n, err
}

// auditWriter records the response: its code when the headers go out
// (and, for a long-running request, stage ResponseStarted), and the
// body it needs.
type auditWriter struct {
	http.ResponseWriter
	a           *audit.Auditor
	ac          *audit.Context
	level       audit.Level
	verb        string
	longRunning bool

	started bool
	// limit bounds body; 0 keeps none, -1 all.
	limit int
	body  bytes.Buffer
}

func (w *auditWriter) start(code int) {
	if w.started {
		return
	}
	w.started = true
	w.ac.SetResponseCode(code)
	// An object answered in protobuf is recorded by the response writer
	// (audit.LogResponseObject), in JSON.
	protobufObject := code < http.StatusMultipleChoices && strings.HasPrefix(w.Header().Get("Content-Type"), "application/vnd.kubernetes.protobuf")
	switch {
	case w.level == audit.LevelRequestResponse && (!w.longRunning || code >= http.StatusMultipleChoices) && !protobufObject:
		w.limit = -1
	case code >= http.StatusMultipleChoices || w.verb == "delete":
		// Errors, and a deletion's answer, may be a Status.
		w.limit = maxStatusBody
	}
	if w.longRunning {
		w.a.Emit(w.ac, audit.StageResponseStarted)
	}
}

func (w *auditWriter) WriteHeader(code int) {
	w.start(code)
	w.ResponseWriter.WriteHeader(code)
}

func (w *auditWriter) Write(b []byte) (int, error) {
	w.start(http.StatusOK)
	if w.limit < 0 || w.body.Len()+len(b) <= w.limit {
		w.body.Write(b)
	} else if w.limit > 0 {
		// Too long to be a Status.
		w.limit, w.body = 0, bytes.Buffer{}
	}
	return w.ResponseWriter.Write(b)
}

func (w *auditWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *auditWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish records the response once the handler is done. A handler that
// wrote nothing let the connection close with a 200, which kube records
// as "Connection closed early".
func (w *auditWriter) finish() {
	if !w.started {
		closed := &metav1.Status{Code: http.StatusOK, Status: metav1.StatusSuccess, Message: "Connection closed early"}
		w.ac.SetResponseStatus(closed)
		if w.longRunning {
			w.a.Emit(w.ac, audit.StageResponseStarted)
		}
		return
	}
	if w.body.Len() > 0 {
		h := w.Header()
		w.ac.LogResponseBody(h.Get("Content-Type"), h.Get("Content-Encoding"), w.body.Bytes())
	}
}

// Package audit owns the apiserver's audit log, as kube-apiserver keeps
// it: the audit.k8s.io/v1 Event and Policy types; the policy, which gives
// each request a level (None, Metadata, Request, RequestResponse) from
// its user, verb, resource or path; the per-request record that every
// stage of the request may annotate (the authorization decision, the
// impersonated user) and that becomes one event per stage
// (RequestReceived, ResponseStarted for watches, ResponseComplete,
// Panic); and the log backend, which writes the events as JSON lines to a
// file rotated by size and age, or to stdout. Events pass through a
// bounded buffer to one writer goroutine: when the buffer is full an
// event is dropped and counted (apiserver_audit_error_total
// {plugin="buffered"}), so that a slow disk never holds up a request. The
// HTTP filters that drive it are in pkg/endpoints/filters.
package audit

import (
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"gopkg.in/natefinch/lumberjack.v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/pkg/auth/authorizer"
	"github.com/cronplane/cronplane/pkg/metrics"
)

// DefaultBufferSize is how many events wait for the writer before new
// ones are dropped, kube's default for its batching audit backends.
const DefaultBufferSize = 10000

// Options are the audit flags.
type Options struct {
	// PolicyFile is the Policy; without one nothing is audited.
	PolicyFile string
	// LogPath is the log file, "-" for stdout; empty logs nothing.
	LogPath string
	// LogMaxAge (days), LogMaxBackups and LogMaxSize (megabytes, 0 for
	// lumberjack's 100) bound the rotated files; LogCompress gzips them.
	LogMaxAge     int
	LogMaxBackups int
	LogMaxSize    int
	LogCompress   bool
	// BufferSize is how many events may wait for the writer; 0 is
	// DefaultBufferSize.
	BufferSize int
}

// AddFlags binds the options to kube-apiserver's flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	if o.BufferSize == 0 {
		o.BufferSize = DefaultBufferSize
	}
	fs.StringVar(&o.PolicyFile, "audit-policy-file", o.PolicyFile, "audit.k8s.io/v1 Policy (YAML or JSON) choosing what is audited; without it nothing is")
	fs.StringVar(&o.LogPath, "audit-log-path", o.LogPath, "file the audit events are written to as JSON lines, '-' for stdout; empty disables the audit log")
	fs.IntVar(&o.LogMaxAge, "audit-log-maxage", o.LogMaxAge, "days to keep rotated audit log files (0: no limit)")
	fs.IntVar(&o.LogMaxBackups, "audit-log-maxbackup", o.LogMaxBackups, "rotated audit log files to keep (0: no limit)")
	fs.IntVar(&o.LogMaxSize, "audit-log-maxsize", o.LogMaxSize, "megabytes an audit log file may reach before it is rotated (0: 100)")
	fs.BoolVar(&o.LogCompress, "audit-log-compress", o.LogCompress, "gzip rotated audit log files")
	fs.IntVar(&o.BufferSize, "audit-log-batch-buffer-size", o.BufferSize, "audit events that may wait for the log writer; beyond that, events are dropped and counted in apiserver_audit_error_total{plugin=\"buffered\"}")
}

// Validate refuses what kube-apiserver refuses.
func (o *Options) Validate() error {
	switch {
	case o.LogMaxAge < 0:
		return fmt.Errorf("--audit-log-maxage %d can't be a negative number", o.LogMaxAge)
	case o.LogMaxBackups < 0:
		return fmt.Errorf("--audit-log-maxbackup %d can't be a negative number", o.LogMaxBackups)
	case o.LogMaxSize < 0:
		return fmt.Errorf("--audit-log-maxsize %d can't be a negative number", o.LogMaxSize)
	case o.BufferSize < 0:
		return fmt.Errorf("--audit-log-batch-buffer-size %d can't be a negative number", o.BufferSize)
	}
	return nil
}

// Auditor records the requests its policy chooses into its log.
type Auditor struct {
	policy  *Policy
	backend *logBackend
	metrics *auditMetrics
}

type auditMetrics struct {
	events prometheus.Counter
	errors *prometheus.CounterVec
	levels *prometheus.CounterVec
}

func newMetrics(r *metrics.Registry) *auditMetrics {
	return &auditMetrics{
		events: r.Counter(metrics.Opts{Name: "apiserver_audit_event_total",
			Help: "Audit events generated and sent to the audit backend."}).WithLabelValues(),
		errors: r.Counter(metrics.Opts{Name: "apiserver_audit_error_total",
			Help: "Audit events that could not be recorded, by the plugin that failed (buffered: dropped on a full buffer; log: not written)."}, "plugin"),
		levels: r.Counter(metrics.Opts{Name: "apiserver_audit_level_total",
			Help: "Requests by the audit level the policy chose for them."}, "level"),
	}
}

// New returns the auditor the options describe, its metrics registered
// in r; nil when nothing is to be audited. As kube-apiserver, it audits
// only with both a policy and a log: a log path without a policy records
// nothing (the policy is still checked when given alone).
func New(o Options, r *metrics.Registry) (*Auditor, error) {
	m := newMetrics(r)
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.PolicyFile == "" {
		if o.LogPath != "" {
			klog.InfoS("No audit policy file provided, no events will be recorded", "auditLogPath", o.LogPath)
		}
		return nil, nil
	}
	policy, err := LoadPolicy(o.PolicyFile)
	if err != nil {
		return nil, err
	}
	if o.LogPath == "" {
		return nil, nil
	}
	size := o.BufferSize
	if size == 0 {
		size = DefaultBufferSize
	}
	if o.LogPath == "-" {
		return &Auditor{policy: policy, metrics: m, backend: newLogBackend(os.Stdout, nil, size, m.errors)}, nil
	}
	if err := ensureFile(o.LogPath); err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	out := &lumberjack.Logger{Filename: o.LogPath, MaxAge: o.LogMaxAge, MaxBackups: o.LogMaxBackups, MaxSize: o.LogMaxSize, Compress: o.LogCompress}
	return &Auditor{policy: policy, metrics: m, backend: newLogBackend(out, out, size, m.errors)}, nil
}

// ensureFile creates the log file, readable by its owner only, so that a
// bad path fails at start rather than at the first event.
func ensureFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// Close writes the events still buffered, for a few seconds at most, and
// closes the log.
func (a *Auditor) Close() {
	if a != nil {
		a.backend.close(closeTimeout)
	}
}

// closeTimeout bounds how long Close waits for the writer.
const closeTimeout = 5 * time.Second

// maxUserAgent is the longest user agent recorded, as kube truncates it.
const maxUserAgent = 1024

// Begin applies the policy to a request of attributes attrs (attrs.User
// nil for one that failed authentication) and fills in its metadata.
// It returns the level chosen; None means the request is not audited.
func (a *Auditor) Begin(c *Context, r *http.Request, attrs authorizer.Attributes) Level {
	cfg := a.policy.Evaluate(attrs)
	a.metrics.levels.WithLabelValues(string(cfg.Level)).Inc()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evaluated, c.config = true, cfg
	ev := &c.event
	if cfg.Level == LevelNone {
		ev.Annotations, ev.ImpersonatedUser = nil, nil
		return LevelNone
	}
	ev.Level = cfg.Level
	ev.Verb = attrs.Verb
	ev.RequestURI = r.URL.RequestURI()
	ev.UserAgent = r.UserAgent()
	if len(ev.UserAgent) > maxUserAgent {
		ev.UserAgent = ev.UserAgent[:maxUserAgent] + "...TRUNCATED"
	}
	for _, ip := range utilnet.SourceIPs(r) {
		ev.SourceIPs = append(ev.SourceIPs, ip.String())
	}
	ev.User = userInfo(attrs.User)
	if attrs.ResourceRequest {
		ev.ObjectRef = &ObjectReference{
			Resource: attrs.Resource, Subresource: attrs.Subresource, Namespace: attrs.Namespace, Name: attrs.Name,
			APIGroup: attrs.APIGroup, APIVersion: attrs.APIVersion,
		}
	}
	return cfg.Level
}

// Emit sends the request's event at stage to the log, unless the policy
// omits that stage.
func (a *Auditor) Emit(c *Context, stage Stage) {
	c.mu.Lock()
	if c.completed || !c.evaluated || c.config.Level == LevelNone || slices.Contains(c.config.OmitStages, stage) {
		c.mu.Unlock()
		return
	}
	ev := &c.event
	ev.Stage = stage
	ev.StageTimestamp = metav1.NewMicroTime(time.Now())
	if stage == StageRequestReceived {
		ev.StageTimestamp = ev.RequestReceivedTimestamp
	}
	queued := ev
	if stage == StageResponseComplete || stage == StagePanic {
		// The last stage: the writer takes the event itself.
		c.completed = true
	} else {
		// The writer encodes a snapshot: later stages go on filling in
		// the event, its object reference, status and annotations.
		snapshot := *ev
		snapshot.Annotations = maps.Clone(ev.Annotations)
		if ev.ObjectRef != nil {
			ref := *ev.ObjectRef
			snapshot.ObjectRef = &ref
		}
		if ev.ResponseStatus != nil {
			status := *ev.ResponseStatus
			snapshot.ResponseStatus = &status
		}
		queued = &snapshot
	}
	c.mu.Unlock()
	a.metrics.events.Inc()
	a.backend.enqueue(queued)
}

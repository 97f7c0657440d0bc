package nodeserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// Container names a container of a pod on the node.
type Container struct {
	Namespace, Pod, Name string
}

// LogLine is one line of a container's output and when the runtime read
// it. Data ends in "\n" unless the output stopped mid-line.
type LogLine struct {
	Time time.Time
	Data []byte
}

// LogReader yields a container's log lines in the order they were
// written.
type LogReader interface {
	// Next returns the next line, or io.EOF once there are no more: at the
	// end of what had been written when the log was opened or, when
	// following, once the container has stopped. A follow reader waits
	// for lines until then, or until the ctx given to OpenLog ends.
	Next() (LogLine, error)
	Close() error
}

// LogSource is what a node implementation provides: its containers'
// logs, from their first line.
type LogSource interface {
	// OpenLog opens the log of a container of a pod on the node: of its
	// current instance, or of the one before it if previous. With follow,
	// the reader goes on with the lines written after the open. A pod or
	// container the node does not know is a NotFound error (PodNotFound,
	// ContainerNotFound); a container with no log to show is any other
	// error, answered 400 with its text, as the kubelet's
	// (ContainerWaiting, NoPreviousContainer).
	OpenLog(ctx context.Context, c Container, previous, follow bool) (LogReader, error)
}

// notFoundError is an error the server answers 404.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }

// IsNotFound reports whether err is a NotFound error.
func IsNotFound(err error) bool {
	var nf *notFoundError
	return errors.As(err, &nf)
}

// PodNotFound is the kubelet's error for a pod it does not run.
func PodNotFound(pod string) error {
	return &notFoundError{fmt.Sprintf("pod %q does not exist", pod)}
}

// ContainerNotFound is the kubelet's error for a container the pod's spec
// does not have.
func ContainerNotFound(container, pod string) error {
	return &notFoundError{fmt.Sprintf("container %q not found in pod %q", container, pod)}
}

// ContainerWaiting is the kubelet's error for a container that has not
// started yet, with the reason it waits for (ContainerCreating,
// PodInitializing, …).
func ContainerWaiting(container, pod, reason string) error {
	switch reason {
	case "ErrImagePull":
		return fmt.Errorf("container %q in pod %q is waiting to start: image can't be pulled", container, pod)
	case "ImagePullBackOff":
		return fmt.Errorf("container %q in pod %q is waiting to start: trying and failing to pull image", container, pod)
	}
	return fmt.Errorf("container %q in pod %q is waiting to start: %v", container, pod, reason)
}

// NoPreviousContainer is the kubelet's error for previous logs of a
// container that has not been restarted.
func NoPreviousContainer(container, pod string) error {
	return fmt.Errorf("previous terminated container %q in pod %q not found", container, pod)
}

// timestampFormat is the kubelet's: RFC 3339 with nine fractional digits
// always, so that timestamps line up.
const timestampFormat = "2006-01-02T15:04:05.000000000Z07:00"

// serveContainerLogs serves /containerLogs/{namespace}/{pod}/{container}
// with the kubelet's answers to bad requests.
func (s *Server) serveContainerLogs(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "405: Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/containerLogs/"), "/")
	if len(parts) != 3 {
		http.NotFound(w, r)
		return
	}
	c := Container{Namespace: parts[0], Pod: parts[1], Name: parts[2]}
	switch {
	case c.Pod == "":
		writeText(w, http.StatusBadRequest, `{"message": "Missing podID."}`)
		return
	case c.Name == "":
		writeText(w, http.StatusBadRequest, `{"message": "Missing container name."}`)
		return
	case c.Namespace == "":
		writeText(w, http.StatusBadRequest, `{"message": "Missing podNamespace."}`)
		return
	}
	query := r.URL.Query()
	// The kubelet still takes "tail", where "all" means every line.
	if tail := query.Get("tail"); tail != "" {
		query.Set("tailLines", tail)
		if tail == "all" {
			query.Del("tailLines")
		}
	}
	opts, err := DecodeLogOptions(query)
	if err != nil {
		writeText(w, http.StatusBadRequest, `{"message": "Unable to decode query."}`)
		return
	}
	if errs := ValidateLogOptions(opts); len(errs) > 0 {
		writeText(w, http.StatusUnprocessableEntity, `{"message": "Invalid request."}`)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	lw := &logWriter{w: w, timestamps: opts.Timestamps, follow: opts.Follow, remaining: -1}
	if f, ok := w.(http.Flusher); ok {
		lw.flusher = f
	}
	if opts.LimitBytes != nil {
		lw.remaining = *opts.LimitBytes
	}
	switch {
	case opts.SinceTime != nil:
		lw.since = opts.SinceTime.Time
	case opts.SinceSeconds != nil:
		lw.since = time.Now().Add(-time.Duration(*opts.SinceSeconds) * time.Second)
	}
	if err := streamLog(r.Context(), s.cfg.Logs, c, opts, lw); err != nil && !lw.started {
		code := http.StatusBadRequest
		if IsNotFound(err) {
			code = http.StatusNotFound
		}
		writeText(w, code, err.Error())
		return
	}
	lw.flush()
}

// streamLog writes the lines opts select. tailLines counts back from the
// end of what is written when the request comes; with follow, the lines
// after it come from a second, following read of the same log, past the
// lines the first read saw.
func streamLog(ctx context.Context, src LogSource, c Container, opts *corev1.PodLogOptions, lw *logWriter) error {
	if opts.TailLines == nil {
		rd, err := src.OpenLog(ctx, c, opts.Previous, opts.Follow)
		if err != nil {
			return err
		}
		defer closeLog(rd)
		lw.open()
		return copyLines(rd, lw, 0)
	}
	tail, seen, err := lastLines(ctx, src, c, opts.Previous, *opts.TailLines)
	if err != nil {
		return err
	}
	lw.open()
	for _, line := range tail {
		if err := lw.write(line); err != nil {
			return ignoreLimit(err)
		}
	}
	if !opts.Follow {
		return nil
	}
	rd, err := src.OpenLog(ctx, c, opts.Previous, true)
	if err != nil {
		return err
	}
	defer closeLog(rd)
	return copyLines(rd, lw, seen)
}

// lastLines reads a log to its current end and returns its last n lines
// and how many lines it read.
func lastLines(ctx context.Context, src LogSource, c Container, previous bool, n int64) ([]LogLine, int, error) {
	rd, err := src.OpenLog(ctx, c, previous, false)
	if err != nil {
		return nil, 0, err
	}
	defer closeLog(rd)
	tail := newRing(n)
	seen := 0
	for {
		line, err := rd.Next()
		if err == io.EOF {
			return tail.lines(), seen, nil
		}
		if err != nil {
			return nil, 0, err
		}
		seen++
		tail.push(line)
	}
}

// closeLog closes a reader whose lines are all written or no longer
// wanted: a failure to close loses nothing the client asked for.
func closeLog(rd LogReader) {
	if err := rd.Close(); err != nil {
		klog.V(4).InfoS("Closing a container log", "err", err)
	}
}

// copyLines writes a reader's lines after the first skip.
func copyLines(rd LogReader, lw *logWriter, skip int) error {
	for {
		line, err := rd.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if skip > 0 {
			skip--
			continue
		}
		if err := lw.write(line); err != nil {
			return ignoreLimit(err)
		}
	}
}

// errLimitReached ends a log at limitBytes.
var errLimitReached = errors.New("limitBytes reached")

func ignoreLimit(err error) error {
	if errors.Is(err, errLimitReached) {
		return nil
	}
	return err
}

// logWriter writes lines as the kubelet does: those from since on,
// prefixed with their timestamp if asked, cut at limitBytes (remaining
// < 0 is no limit), flushed line by line when following.
type logWriter struct {
	w          io.Writer
	flusher    http.Flusher
	timestamps bool
	follow     bool
	since      time.Time
	remaining  int64
	started    bool
}

// open answers 200 once the log is open, at once when following: the
// client then knows the log is there before its first line comes.
func (lw *logWriter) open() {
	if lw.follow {
		lw.started = true
		lw.flush()
	}
}

func (lw *logWriter) write(line LogLine) error {
	if line.Time.Before(lw.since) {
		return nil
	}
	out := line.Data
	if lw.timestamps {
		out = append([]byte(line.Time.UTC().Format(timestampFormat)+" "), line.Data...)
	}
	if lw.remaining >= 0 && int64(len(out)) > lw.remaining {
		out = out[:lw.remaining]
	}
	lw.started = true
	if _, err := lw.w.Write(out); err != nil {
		return err
	}
	if lw.follow {
		lw.flush()
	}
	if lw.remaining >= 0 {
		lw.remaining -= int64(len(out))
		if lw.remaining == 0 {
			return errLimitReached
		}
	}
	return nil
}

func (lw *logWriter) flush() {
	if lw.started && lw.flusher != nil {
		lw.flusher.Flush()
	}
}

// ring keeps the last n lines pushed.
type ring struct {
	buf  []LogLine
	n    int64
	next int
}

func newRing(n int64) *ring { return &ring{n: n} }

func (r *ring) push(l LogLine) {
	if r.n == 0 {
		return
	}
	if int64(len(r.buf)) < r.n {
		r.buf = append(r.buf, l)
		return
	}
	r.buf[r.next] = l
	r.next = (r.next + 1) % len(r.buf)
}

func (r *ring) lines() []LogLine {
	return append(append([]LogLine{}, r.buf[r.next:]...), r.buf[:r.next]...)
}

// writeText answers a plain-text error, as the kubelet's.
func writeText(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	if _, err := io.WriteString(w, msg); err != nil {
		klog.V(4).InfoS("Writing an error answer", "err", err)
	}
}

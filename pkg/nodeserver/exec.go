package nodeserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/httpstream/spdy"
	"k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/klog/v2"
)

// TerminalSize is a terminal's size in characters, as the resize stream
// sends it.
type TerminalSize struct {
	Width  uint16
	Height uint16
}

// ExecStreams are a command's standard streams; a nil one was not asked
// for. Resize brings the terminal's sizes when TTY is set.
type ExecStreams struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	TTY            bool
	Resize         <-chan TerminalSize
}

// Executor runs commands in a node's running containers: what a node
// implementation provides for /exec. A pod or container it does not know
// is a NotFound error, as for logs.
type Executor interface {
	// Exec runs cmd in the container until it ends or ctx does, and
	// returns its exit code.
	Exec(ctx context.Context, c Container, cmd []string, streams ExecStreams) (int, error)
}

// streamCreationTimeout bounds the wait for the client's streams after
// the upgrade, as the kubelet's default does.
const streamCreationTimeout = 30 * time.Second

// serveExec runs /exec/{namespace}/{pod}/{container} as the kubelet does:
// the command and the streams wanted come in the query (command,
// input, output, error, tty: "1" or "true"), the connection is upgraded
// to SPDY with the remotecommand protocol v4, each stream comes as the
// client opens it, and the command's end is a Status on the error stream
// (NonZeroExitCode with the exit code as its cause).
func (s *Server) serveExec(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		http.Error(w, "405: Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/exec/"), "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		http.NotFound(w, r)
		return
	}
	c := Container{Namespace: parts[0], Pod: parts[1], Name: parts[2]}
	q := r.URL.Query()
	cmd := q[corev1.ExecCommandParam]
	want := map[string]bool{
		corev1.StreamTypeStdin:  flag(q.Get(corev1.ExecStdinParam)),
		corev1.StreamTypeStdout: flag(q.Get(corev1.ExecStdoutParam)),
		corev1.StreamTypeStderr: flag(q.Get(corev1.ExecStderrParam)),
	}
	tty := flag(q.Get(corev1.ExecTTYParam))
	switch {
	case len(cmd) == 0:
		http.Error(w, "you must specify at least 1 command", http.StatusBadRequest)
		return
	case !want[corev1.StreamTypeStdin] && !want[corev1.StreamTypeStdout] && !want[corev1.StreamTypeStderr]:
		http.Error(w, "you must specify at least 1 of stdin, stdout, stderr", http.StatusBadRequest)
		return
	case tty && want[corev1.StreamTypeStderr]:
		// A terminal has one output stream.
		want[corev1.StreamTypeStderr] = false
	}
	if r.Header.Get(httpstream.HeaderProtocolVersion) == "" {
		http.Error(w, fmt.Sprintf("unable to upgrade: %s is required", httpstream.HeaderProtocolVersion), http.StatusBadRequest)
		return
	}
	if _, err := httpstream.Handshake(r, w, []string{remotecommand.StreamProtocolV4Name}); err != nil {
		// Handshake has answered 403 with the protocols it takes.
		return
	}
	streamCh := make(chan httpstream.Stream, 8)
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(st httpstream.Stream, _ <-chan struct{}) error {
		streamCh <- st
		return nil
	})
	if conn == nil {
		// The upgrade failed and was answered.
		return
	}
	defer func() { _ = conn.Close() }()
	conn.SetIdleTimeout(4 * time.Hour)
	streams, errStream, resize, err := waitStreams(r.Context(), streamCh, want, tty)
	if err != nil {
		klog.V(2).InfoS("Exec streams", "pod", c.Pod, "container", c.Name, "err", err)
		return
	}
	defer func() { _ = errStream.Close() }()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-conn.CloseChan():
			cancel()
		case <-ctx.Done():
		}
	}()
	if resize != nil {
		sizes := make(chan TerminalSize, 1)
		go readSizes(ctx, resize, sizes)
		streams.Resize = sizes
	}
	code, err := s.cfg.Exec.Exec(ctx, c, cmd, streams)
	if st, ok := streams.Stdout.(io.Closer); ok {
		_ = st.Close()
	}
	if st, ok := streams.Stderr.(io.Closer); ok {
		_ = st.Close()
	}
	_ = json.NewEncoder(errStream).Encode(execStatus(cmd, code, err))
}

// waitStreams collects the streams the client opens: the error stream,
// one per standard stream asked for, and resize with a terminal.
func waitStreams(ctx context.Context, ch <-chan httpstream.Stream, want map[string]bool, tty bool) (ExecStreams, httpstream.Stream, httpstream.Stream, error) {
	var (
		s                 = ExecStreams{TTY: tty}
		errStream, resize httpstream.Stream
	)
	expected := 1
	for _, w := range want {
		if w {
			expected++
		}
	}
	if tty {
		expected++
	}
	timer := time.NewTimer(streamCreationTimeout)
	defer timer.Stop()
	for got := 0; got < expected; got++ {
		select {
		case st := <-ch:
			switch t := st.Headers().Get(corev1.StreamType); t {
			case corev1.StreamTypeError:
				errStream = st
			case corev1.StreamTypeStdin:
				s.Stdin = st
			case corev1.StreamTypeStdout:
				s.Stdout = st
			case corev1.StreamTypeStderr:
				s.Stderr = st
			case corev1.StreamTypeResize:
				resize = st
			default:
				return s, nil, nil, fmt.Errorf("unexpected stream type %q", t)
			}
		case <-timer.C:
			return s, nil, nil, errors.New("timed out waiting for client to create streams")
		case <-ctx.Done():
			return s, nil, nil, ctx.Err()
		}
	}
	if errStream == nil {
		return s, nil, nil, errors.New("no error stream")
	}
	return s, errStream, resize, nil
}

// readSizes decodes the terminal sizes the client sends, one JSON object
// each, keeping only the latest one not yet taken.
func readSizes(ctx context.Context, r io.Reader, out chan TerminalSize) {
	dec := json.NewDecoder(r)
	for {
		var size TerminalSize
		if err := dec.Decode(&size); err != nil {
			return
		}
		select {
		case <-out:
		default:
		}
		select {
		case out <- size:
		case <-ctx.Done():
			return
		}
	}
}

// execStatus is the Status that ends an exec on its error stream, as the
// kubelet writes it for protocol v4.
func execStatus(cmd []string, code int, err error) metav1.Status {
	switch {
	case err != nil:
		return metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
	case code != 0:
		return metav1.Status{
			Status:  metav1.StatusFailure,
			Reason:  remotecommand.NonZeroExitCodeReason,
			Message: fmt.Sprintf("command terminated with non-zero exit code: error executing command %v, exit code %d", cmd, code),
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: remotecommand.ExitCodeCauseType, Message: strconv.Itoa(code)}}},
		}
	}
	return metav1.Status{Status: metav1.StatusSuccess}
}

// flag reads a boolean query parameter as the kubelet does; the
// apiserver sends "1", a client calling the node directly may send true.
func flag(v string) bool {
	b, err := strconv.ParseBool(v)
	return err == nil && b
}

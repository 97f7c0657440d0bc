package nodeserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/exec"
)

// echoExec upper-cases its stdin to stdout, writes the command to stderr
// and exits with the code its command names ("exit 3"); it records what
// it was given.
type echoExec struct {
	mu   sync.Mutex
	runs []echoRun
}

type echoRun struct {
	c   Container
	cmd []string
	tty bool
}

func (e *echoExec) Exec(_ context.Context, c Container, cmd []string, s ExecStreams) (int, error) {
	e.mu.Lock()
	e.runs = append(e.runs, echoRun{c, cmd, s.TTY})
	e.mu.Unlock()
	if c.Pod != "web" {
		return 0, PodNotFound(c.Pod)
	}
	if s.Stdin != nil && s.Stdout != nil {
		in, err := io.ReadAll(s.Stdin)
		if err != nil {
			return 0, err
		}
		_, _ = s.Stdout.Write(bytes.ToUpper(in))
	}
	if s.Stderr != nil {
		_, _ = fmt.Fprint(s.Stderr, strings.Join(cmd, " "))
	}
	if len(cmd) == 2 && cmd[0] == "exit" {
		return strconv.Atoi(cmd[1])
	}
	return 0, nil
}

// execVia runs cmd at the node as the apiserver does, with its client
// certificate, over SPDY.
func (n *testNode) execVia(t *testing.T, path string, opts remotecommand.StreamOptions) error {
	t.Helper()
	cfg := &rest.Config{Host: n.url, TLSClientConfig: rest.TLSClientConfig{
		CAFile: n.apiserverFiles.CAFile, CertFile: n.apiserverFiles.CertFile, KeyFile: n.apiserverFiles.KeyFile,
	}}
	u, err := http.NewRequest(http.MethodPost, n.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := remotecommand.NewSPDYExecutor(cfg, http.MethodPost, u.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return ex.StreamWithContext(ctx, opts)
}

func TestExec_StreamsStdinStdoutStderrAndTheExitCode(t *testing.T) {
	e := &echoExec{}
	n := newTestNodeWith(t, e)
	tests := []struct {
		name       string
		query      string
		stdin      string
		wantOut    string
		wantErrOut string
		wantCode   int
	}{
		{name: "success", query: "command=cat&input=1&output=1&error=1", stdin: "hi\n", wantOut: "HI\n", wantErrOut: "cat"},
		{name: "non-zero exit", query: "command=exit&command=3&output=1&error=1", wantErrOut: "exit 3", wantCode: 3},
		{name: "true spelled out", query: "command=cat&input=true&output=true", stdin: "x", wantOut: "X"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			opts := remotecommand.StreamOptions{Stdout: &out}
			if strings.Contains(tt.query, "error=") {
				opts.Stderr = &errOut
			}
			if tt.stdin != "" {
				opts.Stdin = strings.NewReader(tt.stdin)
			}
			err := n.execVia(t, "/exec/ns/web/app?"+tt.query, opts)
			var code exec.CodeExitError
			switch {
			case tt.wantCode == 0 && err != nil:
				t.Fatalf("exec: %v", err)
			case tt.wantCode != 0 && (!errors.As(err, &code) || code.Code != tt.wantCode):
				t.Fatalf("exec error %v, want exit code %d", err, tt.wantCode)
			}
			if out.String() != tt.wantOut || errOut.String() != tt.wantErrOut {
				t.Errorf("stdout %q stderr %q, want %q and %q", out.String(), errOut.String(), tt.wantOut, tt.wantErrOut)
			}
		})
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if got := e.runs[1]; got.c != (Container{Namespace: "ns", Pod: "web", Name: "app"}) || strings.Join(got.cmd, " ") != "exit 3" {
		t.Errorf("second run %+v, want ns/web/app with exit 3", got)
	}
}

func TestExec_AnErrorOfTheNodeEndsTheStreamWithItsMessage(t *testing.T) {
	n := newTestNodeWith(t, &echoExec{})
	var out bytes.Buffer
	err := n.execVia(t, "/exec/ns/gone/app?command=ls&output=1", remotecommand.StreamOptions{Stdout: &out})
	if err == nil || !strings.Contains(err.Error(), `pod "gone" does not exist`) {
		t.Fatalf("exec error %v, want the node's error", err)
	}
}

func TestExec_RefusesWhatTheKubeletRefuses(t *testing.T) {
	n := newTestNodeWith(t, &echoExec{})
	tests := []struct {
		name, path string
		code       int
		body       string
	}{
		{"no command", "/exec/ns/web/app?output=1", http.StatusBadRequest, "you must specify at least 1 command"},
		{"no stream", "/exec/ns/web/app?command=ls", http.StatusBadRequest, "you must specify at least 1 of stdin, stdout, stderr"},
		{"no container", "/exec/ns/web?command=ls&output=1", http.StatusNotFound, ""},
		{"no protocol", "/exec/ns/web/app?command=ls&output=1", http.StatusBadRequest, "X-Stream-Protocol-Version is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := n.get(t, context.Background(), tt.path, &n.apiserver, "")
			body := readAll(t, resp)
			if resp.StatusCode != tt.code || !strings.Contains(body, tt.body) {
				t.Errorf("%d %q, want %d with %q", resp.StatusCode, body, tt.code, tt.body)
			}
		})
	}
}

func TestExec_NotServedWithoutAnExecutor(t *testing.T) {
	n := newTestNode(t)
	resp := n.get(t, context.Background(), "/exec/ns/web/app?command=ls&output=1", &n.apiserver, "")
	_ = readAll(t, resp)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("status %d, want 404", resp.StatusCode)
	}
}

package filters

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/klog/v2"
)

const kubeTimeoutBody = `{"metadata":{},"status":"Failure","message":"Timeout: request did not complete within the allotted timeout","reason":"Timeout","details":{},"code":504}` + "\n"

func never(*http.Request) bool { return false }

// recordTerminations collects what a filter reports as terminated.
type recordTerminations struct {
	mu    sync.Mutex
	codes []int
}

func (t *recordTerminations) record(_ *http.Request, code int) {
	t.mu.Lock()
	t.codes = append(t.codes, code)
	t.mu.Unlock()
}

func (t *recordTerminations) get() []int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]int(nil), t.codes...)
}

func TestWithRequestDeadline(t *testing.T) {
	for _, tc := range []struct {
		name        string
		max         time.Duration
		query       string
		longRunning bool
		// handler reports to the subtest's t: the subtest waits for it
		// to return, also when the filter has answered without it.
		handler func(t *testing.T, w http.ResponseWriter, r *http.Request)
		// refused: the filter answers at once, never calling handler.
		refused    bool
		code       int
		body       string
		header     map[string]string
		terminated []int
	}{
		{
			name: "answered in time", max: time.Minute,
			handler: func(t *testing.T, w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Test", "1")
				w.WriteHeader(201)
				fmt.Fprint(w, "done")
			},
			code: 201, body: "done", header: map[string]string{"X-Test": "1"},
		},
		{
			name: "headers of a handler that writes nothing", max: time.Minute,
			handler: func(t *testing.T, w http.ResponseWriter, r *http.Request) { w.Header().Set("X-Test", "2") },
			code:    200, body: "", header: map[string]string{"X-Test": "2"},
		},
		{
			name: "the deadline is on the context", max: time.Minute, query: "?timeout=30s",
			handler: func(t *testing.T, w http.ResponseWriter, r *http.Request) {
				d, ok := r.Context().Deadline()
				if !ok || time.Until(d) > 30*time.Second || time.Until(d) < 25*time.Second {
					w.WriteHeader(500)
					return
				}
				fmt.Fprint(w, "ok")
			},
			code: 200, body: "ok",
		},
		{
			name: "a ?timeout over the maximum is cut to it", max: 2 * time.Second, query: "?timeout=1h",
			handler: func(t *testing.T, w http.ResponseWriter, r *http.Request) {
				d, _ := r.Context().Deadline()
				if time.Until(d) > 2*time.Second {
					w.WriteHeader(500)
				}
			},
			code: 200,
		},
		{
			name: "?timeout=0 means the maximum", max: 2 * time.Second, query: "?timeout=0s",
			handler: func(t *testing.T, w http.ResponseWriter, r *http.Request) {
				d, ok := r.Context().Deadline()
				if !ok || time.Until(d) < time.Second {
					w.WriteHeader(500)
				}
			},
			code: 200,
		},
		{
			name: "a malformed ?timeout", max: time.Minute, query: "?timeout=abc",
			handler: func(t *testing.T, w http.ResponseWriter, r *http.Request) { t.Error("handler called") },
			refused: true,
			code:    400, body: `"message":"invalid timeout specified in the request URL - time: invalid duration \"abc\""`,
		},
		{
			name: "timed out: kube's 504", max: 50 * time.Millisecond,
			handler: func(t *testing.T, w http.ResponseWriter, r *http.Request) {
				<-r.Context().Done()
				time.Sleep(20 * time.Millisecond)
				w.Header().Set("X-Late", "1")
				w.WriteHeader(200)
				_, err := w.Write([]byte("late"))
				if err != http.ErrHandlerTimeout {
					t.Errorf("late write: %v", err)
				}
			},
			code: 504, body: kubeTimeoutBody, header: map[string]string{"Content-Type": "text/plain; charset=utf-8", "X-Late": ""},
			terminated: []int{504},
		},
		{
			name: "?timeout shorter than the maximum", max: time.Minute, query: "?timeout=50ms",
			handler: func(t *testing.T, w http.ResponseWriter, r *http.Request) {
				time.Sleep(200 * time.Millisecond)
			},
			code: 504, body: kubeTimeoutBody, terminated: []int{504},
		},
		{
			name: "long-running requests are left alone", max: 10 * time.Millisecond, longRunning: true,
			handler: func(t *testing.T, w http.ResponseWriter, r *http.Request) {
				if _, ok := r.Context().Deadline(); ok {
					t.Error("long-running request with a deadline")
				}
				time.Sleep(50 * time.Millisecond)
				fmt.Fprint(w, "streamed")
			},
			code: 200, body: "streamed",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var term recordTerminations
			returned := make(chan struct{})
			handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer close(returned)
				tc.handler(t, w, r)
			})
			h := WithRequestDeadline(handler, tc.max, func(*http.Request) bool { return tc.longRunning }, term.record)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/namespaces"+tc.query, nil))
			if !tc.refused {
				// A handler past the deadline still runs: what it
				// reports belongs to this subtest.
				select {
				case <-returned:
				case <-time.After(10 * time.Second):
					t.Fatal("the handler did not return")
				}
			}
			if rec.Code != tc.code {
				t.Fatalf("code %d, want %d (%s)", rec.Code, tc.code, rec.Body.String())
			}
			if tc.code == 400 {
				if !strings.Contains(rec.Body.String(), tc.body) {
					t.Fatalf("body %s, want %s", rec.Body.String(), tc.body)
				}
			} else if rec.Body.String() != tc.body {
				t.Fatalf("body %q, want %q", rec.Body.String(), tc.body)
			}
			for k, v := range tc.header {
				if got := rec.Header().Get(k); got != v {
					t.Errorf("header %s: %q, want %q", k, got, v)
				}
			}
			if got := term.get(); fmt.Sprint(got) != fmt.Sprint(tc.terminated) {
				t.Errorf("terminations %v, want %v", got, tc.terminated)
			}
		})
	}
}

func TestWithRequestDeadline_AnswerStillUnfinishedAfterTheGraceIsAborted(t *testing.T) {
	var terms recordTerminations
	h := WithRequestDeadline(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		time.Sleep(answerGrace + 100*time.Millisecond)
	}), 50*time.Millisecond, never, terms.record)
	defer func() {
		if v := recover(); v != http.ErrAbortHandler {
			t.Fatalf("recovered %v, want http.ErrAbortHandler", v)
		}
		if got := terms.get(); fmt.Sprint(got) != "[504]" {
			t.Fatalf("terminations %v, want [504]", got)
		}
	}()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	t.Fatal("no panic")
}

// A handler whose own calls fail at the deadline answers that error, and
// may have begun its answer when the filter's deadline fires: the answer
// reaches the client whole, instead of the stream being cut.
func TestWithRequestDeadline_AnswerBegunAtTheDeadlineIsFinished(t *testing.T) {
	var terms recordTerminations
	const body = `{"kind":"Status","code":500}`
	h := WithRequestDeadline(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		<-r.Context().Done()
		time.Sleep(50 * time.Millisecond)
		_, _ = io.WriteString(w, body)
	}), 20*time.Millisecond, never, terms.record)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusInternalServerError || rec.Body.String() != body {
		t.Fatalf("answer %d %q, want the handler's 500 %q", rec.Code, rec.Body.String(), body)
	}
	if got := terms.get(); len(got) != 0 {
		t.Fatalf("terminations %v, want none: the handler answered", got)
	}
}

func TestWithRequestDeadline_PanicReachesTheRequestGoroutine(t *testing.T) {
	h := WithRequestDeadline(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		panic("boom")
	}), time.Minute, never, nil)
	defer func() {
		p, ok := recover().(*HandlerPanic)
		if !ok || p.Value != "boom" || !strings.Contains(string(p.Stack), "timeout_test.go") {
			t.Fatalf("recovered %#v", p)
		}
	}()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	t.Fatal("no panic")
}

// A client that sends the header and half the body, and then nothing,
// gets kube's 504 at the deadline and its connection closed, over HTTP/1.1
// and HTTP/2.
func TestWithRequestDeadline_StalledBody(t *testing.T) {
	returned := make(chan error, 4)
	h := WithRequestDeadline(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		returned <- err
	}), 300*time.Millisecond, never, nil)
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()

	t.Run("HTTP/1.1", func(t *testing.T) {
		c, err := tls.Dial("tcp", srv.Listener.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Close() }()
		start := time.Now()
		fmt.Fprintf(c, "POST /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"kind\":")
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 504 || string(body) != kubeTimeoutBody || !resp.Close {
			t.Fatalf("got %d close=%v %q", resp.StatusCode, resp.Close, body)
		}
		if _, err := br.ReadByte(); err != io.EOF {
			t.Fatalf("the connection stays open: %v", err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("took %s", took)
		}
		select {
		case err := <-returned:
			if err == nil {
				t.Fatal("the handler read the whole body")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the handler is still blocked reading the body")
		}
	})

	t.Run("HTTP/2", func(t *testing.T) {
		client := srv.Client()
		pr, pw := io.Pipe()
		defer func() { _ = pw.Close() }()
		go func() { _, _ = pw.Write([]byte(`{"kind":`)) }()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/namespaces", pr)
		req.ContentLength = 100
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.ProtoMajor != 2 || resp.StatusCode != 504 || string(body) != kubeTimeoutBody {
			t.Fatalf("got %s %d %q", resp.Proto, resp.StatusCode, body)
		}
		select {
		case err := <-returned:
			if err == nil {
				t.Fatal("the handler read the whole body")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the handler is still blocked reading the body")
		}
	})
}

// Every 5xx is logged with its cause: the request deadline's 504, and an
// answer cut at the deadline, name the request and the timeout.
func TestWithRequestDeadline_TimeoutsAreLoggedWithTheirCause(t *testing.T) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	var buf syncBuffer
	klog.SetOutput(&buf)
	t.Cleanup(func() { _ = fs.Set("logtostderr", "true"); klog.SetOutput(nil) })

	// The handler outlives the deadline: one that returns as it ends has
	// its (empty) answer served, with nothing to log.
	slow := WithRequestDeadline(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		time.Sleep(100 * time.Millisecond)
	}), 30*time.Millisecond, never, nil)
	slow.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/apis/batch/v1/slow", nil))
	klog.Flush()
	if got := buf.String(); !strings.Contains(got, "Request timed out") || !strings.Contains(got, `path="/apis/batch/v1/slow"`) || !strings.Contains(got, `timeout="30ms"`) {
		t.Fatalf("504 not logged with its cause: %q", got)
	}

	cut := WithRequestDeadline(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		<-r.Context().Done()
		time.Sleep(answerGrace + 100*time.Millisecond)
	}), 30*time.Millisecond, never, nil)
	func() {
		defer func() { _ = recover() }()
		cut.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/apis/batch/v1/cut", nil))
	}()
	klog.Flush()
	if got := buf.String(); !strings.Contains(got, "answer cut") || !strings.Contains(got, `path="/apis/batch/v1/cut"`) {
		t.Fatalf("cut answer not logged: %q", got)
	}
}

// syncBuffer is a bytes.Buffer safe for klog's writes and the test's reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

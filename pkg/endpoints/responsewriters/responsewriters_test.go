package responsewriters

import (
	"bytes"
	"errors"
	"flag"
	"net/http/httptest"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

func TestWriteError_ServerErrorsAreLoggedWithTheirCause(t *testing.T) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	var buf bytes.Buffer
	klog.SetOutput(&buf)
	t.Cleanup(func() { _ = fs.Set("logtostderr", "true"); klog.SetOutput(nil) })

	cases := []struct {
		name   string
		err    error
		code   int
		logged bool
	}{
		{"plain error", errors.New("disk on fire"), 500, true},
		{"internal error", apierrors.NewInternalError(errors.New("object does not implement the Object interfaces")), 500, true},
		{"timeout", apierrors.NewTimeoutError("too slow", 1), 504, true},
		{"not found", apierrors.NewNotFound(schema.GroupResource{Resource: "cronjobs"}, "x"), 404, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			buf.Reset()
			w := httptest.NewRecorder()
			WriteError(w, httptest.NewRequest("GET", "/apis/batch/v1/cronjobs", nil), tc.err)
			klog.Flush()
			if w.Code != tc.code {
				t.Fatalf("code %d, want %d", w.Code, tc.code)
			}
			logged := strings.Contains(buf.String(), "/apis/batch/v1/cronjobs")
			if logged != tc.logged || (tc.logged && !strings.Contains(buf.String(), tc.err.Error())) {
				t.Fatalf("logged %v, want %v: %q", logged, tc.logged, buf.String())
			}
		})
	}
}

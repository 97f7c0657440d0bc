package generic

import (
	"context"
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/registry/rest"
	"github.com/cronplane/cronplane/pkg/storage"
)

func TestAPIError(t *testing.T) {
	s := &Store{Resource: &Resource{Resource: rest.Resource{GroupVersionKind: schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "CronJob"}, Plural: "cronjobs"}}}
	for _, tc := range []struct {
		name   string
		err    error
		code   int32
		reason metav1.StatusReason
		msg    string
	}{
		{"deadline in etcd is kube's 504", fmt.Errorf("etcd: %w", context.DeadlineExceeded), 504, metav1.StatusReasonTimeout,
			"Timeout: request did not complete within requested timeout - context deadline exceeded"},
		{"not found", &storage.Error{Code: storage.ErrCodeNotFound}, 404, metav1.StatusReasonNotFound, `cronjobs.batch "x" not found`},
		{"other errors are internal", errors.New("etcd: boom"), 500, metav1.StatusReasonInternalError, "Internal error occurred: etcd: boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var status apierrors.APIStatus
			if !errors.As(s.apiError(tc.err, "x"), &status) {
				t.Fatalf("%v is not a Status", tc.err)
			}
			st := status.Status()
			if st.Code != tc.code || st.Reason != tc.reason || st.Message != tc.msg {
				t.Fatalf("got %d %s %q, want %d %s %q", st.Code, st.Reason, st.Message, tc.code, tc.reason, tc.msg)
			}
		})
	}
}

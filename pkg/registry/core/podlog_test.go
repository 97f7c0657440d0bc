package core

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLogContainer_PicksOrRefusesAsKube(t *testing.T) {
	pod := func(names ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "init"}}}}
		for _, n := range names {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n})
		}
		return p
	}
	for _, tc := range []struct {
		pod     *corev1.Pod
		name    string
		want    string
		wantErr string
	}{
		{pod("a"), "", "a", ""},
		{pod("a", "b"), "", "", "a container name must be specified for pod p, choose one of: [init a b]"},
		{pod(), "", "", "a container name must be specified for pod p"},
		{pod("a", "b"), "b", "b", ""},
		{pod("a"), "init", "init", ""},
		{pod("a"), "c", "", "container c is not valid for pod p"},
	} {
		got, err := logContainer(tc.pod, tc.name)
		if got != tc.want || (err == nil) != (tc.wantErr == "") || (err != nil && (err.Error() != tc.wantErr || !apierrors.IsBadRequest(err))) {
			t.Errorf("%q in %v: got %q, %v; want %q, %q", tc.name, tc.pod.Spec.Containers, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestAgentError_ReadsTheAgentsAnswerAsKube(t *testing.T) {
	for _, tc := range []struct {
		code     int
		body     string
		wantCode int32
		wantMsg  string
	}{
		{200, "log", 0, ""},
		{400, `container "a" in pod "p" is waiting to start: ContainerCreating`, 400, `container "a" in pod "p" is waiting to start: ContainerCreating`},
		{404, `pod "p" does not exist`, 404, "the server could not find the requested resource ( pods/log p)"},
		{403, "Forbidden (user=x, verb=get, resource=nodes, subresource=proxy)", 403, "Forbidden (user=x, verb=get, resource=nodes, subresource=proxy) ( pods/log p)"},
		{401, "Unauthorized", 401, "the server has asked for the client to provide credentials ( pods/log p)"},
		{500, "boom", 500, "Internal error occurred: boom"},
	} {
		err := agentError(&http.Response{StatusCode: tc.code, Body: io.NopCloser(strings.NewReader(tc.body))}, "p")
		if tc.wantCode == 0 {
			if err != nil {
				t.Errorf("%d: %v", tc.code, err)
			}
			continue
		}
		var status apierrors.APIStatus
		if !errors.As(err, &status) || status.Status().Code != tc.wantCode || status.Status().Message != tc.wantMsg {
			t.Errorf("%d: got %v, want %d %q", tc.code, err, tc.wantCode, tc.wantMsg)
		}
	}
}

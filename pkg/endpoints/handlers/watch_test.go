package handlers

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cronplane/cronplane/pkg/registry"
	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// eventsWatcher plays back a fixed list of events, then ends.
type eventsWatcher struct{ events []watch.Event }

func (eventsWatcher) New() runtime.Object { return &corev1.ConfigMap{} }

func (s eventsWatcher) Watch(context.Context, string, *rest.ListOptions) (watch.Interface, error) {
	w := watch.NewFakeWithChanSize(len(s.events), false)
	for _, e := range s.events {
		w.Action(e.Type, e.Object)
	}
	w.Stop()
	return w, nil
}

func TestWatch_EventThatCannotBeConvertedEndsTheStreamWithAnError(t *testing.T) {
	reg := registry.New()
	reg.Add(&registry.Entry{
		Resource: &rest.Resource{
			GroupVersionKind: corev1.SchemeGroupVersion.WithKind("ConfigMap"),
			Plural:           "configmaps", Namespaced: true,
			New: fakeNewConfigMap, NewList: func() runtime.Object { return &corev1.ConfigMapList{} },
		},
		// An object without metadata has no PartialObjectMetadata form; the
		// good event after it is never sent.
		Storage: eventsWatcher{[]watch.Event{
			{Type: watch.Added, Object: &metav1.Status{}},
			{Type: watch.Added, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "later"}}},
		}},
	})
	w := dispatchRequest(&Handler{Registry: reg}, "GET", "/api/v1/namespaces/ns1/configmaps?watch=1", "",
		"Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
	lines := strings.Split(strings.TrimSpace(w.Body.String()), "\n")
	if w.Code != 200 || len(lines) != 1 {
		t.Fatalf("got %d with %d events: %s", w.Code, len(lines), w.Body)
	}
	var ev struct {
		Type   string
		Object metav1.Status
	}
	if err := json.Unmarshal([]byte(lines[0]), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Type != "ERROR" || ev.Object.Code != 500 || ev.Object.Reason != metav1.StatusReasonInternalError {
		t.Fatalf("event %s, want an ERROR with a 500 Status", lines[0])
	}
}

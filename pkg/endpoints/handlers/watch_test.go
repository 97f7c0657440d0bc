package handlers

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/pkg/endpoints/responsewriters"
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
	w := dispatchRequest(&Handler{Registry: reg, MinRequestTimeout: 1800}, "GET", "/api/v1/namespaces/ns1/configmaps?watch=1", "",
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

// A watch that storage ends with a server error (a 5xx Status in an
// ERROR event) is logged with the error's message, as every 5xx is; an
// expired resourceVersion (410) is the client's to handle, not logged.
func TestWatch_ServerErrorEventIsLogged(t *testing.T) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	var buf bytes.Buffer
	klog.SetOutput(&buf)
	t.Cleanup(func() { _ = fs.Set("logtostderr", "true"); klog.SetOutput(nil) })

	for _, tc := range []struct {
		status metav1.Status
		logged bool
	}{
		{metav1.Status{Status: metav1.StatusFailure, Code: 500, Reason: metav1.StatusReasonInternalError, Message: "decoding stored object: disk on fire"}, true},
		{metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version: 1 (5)"}, false},
	} {
		buf.Reset()
		reg := registry.New()
		status := tc.status
		reg.Add(&registry.Entry{
			Resource: &rest.Resource{
				GroupVersionKind: corev1.SchemeGroupVersion.WithKind("ConfigMap"),
				Plural:           "configmaps", Namespaced: true,
				New: fakeNewConfigMap, NewList: func() runtime.Object { return &corev1.ConfigMapList{} },
			},
			Storage: eventsWatcher{[]watch.Event{{Type: watch.Error, Object: &status}}},
		})
		w := dispatchRequest(&Handler{Registry: reg, MinRequestTimeout: 1800}, "GET", "/api/v1/namespaces/ns1/configmaps?watch=1", "", "")
		if !strings.Contains(w.Body.String(), `"type":"ERROR"`) {
			t.Fatalf("%d: no ERROR event: %s", status.Code, w.Body)
		}
		klog.Flush()
		if logged := strings.Contains(buf.String(), status.Message); logged != tc.logged {
			t.Fatalf("%d: logged %v, want %v: %q", status.Code, logged, tc.logged, buf.String())
		}
	}
}

// The frames a watch writes are the meta/v1 WatchEvents kube sends, in
// JSON and in protobuf, whatever the object's size.
func TestWatchFrames_AreKubesWatchEvents(t *testing.T) {
	for _, size := range []int{0, 100, 20000} {
		obj := &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "7"},
			Data:       map[string]string{"v": strings.Repeat("x", size)},
		}
		for _, typ := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted} {
			e := watch.Event{Type: typ, Object: obj}
			var f watchFrame
			var got bytes.Buffer

			if err := jsonWatchEvent(&f, e); err != nil {
				t.Fatal(err)
			}
			if _, err := f.writeTo(&got); err != nil {
				t.Fatal(err)
			}
			objJSON, _ := json.Marshal(obj)
			want, _ := json.Marshal(metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: objJSON}})
			if want = append(want, '\n'); !bytes.Equal(got.Bytes(), want) {
				t.Errorf("JSON %s of %d bytes:\n got %.200q\nwant %.200q", typ, size, got.Bytes(), want)
			}

			got.Reset()
			if err := protobufWatchEvent(&f, e); err != nil {
				t.Fatal(err)
			}
			if _, err := f.writeTo(&got); err != nil {
				t.Fatal(err)
			}
			objPB, err := responsewriters.Protobuf(obj)
			if err != nil {
				t.Fatal(err)
			}
			ev, _ := (&metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: objPB}}).Marshal()
			want = binary.BigEndian.AppendUint32(nil, uint32(len(ev)))
			if want = append(want, ev...); !bytes.Equal(got.Bytes(), want) {
				t.Errorf("protobuf %s of %d bytes:\n got %.200q\nwant %.200q", typ, size, got.Bytes(), want)
			}
		}
	}
}

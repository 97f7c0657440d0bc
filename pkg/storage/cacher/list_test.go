package cacher

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cronplane/cronplane/pkg/storage"
)

func configMap(rv, data string) *storage.SharedObject {
	return storage.Share(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: rv}, Data: map[string]string{"v": data}})
}

// The state of a key before an event is what a page at an older revision
// shows; a delete's is rebuilt from the deleted object and the revision
// it ended, so that the event need not keep the previous object.
func TestEvent_StateBeforeIt(t *testing.T) {
	old := configMap("5", "old")
	gone := configMap("9", "last")
	tests := []struct {
		name     string
		ev       *event
		wantRV   string // "" when the key did not exist
		wantData string
	}{
		{"added", &event{typ: watch.Added, obj: configMap("9", "new")}, "", ""},
		{"modified", &event{typ: watch.Modified, obj: configMap("9", "new"), prev: old}, "5", "old"},
		{"deleted, without its previous object", &event{typ: watch.Deleted, obj: gone, prevRV: 7}, "7", "last"},
		{"deleted, previous object unknown to the cache", &event{typ: watch.Deleted, obj: gone}, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.ev.before()
			if s.obj == nil {
				if tc.wantRV != "" {
					t.Fatalf("no state, want one at %s", tc.wantRV)
				}
				return
			}
			obj, err := s.object()
			if err != nil {
				t.Fatal(err)
			}
			cm := obj.Object().(*corev1.ConfigMap)
			if cm.ResourceVersion != tc.wantRV || cm.Data["v"] != tc.wantData {
				t.Fatalf("state at %s with %q, want at %s with %q", cm.ResourceVersion, cm.Data["v"], tc.wantRV, tc.wantData)
			}
		})
	}
	// The deleted object itself, shared with watchers, keeps its revision.
	if rv := gone.Object().(*corev1.ConfigMap).ResourceVersion; rv != "9" {
		t.Fatalf("the deleted object was changed: at %s", rv)
	}
}

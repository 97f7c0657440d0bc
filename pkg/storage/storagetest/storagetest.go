// Package storagetest is the conformance suite of storage.Interface: every
// backend (the etcd store, the watch cache over it) runs the same tests,
// one per clause of the interface's contract.
package storagetest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/storage"
	"github.com/cronplane/cronplane/pkg/storage/etcd3"
)

// GVK of the objects the suite stores.
var GVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

// NewObject returns an empty object of the suite's type.
func NewObject() runtime.Object { return &corev1.ConfigMap{} }

// Codec is the codec the suite's backends must use.
func Codec() storage.Codec { return codec.Protobuf(GVK, NewObject) }

// Backend is a storage under test, for keys under Prefix.
type Backend struct {
	Storage storage.Interface
	// Etcd is the etcd store Storage reads through (Storage itself when it
	// is that store): pages of a list must be the same from either, and a
	// continue token from one valid on the other.
	Etcd storage.Interface
	// Prefix is a key prefix of this test's own, ending in "/".
	Prefix string
	// Compact compacts the backing etcd up to rev.
	Compact func(ctx context.Context, rev int64) error
}

// NewBackend makes a fresh backend for one test.
type NewBackend func(t *testing.T) Backend

// Run runs the whole suite.
func Run(t *testing.T, newBackend NewBackend) {
	tests := []struct {
		name string
		f    func(*testing.T, Backend)
	}{
		{"Create_StoresWithModRevision", testCreate},
		{"Create_ExistingKeyIsAlreadyExists", testCreateExists},
		{"Get_MissingKeyIsNotFound", testGetMissing},
		{"Get_FutureRevisionIsTooLarge", testGetFuture},
		{"List_ReturnsKeyOrderAndReadRevision", testList},
		{"List_ExactRevisionShowsOldState", testListExact},
		{"List_PagesShareOneSnapshot", testPaging},
		{"List_LabelPredicateFilters", testListPredicate},
		{"List_PagedPredicateAfterReads", testListPredicateAfterReads},
		{"List_CompactedRevisionIsExpired", testListCompacted},
		{"List_PagesAcrossWritesShowTheFirstPageRevision", testPagingAcrossWrites},
		{"List_PagedSelectorAcrossWrites", testPagingPredicateAcrossWrites},
		{"List_PageTokensWorkOnEitherBackend", testPagingInterchange},
		{"List_ExactRevisionAcrossDeletesAndCreates", testListExactAcrossWrites},
		{"GuaranteedUpdate_ConcurrentUpdatesAllApply", testConcurrentUpdates},
		{"GuaranteedUpdate_PreconditionsConflict", testUpdatePreconditions},
		{"GuaranteedUpdate_NoChangeWritesNothing", testNoopUpdate},
		{"GuaranteedUpdate_CreatesMissingKey", testUpdateCreates},
		{"GuaranteedUpdate_StaleCachedStateIsReadAgain", testUpdateStaleCached},
		{"Delete_StaleCachedStateIsReadAgain", testDeleteStaleCached},
		{"Delete_ReturnsLastStateAtDeleteRevision", testDelete},
		{"Delete_PreconditionsConflict", testDeletePreconditions},
		{"Watch_SendsChangesAfterRevision", testWatch},
		{"Watch_FromPastRevisionReplaysEventsWithTheirTypes", testWatchReplay},
		{"Watch_FromZeroStartsWithCurrentState", testWatchFromZero},
		{"Watch_PredicateSeesTheDeleteOfAMatchingObjectOnly", testWatchPredicateDelete},
		{"Watch_PredicateTransitionsAddAndDelete", testWatchPredicate},
		{"Watch_CompactedRevisionIsGone", testWatchCompacted},
		{"Watch_StopClosesChannel", testWatchStop},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, newBackend(t)) })
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func obj(name string, labels map[string]string, data string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: labels, UID: types.UID("uid-" + name)},
		Data:       map[string]string{"v": data},
	}
	cm.SetGroupVersionKind(GVK)
	return cm
}

func cm(t *testing.T, o runtime.Object) *corev1.ConfigMap {
	t.Helper()
	c, ok := storage.Unwrap(o).(*corev1.ConfigMap)
	if !ok {
		t.Fatalf("got %T %+v", o, o)
	}
	return c
}

func rv(t *testing.T, o runtime.Object) int64 {
	t.Helper()
	m, err := meta.Accessor(storage.Unwrap(o))
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", m.GetResourceVersion(), err)
	}
	return n
}

func key(b Backend, name string) string { return b.Prefix + "ns/" + name }

// Create stores an object of the suite's type named name.
func Create(t *testing.T, b Backend, name string) runtime.Object {
	return create(t, b, name, nil, "1")
}

func create(t *testing.T, b Backend, name string, labels map[string]string, data string) runtime.Object {
	t.Helper()
	out, err := b.Storage.Create(ctx(t), key(b, name), obj(name, labels, data))
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return out
}

func update(t *testing.T, b Backend, name, data string) runtime.Object {
	t.Helper()
	out, err := b.Storage.GuaranteedUpdate(ctx(t), key(b, name), nil, func(cur runtime.Object) (runtime.Object, error) {
		c := cur.(*corev1.ConfigMap)
		c.Data = map[string]string{"v": data}
		return c, nil
	}, nil)
	if err != nil {
		t.Fatalf("update %s: %v", name, err)
	}
	return out
}

func testCreate(t *testing.T, b Backend) {
	out := create(t, b, "a", nil, "1")
	if cm(t, out).Data["v"] != "1" || rv(t, out) == 0 {
		t.Fatalf("created %+v", out)
	}
	got, err := b.Storage.Get(ctx(t), key(b, "a"), storage.GetOptions{})
	if err != nil || rv(t, got) != rv(t, out) {
		t.Fatalf("get after create: %v, rv %d want %d", err, rv(t, got), rv(t, out))
	}
}

func testCreateExists(t *testing.T, b Backend) {
	create(t, b, "a", nil, "1")
	_, err := b.Storage.Create(ctx(t), key(b, "a"), obj("a", nil, "2"))
	if !storage.IsAlreadyExists(err) {
		t.Fatalf("want AlreadyExists, got %v", err)
	}
}

func testGetMissing(t *testing.T, b Backend) {
	_, err := b.Storage.Get(ctx(t), key(b, "missing"), storage.GetOptions{})
	if !storage.IsNotFound(err) {
		t.Fatalf("want NotFound, got %v", err)
	}
}

func testGetFuture(t *testing.T, b Backend) {
	out := create(t, b, "a", nil, "1")
	_, err := b.Storage.Get(ctx(t), key(b, "a"), storage.GetOptions{Mode: storage.ReadNotOlderThan, ResourceVersion: rv(t, out) + 1000})
	if !storage.IsTooLargeResourceVersion(err) {
		t.Fatalf("want TooLargeResourceVersion, got %v", err)
	}
}

func names(t *testing.T, items []runtime.Object) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = cm(t, it).Name
	}
	return out
}

func testList(t *testing.T, b Backend) {
	create(t, b, "b", nil, "1")
	last := create(t, b, "a", nil, "1")
	res, err := b.Storage.List(ctx(t), b.Prefix, storage.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(names(t, res.Items)); got != "[a b]" {
		t.Fatalf("items %s", got)
	}
	if res.ResourceVersion < rv(t, last) {
		t.Fatalf("list rv %d older than the last write %d", res.ResourceVersion, rv(t, last))
	}
}

func testListExact(t *testing.T, b Backend) {
	first := create(t, b, "a", nil, "1")
	update(t, b, "a", "2")
	res, err := b.Storage.List(ctx(t), b.Prefix, storage.ListOptions{Mode: storage.ReadExact, ResourceVersion: rv(t, first)})
	if err != nil {
		t.Fatal(err)
	}
	if res.ResourceVersion != rv(t, first) || len(res.Items) != 1 || cm(t, res.Items[0]).Data["v"] != "1" {
		t.Fatalf("exact list: rv %d items %+v", res.ResourceVersion, res.Items)
	}
}

func testPaging(t *testing.T, b Backend) {
	for i := 0; i < 5; i++ {
		create(t, b, fmt.Sprintf("p%d", i), nil, "1")
	}
	first, err := b.Storage.List(ctx(t), b.Prefix, storage.ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Items) != 2 || first.Continue == "" || first.RemainingItemCount == nil || *first.RemainingItemCount != 3 {
		t.Fatalf("first page: %d items, continue %q, remaining %v", len(first.Items), first.Continue, first.RemainingItemCount)
	}
	create(t, b, "p9", nil, "1")
	var all []string
	all = append(all, names(t, first.Items)...)
	cont := first.Continue
	for pages := 0; cont != "" && pages < 10; pages++ {
		page, err := b.Storage.List(ctx(t), b.Prefix, storage.ListOptions{Limit: 2, Continue: cont})
		if err != nil {
			t.Fatal(err)
		}
		if page.ResourceVersion != first.ResourceVersion {
			t.Fatalf("page rv %d, first page rv %d", page.ResourceVersion, first.ResourceVersion)
		}
		all = append(all, names(t, page.Items)...)
		cont = page.Continue
		if cont == "" && page.RemainingItemCount != nil {
			t.Fatalf("last page has remainingItemCount %d", *page.RemainingItemCount)
		}
	}
	if got := fmt.Sprint(all); got != "[p0 p1 p2 p3 p4]" {
		t.Fatalf("pages %s (p9 was created after the snapshot)", got)
	}
	_, err = b.Storage.List(ctx(t), b.Prefix, storage.ListOptions{Limit: 2, Continue: "garbage"})
	if !storage.IsInvalidContinue(err) {
		t.Fatalf("want InvalidContinue, got %v", err)
	}
}

func selector(t *testing.T, s string) storage.SelectionPredicate {
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return storage.SelectionPredicate{Label: sel, GetAttrs: func(o runtime.Object) (labels.Set, fields.Set, error) {
		m, err := meta.Accessor(o)
		if err != nil {
			return nil, nil, err
		}
		return labels.Set(m.GetLabels()), nil, nil
	}}
}

func testListPredicate(t *testing.T, b Backend) {
	for i := 0; i < 6; i++ {
		create(t, b, fmt.Sprintf("l%d", i), map[string]string{"even": strconv.FormatBool(i%2 == 0)}, "1")
	}
	res, err := b.Storage.List(ctx(t), b.Prefix, storage.ListOptions{Predicate: selector(t, "even=true")})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(names(t, res.Items)); got != "[l0 l2 l4]" {
		t.Fatalf("items %s", got)
	}
	page, err := b.Storage.List(ctx(t), b.Prefix, storage.ListOptions{Limit: 2, Predicate: selector(t, "even=true")})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(names(t, page.Items)); got != "[l0 l2]" || page.Continue == "" || page.RemainingItemCount != nil {
		t.Fatalf("filtered page %s continue %q remaining %v", got, page.Continue, page.RemainingItemCount)
	}
}

// testListPredicateAfterReads pages a filtered list once the objects have
// been read: a backend that hands out shared, already decoded objects (a
// watch cache under an etcd store) must filter those too.
func testListPredicateAfterReads(t *testing.T, b Backend) {
	for i := 0; i < 4; i++ {
		create(t, b, fmt.Sprintf("s%d", i), map[string]string{"even": strconv.FormatBool(i%2 == 0)}, "1")
	}
	for i := 0; i < 4; i++ {
		if _, err := b.Storage.Get(ctx(t), key(b, fmt.Sprintf("s%d", i)), storage.GetOptions{Mode: storage.ReadMostRecent}); err != nil {
			t.Fatal(err)
		}
	}
	for _, mode := range []storage.ReadMode{storage.ReadMostRecent, storage.ReadAny} {
		page, err := b.Storage.List(ctx(t), b.Prefix, storage.ListOptions{Mode: mode, Limit: 1, Predicate: selector(t, "even=true")})
		if err != nil {
			t.Fatalf("mode %d: %v", mode, err)
		}
		if got := fmt.Sprint(names(t, page.Items)); got != "[s0]" && !(mode == storage.ReadAny && got == "[s0 s2]") {
			t.Fatalf("mode %d: items %s", mode, got)
		}
	}
}

func testListCompacted(t *testing.T, b Backend) {
	create(t, b, "b", nil, "1")
	first := create(t, b, "a", nil, "1")
	page, err := b.Storage.List(ctx(t), b.Prefix, storage.ListOptions{Limit: 1})
	if err != nil || page.Continue == "" {
		t.Fatalf("first page: continue %q, %v", page.Continue, err)
	}
	last := update(t, b, "a", "2")
	if err := b.Compact(ctx(t), rv(t, last)); err != nil {
		t.Fatal(err)
	}
	exact := storage.ListOptions{Mode: storage.ReadExact, ResourceVersion: rv(t, first)}
	_, err = b.Storage.List(ctx(t), b.Prefix, exact)
	if !storage.IsExpired(err) {
		t.Fatalf("exact list at a compacted revision: want Expired, got %v", err)
	}
	sameError(t, b, exact, err)
	cont := storage.ListOptions{Limit: 1, Continue: page.Continue}
	_, err = b.Storage.List(ctx(t), b.Prefix, cont)
	if !storage.IsExpired(err) {
		t.Fatalf("continue at a compacted revision: want Expired, got %v", err)
	}
	sameError(t, b, cont, err)
	// The error offers a token that goes on from the same key at the
	// latest revision (an inconsistent list, as kube offers it).
	var se *storage.Error
	if !errors.As(err, &se) || se.Continue == "" {
		t.Fatalf("expired continue offers no token: %#v", err)
	}
	create(t, b, "c", nil, "1")
	rest, err := b.Storage.List(ctx(t), b.Prefix, storage.ListOptions{Limit: 1, Continue: se.Continue})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(names(t, rest.Items)); got != "[b]" || rest.Continue == "" || rest.ResourceVersion <= rv(t, last) {
		t.Fatalf("inconsistent continue: items %s continue %q at %d", got, rest.Continue, rest.ResourceVersion)
	}
	rest, err = b.Storage.List(ctx(t), b.Prefix, storage.ListOptions{Limit: 5, Continue: rest.Continue})
	if err != nil || fmt.Sprint(names(t, rest.Items)) != "[c]" {
		t.Fatalf("after the inconsistent page: %v %v", err, names(t, rest.Items))
	}
}

func testConcurrentUpdates(t *testing.T, b Backend) {
	create(t, b, "c", nil, "0")
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := b.Storage.GuaranteedUpdate(ctx(t), key(b, "c"), nil, func(cur runtime.Object) (runtime.Object, error) {
				c := cur.(*corev1.ConfigMap)
				v, _ := strconv.Atoi(c.Data["v"])
				c.Data["v"] = strconv.Itoa(v + 1)
				return c, nil
			}, nil)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := b.Storage.Get(ctx(t), key(b, "c"), storage.GetOptions{})
	if err != nil || cm(t, got).Data["v"] != strconv.Itoa(n) {
		t.Fatalf("counter %v after %d updates: %v", cm(t, got).Data, n, err)
	}
}

func testUpdatePreconditions(t *testing.T, b Backend) {
	out := create(t, b, "a", nil, "1")
	wrongUID := types.UID("other")
	_, err := b.Storage.GuaranteedUpdate(ctx(t), key(b, "a"), &storage.Preconditions{UID: &wrongUID}, func(cur runtime.Object) (runtime.Object, error) { return cur, nil }, nil)
	if !storage.IsConflict(err) {
		t.Fatalf("uid precondition: want Conflict, got %v", err)
	}
	staleRV := strconv.FormatInt(rv(t, out)-1, 10)
	_, err = b.Storage.GuaranteedUpdate(ctx(t), key(b, "a"), &storage.Preconditions{ResourceVersion: &staleRV}, func(cur runtime.Object) (runtime.Object, error) { return cur, nil }, nil)
	if !storage.IsConflict(err) {
		t.Fatalf("rv precondition: want Conflict, got %v", err)
	}
}

func testNoopUpdate(t *testing.T, b Backend) {
	out := create(t, b, "a", nil, "1")
	again, err := b.Storage.GuaranteedUpdate(ctx(t), key(b, "a"), nil, func(cur runtime.Object) (runtime.Object, error) { return cur, nil }, nil)
	if err != nil || rv(t, again) != rv(t, out) {
		t.Fatalf("no-op update wrote: rv %d -> %d, %v", rv(t, out), rv(t, again), err)
	}
}

// A caller's cached state that is out of date never decides an outcome:
// the store reads the key before it reports a conflict, an error of
// tryUpdate or a write that changes nothing.
func testUpdateStaleCached(t *testing.T, b Backend) {
	stale := create(t, b, "a", nil, "1")
	fresh := update(t, b, "a", "2")
	freshRV := strconv.FormatInt(rv(t, fresh), 10)
	// A precondition that holds only on the current state.
	out, err := b.Storage.GuaranteedUpdate(ctx(t), key(b, "a"), &storage.Preconditions{ResourceVersion: &freshRV}, func(cur runtime.Object) (runtime.Object, error) {
		c := cm(t, cur)
		c.Data["v"] += "+"
		return c, nil
	}, stale)
	if err != nil || cm(t, out).Data["v"] != "2+" {
		t.Fatalf("precondition on the current state with a stale cache: %v %v", out, err)
	}
	// tryUpdate refuses the stale state only.
	current := out
	out, err = b.Storage.GuaranteedUpdate(ctx(t), key(b, "a"), nil, func(cur runtime.Object) (runtime.Object, error) {
		if rv(t, cur) != rv(t, current) {
			return nil, fmt.Errorf("stale state %d", rv(t, cur))
		}
		c := cm(t, cur)
		c.Data["v"] = "3"
		return c, nil
	}, stale)
	if err != nil || cm(t, out).Data["v"] != "3" {
		t.Fatalf("tryUpdate refusing the stale state: %v %v", out, err)
	}
	// Nothing to change on the stale state is not nothing to change.
	out, err = b.Storage.GuaranteedUpdate(ctx(t), key(b, "a"), nil, func(cur runtime.Object) (runtime.Object, error) {
		c := cm(t, cur)
		c.Data["v"] = "1"
		return c, nil
	}, stale)
	if err != nil || cm(t, out).Data["v"] != "1" || rv(t, out) <= rv(t, current) {
		t.Fatalf("a change that looks like none on the stale state: %v %v", out, err)
	}
	got, err := b.Storage.Get(ctx(t), key(b, "a"), storage.GetOptions{})
	if err != nil || cm(t, got).Data["v"] != "1" {
		t.Fatalf("stored %v, %v", got, err)
	}
	// A cached object for a key deleted meanwhile: the update finds it gone.
	if _, err := b.Storage.Delete(ctx(t), key(b, "a"), nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	_, err = b.Storage.GuaranteedUpdate(ctx(t), key(b, "a"), &storage.Preconditions{UID: ptrUID("uid-a")}, func(cur runtime.Object) (runtime.Object, error) { return cur, nil }, stale)
	if !storage.IsNotFound(err) {
		t.Fatalf("update of a deleted key from a stale cache: %v, want NotFound", err)
	}
}

func ptrUID(u string) *types.UID {
	uid := types.UID(u)
	return &uid
}

func testDeleteStaleCached(t *testing.T, b Backend) {
	stale := create(t, b, "a", nil, "1")
	fresh := update(t, b, "a", "2")
	freshRV := strconv.FormatInt(rv(t, fresh), 10)
	out, err := b.Storage.Delete(ctx(t), key(b, "a"), &storage.Preconditions{ResourceVersion: &freshRV}, func(cur runtime.Object) error {
		if cm(t, cur).Data["v"] != "2" {
			return fmt.Errorf("validated the stale state")
		}
		return nil
	}, stale)
	if err != nil || cm(t, out).Data["v"] != "2" {
		t.Fatalf("delete from a stale cache: %v %v", out, err)
	}
	if _, err := b.Storage.Get(ctx(t), key(b, "a"), storage.GetOptions{}); !storage.IsNotFound(err) {
		t.Fatalf("after the delete: %v", err)
	}
	if _, err := b.Storage.Delete(ctx(t), key(b, "a"), nil, nil, stale); !storage.IsNotFound(err) {
		t.Fatalf("delete of a deleted key from a stale cache: %v, want NotFound", err)
	}
}

func testUpdateCreates(t *testing.T, b Backend) {
	out, err := b.Storage.GuaranteedUpdate(ctx(t), key(b, "new"), nil, func(cur runtime.Object) (runtime.Object, error) {
		if cur != nil {
			return nil, fmt.Errorf("want nil for a missing key, got %T", cur)
		}
		return obj("new", nil, "1"), nil
	}, nil)
	if err != nil || rv(t, out) == 0 {
		t.Fatalf("create through update: %v", err)
	}
}

func testDelete(t *testing.T, b Backend) {
	out := create(t, b, "a", nil, "1")
	last, err := b.Storage.Delete(ctx(t), key(b, "a"), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cm(t, last).Data["v"] != "1" || rv(t, last) <= rv(t, out) {
		t.Fatalf("deleted state %+v rv %d (created at %d)", cm(t, last).Data, rv(t, last), rv(t, out))
	}
	if _, err := b.Storage.Delete(ctx(t), key(b, "a"), nil, nil, nil); !storage.IsNotFound(err) {
		t.Fatalf("second delete: want NotFound, got %v", err)
	}
}

func testDeletePreconditions(t *testing.T, b Backend) {
	create(t, b, "a", nil, "1")
	wrongUID := types.UID("other")
	if _, err := b.Storage.Delete(ctx(t), key(b, "a"), &storage.Preconditions{UID: &wrongUID}, nil, nil); !storage.IsConflict(err) {
		t.Fatalf("want Conflict, got %v", err)
	}
	if _, err := b.Storage.Get(ctx(t), key(b, "a"), storage.GetOptions{}); err != nil {
		t.Fatalf("object lost after a failed delete: %v", err)
	}
}

func next(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case e, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	return watch.Event{}
}

func expect(t *testing.T, w watch.Interface, typ watch.EventType, name string) watch.Event {
	t.Helper()
	e := next(t, w)
	if e.Type != typ || cm(t, e.Object).Name != name {
		t.Fatalf("got %s %s, want %s %s", e.Type, cm(t, e.Object).Name, typ, name)
	}
	return e
}

func testWatch(t *testing.T, b Backend) {
	start := create(t, b, "old", nil, "1")
	w, err := b.Storage.Watch(ctx(t), b.Prefix, storage.WatchOptions{ResourceVersion: rv(t, start), Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	created := create(t, b, "a", nil, "1")
	updated := update(t, b, "a", "2")
	deleted, err := b.Storage.Delete(ctx(t), key(b, "a"), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		typ watch.EventType
		rv  int64
	}{{watch.Added, rv(t, created)}, {watch.Modified, rv(t, updated)}, {watch.Deleted, rv(t, deleted)}} {
		e := expect(t, w, want.typ, "a")
		if rv(t, e.Object) != want.rv {
			t.Fatalf("%s rv %d, want %d", e.Type, rv(t, e.Object), want.rv)
		}
	}
}

// A watch from a revision already passed gets the changes since then as
// they happened, not the current state.
func testWatchReplay(t *testing.T, b Backend) {
	created := create(t, b, "a", nil, "1")
	updated := update(t, b, "a", "2")
	if _, err := b.Storage.Delete(ctx(t), key(b, "a"), nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	w, err := b.Storage.Watch(ctx(t), b.Prefix, storage.WatchOptions{ResourceVersion: rv(t, created), Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if e := expect(t, w, watch.Modified, "a"); rv(t, e.Object) != rv(t, updated) {
		t.Fatalf("modified at %d, want %d", rv(t, e.Object), rv(t, updated))
	}
	expect(t, w, watch.Deleted, "a")
}

func testWatchFromZero(t *testing.T, b Backend) {
	create(t, b, "a", nil, "1")
	create(t, b, "b", nil, "1")
	w, err := b.Storage.Watch(ctx(t), b.Prefix, storage.WatchOptions{Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	expect(t, w, watch.Added, "a")
	expect(t, w, watch.Added, "b")
	update(t, b, "a", "2")
	expect(t, w, watch.Modified, "a")
}

func testWatchPredicate(t *testing.T, b Backend) {
	start := create(t, b, "a", map[string]string{"x": "no"}, "1")
	w, err := b.Storage.Watch(ctx(t), b.Prefix, storage.WatchOptions{ResourceVersion: rv(t, start), Recursive: true, Predicate: selector(t, "x=yes")})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	relabel := func(v string) {
		_, err := b.Storage.GuaranteedUpdate(ctx(t), key(b, "a"), nil, func(cur runtime.Object) (runtime.Object, error) {
			c := cur.(*corev1.ConfigMap)
			c.Labels = map[string]string{"x": v}
			return c, nil
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
	}
	relabel("yes")
	expect(t, w, watch.Added, "a")
	relabel("no")
	expect(t, w, watch.Deleted, "a")
}

// A watch with a selector sees an object's delete, live and replayed,
// when its last state matched: that state, at the delete's revision.
func testWatchPredicateDelete(t *testing.T, b Backend) {
	start := create(t, b, "a", map[string]string{"x": "yes"}, "1")
	create(t, b, "b", map[string]string{"x": "no"}, "1")
	live, err := b.Storage.Watch(ctx(t), b.Prefix, storage.WatchOptions{ResourceVersion: rv(t, start), Recursive: true, Predicate: selector(t, "x=yes")})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Stop()
	var deleted runtime.Object
	for _, name := range []string{"b", "a"} {
		if deleted, err = b.Storage.Delete(ctx(t), key(b, name), nil, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	// The last event: no DELETED b may come between.
	last := create(t, b, "c", map[string]string{"x": "yes"}, "1")
	replay, err := b.Storage.Watch(ctx(t), b.Prefix, storage.WatchOptions{ResourceVersion: rv(t, start), Recursive: true, Predicate: selector(t, "x=yes")})
	if err != nil {
		t.Fatal(err)
	}
	defer replay.Stop()
	for name, w := range map[string]watch.Interface{"live": live, "replayed": replay} {
		e := expect(t, w, watch.Deleted, "a")
		if got := cm(t, e.Object); got.Data["v"] != "1" || got.Labels["x"] != "yes" || rv(t, e.Object) != rv(t, deleted) {
			t.Errorf("%s: DELETED a is %v %v at %d, want its last state at the delete's revision %d", name, got.Labels, got.Data, rv(t, e.Object), rv(t, deleted))
		}
		if e := expect(t, w, watch.Added, "c"); rv(t, e.Object) != rv(t, last) {
			t.Errorf("%s: ADDED c at %d, want %d", name, rv(t, e.Object), rv(t, last))
		}
	}
}

func testWatchCompacted(t *testing.T, b Backend) {
	first := create(t, b, "a", nil, "1")
	update(t, b, "a", "2")
	last := update(t, b, "a", "3")
	if err := b.Compact(ctx(t), rv(t, last)); err != nil {
		t.Fatal(err)
	}
	w, err := b.Storage.Watch(ctx(t), b.Prefix, storage.WatchOptions{ResourceVersion: rv(t, first), Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	e := next(t, w)
	status, ok := e.Object.(*metav1.Status)
	if e.Type != watch.Error || !ok || status.Code != 410 || status.Reason != metav1.StatusReasonExpired {
		t.Fatalf("got %s %+v, want ERROR with a 410 Expired Status", e.Type, e.Object)
	}
}

func testWatchStop(t *testing.T, b Backend) {
	w, err := b.Storage.Watch(ctx(t), b.Prefix, storage.WatchOptions{Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-w.ResultChan():
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("channel still open 10s after Stop")
		}
	}
}

// EtcdBackend is an etcd store of the suite's type over client, with a key
// prefix of the test's own; wrap (when not nil) puts a layer such as a
// watch cache over the store.
func EtcdBackend(t *testing.T, client *clientv3.Client, wrap func(s *etcd3.Store, prefix string) storage.Interface) Backend {
	prefix := "/" + strings.ReplaceAll(t.Name(), "/", "-") + "-" + rand.String(5) + "/"
	store := etcd3.New(client, Codec(), NewObject)
	b := Backend{
		Storage: store,
		Etcd:    store,
		Prefix:  prefix,
		Compact: func(ctx context.Context, rev int64) error {
			_, err := client.Compact(ctx, rev)
			return err
		},
	}
	if wrap != nil {
		b.Storage = wrap(store, prefix)
	}
	return b
}

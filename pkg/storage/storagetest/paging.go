package storagetest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cronplane/cronplane/pkg/storage"
)

// The clauses of paged lists: a continue token reads the revision of the
// first page whatever was written since, and every page is the same from
// the backend under test and from the etcd store under it.

// describe writes a page as the API shows it: its revision, each item's
// name, resourceVersion and data, the token and the remaining count.
func describe(t *testing.T, res *storage.ListResult) string {
	t.Helper()
	items := make([]string, len(res.Items))
	for i, it := range res.Items {
		items[i] = fmt.Sprintf("%s@%d:%s", cm(t, it).Name, rv(t, it), cm(t, it).Data["v"])
	}
	remaining := "nil"
	if res.RemainingItemCount != nil {
		remaining = strconv.FormatInt(*res.RemainingItemCount, 10)
	}
	return fmt.Sprintf("rv %d items [%s] continue %q remaining %s", res.ResourceVersion, strings.Join(items, " "), res.Continue, remaining)
}

// page lists from the backend under test and from its etcd store, fails
// unless both answer the same, and returns the answer.
func page(t *testing.T, b Backend, opts storage.ListOptions) *storage.ListResult {
	t.Helper()
	got, err := b.Storage.List(ctx(t), b.Prefix, opts)
	if err != nil {
		t.Fatalf("list %+v: %v", opts, err)
	}
	want, err := b.Etcd.List(ctx(t), b.Prefix, opts)
	if err != nil {
		t.Fatalf("list from etcd %+v: %v", opts, err)
	}
	if g, w := describe(t, got), describe(t, want); g != w {
		t.Fatalf("list %+v:\n got       %s\n from etcd %s", opts, g, w)
	}
	return got
}

// sameError fails unless the etcd store refuses opts as the backend under
// test did, with err.
func sameError(t *testing.T, b Backend, opts storage.ListOptions, err error) {
	t.Helper()
	_, want := b.Etcd.List(ctx(t), b.Prefix, opts)
	var g, w *storage.Error
	if !errors.As(err, &g) || !errors.As(want, &w) || g.Error() != w.Error() || g.Code != w.Code || g.Continue != w.Continue {
		t.Fatalf("list %+v:\n got       %#v\n from etcd %#v", opts, err, want)
	}
}

func del(t *testing.T, b Backend, name string) {
	t.Helper()
	if _, err := b.Storage.Delete(ctx(t), key(b, name), nil, nil, nil); err != nil {
		t.Fatalf("delete %s: %v", name, err)
	}
}

func relabel(t *testing.T, b Backend, name string, labels map[string]string) {
	t.Helper()
	_, err := b.Storage.GuaranteedUpdate(ctx(t), key(b, name), nil, func(cur runtime.Object) (runtime.Object, error) {
		c := cur.(*corev1.ConfigMap)
		c.Labels = labels
		return c, nil
	}, nil)
	if err != nil {
		t.Fatalf("relabel %s: %v", name, err)
	}
}

// want fails unless res holds the named objects as they were created
// (data "1", the creation's revision) and says remaining when not nil.
func want(t *testing.T, res *storage.ListResult, created map[string]int64, names []string, more bool, remaining *int64) {
	t.Helper()
	items := make([]string, len(res.Items))
	for i, it := range res.Items {
		items[i] = fmt.Sprintf("%s@%d:%s", cm(t, it).Name, rv(t, it), cm(t, it).Data["v"])
	}
	wantItems := make([]string, len(names))
	for i, n := range names {
		wantItems[i] = fmt.Sprintf("%s@%d:1", n, created[n])
	}
	if fmt.Sprint(items) != fmt.Sprint(wantItems) {
		t.Fatalf("items %v, want %v", items, wantItems)
	}
	if (res.Continue != "") != more {
		t.Fatalf("continue %q, want one: %v", res.Continue, more)
	}
	switch {
	case remaining == nil && res.RemainingItemCount != nil:
		t.Fatalf("remainingItemCount %d, want none", *res.RemainingItemCount)
	case remaining != nil && (res.RemainingItemCount == nil || *res.RemainingItemCount != *remaining):
		t.Fatalf("remainingItemCount %v, want %d", res.RemainingItemCount, *remaining)
	}
}

func ptr(n int64) *int64 { return &n }

// testPagingAcrossWrites changes, deletes and creates keys between pages:
// later pages still show every key as it was at the first page.
func testPagingAcrossWrites(t *testing.T, b Backend) {
	created := map[string]int64{}
	for i := 0; i < 10; i++ {
		name := fmt.Sprintf("p%d", i)
		created[name] = rv(t, create(t, b, name, nil, "1"))
	}
	first := page(t, b, storage.ListOptions{Limit: 3})
	want(t, first, created, []string{"p0", "p1", "p2"}, true, ptr(7))
	update(t, b, "p3", "2")
	del(t, b, "p4")
	create(t, b, "p4a", nil, "1")
	update(t, b, "p5", "2")
	update(t, b, "p5", "3")
	create(t, b, "p5a", nil, "1")
	del(t, b, "p5a")
	update(t, b, "p7", "2")
	del(t, b, "p7")
	del(t, b, "p8")
	create(t, b, "p8", nil, "2")
	del(t, b, "p1")
	create(t, b, "p99", nil, "1")

	second := page(t, b, storage.ListOptions{Limit: 3, Continue: first.Continue})
	want(t, second, created, []string{"p3", "p4", "p5"}, true, ptr(4))
	third := page(t, b, storage.ListOptions{Limit: 3, Continue: second.Continue})
	want(t, third, created, []string{"p6", "p7", "p8"}, true, ptr(1))
	// Writes go on; the last page is still the first page's revision.
	update(t, b, "p9", "2")
	last := page(t, b, storage.ListOptions{Limit: 3, Continue: third.Continue})
	want(t, last, created, []string{"p9"}, false, nil)
	for _, p := range []*storage.ListResult{second, third, last} {
		if p.ResourceVersion != first.ResourceVersion {
			t.Fatalf("page at %d, first page at %d", p.ResourceVersion, first.ResourceVersion)
		}
	}
	// A page that ends exactly at the last key has no token.
	whole := page(t, b, storage.ListOptions{Limit: 10, Continue: first.Continue})
	want(t, whole, created, []string{"p3", "p4", "p5", "p6", "p7", "p8", "p9"}, false, nil)
	exact := page(t, b, storage.ListOptions{Limit: 7, Continue: first.Continue})
	want(t, exact, created, []string{"p3", "p4", "p5", "p6", "p7", "p8", "p9"}, false, nil)
}

// testPagingPredicateAcrossWrites pages a filtered list: a full page has a
// token whenever any key follows it, matching or not, and never a
// remaining count.
func testPagingPredicateAcrossWrites(t *testing.T, b Backend) {
	even := func(i int) map[string]string { return map[string]string{"even": strconv.FormatBool(i%2 == 0)} }
	created := map[string]int64{}
	for i := 0; i < 10; i++ {
		name := fmt.Sprintf("l%d", i)
		created[name] = rv(t, create(t, b, name, even(i), "1"))
	}
	sel := selector(t, "even=true")
	first := page(t, b, storage.ListOptions{Limit: 2, Predicate: sel})
	want(t, first, created, []string{"l0", "l2"}, true, nil)
	relabel(t, b, "l4", even(1))
	relabel(t, b, "l5", even(0))
	del(t, b, "l6")
	created["l61"] = rv(t, create(t, b, "l61", even(0), "1"))
	second := page(t, b, storage.ListOptions{Limit: 2, Predicate: sel, Continue: first.Continue})
	want(t, second, created, []string{"l4", "l6"}, true, nil)
	third := page(t, b, storage.ListOptions{Limit: 2, Predicate: sel, Continue: second.Continue})
	want(t, third, created, []string{"l8"}, false, nil)

	// At the current revision the page fills at l8; l9 does not match but
	// follows, so there is a token, and the page after it is empty.
	now := page(t, b, storage.ListOptions{Limit: 5, Predicate: sel})
	if got := fmt.Sprint(names(t, now.Items)); got != "[l0 l2 l5 l61 l8]" || now.Continue == "" || now.RemainingItemCount != nil {
		t.Fatalf("current page: %s", describe(t, now))
	}
	empty := page(t, b, storage.ListOptions{Limit: 5, Predicate: sel, Continue: now.Continue})
	if len(empty.Items) != 0 || empty.Continue != "" || empty.ResourceVersion != now.ResourceVersion {
		t.Fatalf("page after the last match: %s", describe(t, empty))
	}
}

// testPagingInterchange pages with tokens from the other backend: the
// first page from one, the next from the other, and so on.
func testPagingInterchange(t *testing.T, b Backend) {
	created := map[string]int64{}
	for i := 0; i < 7; i++ {
		name := fmt.Sprintf("x%d", i)
		created[name] = rv(t, create(t, b, name, nil, "1"))
	}
	for _, from := range []struct {
		name  string
		first int
	}{{"cache first", 0}, {"etcd first", 1}} {
		t.Run(from.name, func(t *testing.T) {
			backends := []storage.Interface{b.Storage, b.Etcd}
			opts := storage.ListOptions{Limit: 2}
			var got []string
			for i := 0; i < 10; i++ {
				res, err := backends[(from.first+i)%2].List(ctx(t), b.Prefix, opts)
				if err != nil {
					t.Fatalf("page %d: %v", i, err)
				}
				for _, it := range res.Items {
					got = append(got, fmt.Sprintf("%s@%d", cm(t, it).Name, rv(t, it)))
				}
				if res.Continue == "" {
					break
				}
				opts.Continue = res.Continue
				// A write between pages, which no page may show.
				update(t, b, fmt.Sprintf("x%d", 6-i), fmt.Sprintf("v%d", i))
			}
			var wantItems []string
			for i := 0; i < 7; i++ {
				name := fmt.Sprintf("x%d", i)
				wantItems = append(wantItems, fmt.Sprintf("%s@%d", name, created[name]))
			}
			if fmt.Sprint(got) != fmt.Sprint(wantItems) {
				t.Fatalf("pages %v, want %v", got, wantItems)
			}
			for i := 0; i < 7; i++ {
				name := fmt.Sprintf("x%d", i)
				created[name] = rv(t, update(t, b, name, "1"))
			}
		})
	}
}

// testListExactAcrossWrites reads a past revision after its keys were
// changed, deleted and new ones created, whole and in pages.
func testListExactAcrossWrites(t *testing.T, b Backend) {
	created := map[string]int64{}
	var at int64
	for i := 0; i < 5; i++ {
		name := fmt.Sprintf("e%d", i)
		created[name] = rv(t, create(t, b, name, nil, "1"))
		at = created[name]
	}
	del(t, b, "e1")
	update(t, b, "e2", "2")
	create(t, b, "e3a", nil, "1")
	del(t, b, "e4")
	create(t, b, "e4", nil, "2")
	all := page(t, b, storage.ListOptions{Mode: storage.ReadExact, ResourceVersion: at})
	want(t, all, created, []string{"e0", "e1", "e2", "e3", "e4"}, false, nil)
	first := page(t, b, storage.ListOptions{Mode: storage.ReadExact, ResourceVersion: at, Limit: 2})
	want(t, first, created, []string{"e0", "e1"}, true, ptr(3))
	second := page(t, b, storage.ListOptions{Limit: 2, Continue: first.Continue})
	want(t, second, created, []string{"e2", "e3"}, true, ptr(1))
	if first.ResourceVersion != at || second.ResourceVersion != at {
		t.Fatalf("pages at %d and %d, want %d", first.ResourceVersion, second.ResourceVersion, at)
	}
}

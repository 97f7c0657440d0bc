package cacher

import (
	"sort"
	"strconv"
	"strings"

	"github.com/google/btree"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cronplane/cronplane/pkg/storage"
)

// treeDegree makes nodes of up to 63 entries: few levels, and little to
// copy when a write follows a clone.
const treeDegree = 32

// entry is an object of the cache in its key order. Entries are shared by
// the clones of the tree and never change.
type entry struct {
	key string
	obj *storage.SharedObject
}

func (e *entry) Less(than btree.Item) bool { return e.key < than.(*entry).key }

// state is an object as it was at a view's revision: obj itself or, for
// one deleted since, obj (the deleted object) with resourceVersion rv.
// obj is nil for a key that did not exist.
type state struct {
	obj *storage.SharedObject
	rv  int64
}

// before is the state of ev's key just before ev. A delete's state is
// rebuilt from the deleted object and the revision it replaced, so that
// the event need not keep the previous object.
func (ev *event) before() state {
	if ev.typ == watch.Deleted {
		if ev.prevRV == 0 {
			return state{}
		}
		return state{obj: ev.obj, rv: ev.prevRV}
	}
	return state{obj: ev.prev}
}

// object returns the state's object; for a deleted one a copy, which this
// rare path can afford.
func (s state) object() (*storage.SharedObject, error) {
	if s.rv == 0 {
		return s.obj, nil
	}
	obj := s.obj.DeepCopyObject()
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	m.SetResourceVersion(strconv.FormatInt(s.rv, 10))
	return storage.ShareSized(obj, s.obj.Size()), nil
}

// view is the cache's state at one revision, read without the lock: the
// objects of the moment it was taken and the events after its revision.
type view struct {
	rv  int64
	now *btree.BTree
	// since are the events after rv, oldest first.
	since []*event
}

// viewAt returns the cache's state at rev (0: at its own revision), or
// false when the cache cannot tell it: it is not filled, has not reached
// rev, or no longer holds every event after rev.
func (c *Cache) viewAt(rev int64) (*view, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rev == 0 {
		rev = c.rv
	}
	if !c.ready || rev > c.rv || rev < c.oldest {
		return nil, false
	}
	n := 0
	for n < c.size && c.events[(c.start+c.size-1-n)%len(c.events)].rv > rev {
		n++
	}
	v := &view{rv: rev, now: c.sorted.Clone(), since: make([]*event, n)}
	for i := range v.since {
		v.since[i] = c.events[(c.start+c.size-n+i)%len(c.events)]
	}
	return v, true
}

// each calls f, in key order, with each key under prefix from start that
// existed at v.rv and its state then, until f returns false.
func (v *view) each(prefix, start string, f func(key string, s state) bool) {
	// past holds the state at v.rv of the keys changed since: that before
	// the first change.
	var past map[string]state
	for i := len(v.since) - 1; i >= 0; i-- {
		ev := v.since[i]
		if ev.key >= start && strings.HasPrefix(ev.key, prefix) {
			if past == nil {
				past = map[string]state{}
			}
			past[ev.key] = ev.before()
		}
	}
	// gone are the keys deleted since, which the tree no longer has.
	var gone []string
	for k, s := range past {
		if s.obj != nil && !v.now.Has(&entry{key: k}) {
			gone = append(gone, k)
		}
	}
	sort.Strings(gone)
	stopped := false
	v.now.AscendGreaterOrEqual(&entry{key: start}, func(it btree.Item) bool {
		e := it.(*entry)
		if !strings.HasPrefix(e.key, prefix) {
			return false
		}
		for ; len(gone) > 0 && gone[0] < e.key; gone = gone[1:] {
			if !f(gone[0], past[gone[0]]) {
				stopped = true
				return false
			}
		}
		s, changed := past[e.key]
		if !changed {
			s = state{obj: e.obj}
		}
		if s.obj == nil {
			// Created since.
			return true
		}
		stopped = !f(e.key, s)
		return !stopped
	})
	for ; !stopped && len(gone) > 0; gone = gone[1:] {
		stopped = !f(gone[0], past[gone[0]])
	}
}

// list reads the view as the etcd store reads a revision: the first limit
// objects (0: all) under prefix from start that pred selects, in key
// order. When the page is full and any key follows it, a continue token
// resumes after its last object, and without a predicate
// remainingItemCount says how many keys follow.
func (v *view) list(prefix, start string, limit int64, pred storage.SelectionPredicate) (*storage.ListResult, error) {
	size := int64(v.now.Len())
	if limit > 0 && limit < size {
		size = limit
	}
	res := &storage.ListResult{ResourceVersion: v.rv, Items: make([]runtime.Object, 0, size)}
	filtered := !pred.Empty()
	var last string
	var full bool
	var remaining int64
	var err error
	v.each(prefix, start, func(key string, s state) bool {
		if full {
			remaining++
			return !filtered
		}
		var obj *storage.SharedObject
		if obj, err = s.object(); err != nil {
			return false
		}
		var ok bool
		if ok, err = pred.Matches(obj); err != nil {
			return false
		}
		if ok {
			res.Items = append(res.Items, obj)
			if full = int64(len(res.Items)) == limit; full {
				last = key
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if full && remaining > 0 {
		token, err := storage.EncodeContinue(last+"\x00", prefix, v.rv)
		if err != nil {
			return nil, err
		}
		res.Continue = token
		if !filtered {
			res.RemainingItemCount = &remaining
		}
	}
	return res, nil
}

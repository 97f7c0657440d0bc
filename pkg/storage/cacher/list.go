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

// object returns the state's object; for a deleted one the same stored
// object at its revision, or else a copy, which this rare path can afford.
func (s state) object() (*storage.SharedObject, error) {
	if s.rv == 0 {
		return s.obj, nil
	}
	if at, ok := s.obj.AtRevision(s.rv); ok {
		return at, nil
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
	// changed holds, once scoped to a prefix, the keys under it that
	// changed after rv; gone, sorted, those of them that existed at rv
	// and no longer do.
	changed map[string]change
	gone    []string
}

// change is a key changed after a view's revision: its state then, and
// whether it exists now.
type change struct {
	then state
	now  bool
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

// scope finds the keys under prefix changed since the view's revision.
func (v *view) scope(prefix string) {
	for i := len(v.since) - 1; i >= 0; i-- {
		ev := v.since[i]
		if !strings.HasPrefix(ev.key, prefix) {
			continue
		}
		if v.changed == nil {
			v.changed = map[string]change{}
		}
		c, seen := v.changed[ev.key]
		if !seen {
			// The newest event says whether the key exists now.
			c.now = ev.typ != watch.Deleted
		}
		// The oldest says what it was at the view's revision.
		c.then = ev.before()
		v.changed[ev.key] = c
	}
	for k, c := range v.changed {
		if c.then.obj != nil && !c.now {
			v.gone = append(v.gone, k)
		}
	}
	sort.Strings(v.gone)
}

// each calls f, in key order, with each key under prefix from start that
// existed at v.rv and its state then, until f returns false. The view
// must be scoped to prefix.
func (v *view) each(prefix, start string, f func(key string, s state) bool) {
	gone := v.gone[sort.SearchStrings(v.gone, start):]
	stopped := false
	// The range ends at the last entry under prefix: the entries up to it
	// need not have their keys read.
	if last := v.lastUnder(prefix); last != nil && last.key >= start {
		v.now.AscendGreaterOrEqual(&entry{key: start}, func(it btree.Item) bool {
			e := it.(*entry)
			for ; len(gone) > 0 && gone[0] < e.key; gone = gone[1:] {
				if !f(gone[0], v.changed[gone[0]].then) {
					stopped = true
					return false
				}
			}
			s := state{obj: e.obj}
			if c, ok := v.changed[e.key]; ok {
				s = c.then
			}
			// An object created since did not exist.
			if s.obj != nil && !f(e.key, s) {
				stopped = true
				return false
			}
			return e != last
		})
	}
	for ; !stopped && len(gone) > 0; gone = gone[1:] {
		stopped = !f(gone[0], v.changed[gone[0]].then)
	}
}

// lastUnder returns the last entry of the moment under prefix, or nil.
func (v *view) lastUnder(prefix string) *entry {
	var last *entry
	find := func(it btree.Item) bool {
		e := it.(*entry)
		if strings.HasPrefix(e.key, prefix) {
			last = e
		}
		return false
	}
	end := prefixEnd(prefix)
	if end == "" {
		v.now.Descend(find)
		return last
	}
	v.now.DescendLessOrEqual(&entry{key: end}, func(it btree.Item) bool {
		return it.(*entry).key == end || find(it)
	})
	return last
}

// prefixEnd is the first key after every key under prefix, as etcd's
// range end of a prefix; "" when there is none.
func prefixEnd(prefix string) string {
	end := []byte(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return string(end[:i+1])
		}
	}
	return ""
}

// list reads the view as the etcd store reads a revision: the first limit
// objects (0: all) under prefix from start that pred selects, in key
// order. When the page is full and any key follows it, a continue token
// resumes after its last object, and without a predicate
// remainingItemCount says how many keys follow.
func (v *view) list(prefix, start string, limit int64, pred storage.SelectionPredicate) (*storage.ListResult, error) {
	v.scope(prefix)
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
			// Past the page: counted without a predicate, else only seen.
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
	if !full || remaining == 0 {
		return res, nil
	}
	token, err := storage.EncodeContinue(last+"\x00", prefix, v.rv)
	if err != nil {
		return nil, err
	}
	res.Continue = token
	if !filtered {
		res.RemainingItemCount = &remaining
	}
	return res, nil
}

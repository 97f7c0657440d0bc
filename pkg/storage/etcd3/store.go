// Package etcd3 implements storage.Interface over etcd's v3 API, with the
// keys and revisions kube-apiserver uses: an object's resourceVersion is
// its key's ModRevision, a list's is the revision it was read at, and
// writes are transactions conditioned on the revision read.
package etcd3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cronplane/cronplane/pkg/storage"
)

// Store is one resource's view of etcd.
type Store struct {
	client *clientv3.Client
	codec  storage.Codec
	// newFunc builds the empty objects that carry bookmarks.
	newFunc func() runtime.Object
	// decoded holds a DecodedObjects; it is set while the cache over this
	// store may already be listing through it.
	decoded atomic.Value
	// observe, if set, receives the duration of each etcd request.
	observe func(operation string, took time.Duration)
	// revisions shares the reads of the current revision.
	revisions revisionReads
}

// Observe makes the store report how long each etcd request took, by
// kube's operation names (create, get, list, update, delete). It must be
// called before the store is used.
func (s *Store) Observe(f func(operation string, took time.Duration)) { s.observe = f }

// timed reports an etcd request begun at start.
func (s *Store) timed(operation string, start time.Time) {
	if s.observe != nil {
		s.observe(operation, time.Since(start))
	}
}

// DecodedObjects is a source of already decoded objects, such as a watch
// cache over this store.
type DecodedObjects interface {
	// Decoded returns the object stored under key at revision rev, or nil.
	// The object is shared and must not be mutated.
	Decoded(key string, rev int64) runtime.Object
}

// New returns the storage of objects encoded by codec; newFunc returns an
// empty object of the stored type (for bookmarks).
func New(client *clientv3.Client, codec storage.Codec, newFunc func() runtime.Object) *Store {
	return &Store{client: client, codec: codec, newFunc: newFunc}
}

// UseDecoded makes lists take objects that d already decoded instead of
// decoding them again: a paged list read from etcd then costs no decoding
// and reuses the objects' memoized encodings.
func (s *Store) UseDecoded(d DecodedObjects) { s.decoded.Store(d) }

// decodeShared decodes a listed key-value, or reuses the object d holds
// for it; the result must not be mutated.
func (s *Store) decodeShared(kv *mvccpb.KeyValue) (runtime.Object, error) {
	if d, ok := s.decoded.Load().(DecodedObjects); ok {
		if obj := d.Decoded(string(kv.Key), kv.ModRevision); obj != nil {
			return obj, nil
		}
	}
	return s.decode(kv.Value, kv.ModRevision)
}

func setRV(obj runtime.Object, rev int64) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	m.SetResourceVersion(strconv.FormatInt(rev, 10))
	return nil
}

// encode stores obj without its resourceVersion, as kube does; obj is left
// as it was.
func (s *Store) encode(obj runtime.Object) ([]byte, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	rv, link := m.GetResourceVersion(), m.GetSelfLink()
	m.SetResourceVersion("")
	m.SetSelfLink("")
	defer func() {
		m.SetResourceVersion(rv)
		m.SetSelfLink(link)
	}()
	return s.codec.Encode(obj)
}

func (s *Store) decode(data []byte, rev int64) (runtime.Object, error) {
	obj, err := s.codec.Decode(data)
	if err != nil {
		return nil, err
	}
	return obj, setRV(obj, rev)
}

// classify turns etcd's errors into the storage contract's.
func classify(err error, key string, rev int64) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, rpctypes.ErrCompacted):
		return &storage.Error{Code: storage.ErrCodeExpired, Key: key, Revision: rev}
	case errors.Is(err, rpctypes.ErrFutureRev):
		// etcd does not say how far it is: the caller may fill Revision.
		return &storage.Error{Code: storage.ErrCodeTooLargeResourceVersion, Key: key, Requested: rev}
	}
	return fmt.Errorf("etcd: %w", err)
}

func (s *Store) Create(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error) {
	data, err := s.encode(obj)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(data))).
		Commit()
	s.timed("create", start)
	if err != nil {
		return nil, classify(err, key, 0)
	}
	if !resp.Succeeded {
		return nil, &storage.Error{Code: storage.ErrCodeAlreadyExists, Key: key}
	}
	return s.decode(data, resp.Header.Revision)
}

func (s *Store) Get(ctx context.Context, key string, opts storage.GetOptions) (runtime.Object, error) {
	start := time.Now()
	resp, err := s.client.Get(ctx, key)
	s.timed("get", start)
	if err != nil {
		return nil, classify(err, key, 0)
	}
	if opts.Mode == storage.ReadNotOlderThan || opts.Mode == storage.ReadExact {
		if opts.ResourceVersion > resp.Header.Revision {
			return nil, &storage.Error{Code: storage.ErrCodeTooLargeResourceVersion, Key: key, Requested: opts.ResourceVersion, Revision: resp.Header.Revision}
		}
	}
	if len(resp.Kvs) == 0 {
		return nil, &storage.Error{Code: storage.ErrCodeNotFound, Key: key}
	}
	return s.decode(resp.Kvs[0].Value, resp.Kvs[0].ModRevision)
}

func (s *Store) List(ctx context.Context, prefix string, opts storage.ListOptions) (*storage.ListResult, error) {
	start, rev := prefix, int64(0)
	if opts.Continue != "" {
		var err error
		if start, rev, err = storage.DecodeContinue(opts.Continue, prefix); err != nil {
			return nil, err
		}
	} else if opts.Mode == storage.ReadExact {
		rev = opts.ResourceVersion
	}
	end := clientv3.GetPrefixRangeEnd(prefix)
	res := &storage.ListResult{}
	filtered := !opts.Predicate.Empty()
	// A page reads up to limit keys; with a predicate that filters some
	// out, further chunks are read at the same revision until the page is
	// full or the range ends.
	chunk := opts.Limit
	if filtered && chunk > 0 && chunk < 256 {
		chunk = 256
	}
	for {
		ops := []clientv3.OpOption{clientv3.WithRange(end)}
		if rev > 0 {
			ops = append(ops, clientv3.WithRev(rev))
		}
		if chunk > 0 {
			ops = append(ops, clientv3.WithLimit(chunk))
		}
		began := time.Now()
		resp, err := s.client.Get(ctx, start, ops...)
		s.timed("list", began)
		if err != nil {
			err = classify(err, prefix, rev)
			var se *storage.Error
			if errors.As(err, &se) {
				switch {
				case se.Code == storage.ErrCodeTooLargeResourceVersion:
					se.Revision, _ = s.CurrentResourceVersion(ctx)
				case se.Code == storage.ErrCodeExpired && opts.Continue != "":
					se.Continue, _ = storage.InconsistentContinue(start, prefix)
				}
			}
			return nil, err
		}
		if rev == 0 {
			rev = resp.Header.Revision
			if opts.Mode == storage.ReadNotOlderThan && opts.ResourceVersion > rev {
				return nil, &storage.Error{Code: storage.ErrCodeTooLargeResourceVersion, Key: prefix, Requested: opts.ResourceVersion, Revision: rev}
			}
		}
		var last *mvccpb.KeyValue
		for _, kv := range resp.Kvs {
			last = kv
			obj, err := s.decodeShared(kv)
			if err != nil {
				return nil, fmt.Errorf("decoding %s: %w", kv.Key, err)
			}
			if opts.KeepStored {
				obj = storage.ShareStored(obj, kv.Value, kv.ModRevision, s.decode)
			}
			if ok, err := opts.Predicate.Matches(obj); err != nil {
				return nil, err
			} else if !ok {
				continue
			}
			res.Items = append(res.Items, obj)
			if opts.Limit > 0 && int64(len(res.Items)) == opts.Limit {
				break
			}
		}
		res.ResourceVersion = rev
		full := opts.Limit > 0 && int64(len(res.Items)) == opts.Limit
		more := resp.More || (last != nil && !bytes.Equal(last.Key, resp.Kvs[len(resp.Kvs)-1].Key))
		if full && more {
			next := string(last.Key) + "\x00"
			token, err := storage.EncodeContinue(next, prefix, rev)
			if err != nil {
				return nil, err
			}
			res.Continue = token
			if !filtered {
				remaining := resp.Count - int64(len(resp.Kvs))
				res.RemainingItemCount = &remaining
			}
			return res, nil
		}
		if !resp.More || last == nil {
			return res, nil
		}
		start = string(last.Key) + "\x00"
	}
}

// preconditionsHold checks p against obj.
func preconditionsHold(key string, p *storage.Preconditions, obj runtime.Object) error {
	if p == nil {
		return nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if p.UID != nil && *p.UID != m.GetUID() {
		return storage.NewConflict(key, fmt.Sprintf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, m.GetUID()))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != m.GetResourceVersion() {
		return storage.NewConflict(key, fmt.Sprintf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, m.GetResourceVersion()))
	}
	return nil
}

// state is what a read-modify-write loop knows of a key.
type state struct {
	obj runtime.Object
	// data are the stored bytes; nil for a cached state until
	// storedBytes encodes them.
	data []byte
	rev  int64 // ModRevision; 0 when the key does not exist
	// cached is the cache's object the state comes from, which obj is
	// until private is called; it must not be mutated.
	cached runtime.Object
}

// private makes obj the state's own copy of a cached object.
func (st *state) private() {
	if st.cached != nil && st.obj == st.cached {
		st.obj = st.cached.DeepCopyObject()
	}
}

// sameBytes reports whether data are the state's stored bytes. A cached
// state that kept its stored bytes compares them; another is encoded only
// when the cached object cannot tell them apart otherwise.
func (s *Store) sameBytes(st *state, data []byte) (bool, error) {
	if st.data == nil && st.cached != nil {
		so, _ := st.cached.(*storage.SharedObject)
		if so != nil && so.Stored() != nil {
			return bytes.Equal(data, so.Stored()), nil
		}
		if so != nil && !so.MayBeStoredAs(data) {
			return false, nil
		}
		var err error
		if st.data, err = s.encode(st.cached.DeepCopyObject()); err != nil {
			return false, err
		}
	}
	return bytes.Equal(data, st.data), nil
}

func (s *Store) stateOf(kvs []*mvccpb.KeyValue) (*state, error) {
	if len(kvs) == 0 {
		return &state{}, nil
	}
	obj, err := s.decode(kvs[0].Value, kvs[0].ModRevision)
	if err != nil {
		return nil, err
	}
	return &state{obj: obj, data: kvs[0].Value, rev: kvs[0].ModRevision}, nil
}

func (s *Store) read(ctx context.Context, key string) (*state, error) {
	start := time.Now()
	resp, err := s.client.Get(ctx, key)
	s.timed("get", start)
	if err != nil {
		return nil, classify(err, key, 0)
	}
	return s.stateOf(resp.Kvs)
}

// stateOfCached is the state a caller's cached object describes, shared
// with the cache: the loop copies it before changing it, and encodes its
// bytes only if the no-change check needs them.
func (s *Store) stateOfCached(cached runtime.Object) (*state, error) {
	m, err := meta.Accessor(storage.Unwrap(cached))
	if err != nil {
		return nil, err
	}
	rev, err := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
	if err != nil {
		return nil, err
	}
	return &state{obj: cached, rev: rev, cached: cached}, nil
}

// initialState is where a read-modify-write loop starts: the caller's
// cached object when it has one (current reports false: it may be stale),
// else a read of key.
func (s *Store) initialState(ctx context.Context, key string, cached runtime.Object) (cur *state, current bool, err error) {
	if cached != nil {
		if cur, err := s.stateOfCached(cached); err == nil {
			return cur, false, nil
		}
	}
	cur, err = s.read(ctx, key)
	return cur, true, err
}

func (s *Store) GuaranteedUpdate(ctx context.Context, key string, p *storage.Preconditions, tryUpdate storage.UpdateFunc, cached runtime.Object) (runtime.Object, error) {
	cur, current, err := s.initialState(ctx, key, cached)
	if err != nil {
		return nil, err
	}
	// reread replaces a possibly stale state with key's current one.
	reread := func() error {
		cur, current, err = nil, true, nil
		cur, err = s.read(ctx, key)
		return err
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if cur.obj != nil {
			if err := preconditionsHold(key, p, storage.Unwrap(cur.obj)); err != nil {
				if current {
					return nil, err
				}
				if err := reread(); err != nil {
					return nil, err
				}
				continue
			}
		} else if p != nil && (p.UID != nil || p.ResourceVersion != nil) {
			return nil, &storage.Error{Code: storage.ErrCodeNotFound, Key: key}
		}
		var in runtime.Object
		if cur.obj != nil {
			in = cur.obj.DeepCopyObject()
		}
		out, err := tryUpdate(in)
		if err != nil {
			if current {
				return nil, err
			}
			// The error may come from a stale state: it stands only if
			// the current state is the one it was computed from.
			staleRev := cur.rev
			if rerr := reread(); rerr != nil {
				return nil, rerr
			}
			if cur.rev == staleRev {
				return nil, err
			}
			continue
		}
		data, err := s.encode(out)
		if err != nil {
			return nil, err
		}
		same := false
		if cur.obj != nil {
			if same, err = s.sameBytes(cur, data); err != nil {
				return nil, err
			}
		}
		if same {
			if !current {
				if err := reread(); err != nil {
					return nil, err
				}
				continue
			}
			return cur.obj, nil
		}
		var cmp clientv3.Cmp
		if cur.obj == nil {
			cmp = clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
		} else {
			cmp = clientv3.Compare(clientv3.ModRevision(key), "=", cur.rev)
		}
		start := time.Now()
		resp, err := s.client.Txn(ctx).If(cmp).Then(clientv3.OpPut(key, string(data))).Else(clientv3.OpGet(key)).Commit()
		s.timed("update", start)
		if err != nil {
			return nil, classify(err, key, 0)
		}
		if resp.Succeeded {
			return s.decode(data, resp.Header.Revision)
		}
		if cur, err = s.stateOf(resp.Responses[0].GetResponseRange().Kvs); err != nil {
			return nil, err
		}
		current = true
	}
}

func (s *Store) Delete(ctx context.Context, key string, p *storage.Preconditions, validate storage.ValidateDeleteFunc, cached runtime.Object) (runtime.Object, error) {
	cur, current, err := s.initialState(ctx, key, cached)
	if err != nil {
		return nil, err
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if cur.obj == nil {
			return nil, &storage.Error{Code: storage.ErrCodeNotFound, Key: key}
		}
		cur.private()
		err := preconditionsHold(key, p, cur.obj)
		if err == nil && validate != nil {
			err = validate(cur.obj)
		}
		if err != nil {
			if current {
				return nil, err
			}
			if cur, err = s.read(ctx, key); err != nil {
				return nil, err
			}
			current = true
			continue
		}
		start := time.Now()
		resp, err := s.client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", cur.rev)).
			Then(clientv3.OpDelete(key)).
			Else(clientv3.OpGet(key)).
			Commit()
		s.timed("delete", start)
		if err != nil {
			return nil, classify(err, key, 0)
		}
		if resp.Succeeded {
			return cur.obj, setRV(cur.obj, resp.Header.Revision)
		}
		if cur, err = s.stateOf(resp.Responses[0].GetResponseRange().Kvs); err != nil {
			return nil, err
		}
		current = true
	}
}

// CurrentResourceVersion is etcd's current revision, read after the call
// began. Calls made at once share a read: every consistent get or list
// asks for it, and with many clients a read for each was a tenth of a
// get's CPU. A read sent after a caller asked is as recent as that caller
// needs, so the callers that ask while one read is in flight wait for it
// to end and share the next one.
func (s *Store) CurrentResourceVersion(ctx context.Context) (int64, error) {
	r := &s.revisions
	r.mu.Lock()
	read := r.next
	if read == nil {
		read = &revisionRead{done: make(chan struct{})}
		r.next = read
		go s.readRevision(read)
	}
	r.mu.Unlock()
	select {
	case <-read.done:
		return read.rev, read.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// revisionReads gathers the callers of CurrentResourceVersion.
type revisionReads struct {
	mu sync.Mutex
	// next is the read the callers who ask now share: not sent yet.
	next *revisionRead
	// inFlight is held while a read is sent, one at a time.
	inFlight sync.Mutex
}

type revisionRead struct {
	done chan struct{}
	rev  int64
	err  error
}

// revisionReadTimeout bounds a shared read, which no one caller's context
// may end for the others.
const revisionReadTimeout = 30 * time.Second

func (s *Store) readRevision(read *revisionRead) {
	r := &s.revisions
	r.inFlight.Lock()
	defer r.inFlight.Unlock()
	// From here on, callers who ask wait for a read sent after them.
	r.mu.Lock()
	r.next = nil
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), revisionReadTimeout)
	defer cancel()
	resp, err := s.client.Get(ctx, "\x00", clientv3.WithCountOnly())
	if err != nil {
		read.err = classify(err, "", 0)
	} else {
		read.rev = resp.Header.Revision
	}
	close(read.done)
}

// CheckRevision reports whether etcd can still read the state at rev: nil,
// or the error a read at rev gets (IsExpired when it was compacted,
// IsTooLargeResourceVersion when it is in the future). It reads one key,
// which costs etcd no count of a range.
func (s *Store) CheckRevision(ctx context.Context, rev int64) error {
	_, err := s.client.Get(ctx, "\x00", clientv3.WithRev(rev), clientv3.WithCountOnly())
	return classify(err, "", rev)
}

// RequestProgress asks etcd to report the current revision on every open
// watch of this client, as progress notifications.
func (s *Store) RequestProgress(ctx context.Context) error {
	// The watch streams were opened with WithRequireLeader, which keys the
	// stream the request must go to.
	return s.client.RequestProgress(clientv3.WithRequireLeader(ctx))
}

func (s *Store) Watch(ctx context.Context, key string, opts storage.WatchOptions) (watch.Interface, error) {
	ctx, cancel := context.WithCancel(ctx)
	w := &watcher{cancel: cancel, result: make(chan watch.Event, 100)}
	go w.run(ctx, s, key, opts)
	return w, nil
}

type watcher struct {
	cancel context.CancelFunc
	result chan watch.Event
}

func (w *watcher) ResultChan() <-chan watch.Event { return w.result }
func (w *watcher) Stop()                          { w.cancel() }

func (w *watcher) send(ctx context.Context, e watch.Event) bool {
	select {
	case w.result <- e:
		return true
	case <-ctx.Done():
		return false
	}
}

func (w *watcher) fail(ctx context.Context, err error) {
	var status *apierrors.StatusError
	if storage.IsExpired(err) {
		status = apierrors.NewResourceExpired(err.Error())
	} else if !errors.As(err, &status) {
		status = apierrors.NewInternalError(err)
	}
	s := status.ErrStatus
	s.Kind, s.APIVersion = "Status", "v1"
	w.send(ctx, watch.Event{Type: watch.Error, Object: &s})
}

func (w *watcher) run(ctx context.Context, s *Store, key string, opts storage.WatchOptions) {
	defer close(w.result)
	defer w.cancel()
	rev := opts.ResourceVersion
	prefix := key
	if opts.Recursive && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	if rev == 0 && opts.SkipInitialState && !opts.SendInitialEvents {
		current, err := s.CurrentResourceVersion(ctx)
		if err != nil {
			w.fail(ctx, err)
			return
		}
		rev = current
	} else if rev == 0 || opts.SendInitialEvents {
		var list *storage.ListResult
		var err error
		if opts.Recursive {
			list, err = s.List(ctx, prefix, storage.ListOptions{Predicate: opts.Predicate})
		} else {
			list, err = s.getAsList(ctx, key, opts.Predicate)
		}
		if err != nil {
			w.fail(ctx, err)
			return
		}
		if opts.Mode == storage.ReadNotOlderThan && list.ResourceVersion < opts.ResourceVersion {
			w.fail(ctx, &storage.Error{Code: storage.ErrCodeTooLargeResourceVersion, Requested: opts.ResourceVersion, Revision: list.ResourceVersion})
			return
		}
		for _, obj := range list.Items {
			if !w.send(ctx, watch.Event{Type: watch.Added, Object: obj}) {
				return
			}
		}
		rev = list.ResourceVersion
		if opts.SendInitialEvents && opts.ProgressNotify {
			obj := s.newFunc()
			m, err := meta.Accessor(obj)
			if err == nil {
				m.SetResourceVersion(strconv.FormatInt(rev, 10))
				m.SetAnnotations(map[string]string{storage.InitialEventsEndAnnotation: "true"})
			}
			if !w.send(ctx, watch.Event{Type: watch.Bookmark, Object: obj}) {
				return
			}
		}
	}
	// The previous state decides a predicate's match and makes a delete's
	// object; a watcher that holds it spares etcd a read per event.
	knowsPrevious := opts.KnowsPrevious && opts.Predicate.Empty()
	wopts := []clientv3.OpOption{clientv3.WithRev(rev + 1)}
	if !knowsPrevious {
		wopts = append(wopts, clientv3.WithPrevKV())
	}
	if opts.Recursive {
		wopts = append(wopts, clientv3.WithPrefix())
	}
	if opts.ProgressNotify {
		wopts = append(wopts, clientv3.WithProgressNotify())
	}
	wch := s.client.Watch(clientv3.WithRequireLeader(ctx), prefix, wopts...)
	for resp := range wch {
		if resp.CompactRevision != 0 {
			w.fail(ctx, &storage.Error{Code: storage.ErrCodeExpired, Msg: fmt.Sprintf("too old resource version: %d (%d)", opts.ResourceVersion, resp.CompactRevision)})
			return
		}
		if err := resp.Err(); err != nil {
			w.fail(ctx, classify(err, key, rev))
			return
		}
		if resp.IsProgressNotify() {
			if opts.ProgressNotify {
				obj := s.newFunc()
				if err := setRV(obj, resp.Header.Revision); err == nil && !w.send(ctx, watch.Event{Type: watch.Bookmark, Object: obj}) {
					return
				}
			}
			continue
		}
		for _, ev := range resp.Events {
			if knowsPrevious && ev.Type == clientv3.EventTypeDelete {
				if !w.send(ctx, watch.Event{Type: watch.Deleted, Object: &storage.Tombstone{Key: string(ev.Kv.Key), Revision: ev.Kv.ModRevision}}) {
					return
				}
				continue
			}
			e, ok, err := s.convert(ev, opts.Predicate)
			if err != nil {
				w.fail(ctx, err)
				return
			}
			if ok && !w.send(ctx, e) {
				return
			}
		}
	}
}

func (s *Store) getAsList(ctx context.Context, key string, pred storage.SelectionPredicate) (*storage.ListResult, error) {
	resp, err := s.client.Get(ctx, key)
	if err != nil {
		return nil, classify(err, key, 0)
	}
	res := &storage.ListResult{ResourceVersion: resp.Header.Revision}
	for _, kv := range resp.Kvs {
		obj, err := s.decode(kv.Value, kv.ModRevision)
		if err != nil {
			return nil, err
		}
		if ok, err := pred.Matches(obj); err == nil && ok {
			res.Items = append(res.Items, obj)
		}
	}
	return res, nil
}

// convert turns an etcd event into the watch event a watcher with pred
// sees, if any: an object that starts matching is ADDED, one that stops
// matching DELETED.
func (s *Store) convert(ev *clientv3.Event, pred storage.SelectionPredicate) (watch.Event, bool, error) {
	var cur, prev runtime.Object
	var err error
	if ev.Type == clientv3.EventTypePut {
		if cur, err = s.decode(ev.Kv.Value, ev.Kv.ModRevision); err != nil {
			return watch.Event{}, false, err
		}
		cur = storage.ShareStored(cur, ev.Kv.Value, ev.Kv.ModRevision, s.decode)
	}
	// The previous state matters to a delete and to a predicate that may
	// have stopped or started matching; an update seen by a watch of
	// everything (a watch cache's) does without decoding it.
	if ev.PrevKv != nil && (ev.Type == clientv3.EventTypeDelete || !pred.Empty()) {
		if prev, err = s.decode(ev.PrevKv.Value, ev.Kv.ModRevision); err != nil {
			return watch.Event{}, false, err
		}
		prev = storage.ShareStored(prev, ev.PrevKv.Value, ev.Kv.ModRevision, s.decode)
	}
	// Without a predicate whatever exists matches; without prevKV (a
	// watcher that knows the previous state) a put that is no create
	// replaced a state.
	curMatch, prevMatch := cur != nil, ev.PrevKv != nil || (ev.Type == clientv3.EventTypePut && !ev.IsCreate())
	if !pred.Empty() {
		if cur != nil {
			if curMatch, err = pred.Matches(cur); err != nil {
				return watch.Event{}, false, err
			}
		}
		if prevMatch = false; prev != nil {
			if prevMatch, err = pred.Matches(prev); err != nil {
				return watch.Event{}, false, err
			}
		}
	}
	switch {
	case ev.Type == clientv3.EventTypeDelete:
		if prev == nil || !prevMatch {
			return watch.Event{}, false, nil
		}
		return watch.Event{Type: watch.Deleted, Object: prev}, true, nil
	case ev.IsCreate():
		return watch.Event{Type: watch.Added, Object: cur}, curMatch, nil
	case curMatch && prevMatch:
		return watch.Event{Type: watch.Modified, Object: cur}, true, nil
	case curMatch:
		return watch.Event{Type: watch.Added, Object: cur}, true, nil
	case prevMatch:
		return watch.Event{Type: watch.Deleted, Object: cur}, true, nil
	}
	return watch.Event{}, false, nil
}

package handlers

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math/rand"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/pkg/endpoints/negotiation"
	"github.com/cronplane/cronplane/pkg/endpoints/responsewriters"
	"github.com/cronplane/cronplane/pkg/endpoints/table"
	"github.com/cronplane/cronplane/pkg/registry/rest"
	"github.com/cronplane/cronplane/pkg/storage"
)

// serveWatch streams watch events as JSON documents, one per line, each
// flushed as it is written, until the timeout, the client leaving or the
// end of the underlying watch. An error before the stream starts is
// returned for the caller to answer; later ones end the stream.
func (c *call) serveWatch(wt rest.Watcher, opts metav1.ListOptions) error {
	lo, err := c.restListOptions(opts)
	if err != nil {
		return err
	}
	timeout := c.watchTimeout(opts)
	ctx, cancel := context.WithCancel(c.r.Context())
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(c.r.Context(), timeout)
	}
	defer cancel()
	w, err := wt.Watch(ctx, c.namespace, lo)
	if err != nil {
		return err
	}
	defer w.Stop()
	flusher, _ := c.w.(http.Flusher)
	framed, contentType := jsonWatchEvent, "application/json"
	if c.format.MediaType == negotiation.Protobuf {
		framed, contentType = protobufWatchEvent, negotiation.Protobuf+";stream=watch"
	}
	c.warnings.WriteHeaders(c.w.Header())
	c.w.Header().Set("Content-Type", contentType)
	c.w.Header().Set("Transfer-Encoding", "chunked")
	c.w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	if timeout <= 0 {
		// Over before it began: kube ends it as its context expires, at
		// once; here always after the watch is set up, so that its errors
		// still come as answers, and before any event.
		return nil
	}
	if m := c.h.Metrics; m != nil {
		defer m.WatchStarted(c.res.GroupVersionKind)()
	}
	var frame watchFrame
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.ResultChan():
			if !ok {
				return nil
			}
			e, err := c.watchEvent(e)
			if err == nil {
				err = framed(&frame, e)
			}
			if err != nil {
				// The client learns why its watch ends, and watches again.
				klog.ErrorS(err, "Encoding a watch event", "path", c.r.URL.Path, "type", e.Type)
				if framed(&frame, watch.Event{Type: watch.Error, Object: &apierrors.NewInternalError(err).ErrStatus}) == nil {
					_, _ = frame.writeTo(c.w)
				}
				return nil
			}
			n, err := frame.writeTo(c.w)
			if err != nil {
				return nil
			}
			if m := c.h.Metrics; m != nil {
				m.WatchEvent(c.res.GroupVersionKind, n)
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
	}
}

// watchEvent converts an event's object to the representation the client
// asked for: a one-row Table for kubectl get -w, or PartialObjectMetadata
// (bookmarks too, as a metadata client decodes only meta.k8s.io kinds).
func (c *call) watchEvent(e watch.Event) (watch.Event, error) {
	switch {
	case e.Type == watch.Error:
		// Storage ends a watch with a Status; a server error in it is
		// logged like any other 5xx answer.
		if s, ok := e.Object.(*metav1.Status); ok && s.Code >= http.StatusInternalServerError {
			klog.ErrorS(errors.New(s.Message), "Watch ended by a server error", "path", c.r.URL.Path, "code", s.Code)
		}
	case c.format.As == negotiation.AsTable && e.Type != watch.Bookmark:
		t, err := table.Convert(c.res.Table, e.Object, c.query.Get("includeObject"), c.format.AsVersion, time.Now())
		if err != nil {
			return e, err
		}
		e.Object = &t.Table
	case c.format.As == negotiation.AsPartialObjectMetadata || c.format.As == negotiation.AsPartialObjectMetadataList:
		pm, err := table.PartialObjectMetadata(e.Object, c.format.AsVersion)
		if err != nil {
			return e, err
		}
		e.Object = pm
	}
	return e, nil
}

// watchFrame is one event on the wire: a head and a tail of its own
// around the object's encoding, which is written as it is, without a copy:
// when memoized, it is the one all watchers of the object share.
type watchFrame struct {
	head, obj, tail []byte
}

func (f *watchFrame) writeTo(w io.Writer) (int, error) {
	n := 0
	for _, b := range [][]byte{f.head, f.obj, f.tail} {
		if len(b) == 0 {
			continue
		}
		m, err := w.Write(b)
		if n += m; err != nil {
			return n, err
		}
	}
	return n, nil
}

// jsonWatchEvent frames an event as a meta/v1 WatchEvent with the object
// inline and a newline, reusing the object's memoized encoding when it has
// one.
func jsonWatchEvent(f *watchFrame, e watch.Event) error {
	var err error
	if e.Type == watch.Bookmark {
		f.obj, err = bookmarkJSON(e.Object)
	} else {
		f.obj, err = responsewriters.EncodeJSON(e.Object)
	}
	if err != nil {
		return err
	}
	f.head = append(f.head[:0], `{"type":`...)
	f.head = strconv.AppendQuote(f.head, string(e.Type))
	f.head = append(f.head, `,"object":`...)
	f.tail = append(f.tail[:0], "}\n"...)
	return nil
}

// bookmarkJSON encodes a bookmark's object as kube documents it: kind,
// apiVersion and metadata.resourceVersion only (and the annotation that
// ends a watch's initial events).
func bookmarkJSON(obj runtime.Object) ([]byte, error) {
	m, err := meta.Accessor(storage.Unwrap(obj))
	if err != nil {
		return nil, err
	}
	apiVersion, kind := obj.GetObjectKind().GroupVersionKind().ToAPIVersionAndKind()
	type bookmarkMeta struct {
		ResourceVersion string            `json:"resourceVersion"`
		Annotations     map[string]string `json:"annotations,omitempty"`
	}
	return json.Marshal(struct {
		Kind       string       `json:"kind"`
		APIVersion string       `json:"apiVersion"`
		Metadata   bookmarkMeta `json:"metadata"`
	}{kind, apiVersion, bookmarkMeta{m.GetResourceVersion(), m.GetAnnotations()}})
}

// protobufWatchEvent frames an event as one frame of a protobuf watch
// stream: a 4-byte big-endian length, then a meta/v1 WatchEvent whose
// object is the protobuf form of the event's object. The WatchEvent's
// bytes are those its Marshal writes: field 1 the type, field 2 a
// RawExtension whose field 1 is the object.
func protobufWatchEvent(f *watchFrame, e watch.Event) error {
	obj, err := responsewriters.Protobuf(e.Object)
	if err != nil {
		return err
	}
	raw := protowire.SizeTag(1) + protowire.SizeBytes(len(obj))
	size := protowire.SizeTag(1) + protowire.SizeBytes(len(e.Type)) + protowire.SizeTag(2) + protowire.SizeBytes(raw)
	h := binary.BigEndian.AppendUint32(f.head[:0], uint32(size))
	h = protowire.AppendTag(h, 1, protowire.BytesType)
	h = protowire.AppendString(h, string(e.Type))
	h = protowire.AppendTag(h, 2, protowire.BytesType)
	h = protowire.AppendVarint(h, uint64(raw))
	h = protowire.AppendTag(h, 1, protowire.BytesType)
	h = protowire.AppendVarint(h, uint64(len(obj)))
	f.head, f.obj, f.tail = h, obj, f.tail[:0]
	return nil
}

// watchTimeout is timeoutSeconds or, without it (or with 0), a random time
// between the minimum request timeout and twice it, so that watches of
// many clients do not all end at once. As in kube, a timeout that is not
// positive (a negative timeoutSeconds, --min-request-timeout=0) ends the
// watch at once rather than never.
func (c *call) watchTimeout(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds != nil && *opts.TimeoutSeconds != 0 {
		return time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	return time.Duration(float64(c.h.MinRequestTimeout) * (1 + rand.Float64()) * float64(time.Second))
}

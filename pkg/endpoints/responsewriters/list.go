package responsewriters

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// writeListJSON writes a list as the typed list kind would be encoded,
// reusing each item's memoized encoding.
func writeListJSON(w io.Writer, l *rest.List) error {
	var head, tail []byte
	if l.Unstructured {
		// kube's unstructured lists are maps: apiVersion, items, kind,
		// metadata (with continue even when empty).
		meta, err := json.Marshal(struct {
			Continue           string `json:"continue"`
			RemainingItemCount *int64 `json:"remainingItemCount,omitempty"`
			ResourceVersion    string `json:"resourceVersion,omitempty"`
		}{l.Continue, l.RemainingItemCount, l.ResourceVersion})
		if err != nil {
			return err
		}
		head = append(append([]byte(`{"apiVersion":`), strconv.Quote(l.APIVersion)...), `,"items":[`...)
		tail = append(append(append([]byte(`],"kind":`), strconv.Quote(l.Kind)...), `,"metadata":`...), meta...)
		tail = append(tail, "}\n"...)
	} else {
		encoded, err := json.Marshal(struct {
			metav1.TypeMeta `json:",inline"`
			Meta            metav1.ListMeta `json:"metadata"`
		}{l.TypeMeta, l.ListMeta})
		if err != nil {
			return err
		}
		head = append(encoded[:len(encoded)-1:len(encoded)-1], `,"items":[`...)
		tail = []byte("]}\n")
	}
	cw := &chunkWriter{w: w, gate: listGate}
	var prefixes itemPrefix
	buf := make([]byte, 0, 64*1024)
	buf = append(buf, head...)
	for i, it := range l.Items {
		if i > 0 {
			buf = append(buf, ',')
		}
		b, err := EncodeJSON(it)
		if err != nil {
			return err
		}
		buf = appendListItem(buf, b, prefixes.of(it.GetObjectKind().GroupVersionKind().ToAPIVersionAndKind()))
		if len(buf) > 48*1024 {
			if err := cw.write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	buf = append(buf, tail...)
	_, err := w.Write(buf)
	return err
}

// EncodeJSON encodes an object as compact JSON without a final newline,
// reusing a memoized encoding when the object has one. An unstructured
// object's own encoding ends in a newline, which is left out: embedded
// in a list or a watch event it would be a stray line break kube does
// not send.
func EncodeJSON(obj runtime.Object) ([]byte, error) {
	if m, ok := obj.(json.Marshaler); ok {
		b, err := m.MarshalJSON()
		return bytes.TrimSuffix(b, []byte{'\n'}), err
	}
	return json.Marshal(obj)
}

// itemPrefix is how an item's encoding starts when it has its kind and
// apiVersion, remembered for the last pair: a list's items share theirs.
type itemPrefix struct {
	apiVersion, kind string
	prefix           []byte
}

// of returns the prefix for apiVersion and kind, nil when the kind is
// empty (nothing to leave out).
func (p *itemPrefix) of(apiVersion, kind string) []byte {
	if kind == "" {
		return nil
	}
	if p.prefix == nil || apiVersion != p.apiVersion || kind != p.kind {
		p.apiVersion, p.kind = apiVersion, kind
		p.prefix = []byte(`{"kind":` + strconv.Quote(kind) + `,"apiVersion":` + strconv.Quote(apiVersion) + `,`)
	}
	return p.prefix
}

// appendListItem appends an object's encoding without its kind and
// apiVersion (the prefix of), which kube leaves out of the items of a
// typed list.
func appendListItem(buf, encoded, prefix []byte) []byte {
	if prefix != nil && bytes.HasPrefix(encoded, prefix) {
		buf = append(buf, '{')
		return append(buf, encoded[len(prefix):]...)
	}
	return append(buf, encoded...)
}

// writeListProtobuf writes a list in kube's protobuf form: the envelope
// around the typed list's bytes (its ListMeta, then each item), reusing
// each item's memoized protobuf bytes and streaming them without
// assembling the whole list in memory.
func writeListProtobuf(w io.Writer, l *rest.List) error {
	meta, err := l.ListMeta.Marshal()
	if err != nil {
		return err
	}
	items := make([][]byte, len(l.Items))
	size := 1 + protowire.SizeVarint(uint64(len(meta))) + len(meta)
	for i, it := range l.Items {
		if items[i], err = ProtobufRaw(it); err != nil {
			return err
		}
		size += 1 + protowire.SizeVarint(uint64(len(items[i]))) + len(items[i])
	}
	header, trailer := codec.EnvelopeFrame(l.APIVersion, l.Kind, size)
	cw := &chunkWriter{w: w, gate: listGate}
	buf := make([]byte, 0, 64*1024)
	buf = append(buf, header...)
	buf = protowire.AppendTag(buf, 1, protowire.BytesType)
	buf = protowire.AppendBytes(buf, meta)
	for _, it := range items {
		buf = protowire.AppendTag(buf, 2, protowire.BytesType)
		buf = protowire.AppendVarint(buf, uint64(len(it)))
		if len(buf)+len(it) > cap(buf) {
			if err := cw.write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
		if len(it) > cap(buf) {
			if err := cw.write(it); err != nil {
				return err
			}
			continue
		}
		buf = append(buf, it...)
	}
	buf = append(buf, trailer...)
	_, err = w.Write(buf)
	return err
}

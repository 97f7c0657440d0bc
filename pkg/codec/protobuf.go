// Package codec owns the byte forms of objects: kube's protobuf storage
// envelope (the "k8s\x00" magic followed by a runtime.Unknown holding the
// type and the object's own protobuf bytes), and JSON.
package codec

import (
	"bytes"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/storage"
)

// ProtobufMagic starts every protobuf-encoded object kube writes.
var ProtobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// ProtoMessage is implemented by the generated types of k8s.io/api.
type ProtoMessage interface {
	runtime.Object
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

type protobufCodec struct {
	gvk schema.GroupVersionKind
	new func() runtime.Object
}

// Protobuf returns the storage codec kube-apiserver uses for built-in
// types: objects of kind gvk, created empty by newFunc, which must return a
// ProtoMessage.
func Protobuf(gvk schema.GroupVersionKind, newFunc func() runtime.Object) storage.Codec {
	if _, ok := newFunc().(ProtoMessage); !ok {
		panic(fmt.Sprintf("codec: %v is not a protobuf message", gvk))
	}
	return &protobufCodec{gvk: gvk, new: newFunc}
}

func (c *protobufCodec) Encode(obj runtime.Object) ([]byte, error) {
	msg, ok := obj.(ProtoMessage)
	if !ok {
		return nil, fmt.Errorf("codec: %T is not a protobuf message", obj)
	}
	raw, err := msg.Marshal()
	if err != nil {
		return nil, err
	}
	apiVersion, kind := c.gvk.ToAPIVersionAndKind()
	return Envelope(apiVersion, kind, raw)
}

func (c *protobufCodec) Decode(data []byte) (runtime.Object, error) {
	if !bytes.HasPrefix(data, ProtobufMagic) {
		return nil, fmt.Errorf("codec: stored %s is not protobuf (no magic prefix)", c.gvk.Kind)
	}
	var u runtime.Unknown
	if err := u.Unmarshal(data[len(ProtobufMagic):]); err != nil {
		return nil, fmt.Errorf("codec: decoding envelope: %w", err)
	}
	if gv, err := schema.ParseGroupVersion(u.APIVersion); err != nil || gv.WithKind(u.Kind) != c.gvk {
		return nil, fmt.Errorf("codec: stored object is %s %s, want %v", u.APIVersion, u.Kind, c.gvk)
	}
	obj := c.new()
	if err := obj.(ProtoMessage).Unmarshal(u.Raw); err != nil {
		return nil, fmt.Errorf("codec: decoding %s: %w", c.gvk.Kind, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(c.gvk)
	return obj, nil
}

// Envelope wraps an object's protobuf bytes as kube sends and stores them:
// the magic prefix, then a runtime.Unknown naming the type.
func Envelope(apiVersion, kind string, raw []byte) ([]byte, error) {
	u := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: apiVersion, Kind: kind}, Raw: raw}
	out := make([]byte, len(ProtobufMagic), len(ProtobufMagic)+u.Size())
	copy(out, ProtobufMagic)
	body, err := u.Marshal()
	if err != nil {
		return nil, err
	}
	return append(out, body...), nil
}

// EnvelopeFrame returns the bytes that go before and after rawLen bytes of
// an object's protobuf form to make the same envelope Envelope makes, for
// writers that stream large objects.
func EnvelopeFrame(apiVersion, kind string, rawLen int) (header, trailer []byte) {
	tm, _ := (&runtime.TypeMeta{APIVersion: apiVersion, Kind: kind}).Marshal()
	header = append(header, ProtobufMagic...)
	header = protowire.AppendTag(header, 1, protowire.BytesType)
	header = protowire.AppendBytes(header, tm)
	header = protowire.AppendTag(header, 2, protowire.BytesType)
	header = protowire.AppendVarint(header, uint64(rawLen))
	// contentEncoding and contentType, empty, as kube's encoder writes them.
	trailer = protowire.AppendTag(trailer, 3, protowire.BytesType)
	trailer = protowire.AppendBytes(trailer, nil)
	trailer = protowire.AppendTag(trailer, 4, protowire.BytesType)
	trailer = protowire.AppendBytes(trailer, nil)
	return header, trailer
}

// DecodeEnvelope reads an object of the type newFunc makes from kube's
// protobuf form, checking that the envelope names the expected kind.
func DecodeEnvelope(data []byte, gvk schema.GroupVersionKind, newFunc func() runtime.Object) (runtime.Object, error) {
	return (&protobufCodec{gvk: gvk, new: newFunc}).Decode(data)
}

// OpenEnvelope reads kube's protobuf envelope as a client sends it: the
// type it names and the object's own bytes, failing in the words of kube's
// protobuf decoder.
func OpenEnvelope(data []byte) (runtime.Unknown, error) {
	var u runtime.Unknown
	if !bytes.HasPrefix(data, ProtobufMagic) {
		return u, fmt.Errorf("provided data does not appear to be a protobuf message, expected prefix %v", ProtobufMagic)
	}
	err := u.Unmarshal(data[len(ProtobufMagic):])
	return u, err
}

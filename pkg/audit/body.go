package audit

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/cronplane/cronplane/pkg/codec"
)

// The object a create or update decoded is recorded as kube records it,
// in JSON whatever the wire format (LogRequestObject), and so is an
// object answered in protobuf (LogResponseObject). Other bodies are
// recorded as they went over the wire, turned into JSON: JSON as it is,
// YAML converted, gzip undone; a protobuf one only if it is a Status.

// maxStatusBytes is the largest body read as a possible Status.
const maxStatusBytes = 64 * 1024

// SetResponseCode records the code of the response, when its headers go
// out.
func (c *Context) SetResponseCode(code int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.completed {
		return
	}
	if c.event.ResponseStatus == nil {
		c.event.ResponseStatus = &metav1.Status{}
	}
	c.event.ResponseStatus.Code = int32(code)
}

// SetResponseStatus records the response's status outright: a panic, or
// a response that never came.
func (c *Context) SetResponseStatus(s *metav1.Status) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.completed {
		c.event.ResponseStatus = s
	}
}

// LogRequestObject records the object a create or update decoded from
// its body, defaults applied: its name, namespace, uid and
// resourceVersion complete the object reference, and from level Request
// on its JSON form is the request object, as kube records it whatever
// the body's format. It takes the place of the body (LogRequestBody).
func LogRequestObject(ctx context.Context, obj runtime.Object) {
	c := ContextFrom(ctx)
	if c == nil {
		return
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	c.mu.Lock()
	level, omitManagedFields := c.event.Level, c.config.OmitManagedFields
	if c.completed || !c.evaluated || level.Less(LevelMetadata) {
		c.mu.Unlock()
		return
	}
	c.objectLogged = true
	c.nameObject(m.GetNamespace(), m.GetName(), string(m.GetUID()), m.GetResourceVersion())
	c.mu.Unlock()
	if level.Less(LevelRequest) {
		return
	}
	// Encoded outside the lock: the object is the handler's until it
	// returns.
	js, err := json.Marshal(obj)
	if err != nil {
		return
	}
	if omitManagedFields {
		js = withoutManagedFields(js)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.completed {
		c.event.RequestObject = js
	}
}

// nameObject completes the object reference of a create or update with
// the object's own name, namespace, uid and resourceVersion.
func (c *Context) nameObject(namespace, name, uid, resourceVersion string) {
	ref := c.event.ObjectRef
	if ref == nil || c.event.Verb != "create" && c.event.Verb != "update" {
		return
	}
	ref.Namespace = or(ref.Namespace, namespace)
	ref.Name = or(ref.Name, name)
	ref.UID = types.UID(or(string(ref.UID), uid))
	ref.ResourceVersion = or(ref.ResourceVersion, resourceVersion)
}

// LogResponseObject records, from level RequestResponse on, the JSON
// form of an object answered in a format the response body cannot be
// read back from (protobuf); encode is called only then.
func LogResponseObject(ctx context.Context, encode func() ([]byte, error)) {
	c := ContextFrom(ctx)
	if c == nil {
		return
	}
	c.mu.Lock()
	omitManagedFields := c.config.OmitManagedFields
	wanted := !c.completed && c.evaluated && !c.event.Level.Less(LevelRequestResponse)
	c.mu.Unlock()
	if !wanted {
		return
	}
	js, err := encode()
	if err != nil || !json.Valid(js) {
		return
	}
	if omitManagedFields {
		js = withoutManagedFields(js)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.completed {
		c.event.ResponseObject = bytes.TrimRight(js, "\n")
	}
}

// LogRequestBody records the request body, unless the handler recorded
// the object it decoded (LogRequestObject): the name, namespace, uid and
// resourceVersion of the object created or updated complete the object
// reference, and from level Request on the body itself is recorded.
func (c *Context) LogRequestBody(contentType string, body []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ev := &c.event
	if c.completed || !c.evaluated || ev.Level.Less(LevelMetadata) || c.objectLogged {
		return
	}
	js, ok := toJSON(contentType, body)
	if !ok {
		return
	}
	if ref := ev.ObjectRef; ref != nil && (ev.Verb == "create" || ev.Verb == "update") {
		var obj struct {
			Metadata struct {
				Name, Namespace, ResourceVersion string
				UID                              types.UID
			}
		}
		if json.Unmarshal(js, &obj) == nil {
			m := obj.Metadata
			c.nameObject(m.Namespace, m.Name, string(m.UID), m.ResourceVersion)
		}
	}
	if ev.Level.Less(LevelRequest) {
		return
	}
	// A patch is recorded as sent, as kube records it.
	if c.config.OmitManagedFields && ev.Verb != "patch" {
		js = withoutManagedFields(js)
	}
	ev.RequestObject = js
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// LogResponseBody records a response body: a Status becomes the
// response status; from level RequestResponse on the body itself is
// recorded.
func (c *Context) LogResponseBody(contentType, contentEncoding string, body []byte) {
	if contentEncoding == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return
		}
		if body, err = io.ReadAll(zr); err != nil {
			return
		}
	}
	status := statusOf(contentType, body)
	c.mu.Lock()
	defer c.mu.Unlock()
	ev := &c.event
	if c.completed || !c.evaluated || ev.Level.Less(LevelMetadata) {
		return
	}
	if status != nil {
		// Only the bounded fields, as kube copies them; the HTTP code
		// already recorded stays (a Success Status carries none).
		code := status.Code
		if ev.ResponseStatus != nil && ev.ResponseStatus.Code != 0 {
			code = ev.ResponseStatus.Code
		}
		ev.ResponseStatus = &metav1.Status{Status: status.Status, Message: status.Message, Reason: status.Reason, Details: status.Details, Code: code}
	}
	if ev.Level.Less(LevelRequestResponse) {
		return
	}
	js, ok := toJSON(contentType, body)
	if !ok && status != nil {
		js, ok = statusJSON(status)
	}
	if !ok {
		return
	}
	if c.config.OmitManagedFields {
		js = withoutManagedFields(js)
	}
	ev.ResponseObject = js
}

func mediaType(contentType string) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt, _, _ = strings.Cut(contentType, ";")
	}
	return strings.ToLower(strings.TrimSpace(mt))
}

// toJSON returns a JSON or YAML body (patches included) as JSON.
func toJSON(contentType string, body []byte) (json.RawMessage, bool) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, false
	}
	switch mt := mediaType(contentType); {
	case mt == "" || mt == "application/json" || strings.HasSuffix(mt, "+json"):
		return body, json.Valid(body)
	case mt == "application/yaml" || strings.HasSuffix(mt, "+yaml"):
		js, err := yaml.YAMLToJSON(body)
		return js, err == nil
	}
	return nil, false
}

var statusGVK = schema.GroupVersionKind{Version: "v1", Kind: "Status"}

// statusOf returns the Status a body is, if it is one.
func statusOf(contentType string, body []byte) *metav1.Status {
	if len(body) > maxStatusBytes {
		return nil
	}
	if mediaType(contentType) == "application/vnd.kubernetes.protobuf" {
		obj, err := codec.DecodeEnvelope(body, statusGVK, func() runtime.Object { return &metav1.Status{} })
		if err != nil {
			return nil
		}
		return obj.(*metav1.Status)
	}
	js, ok := toJSON(contentType, body)
	if !ok {
		return nil
	}
	var s metav1.Status
	if json.Unmarshal(js, &s) != nil || s.Kind != "Status" {
		return nil
	}
	return &s
}

func statusJSON(s *metav1.Status) (json.RawMessage, bool) {
	out := *s
	out.Kind, out.APIVersion = statusGVK.Kind, statusGVK.Version
	js, err := json.Marshal(&out)
	return js, err == nil
}

// withoutManagedFields drops metadata.managedFields from an object, the
// items of a list and the objects of a Table's rows, keeping the order of
// the other fields.
func withoutManagedFields(js json.RawMessage) json.RawMessage {
	var obj object
	if json.Unmarshal(js, &obj) != nil {
		return js
	}
	obj.set("metadata", dropField(obj.get("metadata"), "managedFields"))
	for _, list := range []struct{ field, inner string }{{"items", ""}, {"rows", "object"}} {
		raw := obj.get(list.field)
		var elems []json.RawMessage
		if raw == nil || json.Unmarshal(raw, &elems) != nil {
			continue
		}
		for i, e := range elems {
			var o object
			if json.Unmarshal(e, &o) != nil {
				continue
			}
			target := &o
			var inner object
			if list.inner != "" {
				if json.Unmarshal(o.get(list.inner), &inner) != nil {
					continue
				}
				target = &inner
			}
			target.set("metadata", dropField(target.get("metadata"), "managedFields"))
			if list.inner != "" {
				o.set(list.inner, marshal(inner))
			}
			elems[i] = marshal(o)
		}
		obj.set(list.field, marshal(elems))
	}
	if out := marshal(obj); out != nil {
		return out
	}
	return js
}

// dropField returns the object raw without field; raw unchanged if it is
// not an object.
func dropField(raw json.RawMessage, field string) json.RawMessage {
	var o object
	if raw == nil || json.Unmarshal(raw, &o) != nil {
		return raw
	}
	out := o[:0]
	for _, m := range o {
		if m.key != field {
			out = append(out, m)
		}
	}
	return marshal(out)
}

// marshal encodes what was just decoded, which does not fail; nil if it
// did.
func marshal(v interface{}) json.RawMessage {
	js, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return js
}

// object is a JSON object whose fields keep their order.
type object []member

type member struct {
	key   string
	value json.RawMessage
}

var errNotObject = errors.New("not a JSON object")

func (o *object) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return errNotObject
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		*o = append(*o, member{key, v})
	}
	_, err := dec.Token()
	return err
}

func (o object) MarshalJSON() ([]byte, error) {
	buf := []byte{'{'}
	for i, m := range o {
		if i > 0 {
			buf = append(buf, ',')
		}
		k, err := json.Marshal(m.key)
		if err != nil {
			return nil, err
		}
		buf = append(append(append(buf, k...), ':'), m.value...)
	}
	return append(buf, '}'), nil
}

func (o object) get(key string) json.RawMessage {
	for _, m := range o {
		if m.key == key {
			return m.value
		}
	}
	return nil
}

// set replaces the value of an existing field; it adds none.
func (o object) set(key string, v json.RawMessage) {
	for i := range o {
		if o[i].key == key {
			o[i].value = v
		}
	}
}

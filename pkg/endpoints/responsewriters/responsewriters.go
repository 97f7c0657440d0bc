// Package responsewriters owns what goes back on the wire: objects and lists in
// the negotiated representation (JSON, YAML, protobuf; pretty-printed on
// request; gzip-compressed when large and accepted), and every error as a
// meta/v1 Status with the HTTP code it carries. Handlers and filters never
// write bodies themselves.
package responsewriters

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"github.com/cronplane/cronplane/pkg/audit"
	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/endpoints/negotiation"
	"github.com/cronplane/cronplane/pkg/registry/rest"
	"github.com/cronplane/cronplane/pkg/storage"
)

// ContentTypeJSON is the default representation.
const ContentTypeJSON = negotiation.JSON

// compressionThreshold is the size above which a response is gzipped for
// a client that accepts it, as kube does.
const compressionThreshold = 128 * 1024

// ErrorToStatus converts any error into the Status sent for it: API errors
// keep their code and reason, anything else is a 500 InternalError.
func ErrorToStatus(err error) *metav1.Status {
	var apiStatus apierrors.APIStatus
	if errors.As(err, &apiStatus) {
		s := apiStatus.Status()
		if s.Code == 0 {
			s.Code = http.StatusInternalServerError
		}
		s.Kind, s.APIVersion = "Status", "v1"
		if s.Status == "" {
			s.Status = metav1.StatusFailure
		}
		return &s
	}
	s := apierrors.NewInternalError(err).Status()
	s.Kind, s.APIVersion = "Status", "v1"
	return &s
}

// WriteError writes err as a Status, in JSON or in the protobuf or YAML
// form the client asked for. A Status that asks the client to retry also
// gets a Retry-After header.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	s := ErrorToStatus(err)
	if s.Code >= http.StatusInternalServerError {
		klog.ErrorS(err, "request failed", "method", r.Method, "path", r.URL.Path, "code", s.Code)
	}
	if s.Details != nil && s.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(s.Details.RetryAfterSeconds)))
	}
	f, ok := negotiation.Negotiate(r.Header.Get("Accept"), negotiation.Options{Protobuf: true})
	if !ok {
		f = negotiation.Format{MediaType: negotiation.JSON}
	}
	Write(w, r, int(s.Code), s, f)
}

// WriteJSON writes any JSON-encodable value, such as a discovery document:
// compact and ending in a newline, or indented for a command-line client,
// as kube writes them.
func WriteJSON(w http.ResponseWriter, r *http.Request, code int, v interface{}) {
	if pretty(r) {
		WriteIndentedJSON(w, r, code, v)
		return
	}
	data, err := json.Marshal(v)
	if err != nil {
		WriteError(w, r, fmt.Errorf("encoding %T: %w", v, err))
		return
	}
	WriteBytes(w, r, code, ContentTypeJSON, append(data, '\n'))
}

// WriteIndentedJSON writes v indented by two spaces, without a final
// newline, as kube writes /version and pretty answers.
func WriteIndentedJSON(w http.ResponseWriter, r *http.Request, code int, v interface{}) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		WriteError(w, r, fmt.Errorf("encoding %T: %w", v, err))
		return
	}
	WriteBytes(w, r, code, ContentTypeJSON, data)
}

// jsonStreamer is implemented by objects that write their own JSON, such
// as the store's lists, whose items carry memoized encodings.
type jsonStreamer interface {
	WriteJSON(w io.Writer) error
}

// protobufStreamer is implemented by objects that write their own
// protobuf form, envelope included.
type protobufStreamer interface {
	WriteProtobuf(w io.Writer) error
}

// Write writes obj in format f.
func Write(w http.ResponseWriter, r *http.Request, code int, obj runtime.Object, f negotiation.Format) {
	switch f.MediaType {
	case negotiation.Protobuf:
		// The audit log cannot read protobuf back: it gets the JSON form.
		audit.LogResponseObject(r.Context(), func() ([]byte, error) {
			var buf bytes.Buffer
			err := writeJSON(&buf, obj)
			return buf.Bytes(), err
		})
		out := newDeferred(w, r, code, negotiation.Protobuf)
		var err error
		if l, ok := obj.(*rest.List); ok {
			err = writeListProtobuf(out, l)
		} else if s, ok := obj.(protobufStreamer); ok {
			err = s.WriteProtobuf(out)
		} else {
			var data []byte
			if data, err = Protobuf(obj); err == nil {
				_, err = out.Write(data)
			}
		}
		finish(w, r, out, err)
	case negotiation.YAML:
		var buf bytes.Buffer
		if err := writeJSON(&buf, obj); err != nil {
			WriteError(w, r, err)
			return
		}
		data, err := yaml.JSONToYAML(buf.Bytes())
		if err != nil {
			WriteError(w, r, err)
			return
		}
		WriteBytes(w, r, code, negotiation.YAML, data)
	default:
		if pretty(r) {
			var buf, indented bytes.Buffer
			if err := writeJSON(&buf, obj); err != nil {
				WriteError(w, r, err)
				return
			}
			if err := json.Indent(&indented, bytes.TrimRight(buf.Bytes(), "\n"), "", "  "); err != nil {
				WriteError(w, r, err)
				return
			}
			WriteBytes(w, r, code, negotiation.JSON, indented.Bytes())
			return
		}
		out := newDeferred(w, r, code, negotiation.JSON)
		finish(w, r, out, writeJSON(out, obj))
	}
}

func finish(w http.ResponseWriter, r *http.Request, out *deferred, err error) {
	if err != nil && !out.started() {
		WriteError(w, r, err)
		return
	}
	_ = out.Close()
}

// writeJSON encodes obj, reusing memoized encodings.
func writeJSON(w io.Writer, obj runtime.Object) error {
	if l, ok := obj.(*rest.List); ok {
		return writeListJSON(w, l)
	}
	if s, ok := obj.(jsonStreamer); ok {
		return s.WriteJSON(w)
	}
	data, err := EncodeJSON(obj)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	_, err = w.Write([]byte{'\n'})
	return err
}

// Protobuf encodes one object in kube's protobuf form, memoized for shared
// objects.
func Protobuf(obj runtime.Object) ([]byte, error) {
	envelope := func(o runtime.Object) ([]byte, error) {
		m, ok := o.(codec.ProtoMessage)
		if !ok {
			return nil, ErrNotAcceptable(fmt.Sprintf("%T has no protobuf form", o))
		}
		raw, err := m.Marshal()
		if err != nil {
			return nil, err
		}
		apiVersion, kind := o.GetObjectKind().GroupVersionKind().ToAPIVersionAndKind()
		return codec.Envelope(apiVersion, kind, raw)
	}
	if s, ok := obj.(*storage.SharedObject); ok {
		return s.Encoded("protobuf+envelope", envelope)
	}
	return envelope(obj)
}

// ProtobufRaw is an object's own protobuf bytes, without the envelope,
// memoized for shared objects.
func ProtobufRaw(obj runtime.Object) ([]byte, error) {
	marshal := func(o runtime.Object) ([]byte, error) {
		m, ok := o.(codec.ProtoMessage)
		if !ok {
			return nil, ErrNotAcceptable(fmt.Sprintf("%T has no protobuf form", o))
		}
		return m.Marshal()
	}
	if s, ok := obj.(*storage.SharedObject); ok {
		return s.Encoded("protobuf", marshal)
	}
	return marshal(obj)
}

// pretty reports whether JSON is indented: with ?pretty=true, and for
// command-line HTTP clients unless ?pretty=false, as kube does.
// Pretty reports whether r is answered with indented JSON: ?pretty, or a
// client that is a terminal tool (curl, wget), as kube decides.
func Pretty(r *http.Request) bool { return pretty(r) }

func pretty(r *http.Request) bool {
	if v := r.URL.Query().Get("pretty"); v != "" {
		b, _ := strconv.ParseBool(v)
		return b
	}
	ua := r.UserAgent()
	return strings.HasPrefix(ua, "curl") || strings.HasPrefix(ua, "Wget")
}

// WriteBytes writes an already encoded body.
func WriteBytes(w http.ResponseWriter, r *http.Request, code int, contentType string, body []byte) {
	out := newDeferred(w, r, code, contentType)
	_, _ = out.Write(body)
	_ = out.Close()
}

// deferred holds back the status line until it knows whether the body
// exceeds the compression threshold: then it gzips, if the client accepts
// it; else it sends the body with its length.
type deferred struct {
	w           http.ResponseWriter
	code        int
	contentType string
	gzipOK      bool
	buf         []byte
	gz          *gzip.Writer
	streaming   bool
}

func newDeferred(w http.ResponseWriter, r *http.Request, code int, contentType string) *deferred {
	return &deferred{w: w, code: code, contentType: contentType, gzipOK: acceptsGzip(r)}
}

func acceptsGzip(r *http.Request) bool {
	for _, enc := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		if name, _, _ := strings.Cut(strings.TrimSpace(enc), ";"); name == "gzip" || name == "*" {
			return true
		}
	}
	return false
}

func (d *deferred) started() bool { return d.gz != nil || d.streaming }

func (d *deferred) Write(p []byte) (int, error) {
	switch {
	case d.gz != nil:
		return d.gz.Write(p)
	case d.streaming:
		return d.w.Write(p)
	}
	d.buf = append(d.buf, p...)
	if len(d.buf) <= compressionThreshold {
		return len(p), nil
	}
	h := d.w.Header()
	h.Set("Content-Type", d.contentType)
	if d.gzipOK {
		h.Set("Content-Encoding", "gzip")
		h.Add("Vary", "Accept-Encoding")
		d.w.WriteHeader(d.code)
		d.gz, _ = gzip.NewWriterLevel(d.w, gzip.BestSpeed)
		_, err := d.gz.Write(d.buf)
		d.buf = nil
		return len(p), err
	}
	d.streaming = true
	d.w.WriteHeader(d.code)
	_, err := d.w.Write(d.buf)
	d.buf = nil
	return len(p), err
}

func (d *deferred) Close() error {
	switch {
	case d.gz != nil:
		return d.gz.Close()
	case d.streaming:
		return nil
	}
	h := d.w.Header()
	h.Set("Content-Type", d.contentType)
	h.Set("Content-Length", strconv.Itoa(len(d.buf)))
	d.w.WriteHeader(d.code)
	_, err := d.w.Write(d.buf)
	return err
}

// WritePlainNotFound answers as kube's fallback handler does for a path
// outside its built-in APIs that names nothing: a plain-text 404.
func WritePlainNotFound(w http.ResponseWriter, r *http.Request) {
	http.NotFound(w, r)
}

// ErrNotFound is kube's answer for a path that names nothing it serves.
func ErrNotFound() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusNotFound,
		Reason:  metav1.StatusReasonNotFound,
		Message: "the server could not find the requested resource",
		Details: &metav1.StatusDetails{},
	}}
}

// ErrNotAcceptable is a 406 Status.
func ErrNotAcceptable(msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusNotAcceptable,
		Reason:  metav1.StatusReasonNotAcceptable,
		Message: msg,
		Details: &metav1.StatusDetails{},
	}}
}

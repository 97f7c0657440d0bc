// Package response owns what goes back on the wire: objects and lists in the
// negotiated representation, and every error as a meta/v1 Status with the
// HTTP code it carries. Handlers and filters never write bodies themselves.
package response

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// ContentTypeJSON is the default representation.
const ContentTypeJSON = "application/json"

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
	utilruntime.HandleError(err)
	s := apierrors.NewInternalError(err).Status()
	s.Kind, s.APIVersion = "Status", "v1"
	return &s
}

// WriteError writes err as a Status. A Status that asks the client to retry
// also gets a Retry-After header.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	s := ErrorToStatus(err)
	if s.Details != nil && s.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(s.Details.RetryAfterSeconds)))
	}
	WriteObject(w, r, int(s.Code), s)
}

// jsonStreamer is implemented by objects that write their own JSON, such
// as the store's lists, whose items carry memoized encodings.
type jsonStreamer interface {
	WriteJSON(w io.Writer) error
}

// WriteObject writes obj with the given status code as JSON.
func WriteObject(w http.ResponseWriter, r *http.Request, code int, obj runtime.Object) {
	if s, ok := obj.(jsonStreamer); ok {
		w.Header().Set("Content-Type", ContentTypeJSON)
		w.WriteHeader(code)
		_ = s.WriteJSON(w)
		return
	}
	if m, ok := obj.(json.Marshaler); ok {
		data, err := m.MarshalJSON()
		if err != nil {
			WriteError(w, r, err)
			return
		}
		WriteBytes(w, r, code, ContentTypeJSON, append(data[:len(data):len(data)], '\n'))
		return
	}
	WriteJSON(w, r, code, obj)
}

// WriteJSON writes any JSON-encodable value, such as a discovery document.
func WriteJSON(w http.ResponseWriter, r *http.Request, code int, v interface{}) {
	data, err := json.Marshal(v)
	if err != nil {
		WriteError(w, r, fmt.Errorf("encoding %T: %w", v, err))
		return
	}
	WriteBytes(w, r, code, ContentTypeJSON, append(data, '\n'))
}

// WriteBytes writes an already encoded body.
func WriteBytes(w http.ResponseWriter, r *http.Request, code int, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	_, _ = w.Write(body)
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

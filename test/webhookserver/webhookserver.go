// Package webhookserver is an admission webhook for tests: an HTTPS
// server on loopback, its certificate from a CA of its own, answering
// AdmissionReviews (v1 or v1beta1, in the version asked) per path as a
// test says, and recording what it was sent.
package webhookserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cronplane/cronplane/pkg/certs"
)

// Response is how a path answers one review.
type Response struct {
	// Deny refuses, with Message and Code (400 when 0) in the status.
	Deny    bool
	Message string
	Code    int32
	// Patch is a JSON patch to return (patchType JSONPatch).
	Patch string
	// Delay holds the answer back, or until the caller gives up.
	Delay            time.Duration
	Warnings         []string
	AuditAnnotations map[string]string
	// HTTPStatus, when set, answers with that status and Message as the
	// body, instead of a review.
	HTTPStatus int
}

// Handler decides the answer to a request.
type Handler func(*admissionv1.AdmissionRequest) Response

// Review is a review the server was sent.
type Review struct {
	APIVersion string
	Request    *admissionv1.AdmissionRequest
	// Proto is the HTTP version it came over; Query the URL's query.
	Proto string
	Query url.Values
}

// Server is a running webhook.
type Server struct {
	// URL is https://127.0.0.1:<port>; CABundle the PEM of the CA that
	// signed its certificate.
	URL      string
	CABundle []byte
	http     *http.Server
	mu       sync.Mutex
	handlers map[string]Handler
	reviews  map[string][]Review
}

// Start serves on a free loopback port, keeping its certificates in dir;
// the certificate names 127.0.0.1 and the hosts given (a Service's
// <name>.<namespace>.svc).
func Start(dir string, hosts ...string) (*Server, error) {
	files, err := certs.EnsureServing(dir, append([]string{"127.0.0.1"}, hosts...))
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(files.CAFile)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "https://" + ln.Addr().String(), CABundle: ca, handlers: map[string]Handler{}, reviews: map[string][]Review{}}
	s.http = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.http.ServeTLS(ln, files.CertFile, files.KeyFile) }()
	return s, nil
}

// Handle sets how path answers.
func (s *Server) Handle(path string, h Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[path] = h
}

// Always answers every request to path with r.
func (s *Server) Always(path string, r Response) {
	s.Handle(path, func(*admissionv1.AdmissionRequest) Response { return r })
}

// Reviews returns the reviews path was sent, in order.
func (s *Server) Reviews(path string) []Review {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Review(nil), s.reviews[path]...)
}

// Close stops the server.
func (s *Server) Close() { _ = s.http.Close() }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	var review admissionv1.AdmissionReview
	if err == nil {
		err = json.Unmarshal(body, &review)
	}
	if err != nil || review.Request == nil {
		http.Error(w, fmt.Sprintf("bad review: %v", err), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	h := s.handlers[r.URL.Path]
	s.reviews[r.URL.Path] = append(s.reviews[r.URL.Path], Review{APIVersion: review.APIVersion, Request: review.Request, Proto: r.Proto, Query: r.URL.Query()})
	s.mu.Unlock()
	if h == nil {
		http.NotFound(w, r)
		return
	}
	ans := h(review.Request)
	if ans.Delay > 0 {
		select {
		case <-time.After(ans.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if ans.HTTPStatus != 0 {
		http.Error(w, ans.Message, ans.HTTPStatus)
		return
	}
	resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: !ans.Deny, Warnings: ans.Warnings, AuditAnnotations: ans.AuditAnnotations}
	if ans.Deny {
		resp.Result = &metav1.Status{Message: ans.Message, Code: ans.Code}
	}
	if ans.Patch != "" {
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = []byte(ans.Patch), &pt
	}
	out := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: review.APIVersion, Kind: "AdmissionReview"}, Response: resp}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

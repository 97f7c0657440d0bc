package webhook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apitypes "k8s.io/apimachinery/pkg/types"

	"github.com/cronplane/cronplane/pkg/admission"
)

// callError is a webhook that could not be called or answered nonsense;
// the failure policy decides whether it refuses the write.
type callError struct {
	name   string
	reason error
	// status is the answer's code, for the metrics.
	status *apierrors.StatusError
}

func (e *callError) Error() string {
	return fmt.Sprintf("failed calling webhook %q: %v", e.name, e.reason)
}

// rejected is kube's error for a webhook that refused: its message
// prefixed with who refused, and a code of at least 400.
func rejected(name string, result *metav1.Status) *apierrors.StatusError {
	s := metav1.Status{Status: metav1.StatusFailure, Code: http.StatusBadRequest}
	if result != nil {
		s = *result
	}
	if s.Code < http.StatusBadRequest {
		s.Code = http.StatusBadRequest
	}
	if s.Status == "" || s.Status == metav1.StatusSuccess {
		s.Status = metav1.StatusFailure
	}
	by := fmt.Sprintf("admission webhook %q denied the request", name)
	switch {
	case s.Message != "":
		s.Message = by + ": " + s.Message
	case s.Reason != "":
		s.Message = by + ": " + string(s.Reason)
	default:
		s.Message = by + " without explanation"
	}
	return &apierrors.StatusError{ErrStatus: s}
}

// dryRunUnsupported is kube's refusal of a dry run that would call a
// webhook with side effects.
func dryRunUnsupported(name string) error {
	return apierrors.NewBadRequest(fmt.Sprintf("admission webhook %q does not support dry run", name))
}

// reviewVersion is the AdmissionReview version the webhook is sent: v1
// if it takes it, else v1beta1.
func reviewVersion(versions []string) (string, bool) {
	for _, want := range []string{"v1", "v1beta1"} {
		for _, v := range versions {
			if v == want {
				return v, true
			}
		}
	}
	return "", false
}

// request builds the AdmissionRequest of one call, objects in the
// version the webhook sees.
func request(inv *invocation, a *admission.Attributes, obj, old runtime.Object) (*admissionv1.AdmissionRequest, error) {
	r := &admissionv1.AdmissionRequest{
		UID:                apitypes.UID(uuid.NewString()),
		Kind:               metav1.GroupVersionKind{Group: inv.kind.Group, Version: inv.kind.Version, Kind: inv.kind.Kind},
		Resource:           metav1.GroupVersionResource{Group: inv.resource.Group, Version: inv.resource.Version, Resource: inv.resource.Resource},
		SubResource:        a.Subresource,
		RequestKind:        &metav1.GroupVersionKind{Group: a.Kind.Group, Version: a.Kind.Version, Kind: a.Kind.Kind},
		RequestResource:    &metav1.GroupVersionResource{Group: a.Resource.Group, Version: a.Resource.Version, Resource: a.Resource.Resource},
		RequestSubResource: a.Subresource,
		Name:               a.Name,
		Namespace:          a.Namespace,
		Operation:          admissionv1.Operation(a.Operation),
		DryRun:             &a.DryRun,
	}
	if u := a.User; u != nil {
		r.UserInfo = authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
		if len(u.Extra) > 0 {
			r.UserInfo.Extra = map[string]authenticationv1.ExtraValue{}
			for k, v := range u.Extra {
				r.UserInfo.Extra[k] = v
			}
		}
	}
	var err error
	if r.Object.Raw, err = encode(obj, inv.kind); err != nil {
		return nil, err
	}
	if r.OldObject.Raw, err = encode(old, inv.kind); err != nil {
		return nil, err
	}
	if a.Options != nil && !reflect.ValueOf(a.Options).IsNil() {
		kind := metav1.SchemeGroupVersion.WithKind(reflect.TypeOf(a.Options).Elem().Name())
		if r.Options.Raw, err = encode(a.Options, kind); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// encode is obj's JSON with its apiVersion and kind; nil for no object.
func encode(obj runtime.Object, kind schema.GroupVersionKind) ([]byte, error) {
	if obj == nil || reflect.ValueOf(obj).IsNil() {
		return nil, nil
	}
	if obj.GetObjectKind().GroupVersionKind() != kind {
		// The write's object is shared: the kind is set on a copy.
		obj = obj.DeepCopyObject()
		obj.GetObjectKind().SetGroupVersionKind(kind)
	}
	return json.Marshal(obj)
}

// call sends the review and returns the webhook's verified response;
// errors are *callError.
func (d *dispatcher) call(ctx context.Context, h *hook, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, error) {
	fail := func(reason error, status *apierrors.StatusError) error {
		return &callError{name: h.name, reason: reason, status: status}
	}
	version, ok := reviewVersion(h.versions)
	if !ok {
		return nil, fail(errors.New("webhook does not accept known AdmissionReview versions"), apierrors.NewBadRequest("error creating admission objects"))
	}
	body, err := reviewBody(version, req)
	if err != nil {
		return nil, fail(fmt.Errorf("could not create admission objects: %w", err), apierrors.NewBadRequest("error creating admission objects"))
	}
	client, err := d.client(ctx, &h.endpoint)
	if err != nil {
		return nil, fail(fmt.Errorf("could not get REST client: %w", err), apierrors.NewBadRequest("error getting REST client"))
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(h.timeout)*time.Second)
	defer cancel()
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, h.endpoint.url, bytes.NewReader(body))
	if err != nil {
		return nil, fail(fmt.Errorf("could not get REST client: %w", err), apierrors.NewBadRequest("error getting REST client"))
	}
	httpReq.Header.Set("Content-Type", "application/json")
	httpReq.Header.Set("Accept", "application/json, */*")
	resp, err := client.Do(httpReq)
	if err != nil {
		return nil, fail(fmt.Errorf("failed to call webhook: %w", err), apierrors.NewBadRequest("error calling webhook"))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return nil, fail(fmt.Errorf("failed to call webhook: %w", err), apierrors.NewBadRequest("error calling webhook"))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		se := apierrors.NewGenericServerResponse(resp.StatusCode, "POST", schema.GroupResource{}, "", string(bytes.TrimSpace(data)), 0, true)
		return nil, fail(fmt.Errorf("failed to call webhook: %w", se), se)
	}
	var answer admissionv1.AdmissionReview
	if err := json.Unmarshal(data, &answer); err != nil {
		return nil, fail(fmt.Errorf("failed to call webhook: %w", err), apierrors.NewBadRequest("error calling webhook"))
	}
	if err := verify(version, string(req.UID), &answer); err != nil {
		return nil, fail(fmt.Errorf("received invalid webhook response: %w", err), apierrors.NewServiceUnavailable("error validating webhook response"))
	}
	return answer.Response, nil
}

// reviewBody is the JSON of the AdmissionReview of req. Its objects are
// JSON already and go in as they are: encoding/json would scan and copy
// each again to check it, as it does the output of every Marshaler.
func reviewBody(version string, req *admissionv1.AdmissionRequest) ([]byte, error) {
	rest, err := json.Marshal(requestWithoutObjects{AdmissionRequest: req})
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, 128+len(req.Object.Raw)+len(req.OldObject.Raw)+len(req.Options.Raw)+len(rest))
	b = append(b, `{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/`...)
	b = append(b, version...)
	b = append(b, `","request":{`...)
	b = appendRaw(b, "object", req.Object.Raw)
	b = appendRaw(b, "oldObject", req.OldObject.Raw)
	b = appendRaw(b, "options", req.Options.Raw)
	// rest always has fields (uid, kind, operation have no omitempty):
	// they follow the objects' in the request's braces.
	b = append(b, rest[1:]...)
	return append(b, '}'), nil
}

// requestWithoutObjects marshals as its request without the objects:
// its own fields of the same names hide the request's, and omitempty
// leaves them out.
type requestWithoutObjects struct {
	*admissionv1.AdmissionRequest
	Object    *struct{} `json:"object,omitempty"`
	OldObject *struct{} `json:"oldObject,omitempty"`
	Options   *struct{} `json:"options,omitempty"`
}

// appendRaw appends "key":raw, and a comma; no object is null, as
// encoding/json writes an empty RawExtension.
func appendRaw(b []byte, key string, raw []byte) []byte {
	b = append(b, '"')
	b = append(b, key...)
	b = append(b, `":`...)
	if raw == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, raw...)
	}
	return append(b, ',')
}

// maxResponseBytes bounds what a webhook may answer.
const maxResponseBytes = 3 << 20

// verify checks the answer as kube does; v1 answers are held to v1's
// stricter rules.
func verify(version, uid string, r *admissionv1.AdmissionReview) error {
	if version == "v1" && (r.APIVersion != "admission.k8s.io/v1" || r.Kind != "AdmissionReview") {
		return fmt.Errorf("expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got %s, Kind=%s", r.APIVersion, r.Kind)
	}
	if r.Response == nil {
		return errors.New("webhook response was absent")
	}
	if version == "v1" {
		if string(r.Response.UID) != uid {
			return fmt.Errorf("expected response.uid=%q, got %q", uid, r.Response.UID)
		}
		if len(r.Response.Patch) > 0 && r.Response.PatchType == nil {
			return errors.New("webhook returned response.patch but not response.patchType")
		}
	}
	if pt := r.Response.PatchType; pt != nil && *pt != admissionv1.PatchTypeJSONPatch && len(r.Response.Patch) > 0 {
		return fmt.Errorf("webhook returned invalid response.patchType of %q", *pt)
	}
	return nil
}

// endpoint is where a hook is called, worked out when the hooks are
// built: the URL to post to, with kube's timeout parameter, and for a
// Service, which one to resolve and the TLS server name to expect.
type endpoint struct {
	url string
	// err is why the URL does not parse or no Service is named.
	err      error
	caBundle []byte
	// caSum keys the clients with the bundle.
	caSum      [sha256.Size]byte
	service    *admissionregistrationv1.ServiceReference
	port       int32
	serverName string
}

// newEndpoint addresses a Service as kube does,
// https://<name>.<namespace>.svc:<port><path>, with the TLS server name
// that implies; it is dialled where the ServiceResolver says.
func newEndpoint(cc admissionregistrationv1.WebhookClientConfig, timeout int32) endpoint {
	e := endpoint{caBundle: cc.CABundle, caSum: sha256.Sum256(cc.CABundle)}
	var u *url.URL
	switch s := cc.Service; {
	case cc.URL != nil:
		if u, e.err = url.Parse(*cc.URL); e.err != nil {
			return e
		}
	case s != nil:
		e.service, e.port = s, 443
		if s.Port != nil {
			e.port = *s.Port
		}
		e.serverName = s.Name + "." + s.Namespace + ".svc"
		u = &url.URL{Scheme: "https", Host: net.JoinHostPort(e.serverName, strconv.Itoa(int(e.port)))}
		if s.Path != nil {
			u.Path = *s.Path
		}
	default:
		e.err = errors.New("no url or service")
		return e
	}
	q := u.Query()
	q.Set("timeout", (time.Duration(timeout) * time.Second).String())
	u.RawQuery = q.Encode()
	e.url = u.String()
	return e
}

// client is the HTTP client that trusts the webhook's CA and dials it:
// a Service is resolved on every call, as its endpoints change.
func (d *dispatcher) client(ctx context.Context, e *endpoint) (*http.Client, error) {
	if e.err != nil {
		return nil, e.err
	}
	if e.service == nil {
		return d.clients.get(e, "")
	}
	s := e.service
	if d.Services == nil {
		return nil, fmt.Errorf("service %s/%s cannot be resolved", s.Namespace, s.Name)
	}
	addr, err := d.Services.ResolveService(ctx, s.Namespace, s.Name, e.port)
	if err != nil {
		return nil, err
	}
	return d.clients.get(e, addr)
}

// clients caches one HTTP client per CA bundle, server name and dial
// address, so that connections are reused across requests.
type clients struct {
	mu sync.Mutex
	m  map[clientKey]*http.Client
}

type clientKey struct {
	caSum                [sha256.Size]byte
	serverName, dialAddr string
}

func newClients() *clients { return &clients{m: map[clientKey]*http.Client{}} }

// maxClients bounds the cache; past it, it starts over.
const maxClients = 256

// get returns the client of e dialling dialAddr, or the host of its URL
// when empty. As kube's (v1.29), it speaks HTTP/1.1: concurrent calls
// go over connections of their own, spread over a Service's endpoints,
// where HTTP/2 would multiplex them all on one; each request and answer
// is one TLS write, where HTTP/2 writes headers and data apart.
func (c *clients) get(e *endpoint, dialAddr string) (*http.Client, error) {
	key := clientKey{e.caSum, e.serverName, dialAddr}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.m[key]; ok {
		return cl, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: e.serverName, NextProtos: []string{"http/1.1"}}
	if len(e.caBundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(e.caBundle) {
			return nil, errors.New("unable to load root certificates: unable to parse bytes as PEM block")
		}
		cfg.RootCAs = pool
	}
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		TLSClientConfig:     cfg,
		DialContext:         dialer.DialContext,
		MaxIdleConnsPerHost: 100,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
	}
	if dialAddr != "" {
		tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, dialAddr)
		}
	}
	if len(c.m) >= maxClients {
		for _, old := range c.m {
			old.CloseIdleConnections()
		}
		c.m = map[clientKey]*http.Client{}
	}
	cl := &http.Client{Transport: tr}
	c.m[key] = cl
	return cl, nil
}

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
	review := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/" + version, Kind: "AdmissionReview"}, Request: req}
	body, err := json.Marshal(review)
	if err != nil {
		return nil, fail(fmt.Errorf("could not create admission objects: %w", err), apierrors.NewBadRequest("error creating admission objects"))
	}
	target, client, err := d.target(ctx, h)
	if err != nil {
		return nil, fail(fmt.Errorf("could not get REST client: %w", err), apierrors.NewBadRequest("error getting REST client"))
	}
	timeout := time.Duration(h.timeout) * time.Second
	q := target.Query()
	q.Set("timeout", timeout.String())
	target.RawQuery = q.Encode()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, target.String(), bytes.NewReader(body))
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

// target is the URL to post to and the client that trusts the webhook's
// CA. A service is addressed as kube addresses it,
// https://<name>.<namespace>.svc:<port><path>, with the TLS server name
// that implies, but dialled where the ServiceResolver says.
func (d *dispatcher) target(ctx context.Context, h *hook) (*url.URL, *http.Client, error) {
	cc := h.client
	if cc.URL != nil {
		u, err := url.Parse(*cc.URL)
		if err != nil {
			return nil, nil, err
		}
		c, err := d.clients.get(cc.CABundle, "", "")
		return u, c, err
	}
	s := cc.Service
	if s == nil {
		return nil, nil, errors.New("no url or service")
	}
	port := int32(443)
	if s.Port != nil {
		port = *s.Port
	}
	host := s.Name + "." + s.Namespace + ".svc"
	u := &url.URL{Scheme: "https", Host: net.JoinHostPort(host, strconv.Itoa(int(port)))}
	if s.Path != nil {
		u.Path = *s.Path
	}
	if d.Services == nil {
		return nil, nil, fmt.Errorf("service %s/%s cannot be resolved", s.Namespace, s.Name)
	}
	addr, err := d.Services.ResolveService(ctx, s.Namespace, s.Name, port)
	if err != nil {
		return nil, nil, err
	}
	c, err := d.clients.get(cc.CABundle, host, addr)
	return u, c, err
}

// clients caches one HTTP client per CA bundle, server name and dial
// address, so that connections are reused across requests.
type clients struct {
	mu sync.Mutex
	m  map[string]*http.Client
}

func newClients() *clients { return &clients{m: map[string]*http.Client{}} }

// maxClients bounds the cache; past it, it starts over.
const maxClients = 256

func (c *clients) get(caBundle []byte, serverName, dialAddr string) (*http.Client, error) {
	sum := sha256.Sum256(caBundle)
	key := string(sum[:]) + "\x00" + serverName + "\x00" + dialAddr
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.m[key]; ok {
		return cl, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if len(caBundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caBundle) {
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
		ForceAttemptHTTP2:   true,
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
		c.m = map[string]*http.Client{}
	}
	cl := &http.Client{Transport: tr}
	c.m[key] = cl
	return cl, nil
}

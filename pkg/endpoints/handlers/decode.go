package handlers

import (
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/featuregate"
	"github.com/cronplane/cronplane/pkg/negotiation"
	"github.com/cronplane/cronplane/pkg/registry"
	"github.com/cronplane/cronplane/pkg/storage"
)

// maxBodyBytes bounds a request body, as kube's 3 MiB object limit does.
const maxBodyBytes = 3 * 1024 * 1024

func metaAccessor(obj runtime.Object) (metav1.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return m, nil
}

// errUnsupportedMediaType is kube's 415 for a body it cannot read.
func errUnsupportedMediaType(contentType string, accepted ...string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusUnsupportedMediaType,
		Reason:  metav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s", strings.Join(accepted, ", ")),
	}}
}

func readBody(r *http.Request) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if len(data) > maxBodyBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", maxBodyBytes))
	}
	return data, nil
}

// decode reads the request body, in JSON, YAML or protobuf, as an object
// of the served type.
func (c *call) decode() (runtime.Object, error) {
	mt, ok := negotiation.ContentType(c.r.Header.Get("Content-Type"))
	if !ok || (mt == negotiation.Protobuf && !protobufCapable(c.store.Resource)) {
		return nil, errUnsupportedMediaType(c.r.Header.Get("Content-Type"), negotiation.Supported...)
	}
	data, err := readBody(c.r)
	if err != nil {
		return nil, err
	}
	switch mt {
	case negotiation.Protobuf:
		res := c.store.Resource
		obj, err := codec.DecodeEnvelope(data, res.GroupVersionKind, res.New)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", res.Kind, res.Version, res.Kind, err))
		}
		return obj, nil
	case negotiation.YAML:
		dups := yamlDuplicates(data)
		if data, err = yaml.YAMLToJSON(data); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("error converting YAML to JSON: %v", err))
		}
		return c.decodeJSON(data, dups...)
	}
	return c.decodeJSON(data)
}

// yamlDuplicates reports the duplicate keys of a YAML document, which the
// conversion to JSON silently resolves.
func yamlDuplicates(data []byte) []error {
	_, err := yaml.YAMLToJSONStrict(data)
	if err == nil {
		return nil
	}
	var out []error
	for _, line := range strings.Split(err.Error(), "\n") {
		if line = strings.TrimSpace(line); strings.Contains(line, "already set in map") {
			out = append(out, errors.New(line))
		}
	}
	return out
}

// decodeJSON decodes a JSON body; extra are problems found in the body's
// original form (duplicate YAML keys), reported with the JSON ones.
func (c *call) decodeJSON(data []byte, extra ...error) (runtime.Object, error) {
	res := c.store.Resource
	obj := res.New()
	strict, err := sigsjson.UnmarshalStrict(data, obj, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	strict = append(extra, strict...)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", res.Kind, res.Version, res.Kind, err))
	}
	if err := c.fieldValidation(strict); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", res.Kind, res.Version, res.Kind, err.Error()))
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind != "" && gvk.Kind != res.Kind {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: the kind in the data (%s) does not match the expected kind (%s)", res.Kind, res.Version, res.Kind, gvk.Kind, res.Kind))
	}
	if av := obj.GetObjectKind().GroupVersionKind().GroupVersion(); (gvk.Version != "" || gvk.Group != "") && av != res.GroupVersion() {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: the API version in the data (%s) does not match the expected API version (%s)", res.Kind, res.Version, res.Kind, av.String(), res.GroupVersion().String()))
	}
	obj.GetObjectKind().SetGroupVersionKind(res.GroupVersionKind)
	return obj, nil
}

// fieldValidation applies ?fieldValidation to the unknown and duplicate
// fields found while decoding.
func (c *call) fieldValidation(strict []error) error {
	level := c.r.URL.Query().Get("fieldValidation")
	switch level {
	case "", "Warn", "Strict", "Ignore":
	default:
		return fmt.Errorf("fieldValidation must be one of \"Ignore\", \"Warn\", or \"Strict\", got %q", level)
	}
	if len(strict) == 0 || level == "Ignore" {
		return nil
	}
	if level == "Strict" {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return fmt.Errorf("strict decoding error: %s", strings.Join(msgs, ", "))
	}
	for _, e := range strict {
		c.w.Header().Add("Warning", fmt.Sprintf("299 - %q", e.Error()))
	}
	return nil
}

// listOptions reads the list and watch query parameters.
func (c *call) listOptions() (metav1.ListOptions, storage.SelectionPredicate, error) {
	q := c.r.URL.Query()
	opts := metav1.ListOptions{
		LabelSelector:        q.Get("labelSelector"),
		FieldSelector:        q.Get("fieldSelector"),
		Watch:                isTrue(q.Get("watch")) || c.info.Verb == "watch",
		AllowWatchBookmarks:  isTrue(q.Get("allowWatchBookmarks")),
		ResourceVersion:      q.Get("resourceVersion"),
		ResourceVersionMatch: metav1.ResourceVersionMatch(q.Get("resourceVersionMatch")),
		Continue:             q.Get("continue"),
	}
	if v, ok := q["sendInitialEvents"]; ok && len(v) > 0 {
		b, err := strconv.ParseBool(v[0])
		if err != nil {
			return opts, storage.SelectionPredicate{}, apierrors.NewBadRequest(fmt.Sprintf("invalid sendInitialEvents %q", v[0]))
		}
		opts.SendInitialEvents = &b
	}
	if err := c.validateWatchOptions(opts); err != nil {
		return opts, storage.SelectionPredicate{}, err
	}
	var pred storage.SelectionPredicate
	for name, dst := range map[string]*int64{"limit": &opts.Limit, "timeoutSeconds": nil} {
		v := q.Get(name)
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return opts, pred, apierrors.NewBadRequest(fmt.Sprintf("invalid %s %q: %v", name, v, err))
		}
		if dst != nil {
			*dst = n
		} else {
			opts.TimeoutSeconds = &n
		}
	}
	ls, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return opts, pred, apierrors.NewBadRequest(err.Error())
	}
	fs, err := fields.ParseSelector(opts.FieldSelector)
	if err != nil {
		return opts, pred, apierrors.NewBadRequest(err.Error())
	}
	// A single-object watch (or list) names the object in the path.
	if c.info.Name != "" && opts.FieldSelector == "" {
		fs = fields.OneTermEqualSelector("metadata.name", c.info.Name)
	}
	pred, err = c.store.Predicate(ls, fs)
	return opts, pred, err
}

// deleteOptions reads DeleteOptions from the body, or from the query.
func (c *call) deleteOptions() (*metav1.DeleteOptions, bool, error) {
	opts := &metav1.DeleteOptions{}
	data, err := readBody(c.r)
	if err != nil {
		return nil, false, err
	}
	if len(strings.TrimSpace(string(data))) > 0 {
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, opts); err != nil {
			return nil, false, apierrors.NewBadRequest(fmt.Sprintf("DeleteOptions in version \"v1\" cannot be handled as a DeleteOptions: %v", err))
		}
	}
	q := c.r.URL.Query()
	if v := q.Get("gracePeriodSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, false, apierrors.NewBadRequest(fmt.Sprintf("invalid gracePeriodSeconds %q", v))
		}
		opts.GracePeriodSeconds = &n
	}
	if v := q.Get("propagationPolicy"); v != "" {
		p := metav1.DeletionPropagation(v)
		opts.PropagationPolicy = &p
	}
	if v := q.Get("orphanDependents"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, false, apierrors.NewBadRequest(fmt.Sprintf("invalid orphanDependents %q", v))
		}
		//nolint:staticcheck // still accepted, as kube does.
		opts.OrphanDependents = &b
	}
	if uid := q.Get("preconditions.uid"); uid != "" {
		u := types.UID(uid)
		if opts.Preconditions == nil {
			opts.Preconditions = &metav1.Preconditions{}
		}
		opts.Preconditions.UID = &u
	}
	if rv := q.Get("preconditions.resourceVersion"); rv != "" {
		if opts.Preconditions == nil {
			opts.Preconditions = &metav1.Preconditions{}
		}
		opts.Preconditions.ResourceVersion = &rv
	}
	opts.DryRun = append(opts.DryRun, q["dryRun"]...)
	dryRun, err := registry.IsDryRun(opts.DryRun)
	return opts, dryRun, err
}

func isTrue(v string) bool { return v == "1" || v == "true" }

// validateWatchOptions checks sendInitialEvents and resourceVersionMatch
// on watches as kube does.
func (c *call) validateWatchOptions(opts metav1.ListOptions) error {
	bad := func(msg string) error { return apierrors.NewBadRequest(msg) }
	if !opts.Watch {
		if opts.SendInitialEvents != nil {
			return bad("sendInitialEvents is forbidden for list")
		}
		return nil
	}
	if opts.SendInitialEvents == nil {
		if opts.ResourceVersionMatch != "" {
			return bad("resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided")
		}
		return nil
	}
	if c.h.FeatureGates == nil || !c.h.FeatureGates.Enabled(featuregate.WatchList) {
		return bad("sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled")
	}
	if opts.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan {
		return bad(fmt.Sprintf("sendInitialEvents requires setting resourceVersionMatch to %s", metav1.ResourceVersionMatchNotOlderThan))
	}
	if *opts.SendInitialEvents && !opts.AllowWatchBookmarks {
		return bad("sendInitialEvents requires setting allowWatchBookmarks to true")
	}
	return nil
}

// watchTimeout is timeoutSeconds, or a random time between the minimum
// request timeout and twice it, so that watches of many clients do not all
// end at once.
func (c *call) watchTimeout(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds != nil && *opts.TimeoutSeconds > 0 {
		return time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	min := c.h.MinRequestTimeout
	if min <= 0 {
		min = 1800
	}
	return time.Duration(float64(min)*(1+rand.Float64())) * time.Second
}

package nodeserver

import (
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DecodeLogOptions reads v1 PodLogOptions from a query as kube's
// parameter codec does: booleans are true unless "0" or "false",
// integers are base 10, sinceTime is RFC 3339; errors are the parsers'.
// The apiserver's pods/log and the node's /containerLogs both read them.
func DecodeLogOptions(q url.Values) (*corev1.PodLogOptions, error) {
	opts := &corev1.PodLogOptions{}
	opts.Container = q.Get("container")
	for name, b := range map[string]*bool{
		"follow": &opts.Follow, "previous": &opts.Previous, "timestamps": &opts.Timestamps,
		"insecureSkipTLSVerifyBackend": &opts.InsecureSkipTLSVerifyBackend,
	} {
		if v, ok := q[name]; ok && len(v) > 0 {
			if err := runtime.Convert_Slice_string_To_bool(&v, b, nil); err != nil {
				return nil, err
			}
		}
	}
	for _, p := range []struct {
		name string
		into **int64
	}{{"sinceSeconds", &opts.SinceSeconds}, {"tailLines", &opts.TailLines}, {"limitBytes", &opts.LimitBytes}} {
		if v, ok := q[p.name]; ok && len(v) > 0 {
			if err := runtime.Convert_Slice_string_To_Pointer_int64(&v, p.into, nil); err != nil {
				return nil, err
			}
		}
	}
	if v, ok := q["sinceTime"]; ok && len(v) > 0 {
		if err := metav1.Convert_Slice_string_To_Pointer_v1_Time(&v, &opts.SinceTime, nil); err != nil {
			return nil, err
		}
	}
	return opts, nil
}

// ValidateLogOptions checks PodLogOptions as kube does.
func ValidateLogOptions(opts *corev1.PodLogOptions) field.ErrorList {
	var errs field.ErrorList
	if opts.TailLines != nil && *opts.TailLines < 0 {
		errs = append(errs, field.Invalid(field.NewPath("tailLines"), *opts.TailLines, "must be greater than or equal to 0"))
	}
	if opts.LimitBytes != nil && *opts.LimitBytes < 1 {
		errs = append(errs, field.Invalid(field.NewPath("limitBytes"), *opts.LimitBytes, "must be greater than 0"))
	}
	switch {
	case opts.SinceSeconds != nil && opts.SinceTime != nil:
		errs = append(errs, field.Forbidden(field.NewPath(""), "at most one of `sinceTime` or `sinceSeconds` may be specified"))
	case opts.SinceSeconds != nil && *opts.SinceSeconds < 1:
		errs = append(errs, field.Invalid(field.NewPath("sinceSeconds"), *opts.SinceSeconds, "must be greater than 0"))
	}
	return errs
}

// EncodeLogOptions is the query the apiserver sends a node for opts, as
// kube-apiserver sends the kubelet's: the container is in the path, and
// the node is never asked to skip TLS verification of anything.
func EncodeLogOptions(opts *corev1.PodLogOptions) url.Values {
	q := url.Values{}
	if opts.Follow {
		q.Set("follow", "true")
	}
	if opts.Previous {
		q.Set("previous", "true")
	}
	if opts.Timestamps {
		q.Set("timestamps", "true")
	}
	if opts.SinceSeconds != nil {
		q.Set("sinceSeconds", strconv.FormatInt(*opts.SinceSeconds, 10))
	}
	if opts.SinceTime != nil {
		q.Set("sinceTime", opts.SinceTime.UTC().Format(time.RFC3339))
	}
	if opts.TailLines != nil {
		q.Set("tailLines", strconv.FormatInt(*opts.TailLines, 10))
	}
	if opts.LimitBytes != nil {
		q.Set("limitBytes", strconv.FormatInt(*opts.LimitBytes, 10))
	}
	return q
}

// Package clientconfig validates how the server is told to reach a
// webhook, the same for CRD conversion and admission webhooks as in kube:
// an https URL, or a Service with its namespace, port and path.
package clientconfig

import (
	"fmt"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateURL checks a webhook's URL: https, a host, and no user,
// fragment or query.
func ValidateURL(path *field.Path, raw string) field.ErrorList {
	const form = "; desired format: https://host[/path]"
	u, err := url.Parse(raw)
	if err != nil {
		return field.ErrorList{field.Required(path, "url must be a valid URL: "+err.Error()+form)}
	}
	var errs field.ErrorList
	if u.Scheme != "https" {
		errs = append(errs, field.Invalid(path, u.Scheme, "'https' is the only allowed URL scheme"+form))
	}
	if u.Host == "" {
		errs = append(errs, field.Invalid(path, u.Host, "host must be specified"+form))
	}
	if u.User != nil {
		errs = append(errs, field.Invalid(path, u.User.String(), "user information is not permitted in the URL"))
	}
	if u.Fragment != "" {
		errs = append(errs, field.Invalid(path, u.Fragment, "fragments are not permitted in the URL"))
	}
	if u.RawQuery != "" {
		errs = append(errs, field.Invalid(path, u.RawQuery, "query parameters are not permitted in the URL"))
	}
	return errs
}

// ValidateService checks a webhook's service reference.
func ValidateService(path *field.Path, namespace, name string, urlPath *string, port int32) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(path.Child("name"), "service name is required"))
	}
	if namespace == "" {
		errs = append(errs, field.Required(path.Child("namespace"), "service namespace is required"))
	}
	if msgs := validation.IsValidPortNum(int(port)); msgs != nil {
		errs = append(errs, field.Invalid(path.Child("port"), port, "port is not valid: "+strings.Join(msgs, ", ")))
	}
	if urlPath == nil || *urlPath == "/" || *urlPath == "" {
		return errs
	}
	p := *urlPath
	if p == "//" {
		return append(errs, field.Invalid(path.Child("path"), p, "segment[0] may not be empty"))
	}
	if !strings.HasPrefix(p, "/") {
		errs = append(errs, field.Invalid(path.Child("path"), p, "must start with a '/'"))
	}
	steps := strings.Split(strings.TrimSuffix(p[1:], "/"), "/")
	for i, step := range steps {
		if step == "" {
			errs = append(errs, field.Invalid(path.Child("path"), p, fmt.Sprintf("segment[%d] may not be empty", i)))
			continue
		}
		for _, msg := range validation.IsDNS1123Subdomain(step) {
			errs = append(errs, field.Invalid(path.Child("path"), p, fmt.Sprintf("segment[%d]: %v", i, msg)))
		}
	}
	return errs
}

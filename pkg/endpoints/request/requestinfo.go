// Package request owns what the server learns about a request before it is
// authorized and routed: whether it targets a resource, and then the verb,
// group, version, namespace, resource, name and subresource, read from the
// path, the method and the query as kube does. The RequestInfo travels in
// the request's context to every later stage.
package request

import (
	"context"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// RequestInfo describes a request.
type RequestInfo struct {
	// IsResourceRequest is false for paths such as /healthz or /apis.
	IsResourceRequest bool
	Path              string
	// Verb is the Kubernetes verb for resource requests (get, list, watch,
	// create, update, patch, delete, deletecollection) and the lower-case
	// HTTP method otherwise.
	Verb        string
	APIPrefix   string
	APIGroup    string
	APIVersion  string
	Namespace   string
	Resource    string
	Subresource string
	Name        string
	// Parts are the path segments after the version, relative to the
	// namespace when there is one.
	Parts []string
	// InNamespacePath is true when the resource came after
	// /namespaces/{namespace}/ in the path, which only a namespaced
	// resource may.
	InNamespacePath bool
}

// GroupVersionResource of a resource request.
func (ri *RequestInfo) GroupVersionResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: ri.APIGroup, Version: ri.APIVersion, Resource: ri.Resource}
}

// namespaceSubresources are subresources of a namespace, not resources
// inside it: /api/v1/namespaces/foo/status.
var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

// NewRequestInfo parses r.
func NewRequestInfo(r *http.Request) *RequestInfo {
	info := &RequestInfo{Path: r.URL.Path, Verb: strings.ToLower(r.Method)}
	parts := splitPath(r.URL.Path)
	if len(parts) < 2 || (parts[0] != "api" && parts[0] != "apis") {
		return info
	}
	info.APIPrefix = parts[0]
	parts = parts[1:]
	if info.APIPrefix == "apis" {
		if len(parts) < 2 {
			return info
		}
		info.APIGroup = parts[0]
		parts = parts[1:]
	}
	info.APIVersion = parts[0]
	parts = parts[1:]
	if len(parts) == 0 {
		return info
	}
	info.IsResourceRequest = true

	switch r.Method {
	case http.MethodPost:
		info.Verb = "create"
	case http.MethodGet, http.MethodHead:
		info.Verb = "get"
	case http.MethodPut:
		info.Verb = "update"
	case http.MethodPatch:
		info.Verb = "patch"
	case http.MethodDelete:
		info.Verb = "delete"
	default:
		info.Verb = ""
	}
	// The deprecated /watch/ path prefix.
	if parts[0] == "watch" && info.Verb == "get" {
		info.Verb = "watch"
		parts = parts[1:]
		if len(parts) == 0 {
			info.IsResourceRequest = false
			return info
		}
	}

	if parts[0] == "namespaces" && len(parts) > 1 {
		info.Namespace = parts[1]
		if len(parts) > 2 && !namespaceSubresources[parts[2]] {
			parts = parts[2:]
			info.InNamespacePath = true
		}
	}
	info.Parts = parts
	info.Resource = parts[0]
	if len(parts) >= 2 {
		info.Name = parts[1]
	}
	if len(parts) >= 3 {
		info.Subresource = parts[2]
	}

	if info.Name == "" && info.Verb == "get" {
		q := r.URL.Query()
		if isTrue(q["watch"]) {
			info.Verb = "watch"
		} else {
			info.Verb = "list"
		}
		if fs, err := fields.ParseSelector(q.Get("fieldSelector")); err == nil {
			if name, ok := fs.RequiresExactMatch("metadata.name"); ok && len(path.IsValidPathSegmentName(name)) == 0 {
				info.Name = name
			}
		}
	}
	if info.Name == "" && info.Verb == "delete" {
		info.Verb = "deletecollection"
	}
	return info
}

// isTrue reads a boolean query parameter as kube does: true unless
// absent, "0" or "false" in any case (so ?watch and ?watch=yes watch).
func isTrue(values []string) bool {
	return len(values) > 0 && values[0] != "0" && !strings.EqualFold(values[0], "false")
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

type infoKey struct{}

// WithRequestInfo stores info in ctx.
func WithRequestInfo(ctx context.Context, info *RequestInfo) context.Context {
	return context.WithValue(ctx, infoKey{}, info)
}

// RequestInfoFrom returns the RequestInfo of a request that went through
// the WithRequestInfo filter.
func RequestInfoFrom(ctx context.Context) (*RequestInfo, bool) {
	info, ok := ctx.Value(infoKey{}).(*RequestInfo)
	return info, ok
}

// WithRequestInfoFilter parses every request once, before authentication
// and authorization need it.
func WithRequestInfoFilter(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(WithRequestInfo(r.Context(), NewRequestInfo(r))))
	})
}

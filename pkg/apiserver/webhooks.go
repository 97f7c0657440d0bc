package apiserver

import (
	"context"
	"fmt"
	"net"
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/admission/plugin/webhook"
	"github.com/cronplane/cronplane/pkg/registry"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
	"github.com/cronplane/cronplane/pkg/storage"
)

// webhookPlugins are the admission webhook plugins, reading their
// configurations and namespaces from the watch cache.
func (s *Server) webhookPlugins() (*webhook.Mutating, *webhook.Validating) {
	return webhook.New(webhook.Config{
		Source:     webhookSource{s.Registry},
		Namespaces: namespaceGetter{s.Registry},
		Services:   serviceResolver{s.Registry},
		Resources:  webhookResources{s.Registry},
		Metrics:    s.Metrics,
	})
}

// webhookSource lists webhook configurations from the watch cache
// (shared objects: read only); none while they are not served.
type webhookSource struct{ registry *registry.Registry }

func (w webhookSource) list(ctx context.Context, resource string) (runtime.Object, error) {
	e, ok := w.registry.Lookup(admissionregistrationv1.SchemeGroupVersion.WithResource(resource))
	if !ok {
		return nil, nil
	}
	return e.Storage.(rest.Lister).List(ctx, "", &rest.ListOptions{ListOptions: metav1.ListOptions{ResourceVersion: "0"}})
}

func (w webhookSource) MutatingWebhookConfigurations(ctx context.Context) ([]*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	obj, err := w.list(ctx, "mutatingwebhookconfigurations")
	if obj == nil || err != nil {
		return nil, err
	}
	items := obj.(*rest.List).Items
	out := make([]*admissionregistrationv1.MutatingWebhookConfiguration, len(items))
	for i, item := range items {
		out[i] = storage.Unwrap(item).(*admissionregistrationv1.MutatingWebhookConfiguration)
	}
	return out, nil
}

func (w webhookSource) ValidatingWebhookConfigurations(ctx context.Context) ([]*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	obj, err := w.list(ctx, "validatingwebhookconfigurations")
	if obj == nil || err != nil {
		return nil, err
	}
	items := obj.(*rest.List).Items
	out := make([]*admissionregistrationv1.ValidatingWebhookConfiguration, len(items))
	for i, item := range items {
		out[i] = storage.Unwrap(item).(*admissionregistrationv1.ValidatingWebhookConfiguration)
	}
	return out, nil
}

// serviceResolver dials a webhook's Service at its cluster IP: without
// cluster DNS, <name>.<namespace>.svc resolves nowhere else. Reaching the
// IP needs a proxy on the apiserver's host, as kube-apiserver needs one.
type serviceResolver struct{ registry *registry.Registry }

func (r serviceResolver) ResolveService(ctx context.Context, namespace, name string, port int32) (string, error) {
	obj, err := cachedGet(ctx, r.registry, corev1.SchemeGroupVersion.WithResource("services"), namespace, name)
	if err != nil {
		return "", err
	}
	svc := obj.(*corev1.Service)
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return "", fmt.Errorf("service %s/%s has no cluster IP", namespace, name)
	}
	return net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(port))), nil
}

// webhookResources finds a resource's equivalent versions (the same
// group and resource in another version, or the other event API) among
// the served ones, converting through their shared storage type (a
// resource without a Conversion is stored as it is served).
type webhookResources struct{ registry *registry.Registry }

func (w webhookResources) Equivalents(gvr schema.GroupVersionResource) []webhook.Equivalent {
	from, ok := w.generic(gvr)
	if !ok {
		return nil
	}
	var out []webhook.Equivalent
	for _, e := range w.registry.Entries() {
		other := e.GroupVersionResource()
		if other == gvr || other.Resource != gvr.Resource {
			continue
		}
		to, ok := w.generic(other)
		if !ok || generic.StoragePrefix("", to) != generic.StoragePrefix("", from) {
			continue
		}
		out = append(out, webhook.Equivalent{Resource: other, Kind: to.GroupVersionKind, To: via(from, to), From: via(to, from)})
	}
	return out
}

// via converts an object served as from to one served as to, through
// the type they are stored as.
func via(from, to *generic.Resource) func(runtime.Object) (runtime.Object, error) {
	return func(obj runtime.Object) (runtime.Object, error) {
		stored := obj.DeepCopyObject()
		if from.Conversion != nil {
			var err error
			if stored, err = from.Conversion.ToStorage(stored); err != nil {
				return nil, err
			}
		}
		if to.Conversion == nil {
			return stored, nil
		}
		return to.Conversion.FromStorage(stored)
	}
}

func (w webhookResources) generic(gvr schema.GroupVersionResource) (*generic.Resource, bool) {
	e, ok := w.registry.Lookup(gvr)
	if !ok {
		return nil, false
	}
	st, ok := e.Storage.(*generic.Store)
	if !ok {
		return nil, false
	}
	return st.Resource, true
}

func (w webhookResources) Default(gvr schema.GroupVersionResource, obj runtime.Object) {
	if e, ok := w.registry.Lookup(gvr); ok {
		e.Defaults(obj)
	}
}

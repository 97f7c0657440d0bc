package apiserver

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/apply"
	"github.com/cronplane/cronplane/pkg/auth/user"
	"github.com/cronplane/cronplane/pkg/registry"
	"github.com/cronplane/cronplane/pkg/registry/rest"
	"github.com/cronplane/cronplane/pkg/storage"
)

// systemUser is who the server's own writes come from, as kube's
// loopback client is: a member of system:masters.
var systemUser = &user.Info{Name: "system:apiserver", Groups: []string{user.SystemPrivileged, user.AllAuthenticated}}

// systemManager is the field manager of the server's own writes.
const systemManager = "kube-apiserver"

// systemClient reads and writes served resources as the server itself,
// for what it keeps in place at start (namespaces, the RBAC policy):
// straight through the resources' storages, with managedFields kept as
// kube-apiserver's, and without admission or authorization.
type systemClient struct{ registry *registry.Registry }

func (c systemClient) entry(gvr schema.GroupVersionResource) (*registry.Entry, error) {
	e, ok := c.registry.Lookup(gvr)
	if !ok {
		return nil, fmt.Errorf("%s is not served", gvr)
	}
	return e, nil
}

func systemContext(ctx context.Context) context.Context {
	return user.WithUser(ctx, systemUser)
}

func (c systemClient) get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	e, err := c.entry(gvr)
	if err != nil {
		return nil, err
	}
	g, ok := e.Storage.(rest.Getter)
	if !ok {
		return nil, fmt.Errorf("%s cannot be read", gvr)
	}
	obj, err := g.Get(systemContext(ctx), namespace, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	// The caller may change what it read; a cached object is shared.
	return storage.Unwrap(obj).DeepCopyObject(), nil
}

func (c systemClient) create(ctx context.Context, gvr schema.GroupVersionResource, namespace string, obj runtime.Object) error {
	return c.createAs(ctx, gvr, namespace, obj, systemManager)
}

// createAs creates obj with its fields managed by manager.
func (c systemClient) createAs(ctx context.Context, gvr schema.GroupVersionResource, namespace string, obj runtime.Object, manager string) error {
	e, err := c.entry(gvr)
	if err != nil {
		return err
	}
	cr, ok := e.Storage.(rest.Creater)
	if !ok {
		return fmt.Errorf("%s cannot be created", gvr)
	}
	e.Defaults(obj)
	if e.Fields != nil {
		if err := e.Fields.Update(nil, obj, manager, "", time.Now()); err != nil {
			return err
		}
	}
	_, err = cr.Create(systemContext(ctx), namespace, obj, nil, &metav1.CreateOptions{FieldManager: manager})
	return err
}

// update replaces the stored object with obj, unless it changed since obj
// was read (its resourceVersion is a precondition).
func (c systemClient) update(ctx context.Context, gvr schema.GroupVersionResource, namespace string, obj runtime.Object) error {
	return c.updateAs(ctx, gvr, namespace, obj, systemManager)
}

// updateAs is update with the fields written managed by manager.
func (c systemClient) updateAs(ctx context.Context, gvr schema.GroupVersionResource, namespace string, obj runtime.Object, manager string) error {
	return c.updateSubresourceAs(ctx, gvr, "", namespace, obj, manager)
}

// updateSubresourceAs is updateAs through a subresource ("" for the
// resource itself), such as status.
func (c systemClient) updateSubresourceAs(ctx context.Context, gvr schema.GroupVersionResource, subresource, namespace string, obj runtime.Object, manager string) error {
	e, err := c.entry(gvr)
	if err != nil {
		return err
	}
	storage := e.Storage
	if subresource != "" {
		storage = e.Subresources[subresource]
	}
	u, ok := storage.(rest.Updater)
	if !ok {
		return fmt.Errorf("%s %s cannot be updated", gvr, subresource)
	}
	e.Defaults(obj)
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	name := m.GetName()
	info := systemUpdate{fields: e.Fields, obj: obj, manager: manager, subresource: subresource}
	_, _, err = u.Update(systemContext(ctx), namespace, name, info, nil, nil, false, &metav1.UpdateOptions{FieldManager: manager})
	return err
}

func (c systemClient) delete(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) error {
	e, err := c.entry(gvr)
	if err != nil {
		return err
	}
	d, ok := e.Storage.(rest.GracefulDeleter)
	if !ok {
		return fmt.Errorf("%s cannot be deleted", gvr)
	}
	_, _, err = d.Delete(systemContext(ctx), namespace, name, nil, &metav1.DeleteOptions{})
	return err
}

// systemUpdate hands the store the new object, with managedFields
// recorded against the current one.
type systemUpdate struct {
	fields      *apply.Manager
	obj         runtime.Object
	manager     string
	subresource string
}

func (systemUpdate) Preconditions() *metav1.Preconditions { return nil }

func (s systemUpdate) UpdatedObject(_ context.Context, current runtime.Object) (runtime.Object, error) {
	obj := s.obj.DeepCopyObject()
	if s.fields != nil {
		if err := s.fields.Update(current, obj, s.manager, s.subresource, time.Now()); err != nil {
			return nil, err
		}
		if current != nil {
			apply.KeepManagedFieldsTimes(obj, current)
		}
	}
	return obj, nil
}

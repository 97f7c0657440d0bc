package generic

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cronplane/cronplane/pkg/registry/rest"
	"github.com/cronplane/cronplane/pkg/storage"
)

// tooLargeRVWait is how long a read for a resourceVersion the store has not
// reached yet waits before it gives up, as kube does.
const tooLargeRVWait = 3 * time.Second

// waitForResourceVersion retries read while the store has not reached the
// requested revision yet, for up to tooLargeRVWait.
func waitForResourceVersion[T any](ctx context.Context, read func() (T, error)) (T, error) {
	deadline := time.Now().Add(tooLargeRVWait)
	for {
		v, err := read()
		if !storage.IsTooLargeResourceVersion(err) || time.Now().After(deadline) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Get reads one object.
func (s *Store) Get(ctx context.Context, namespace, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	gopts, err := getOptions(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	obj, err := waitForResourceVersion(ctx, func() (runtime.Object, error) {
		return s.Storage.Get(ctx, s.key(namespace, name), gopts)
	})
	if err != nil {
		return nil, s.apiError(err, name)
	}
	return s.fromStorage(obj)
}

// predicate builds the storage predicate of the options' selectors,
// refusing field labels the resource does not support.
func (s *Store) predicate(opts *rest.ListOptions) (storage.SelectionPredicate, error) {
	p := storage.SelectionPredicate{Label: opts.Label, Field: opts.Field, GetAttrs: s.attrs}
	if opts.Field == nil {
		return p, nil
	}
	if convert := s.Resource.FieldLabels; convert != nil {
		f, err := opts.Field.Transform(func(label, value string) (string, string, error) {
			field, err := convert(label)
			return field, value, err
		})
		if err != nil {
			return p, apierrors.NewBadRequest(err.Error())
		}
		p.Field = f
	}
	supported := s.fieldSet(nil)
	for _, req := range p.Field.Requirements() {
		if _, ok := supported[req.Field]; !ok {
			names := make([]string, 0, len(supported))
			for name := range supported {
				if name != "metadata.name" && name != "metadata.namespace" {
					names = append(names, strconv.Quote(name))
				}
			}
			sort.Strings(names)
			names = append([]string{`"metadata.name"`, `"metadata.namespace"`}, names...)
			return p, apierrors.NewBadRequest(fmt.Sprintf("%q is not a known field selector: only %s", req.Field, strings.Join(names, ", ")))
		}
	}
	return p, nil
}

// fieldSet returns the selectable fields of a stored object; with nil, the
// set of supported field names.
func (s *Store) fieldSet(obj runtime.Object) fields.Set {
	set := fields.Set{"metadata.name": "", "metadata.namespace": ""}
	if obj != nil {
		if m, err := meta.Accessor(obj); err == nil {
			set["metadata.name"] = m.GetName()
			set["metadata.namespace"] = m.GetNamespace()
		}
	}
	if s.Resource.SelectableFields != nil {
		if obj == nil {
			obj = s.newStorageObject()
		}
		for k, v := range s.Resource.SelectableFields(obj) {
			set[k] = v
		}
	}
	return set
}

func (s *Store) newStorageObject() runtime.Object {
	obj := s.Resource.New()
	if s.Resource.Conversion != nil {
		if o, err := s.Resource.Conversion.ToStorage(obj); err == nil {
			return o
		}
	}
	return obj
}

func (s *Store) attrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil, err
	}
	return labels.Set(m.GetLabels()), s.fieldSet(obj), nil
}

// expiredList is kube's 410 for a list from a compacted revision: an
// exact list, or a page after the first, which comes with a token for
// the rest of the list at the latest revision.
func expiredList(err error, continued bool) error {
	if !continued {
		return apierrors.NewResourceExpired("The resourceVersion for the provided list is too old.")
	}
	status := apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. " +
		"Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time " +
		"the first chunk was returned and now may show up in the list.")
	var se *storage.Error
	if errors.As(err, &se) {
		status.ErrStatus.ListMeta.Continue = se.Continue
	}
	return status
}

// List reads a collection as a *rest.List.
func (s *Store) List(ctx context.Context, namespace string, opts *rest.ListOptions) (runtime.Object, error) {
	return s.list(ctx, namespace, opts)
}

func (s *Store) list(ctx context.Context, namespace string, opts *rest.ListOptions) (*rest.List, error) {
	pred, err := s.predicate(opts)
	if err != nil {
		return nil, err
	}
	lopts, err := listOptions(opts.ListOptions, pred)
	if err != nil {
		return nil, err
	}
	res, err := waitForResourceVersion(ctx, func() (*storage.ListResult, error) {
		return s.Storage.List(ctx, s.prefix(namespace), lopts)
	})
	if err != nil {
		if storage.IsExpired(err) {
			return nil, expiredList(err, opts.Continue != "")
		}
		return nil, s.apiError(err, "")
	}
	items := res.Items
	if s.Resource.Conversion != nil {
		items = make([]runtime.Object, len(res.Items))
		for i, it := range res.Items {
			if items[i], err = s.fromStorage(it); err != nil {
				return nil, err
			}
		}
	}
	apiVersion, kind := s.Resource.ListGVK().ToAPIVersionAndKind()
	_, unstructuredType := s.Resource.New().(*unstructured.Unstructured)
	return &rest.List{
		Unstructured: unstructuredType,
		TypeMeta:     metav1.TypeMeta{APIVersion: apiVersion, Kind: kind},
		ListMeta: metav1.ListMeta{
			ResourceVersion:    strconv.FormatInt(res.ResourceVersion, 10),
			Continue:           res.Continue,
			RemainingItemCount: res.RemainingItemCount,
		},
		Items: items,
	}, nil
}

// Watch streams changes of a collection, per the resourceVersion table of
// the API conventions; the watch ends with ctx.
func (s *Store) Watch(ctx context.Context, namespace string, opts *rest.ListOptions) (watch.Interface, error) {
	pred, err := s.predicate(opts)
	if err != nil {
		return nil, err
	}
	wopts, err := watchOptions(opts.ListOptions, pred)
	if err != nil {
		return nil, err
	}
	w, err := s.Storage.Watch(ctx, s.prefix(namespace), wopts)
	if err != nil {
		return nil, s.apiError(err, "")
	}
	if s.Resource.Conversion == nil {
		return w, nil
	}
	return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
		if e.Type == watch.Error {
			return e, true
		}
		obj, err := s.fromStorage(e.Object)
		if err != nil {
			status := apierrors.NewInternalError(err).ErrStatus
			status.Kind, status.APIVersion = "Status", "v1"
			return watch.Event{Type: watch.Error, Object: &status}, true
		}
		e.Object = obj
		return e, true
	}), nil
}

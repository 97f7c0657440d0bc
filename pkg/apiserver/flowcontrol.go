package apiserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/pkg/flowcontrol/bootstrap"
	"github.com/cronplane/cronplane/pkg/registry/rest"
	"github.com/cronplane/cronplane/pkg/storage"
)

var (
	flowSchemasGVR = flowcontrolv1.SchemeGroupVersion.WithResource("flowschemas")
	levelsGVR      = flowcontrolv1.SchemeGroupVersion.WithResource("prioritylevelconfigurations")
)

const (
	// apfBootstrapManager is the field manager of the bootstrap writes, as
	// kube names it.
	apfBootstrapManager = "api-priority-and-fairness-config-producer-v1"
	// apfBootstrapInterval is how often the configuration is put back in
	// place after the start, as kube's hook does.
	apfBootstrapInterval = time.Minute
)

// addFlowControlBootstrap adds kube's priority-and-fairness-config-producer
// post-start hook when the flowcontrol v1 API is served: it puts the
// bootstrap configuration in place once before the server is ready, then
// again every minute until the server stops.
func (s *Server) addFlowControlBootstrap() error {
	if _, ok := s.Registry.Lookup(flowSchemasGVR); !ok {
		return nil
	}
	if _, ok := s.Registry.Lookup(levelsGVR); !ok {
		return nil
	}
	c := apfBootstrapClient{systemClient{s.Registry}}
	return s.AddPostStartHook("priority-and-fairness-config-producer", func(ctx context.Context) error {
		ctx = klog.NewContext(ctx, s.opts.Logger)
		if err := c.ensure(ctx); err != nil {
			return fmt.Errorf("ensuring the APF bootstrap configuration: %w", err)
		}
		go func() {
			t := time.NewTicker(apfBootstrapInterval)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				if err := c.ensure(ctx); err != nil && ctx.Err() == nil {
					klog.FromContext(ctx).Error(err, "APF bootstrap ensurer ran into error, will retry later")
				}
			}
		}()
		return nil
	})
}

// apfBootstrapClient keeps the bootstrap FlowSchemas and priority levels in
// place through the system client.
type apfBootstrapClient struct{ c systemClient }

// ensure does what kube's ensurer does on each pass: suggested objects
// created when missing and revised while auto-update allows, mandatory
// objects created or restored, and objects dropped from the bootstrap
// configuration deleted while still auto-updated.
func (a apfBootstrapClient) ensure(ctx context.Context) error {
	sfs, spl := bootstrap.Suggested()
	mfs, mpl := bootstrap.Mandatory()
	var errs []error
	for _, set := range []struct {
		fs        []*flowcontrolv1.FlowSchema
		pl        []*flowcontrolv1.PriorityLevelConfiguration
		mandatory bool
	}{{sfs, spl, false}, {mfs, mpl, true}} {
		for _, want := range set.pl {
			errs = append(errs, a.ensureOne(ctx, levelsGVR, want, func(current runtime.Object) (runtime.Object, bool) {
				return bootstrap.RevisePriorityLevel(current.(*flowcontrolv1.PriorityLevelConfiguration), want, set.mandatory)
			}))
		}
		for _, want := range set.fs {
			errs = append(errs, a.ensureOne(ctx, flowSchemasGVR, want, func(current runtime.Object) (runtime.Object, bool) {
				return bootstrap.ReviseFlowSchema(current.(*flowcontrolv1.FlowSchema), want, set.mandatory)
			}))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fsNames, plNames := bootstrap.Names()
	return errors.Join(a.removeObsolete(ctx, flowSchemasGVR, fsNames), a.removeObsolete(ctx, levelsGVR, plNames))
}

// ensureOne creates want when it is missing, or writes what revise makes
// of the stored object. Losing a race to another apiserver or a client is
// not an error: the next pass looks again.
func (a apfBootstrapClient) ensureOne(ctx context.Context, gvr schema.GroupVersionResource, want runtime.Object, revise func(runtime.Object) (runtime.Object, bool)) error {
	m, err := meta.Accessor(want)
	if err != nil {
		return err
	}
	current, err := a.c.get(ctx, gvr, "", m.GetName())
	switch {
	case apierrors.IsNotFound(err):
		err = a.c.createAs(ctx, gvr, "", want.DeepCopyObject(), apfBootstrapManager)
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
	case err == nil:
		if updated, ok := revise(current); ok {
			err = a.c.updateAs(ctx, gvr, "", updated, apfBootstrapManager)
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return nil
			}
		}
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", gvr.Resource, m.GetName(), err)
	}
	return nil
}

// removeObsolete deletes the stored objects not named in keep that are
// still marked for auto-update.
func (a apfBootstrapClient) removeObsolete(ctx context.Context, gvr schema.GroupVersionResource, keep map[string]bool) error {
	e, err := a.c.entry(gvr)
	if err != nil {
		return err
	}
	l, ok := e.Storage.(rest.Lister)
	if !ok {
		return fmt.Errorf("%s cannot be listed", gvr)
	}
	obj, err := l.List(systemContext(ctx), "", &rest.ListOptions{})
	if err != nil {
		return err
	}
	list, ok := obj.(*rest.List)
	if !ok {
		return fmt.Errorf("%s listed as %T", gvr, obj)
	}
	var errs []error
	for _, item := range list.Items {
		m, err := meta.Accessor(storage.Unwrap(item))
		if err != nil {
			return err
		}
		if keep[m.GetName()] || !bootstrap.Obsolete(m) {
			continue
		}
		if err := a.c.delete(ctx, gvr, "", m.GetName()); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("%s %s: %w", gvr.Resource, m.GetName(), err))
		}
	}
	return errors.Join(errs...)
}

package core

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cronplane/cronplane/pkg/allocator"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
	"github.com/cronplane/cronplane/pkg/storage"
)

// serviceStorage serves services: the store's verbs but deletecollection,
// which kube does not serve for them, with the cluster IP and node ports
// of a Service taken before it is stored and given back when it is gone.
type serviceStorage struct {
	s     *generic.Store
	alloc *ServiceAllocators
}

var (
	_ rest.Patcher         = (*serviceStorage)(nil)
	_ rest.Lister          = (*serviceStorage)(nil)
	_ rest.Watcher         = (*serviceStorage)(nil)
	_ rest.Creater         = (*serviceStorage)(nil)
	_ rest.GracefulDeleter = (*serviceStorage)(nil)
)

func (s *serviceStorage) New() runtime.Object     { return s.s.New() }
func (s *serviceStorage) NewList() runtime.Object { return s.s.NewList() }
func (s *serviceStorage) NamespaceScoped() bool   { return true }

func (s *serviceStorage) Get(ctx context.Context, namespace, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	return s.s.Get(ctx, namespace, name, opts)
}

func (s *serviceStorage) List(ctx context.Context, namespace string, opts *rest.ListOptions) (runtime.Object, error) {
	return s.s.List(ctx, namespace, opts)
}

func (s *serviceStorage) Watch(ctx context.Context, namespace string, opts *rest.ListOptions) (watch.Interface, error) {
	return s.s.Watch(ctx, namespace, opts)
}

// held is what one write reserved, to confirm or give back.
type held struct {
	namespace, name string
	ips, ports      []string
}

func (s *serviceStorage) release(h *held) {
	ctx := context.Background()
	for _, ip := range h.ips {
		_ = s.alloc.ClusterIPs.Release(ctx, ip, h.namespace, h.name)
	}
	for _, p := range h.ports {
		_ = s.alloc.NodePorts.Release(ctx, p, h.namespace, h.name)
	}
}

func (s *serviceStorage) confirm(ctx context.Context, h *held, uid string) {
	for _, ip := range h.ips {
		_ = s.alloc.ClusterIPs.Confirm(ctx, ip, h.namespace, h.name, uid)
	}
	for _, p := range h.ports {
		_ = s.alloc.NodePorts.Confirm(ctx, p, h.namespace, h.name, uid)
	}
}

// allocate gives svc what it needs and old (nil on create) does not hold:
// a cluster IP, with its IP family and policy, and node ports.
func (s *serviceStorage) allocate(ctx context.Context, svc, old *corev1.Service, h *held, dryRun bool) error {
	normalizeClusterIPs(svc)
	if needsClusterIP(svc) {
		requested := svc.Spec.ClusterIP
		oldIP := ""
		if old != nil && needsClusterIP(old) {
			oldIP = old.Spec.ClusterIP
		}
		if requested == "" || (requested != oldIP && net.ParseIP(requested) != nil) {
			ip, err := s.alloc.ClusterIPs.Reserve(ctx, requested, svc.Namespace, svc.Name, dryRun)
			if err != nil {
				return clusterIPError(svc.Name, requested, s.alloc.ClusterIPRange, err)
			}
			if !dryRun {
				h.ips = append(h.ips, ip)
			}
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs = ip, []string{ip}
		}
	}
	if svc.Spec.Type != corev1.ServiceTypeExternalName && net.ParseIP(svc.Spec.ClusterIP) != nil {
		if len(svc.Spec.IPFamilies) == 0 {
			svc.Spec.IPFamilies = []corev1.IPFamily{ipFamily(svc.Spec.ClusterIP)}
		}
		if svc.Spec.IPFamilyPolicy == nil {
			single := corev1.IPFamilyPolicySingleStack
			svc.Spec.IPFamilyPolicy = &single
		}
	}
	if isHeadless(svc) && svc.Spec.Type == corev1.ServiceTypeClusterIP {
		s.headlessFamilies(svc)
	}
	if err := s.allocateHealthCheck(ctx, svc, old, h, dryRun); err != nil {
		return err
	}
	if !needsNodePorts(svc) {
		return nil
	}
	oldPorts := map[string]bool{}
	if old != nil && needsNodePorts(old) {
		for _, p := range old.Spec.Ports {
			oldPorts[strconv.Itoa(int(p.NodePort))] = true
		}
	}
	for i := range svc.Spec.Ports {
		p := &svc.Spec.Ports[i]
		requested := ""
		if p.NodePort != 0 {
			requested = strconv.Itoa(int(p.NodePort))
			if oldPorts[requested] {
				continue
			}
		}
		port, err := s.alloc.NodePorts.Reserve(ctx, requested, svc.Namespace, svc.Name, dryRun)
		if err != nil {
			return nodePortError(svc.Name, i, p.NodePort, err)
		}
		if !dryRun {
			h.ports = append(h.ports, port)
		}
		n, _ := strconv.Atoi(port)
		p.NodePort = int32(n)
	}
	return nil
}

// allocateHealthCheck gives a LoadBalancer Service with the Local
// external traffic policy its health check node port, from the node
// ports, unless old holds the one it has.
func (s *serviceStorage) allocateHealthCheck(ctx context.Context, svc, old *corev1.Service, h *held, dryRun bool) error {
	if !needsHealthCheck(svc) {
		return nil
	}
	requested := ""
	if p := svc.Spec.HealthCheckNodePort; p != 0 {
		if old != nil && needsHealthCheck(old) && old.Spec.HealthCheckNodePort == p {
			return nil
		}
		requested = strconv.Itoa(int(p))
	}
	port, err := s.alloc.NodePorts.Reserve(ctx, requested, svc.Namespace, svc.Name, dryRun)
	if err != nil {
		if requested == "" {
			return apierrors.NewInternalError(fmt.Errorf("failed to allocate a healthCheckNodePort: %w", err))
		}
		msg := "provided port is already allocated"
		if !errors.Is(err, allocator.ErrAllocated) {
			msg = "provided port is not in the valid range"
		}
		return invalidService(svc.Name, field.Invalid(field.NewPath("spec", "healthCheckNodePort"), svc.Spec.HealthCheckNodePort, msg))
	}
	if !dryRun {
		h.ports = append(h.ports, port)
	}
	n, _ := strconv.Atoi(port)
	svc.Spec.HealthCheckNodePort = int32(n)
	return nil
}

// headlessFamilies gives a headless Service the cluster's family, as kube
// does on a single-stack cluster.
func (s *serviceStorage) headlessFamilies(svc *corev1.Service) {
	svc.Spec.ClusterIPs = []string{corev1.ClusterIPNone}
	family := ipFamily(s.alloc.ClusterIPs.Name(0))
	// Without a selector the endpoints are the client's, of any family.
	if len(svc.Spec.IPFamilies) == 0 {
		svc.Spec.IPFamilies = []corev1.IPFamily{family}
		if len(svc.Spec.Selector) == 0 {
			other := corev1.IPv6Protocol
			if family == corev1.IPv6Protocol {
				other = corev1.IPv4Protocol
			}
			svc.Spec.IPFamilies = append(svc.Spec.IPFamilies, other)
		}
	}
	if svc.Spec.IPFamilyPolicy == nil {
		policy := corev1.IPFamilyPolicySingleStack
		if len(svc.Spec.Selector) == 0 {
			policy = corev1.IPFamilyPolicyRequireDualStack
		}
		svc.Spec.IPFamilyPolicy = &policy
	}
}

func clusterIPError(name, requested string, cidr fmt.Stringer, err error) error {
	if requested == "" {
		return apierrors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP: %w", err))
	}
	msg := "provided IP is already allocated"
	if !errors.Is(err, allocator.ErrAllocated) {
		msg = fmt.Sprintf("the provided IP (%s) is not in the valid range. The range of valid IPs is %s", requested, cidr)
	}
	return invalidService(name, field.Invalid(field.NewPath("spec", "clusterIPs"), []string{requested}, fmt.Sprintf("failed to allocate IP %s: %s", requested, msg)))
}

func nodePortError(name string, i int, requested int32, err error) error {
	if requested == 0 {
		return apierrors.NewInternalError(fmt.Errorf("failed to allocate a nodePort: %w", err))
	}
	if !errors.Is(err, allocator.ErrAllocated) {
		err = errors.New("provided port is not in the valid range")
	} else {
		err = errors.New("provided port is already allocated")
	}
	return invalidService(name, field.Invalid(field.NewPath("spec", "ports").Index(i).Child("nodePort"), requested, err.Error()))
}

var serviceKind = corev1.SchemeGroupVersion.WithKind("Service").GroupKind()

func invalidService(name string, e *field.Error) error {
	return apierrors.NewInvalid(serviceKind, name, field.ErrorList{e})
}

func (s *serviceStorage) Create(ctx context.Context, namespace string, obj runtime.Object, validate rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	svc := obj.(*corev1.Service)
	if svc.Namespace == "" {
		svc.Namespace = namespace
	}
	h := &held{namespace: svc.Namespace, name: svc.Name}
	if err := s.allocate(ctx, svc, nil, h, len(opts.DryRun) > 0); err != nil {
		s.release(h)
		return nil, err
	}
	out, err := s.s.Create(ctx, namespace, obj, validate, opts)
	if err != nil {
		s.release(h)
		return nil, err
	}
	s.confirm(ctx, h, string(storage.Unwrap(out).(*corev1.Service).UID))
	return out, nil
}

// serviceUpdate allocates, inside the store's read-modify-write loop,
// what the updated Service newly needs; tries that lose a conflict give
// back what they took.
type serviceUpdate struct {
	rest.UpdatedObjectInfo
	s      *serviceStorage
	dryRun bool
	h      *held
}

func (u *serviceUpdate) UpdatedObject(ctx context.Context, current runtime.Object) (runtime.Object, error) {
	obj, err := u.UpdatedObjectInfo.UpdatedObject(ctx, current)
	if err != nil {
		return nil, err
	}
	if u.h != nil {
		u.s.release(u.h)
	}
	svc := obj.(*corev1.Service)
	var old *corev1.Service
	if current != nil {
		old = storage.Unwrap(current).(*corev1.Service)
		keepAllocated(svc, old)
	}
	u.h = &held{namespace: svc.Namespace, name: svc.Name}
	if err := u.s.allocate(ctx, svc, old, u.h, u.dryRun); err != nil {
		return nil, err
	}
	return svc, nil
}

func (s *serviceStorage) Update(ctx context.Context, namespace, name string, info rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	var before *corev1.Service
	if cur, err := s.s.Get(ctx, namespace, name, &metav1.GetOptions{}); err == nil {
		before = storage.Unwrap(cur).(*corev1.Service).DeepCopy()
	}
	u := &serviceUpdate{UpdatedObjectInfo: info, s: s, dryRun: len(opts.DryRun) > 0}
	out, created, err := s.s.Update(ctx, namespace, name, u, createValidation, updateValidation, forceAllowCreate, opts)
	if err != nil {
		if u.h != nil {
			s.release(u.h)
		}
		return nil, false, err
	}
	after := storage.Unwrap(out).(*corev1.Service)
	if u.h != nil {
		s.confirm(ctx, u.h, string(after.UID))
	}
	if before != nil && before.UID == after.UID && len(opts.DryRun) == 0 {
		s.releaseDropped(before, after)
	}
	return out, created, nil
}

// releaseDropped gives back what before held and after no longer does.
func (s *serviceStorage) releaseDropped(before, after *corev1.Service) {
	h := &held{namespace: before.Namespace, name: before.Name}
	if needsClusterIP(before) && before.Spec.ClusterIP != after.Spec.ClusterIP {
		h.ips = append(h.ips, before.Spec.ClusterIP)
	}
	kept := map[int32]bool{}
	if needsNodePorts(after) {
		for _, p := range after.Spec.Ports {
			kept[p.NodePort] = true
		}
	}
	if needsHealthCheck(after) {
		kept[after.Spec.HealthCheckNodePort] = true
	}
	dropped := func(p int32) {
		if p != 0 && !kept[p] {
			h.ports = append(h.ports, strconv.Itoa(int(p)))
		}
	}
	for _, p := range before.Spec.Ports {
		dropped(p.NodePort)
	}
	dropped(before.Spec.HealthCheckNodePort)
	s.release(h)
}

func (s *serviceStorage) Delete(ctx context.Context, namespace, name string, validate rest.ValidateObjectFunc, opts *metav1.DeleteOptions) (runtime.Object, bool, error) {
	out, gone, err := s.s.Delete(ctx, namespace, name, validate, opts)
	if err != nil || !gone || len(opts.DryRun) > 0 {
		return out, gone, err
	}
	if svc, ok := storage.Unwrap(out).(*corev1.Service); ok {
		s.releaseDropped(svc, &corev1.Service{})
	}
	return out, gone, nil
}

// serviceOwner tells whether the Service namespace/name with uid still
// holds member, a cluster IP or a node port: what the allocator asks of
// a guard it finds confirmed.
func serviceOwner(get func(ctx context.Context, namespace, name string) (*corev1.Service, error)) allocator.Owner {
	return func(ctx context.Context, namespace, name, uid, member string) (bool, error) {
		svc, err := get(ctx, namespace, name)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if string(svc.UID) != uid {
			return false, nil
		}
		for _, ip := range svc.Spec.ClusterIPs {
			if ip == member {
				return true, nil
			}
		}
		for _, p := range svc.Spec.Ports {
			if strconv.Itoa(int(p.NodePort)) == member {
				return true, nil
			}
		}
		return false, nil
	}
}

// storeGetter reads Services through a store, for serviceOwner.
func storeGetter(s *generic.Store) func(ctx context.Context, namespace, name string) (*corev1.Service, error) {
	return func(ctx context.Context, namespace, name string) (*corev1.Service, error) {
		obj, err := s.Get(ctx, namespace, name, &metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return storage.Unwrap(obj).(*corev1.Service), nil
	}
}

package core

import (
	"fmt"
	"net"
	"net/netip"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/allocator"
	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// ServiceAllocators are the ranges Services take their cluster IPs and
// node ports from.
type ServiceAllocators struct {
	// ClusterIPRange is the network ClusterIPs covers, for messages.
	ClusterIPRange *net.IPNet
	ClusterIPs     *allocator.Range
	NodePorts      *allocator.Range
}

// ServiceResource registers core/v1 services, stored as kube stores them
// (under services/specs), with a status subresource. Cluster IPs and node
// ports are allocated from alloc's ranges when a Service is written and
// released when it is deleted (see serviceStorage).
func ServiceResource(alloc *ServiceAllocators) *generic.Resource {
	gvk := corev1.SchemeGroupVersion.WithKind("Service")
	newFunc := func() runtime.Object { return &corev1.Service{} }
	return &generic.Resource{
		Resource: rest.Resource{
			GroupVersionKind: gvk,
			Plural:           "services",
			Singular:         "service",
			ShortNames:       []string{"svc"},
			Categories:       []string{"all"},
			Namespaced:       true,
			New:              newFunc,
			NewList:          func() runtime.Object { return &corev1.ServiceList{} },
			Table:            serviceTable,
			Default:          defaultService,
		},
		Codec:           codec.Protobuf(gvk, newFunc),
		Strategy:        serviceStrategy{},
		Subresources:    map[string]generic.Strategy{"status": generic.StatusStrategy{}},
		StorageResource: "services/specs",
		NameValidation:  apivalidation.NameIsDNS1035Label,
		Serve: func(s *generic.Store) (rest.Storage, map[string]rest.Storage) {
			// A guard the allocators find confirmed is checked against
			// the Services this store serves.
			owner := serviceOwner(storeGetter(s))
			alloc.ClusterIPs.Owner, alloc.NodePorts.Owner = owner, owner
			return &serviceStorage{s: s, alloc: alloc}, map[string]rest.Storage{"status": s.Subresource("status")}
		},
	}
}

// defaultService applies kube's v1 defaults of a Service.
func defaultService(obj runtime.Object) {
	spec := &obj.(*corev1.Service).Spec
	if spec.SessionAffinity == "" {
		spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	if spec.SessionAffinity == corev1.ServiceAffinityNone {
		spec.SessionAffinityConfig = nil
	}
	if spec.SessionAffinity == corev1.ServiceAffinityClientIP &&
		(spec.SessionAffinityConfig == nil || spec.SessionAffinityConfig.ClientIP == nil || spec.SessionAffinityConfig.ClientIP.TimeoutSeconds == nil) {
		timeout := corev1.DefaultClientIPServiceAffinitySeconds
		spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: &timeout}}
	}
	if spec.Type == "" {
		spec.Type = corev1.ServiceTypeClusterIP
	}
	for i := range spec.Ports {
		p := &spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == intstr.FromInt32(0) || p.TargetPort == intstr.FromString("") {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	if externallyAccessible(obj.(*corev1.Service)) && spec.ExternalTrafficPolicy == "" {
		spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	// An ExternalName Service has no internal traffic policy: kube drops
	// one it once stored when it reads it.
	switch {
	case spec.Type == corev1.ServiceTypeExternalName:
		spec.InternalTrafficPolicy = nil
	case spec.InternalTrafficPolicy == nil:
		cluster := corev1.ServiceInternalTrafficPolicyCluster
		spec.InternalTrafficPolicy = &cluster
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer && spec.AllocateLoadBalancerNodePorts == nil {
		yes := true
		spec.AllocateLoadBalancerNodePorts = &yes
	}
}

type serviceStrategy struct{ generic.DefaultStrategy }

// PrepareForCreate clears the status, as kube does (a Service has no
// generation).
func (serviceStrategy) PrepareForCreate(obj runtime.Object) {
	obj.(*corev1.Service).Status = corev1.ServiceStatus{}
}

// PrepareForUpdate keeps the status, and the allocated values a client
// left out while the Service still needs them, as kube does.
func (serviceStrategy) PrepareForUpdate(obj, old runtime.Object) {
	svc, oldSvc := obj.(*corev1.Service), old.(*corev1.Service)
	svc.Status = oldSvc.Status
	keepAllocated(svc, oldSvc)
	dropTypeDependent(svc, oldSvc)
}

// dropTypeDependent clears, when the type changes, what the old type
// needed and the new one may not have, if the client left it as it was:
// so that a patch of the type alone succeeds, as in kube.
func dropTypeDependent(svc, old *corev1.Service) {
	if needsClusterIP(old) && !needsClusterIP(svc) {
		if reflect.DeepEqual(svc.Spec.ClusterIPs, old.Spec.ClusterIPs) {
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "", nil
		}
		if reflect.DeepEqual(svc.Spec.IPFamilies, old.Spec.IPFamilies) {
			svc.Spec.IPFamilies = nil
		}
		if reflect.DeepEqual(svc.Spec.IPFamilyPolicy, old.Spec.IPFamilyPolicy) {
			svc.Spec.IPFamilyPolicy = nil
		}
	}
	if needsNodePorts(old) && !needsNodePorts(svc) && sameNodePorts(svc, old) {
		for i := range svc.Spec.Ports {
			svc.Spec.Ports[i].NodePort = 0
		}
	}
	if needsHealthCheck(old) && !needsHealthCheck(svc) && svc.Spec.HealthCheckNodePort == old.Spec.HealthCheckNodePort {
		svc.Spec.HealthCheckNodePort = 0
	}
	if old.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.Type != corev1.ServiceTypeLoadBalancer &&
		svc.Spec.AllocateLoadBalancerNodePorts != nil && old.Spec.AllocateLoadBalancerNodePorts != nil &&
		*svc.Spec.AllocateLoadBalancerNodePorts == *old.Spec.AllocateLoadBalancerNodePorts {
		svc.Spec.AllocateLoadBalancerNodePorts = nil
	}
	if externallyAccessible(old) && !externallyAccessible(svc) && svc.Spec.ExternalTrafficPolicy == old.Spec.ExternalTrafficPolicy {
		svc.Spec.ExternalTrafficPolicy = ""
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		svc.Status.LoadBalancer = corev1.LoadBalancerStatus{}
	}
}

// sameNodePorts tells whether every node port of svc is one old has.
func sameNodePorts(svc, old *corev1.Service) bool {
	held := map[int32]bool{}
	for _, p := range old.Spec.Ports {
		held[p.NodePort] = true
	}
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 && !held[p.NodePort] {
			return false
		}
	}
	return true
}

func externallyAccessible(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer || len(svc.Spec.ExternalIPs) > 0
}

func (serviceStrategy) AllowCreateOnUpdate() bool { return true }

// WarningsOnCreate and WarningsOnUpdate are kube's: addresses written in
// forms a later release will refuse, and fields the type ignores.
func (serviceStrategy) WarningsOnCreate(obj runtime.Object) []string {
	return serviceWarnings(obj.(*corev1.Service))
}

func (serviceStrategy) WarningsOnUpdate(obj, _ runtime.Object) []string {
	return serviceWarnings(obj.(*corev1.Service))
}

func serviceWarnings(svc *corev1.Service) []string {
	var warnings []string
	spec := &svc.Spec
	if spec.ClusterIP != "" && spec.ClusterIP != corev1.ClusterIPNone {
		for i, ip := range spec.ClusterIPs {
			warnings = append(warnings, ipWarnings(field.NewPath("spec", "clusterIPs").Index(i), ip)...)
		}
	}
	for i, ip := range spec.ExternalIPs {
		warnings = append(warnings, ipWarnings(field.NewPath("spec", "externalIPs").Index(i), ip)...)
	}
	if spec.LoadBalancerIP != "" {
		warnings = append(warnings, ipWarnings(field.NewPath("spec", "loadBalancerIP"), spec.LoadBalancerIP)...)
	}
	if spec.Type == corev1.ServiceTypeExternalName && len(spec.ExternalIPs) > 0 {
		warnings = append(warnings, `spec.externalIPs is ignored when spec.type is "ExternalName"`)
	}
	if spec.Type != corev1.ServiceTypeExternalName && spec.ExternalName != "" {
		warnings = append(warnings, `spec.externalName is ignored when spec.type is not "ExternalName"`)
	}
	return warnings
}

// ipWarnings warns of an address Go's strict parser refuses (an IPv4
// address with leading zeros) or an IPv6 address not in its canonical form.
func ipWarnings(path *field.Path, address string) []string {
	ip, err := netip.ParseAddr(address)
	if err != nil {
		return []string{fmt.Sprintf("%s: IP address was accepted, but will be invalid in a future Kubernetes release: %v", path, err)}
	}
	if ip.Is6() && ip.String() != address {
		return []string{fmt.Sprintf("%s: IPv6 address %q is not in RFC 5952 canonical format (%q), which may cause controller apply-loops", path, address, ip.String())}
	}
	return nil
}

// ResetsField: the main resource never writes the status.
func (serviceStrategy) ResetsField(name string) bool { return name == "status" }

func (serviceStrategy) Validate(obj runtime.Object) field.ErrorList {
	svc := obj.(*corev1.Service)
	return append(validateKubeFinalizers(&svc.ObjectMeta), validateServiceSpec(svc)...)
}

func (serviceStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	svc, oldSvc := obj.(*corev1.Service), old.(*corev1.Service)
	errs := validateKubeFinalizers(&svc.ObjectMeta)
	if needsClusterIP(oldSvc) && needsClusterIP(svc) || isHeadless(oldSvc) && isHeadless(svc) {
		if svc.Spec.ClusterIP != oldSvc.Spec.ClusterIP {
			errs = append(errs, field.Invalid(field.NewPath("spec", "clusterIPs").Index(0), svc.Spec.ClusterIPs, "may not change once set"))
		}
	}
	if needsHealthCheck(oldSvc) && needsHealthCheck(svc) && svc.Spec.HealthCheckNodePort != oldSvc.Spec.HealthCheckNodePort {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "healthCheckNodePort"), "field is immutable"))
	}
	return append(errs, validateServiceSpec(svc)...)
}

// keepAllocated carries over an update the cluster IPs, IP families and
// node ports the old Service holds and the new one leaves unset.
func keepAllocated(svc, old *corev1.Service) {
	if (needsClusterIP(old) && needsClusterIP(svc)) || (isHeadless(old) && svc.Spec.Type == corev1.ServiceTypeClusterIP) {
		if svc.Spec.ClusterIP == "" && len(svc.Spec.ClusterIPs) == 0 {
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs = old.Spec.ClusterIP, old.Spec.ClusterIPs
		}
		if len(svc.Spec.IPFamilies) == 0 {
			svc.Spec.IPFamilies = old.Spec.IPFamilies
		}
		if svc.Spec.IPFamilyPolicy == nil {
			svc.Spec.IPFamilyPolicy = old.Spec.IPFamilyPolicy
		}
	}
	if needsNodePorts(old) && needsNodePorts(svc) {
		for i := range svc.Spec.Ports {
			p := &svc.Spec.Ports[i]
			if p.NodePort != 0 {
				continue
			}
			for _, o := range old.Spec.Ports {
				if o.Port == p.Port && o.Protocol == p.Protocol && o.NodePort != 0 {
					p.NodePort = o.NodePort
					break
				}
			}
		}
	}
	if needsHealthCheck(old) && needsHealthCheck(svc) && svc.Spec.HealthCheckNodePort == 0 {
		svc.Spec.HealthCheckNodePort = old.Spec.HealthCheckNodePort
	}
	normalizeClusterIPs(svc)
}

// needsHealthCheck tells whether a Service gets a health check node port:
// a LoadBalancer that keeps traffic on the node it arrives at.
func needsHealthCheck(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

// normalizeClusterIPs makes clusterIP and clusterIPs agree when a client
// set only one of them, as kube does before it validates.
func normalizeClusterIPs(svc *corev1.Service) {
	switch {
	case svc.Spec.ClusterIP != "" && len(svc.Spec.ClusterIPs) == 0:
		svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
	case svc.Spec.ClusterIP == "" && len(svc.Spec.ClusterIPs) > 0:
		svc.Spec.ClusterIP = svc.Spec.ClusterIPs[0]
	}
}

func isHeadless(svc *corev1.Service) bool { return svc.Spec.ClusterIP == corev1.ClusterIPNone }

// needsClusterIP tells whether a Service is given a cluster IP.
func needsClusterIP(svc *corev1.Service) bool {
	return svc.Spec.Type != corev1.ServiceTypeExternalName && !isHeadless(svc)
}

// needsNodePorts tells whether a Service's ports are given node ports.
func needsNodePorts(svc *corev1.Service) bool {
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		return true
	case corev1.ServiceTypeLoadBalancer:
		return svc.Spec.AllocateLoadBalancerNodePorts == nil || *svc.Spec.AllocateLoadBalancerNodePorts
	}
	return false
}

var (
	serviceTypes = []string{string(corev1.ServiceTypeClusterIP), string(corev1.ServiceTypeExternalName),
		string(corev1.ServiceTypeLoadBalancer), string(corev1.ServiceTypeNodePort)}
	portProtocols      = []string{string(corev1.ProtocolSCTP), string(corev1.ProtocolTCP), string(corev1.ProtocolUDP)}
	sessionAffinities  = []string{string(corev1.ServiceAffinityClientIP), string(corev1.ServiceAffinityNone)}
	trafficPolicies    = []string{"Cluster", "Local"}
	ipFamilyPolicies   = []string{string(corev1.IPFamilyPolicyPreferDualStack), string(corev1.IPFamilyPolicyRequireDualStack), string(corev1.IPFamilyPolicySingleStack)}
	ipFamilies         = []string{string(corev1.IPv4Protocol), string(corev1.IPv6Protocol)}
	maxClientIPTimeout = int32(86400)
)

func oneOf(v string, values []string) bool {
	for _, s := range values {
		if v == s {
			return true
		}
	}
	return false
}

// validateServiceSpec checks a Service's spec as kube v1.29 does, in its
// order.
func validateServiceSpec(svc *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	spec := &svc.Spec
	specPath := field.NewPath("spec")
	headless := isHeadless(svc)
	if len(spec.Ports) == 0 && !headless && spec.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, field.Required(specPath.Child("ports"), ""))
	}
	switch spec.Type {
	case corev1.ServiceTypeLoadBalancer:
		for i, p := range spec.Ports {
			if p.Port == 10250 {
				errs = append(errs, field.Invalid(specPath.Child("ports").Index(i), p.Port, "may not expose port 10250 externally since it is used by kubelet"))
			}
		}
		if headless {
			errs = append(errs, field.Invalid(specPath.Child("clusterIPs").Index(0), spec.ClusterIPs[0], "may not be set to 'None' for LoadBalancer services"))
		}
	case corev1.ServiceTypeNodePort:
		if headless {
			errs = append(errs, field.Invalid(specPath.Child("clusterIPs").Index(0), spec.ClusterIPs[0], "may not be set to 'None' for NodePort services"))
		}
	case corev1.ServiceTypeExternalName:
		if len(spec.ClusterIPs) > 0 {
			errs = append(errs, field.Forbidden(specPath.Child("clusterIPs"), "may not be set for ExternalName services"))
		}
		if len(spec.IPFamilies) > 0 {
			errs = append(errs, field.Forbidden(specPath.Child("ipFamilies"), "may not be set for ExternalName services"))
		}
		if spec.IPFamilyPolicy != nil {
			errs = append(errs, field.Forbidden(specPath.Child("ipFamilyPolicy"), "may not be set for ExternalName services"))
		}
		if cname := strings.TrimSuffix(spec.ExternalName, "."); cname != "" {
			for _, msg := range validation.IsDNS1123Subdomain(cname) {
				errs = append(errs, field.Invalid(specPath.Child("externalName"), cname, msg))
			}
		} else {
			errs = append(errs, field.Required(specPath.Child("externalName"), ""))
		}
	}
	names := map[string]bool{}
	for i := range spec.Ports {
		errs = append(errs, validateServicePort(&spec.Ports[i], len(spec.Ports) > 1, names, specPath.Child("ports").Index(i))...)
	}
	if spec.Selector != nil {
		errs = append(errs, metavalidation.ValidateLabels(spec.Selector, specPath.Child("selector"))...)
	}
	switch {
	case spec.SessionAffinity == "":
		errs = append(errs, field.Required(specPath.Child("sessionAffinity"), ""))
	case !oneOf(string(spec.SessionAffinity), sessionAffinities):
		errs = append(errs, field.NotSupported(specPath.Child("sessionAffinity"), spec.SessionAffinity, sessionAffinities))
	}
	if spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		cfgPath := specPath.Child("sessionAffinityConfig")
		switch c := spec.SessionAffinityConfig; {
		case c == nil:
			errs = append(errs, field.Required(cfgPath, "when session affinity type is ClientIP"))
		case c.ClientIP == nil:
			errs = append(errs, field.Required(cfgPath.Child("clientIP"), "when session affinity type is ClientIP"))
		case c.ClientIP.TimeoutSeconds == nil:
			errs = append(errs, field.Required(cfgPath.Child("clientIP").Child("timeoutSeconds"), "when session affinity type is ClientIP"))
		case *c.ClientIP.TimeoutSeconds <= 0 || *c.ClientIP.TimeoutSeconds > maxClientIPTimeout:
			errs = append(errs, field.Invalid(cfgPath.Child("clientIP").Child("timeoutSeconds"), *c.ClientIP.TimeoutSeconds,
				fmt.Sprintf("must be greater than 0 and less than %d", maxClientIPTimeout)))
		}
	} else if spec.SessionAffinity == corev1.ServiceAffinityNone && spec.SessionAffinityConfig != nil {
		errs = append(errs, field.Forbidden(specPath.Child("sessionAffinityConfig"), "must not be set when session affinity is None"))
	}
	errs = append(errs, validateClusterIPs(svc)...)
	for i, ip := range spec.ExternalIPs {
		for _, msg := range validation.IsValidIP(ip) {
			errs = append(errs, field.Invalid(specPath.Child("externalIPs").Index(i), ip, msg))
		}
	}
	switch {
	case spec.Type == "":
		errs = append(errs, field.Required(specPath.Child("type"), ""))
	case !oneOf(string(spec.Type), serviceTypes):
		errs = append(errs, field.NotSupported(specPath.Child("type"), spec.Type, serviceTypes))
	}
	if spec.Type == corev1.ServiceTypeClusterIP {
		for i, p := range spec.Ports {
			if p.NodePort != 0 {
				errs = append(errs, field.Forbidden(specPath.Child("ports").Index(i).Child("nodePort"), "may not be used when `type` is 'ClusterIP'"))
			}
		}
	}
	type protoPort struct {
		protocol corev1.Protocol
		port     int32
	}
	nodePorts, ports := map[protoPort]bool{}, map[protoPort]bool{}
	for i, p := range spec.Ports {
		if p.NodePort != 0 {
			k := protoPort{p.Protocol, p.NodePort}
			if nodePorts[k] {
				errs = append(errs, field.Duplicate(specPath.Child("ports").Index(i).Child("nodePort"), p.NodePort))
			}
			nodePorts[k] = true
		}
	}
	for i, p := range spec.Ports {
		k := protoPort{p.Protocol, p.Port}
		if ports[k] {
			errs = append(errs, field.Duplicate(specPath.Child("ports").Index(i), corev1.ServicePort{Protocol: p.Protocol, Port: p.Port}))
		}
		ports[k] = true
	}
	if spec.AllocateLoadBalancerNodePorts != nil && spec.Type != corev1.ServiceTypeLoadBalancer {
		errs = append(errs, field.Forbidden(specPath.Child("allocateLoadBalancerNodePorts"), "may only be used when `type` is 'LoadBalancer'"))
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer && spec.AllocateLoadBalancerNodePorts == nil {
		errs = append(errs, field.Required(field.NewPath("allocateLoadBalancerNodePorts"), ""))
	}
	external := externallyAccessible(svc)
	switch {
	case !external && spec.ExternalTrafficPolicy != "":
		errs = append(errs, field.Invalid(specPath.Child("externalTrafficPolicy"), spec.ExternalTrafficPolicy, "may only be set for externally-accessible services"))
	case external && spec.ExternalTrafficPolicy == "":
		errs = append(errs, field.Required(specPath.Child("externalTrafficPolicy"), ""))
	case external && !oneOf(string(spec.ExternalTrafficPolicy), trafficPolicies):
		errs = append(errs, field.NotSupported(specPath.Child("externalTrafficPolicy"), spec.ExternalTrafficPolicy, trafficPolicies))
	}
	hcPath := specPath.Child("healthCheckNodePort")
	switch {
	case !needsHealthCheck(svc) && spec.HealthCheckNodePort != 0:
		errs = append(errs, field.Invalid(hcPath, spec.HealthCheckNodePort, "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
	case needsHealthCheck(svc) && spec.HealthCheckNodePort == 0:
		errs = append(errs, field.Required(hcPath, ""))
	case needsHealthCheck(svc):
		for _, msg := range validation.IsValidPortNum(int(spec.HealthCheckNodePort)) {
			errs = append(errs, field.Invalid(hcPath, spec.HealthCheckNodePort, msg))
		}
	}
	if p := spec.InternalTrafficPolicy; p == nil {
		if spec.Type != corev1.ServiceTypeExternalName && spec.Type != "" {
			errs = append(errs, field.Required(specPath.Child("internalTrafficPolicy"), ""))
		}
	} else if !oneOf(string(*p), trafficPolicies) {
		errs = append(errs, field.NotSupported(specPath.Child("internalTrafficPolicy"), *p, trafficPolicies))
	}
	return errs
}

func validateServicePort(p *corev1.ServicePort, requireName bool, names map[string]bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if requireName && p.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), ""))
	} else if p.Name != "" {
		for _, msg := range validation.IsDNS1123Label(p.Name) {
			errs = append(errs, field.Invalid(path.Child("name"), p.Name, msg))
		}
		if names[p.Name] {
			errs = append(errs, field.Duplicate(path.Child("name"), p.Name))
		}
		names[p.Name] = true
	}
	for _, msg := range validation.IsValidPortNum(int(p.Port)) {
		errs = append(errs, field.Invalid(path.Child("port"), p.Port, msg))
	}
	switch {
	case p.Protocol == "":
		errs = append(errs, field.Required(path.Child("protocol"), ""))
	case !oneOf(string(p.Protocol), portProtocols):
		errs = append(errs, field.NotSupported(path.Child("protocol"), p.Protocol, portProtocols))
	}
	errs = append(errs, validatePortNumOrName(p.TargetPort, path.Child("targetPort"))...)
	if p.AppProtocol != nil {
		for _, msg := range validation.IsQualifiedName(*p.AppProtocol) {
			errs = append(errs, field.Invalid(path.Child("appProtocol"), *p.AppProtocol, msg))
		}
	}
	return errs
}

// validatePortNumOrName checks a port given as a number or as an IANA
// service name.
func validatePortNumOrName(port intstr.IntOrString, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if port.Type == intstr.Int {
		for _, msg := range validation.IsValidPortNum(port.IntValue()) {
			errs = append(errs, field.Invalid(path, port.IntValue(), msg))
		}
		return errs
	}
	for _, msg := range validation.IsValidPortName(port.StrVal) {
		errs = append(errs, field.Invalid(path, port.StrVal, msg))
	}
	return errs
}

// validateClusterIPs checks clusterIP, clusterIPs and the IP families
// against each other.
func validateClusterIPs(svc *corev1.Service) field.ErrorList {
	spec := &svc.Spec
	if spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	var errs field.ErrorList
	path := field.NewPath("spec", "clusterIPs")
	if spec.ClusterIP != "" {
		if len(spec.ClusterIPs) == 0 {
			errs = append(errs, field.Required(path, ""))
		} else if spec.ClusterIPs[0] != spec.ClusterIP {
			errs = append(errs, field.Invalid(path, spec.ClusterIPs, "first value must match `clusterIP`"))
		}
	} else if len(spec.ClusterIPs) != 0 {
		errs = append(errs, field.Invalid(path, spec.ClusterIPs, "must be empty when `clusterIP` is not specified"))
	}
	seen := map[corev1.IPFamily]bool{}
	for i, f := range spec.IPFamilies {
		if !oneOf(string(f), ipFamilies) {
			errs = append(errs, field.NotSupported(field.NewPath("spec", "ipFamilies").Index(i), f, ipFamilies))
		}
		if seen[f] {
			errs = append(errs, field.Duplicate(field.NewPath("spec", "ipFamilies").Index(i), f))
		}
		seen[f] = true
	}
	if p := spec.IPFamilyPolicy; p != nil && !oneOf(string(*p), ipFamilyPolicies) {
		errs = append(errs, field.NotSupported(field.NewPath("spec", "ipFamilyPolicy"), p, ipFamilyPolicies))
	}
	for i, ip := range spec.ClusterIPs {
		if i == 0 && ip == corev1.ClusterIPNone {
			if len(spec.ClusterIPs) > 1 {
				errs = append(errs, field.Invalid(path, spec.ClusterIPs, "'None' must be the first and only value"))
			}
			continue
		}
		for _, msg := range validation.IsValidIP(ip) {
			errs = append(errs, field.Invalid(path.Index(i), ip, msg))
		}
	}
	if len(spec.ClusterIPs) > 2 {
		errs = append(errs, field.Invalid(path, spec.ClusterIPs, "may only hold up to 2 values"))
	}
	return errs
}

var serviceDoc = corev1.ServiceSpec{}.SwaggerDoc()

var serviceTable = &rest.TableSpec{
	Columns: []metav1.TableColumnDefinition{
		rest.NameColumn,
		{Name: "Type", Type: "string", Description: serviceDoc["type"]},
		{Name: "Cluster-IP", Type: "string", Description: serviceDoc["clusterIP"]},
		{Name: "External-IP", Type: "string", Description: serviceDoc["externalIPs"]},
		{Name: "Port(s)", Type: "string", Description: serviceDoc["ports"]},
		rest.AgeColumn,
		{Name: "Selector", Type: "string", Priority: 1, Description: serviceDoc["selector"]},
	},
	Cells: func(obj runtime.Object, now time.Time) []interface{} {
		svc := obj.(*corev1.Service)
		clusterIP := svc.Spec.ClusterIP
		if len(svc.Spec.ClusterIPs) > 0 {
			clusterIP = strings.Join(svc.Spec.ClusterIPs, ",")
		}
		if clusterIP == "" {
			clusterIP = "<none>"
		}
		return []interface{}{svc.Name, string(svc.Spec.Type), clusterIP, externalIPs(svc), servicePorts(svc.Spec.Ports),
			rest.Age(svc.CreationTimestamp, now), selectorString(svc.Spec.Selector)}
	},
}

// externalIPs is the External-IP cell, as kube prints it.
func externalIPs(svc *corev1.Service) string {
	switch svc.Spec.Type {
	case corev1.ServiceTypeExternalName:
		return svc.Spec.ExternalName
	case corev1.ServiceTypeLoadBalancer:
		var ips []string
		for _, in := range svc.Status.LoadBalancer.Ingress {
			if in.IP != "" {
				ips = append(ips, in.IP)
			} else if in.Hostname != "" {
				ips = append(ips, in.Hostname)
			}
		}
		ips = append(ips, svc.Spec.ExternalIPs...)
		if len(ips) == 0 {
			return "<pending>"
		}
		return strings.Join(ips, ",")
	}
	if len(svc.Spec.ExternalIPs) > 0 {
		return strings.Join(svc.Spec.ExternalIPs, ",")
	}
	return "<none>"
}

func servicePorts(ports []corev1.ServicePort) string {
	if len(ports) == 0 {
		return "<none>"
	}
	out := make([]string, len(ports))
	for i, p := range ports {
		s := strconv.Itoa(int(p.Port))
		if p.NodePort > 0 {
			s += ":" + strconv.Itoa(int(p.NodePort))
		}
		out[i] = s + "/" + string(p.Protocol)
	}
	return strings.Join(out, ",")
}

// selectorString prints a selector map sorted, "<none>" when empty.
func selectorString(sel map[string]string) string {
	if len(sel) == 0 {
		return "<none>"
	}
	parts := make([]string, 0, len(sel))
	for _, k := range sortedKeys(sel) {
		parts = append(parts, k+"="+sel[k])
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// ipFamily is the family of an address.
func ipFamily(ip string) corev1.IPFamily {
	if parsed := net.ParseIP(ip); parsed != nil && parsed.To4() == nil {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}

package core

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// EndpointsResource registers core/v1 endpoints, stored as kube stores
// them (under services/endpoints).
func EndpointsResource() *generic.Resource {
	gvk := corev1.SchemeGroupVersion.WithKind("Endpoints")
	newFunc := func() runtime.Object { return &corev1.Endpoints{} }
	return &generic.Resource{
		Resource: rest.Resource{
			GroupVersionKind: gvk,
			Plural:           "endpoints",
			Singular:         "endpoints",
			ShortNames:       []string{"ep"},
			Namespaced:       true,
			New:              newFunc,
			NewList:          func() runtime.Object { return &corev1.EndpointsList{} },
			Table:            endpointsTable,
			Default:          defaultEndpoints,
		},
		Codec:           codec.Protobuf(gvk, newFunc),
		Strategy:        endpointsStrategy{},
		StorageResource: "services/endpoints",
	}
}

func defaultEndpoints(obj runtime.Object) {
	for i := range obj.(*corev1.Endpoints).Subsets {
		ss := &obj.(*corev1.Endpoints).Subsets[i]
		for k := range ss.Ports {
			if ss.Ports[k].Protocol == "" {
				ss.Ports[k].Protocol = corev1.ProtocolTCP
			}
		}
	}
}

type endpointsStrategy struct{ generic.DefaultStrategy }

func (endpointsStrategy) AllowCreateOnUpdate() bool { return true }

func (endpointsStrategy) Validate(obj runtime.Object) field.ErrorList {
	ep := obj.(*corev1.Endpoints)
	return append(validateKubeFinalizers(&ep.ObjectMeta), validateSubsets(ep.Subsets)...)
}

// ValidateUpdate repeats the metadata checks, as kube's does.
func (endpointsStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	ep := obj.(*corev1.Endpoints)
	errs := validateCoreMetaUpdate(&ep.ObjectMeta, &old.(*corev1.Endpoints).ObjectMeta)
	errs = append(errs, validateCoreMeta(&ep.ObjectMeta)...)
	return append(errs, validateSubsets(ep.Subsets)...)
}

func validateSubsets(subsets []corev1.EndpointSubset) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("subsets")
	for i := range subsets {
		ss := &subsets[i]
		p := path.Index(i)
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			errs = append(errs, field.Required(p, "must specify `addresses` or `notReadyAddresses`"))
		}
		for k := range ss.Addresses {
			errs = append(errs, validateEndpointAddress(&ss.Addresses[k], p.Child("addresses").Index(k))...)
		}
		for k := range ss.NotReadyAddresses {
			errs = append(errs, validateEndpointAddress(&ss.NotReadyAddresses[k], p.Child("notReadyAddresses").Index(k))...)
		}
		for k := range ss.Ports {
			errs = append(errs, validateEndpointPort(&ss.Ports[k], len(ss.Ports) > 1, p.Child("ports").Index(k))...)
		}
	}
	return errs
}

// validateEndpointAddress refuses, as kube does, addresses no client could
// reach from elsewhere: loopback, link-local and unspecified ones.
func validateEndpointAddress(a *corev1.EndpointAddress, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	ipPath := path.Child("ip")
	for _, msg := range validation.IsValidIP(a.IP) {
		errs = append(errs, field.Invalid(ipPath, a.IP, msg))
	}
	if a.Hostname != "" {
		for _, msg := range validation.IsDNS1123Label(a.Hostname) {
			errs = append(errs, field.Invalid(path.Child("hostname"), a.Hostname, msg))
		}
	}
	if a.NodeName != nil {
		for _, msg := range apivalidation.NameIsDNSSubdomain(*a.NodeName, false) {
			errs = append(errs, field.Invalid(path.Child("nodeName"), *a.NodeName, msg))
		}
	}
	ip := net.ParseIP(a.IP)
	switch {
	case ip == nil:
		errs = append(errs, field.Invalid(ipPath, a.IP, "must be a valid IP address"))
	case ip.IsUnspecified():
		errs = append(errs, field.Invalid(ipPath, a.IP, fmt.Sprintf("may not be unspecified (%v)", a.IP)))
	case ip.IsLoopback():
		errs = append(errs, field.Invalid(ipPath, a.IP, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
	case ip.IsLinkLocalUnicast():
		errs = append(errs, field.Invalid(ipPath, a.IP, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
	case ip.IsLinkLocalMulticast():
		errs = append(errs, field.Invalid(ipPath, a.IP, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"))
	}
	return errs
}

func validateEndpointPort(p *corev1.EndpointPort, requireName bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if requireName && p.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), ""))
	} else if p.Name != "" {
		for _, msg := range validation.IsDNS1123Label(p.Name) {
			errs = append(errs, field.Invalid(path.Child("name"), p.Name, msg))
		}
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
	if p.AppProtocol != nil {
		for _, msg := range validation.IsQualifiedName(*p.AppProtocol) {
			errs = append(errs, field.Invalid(path.Child("appProtocol"), *p.AppProtocol, msg))
		}
	}
	return errs
}

// maxEndpointsShown is how many address:port pairs kube's table prints
// before it sums up the rest.
const maxEndpointsShown = 3

var endpointsTable = &rest.TableSpec{
	Columns: []metav1.TableColumnDefinition{
		rest.NameColumn,
		{Name: "Endpoints", Type: "string", Description: corev1.Endpoints{}.SwaggerDoc()["subsets"]},
		rest.AgeColumn,
	},
	Cells: func(obj runtime.Object, now time.Time) []interface{} {
		ep := obj.(*corev1.Endpoints)
		return []interface{}{ep.Name, formatEndpoints(ep.Subsets), rest.Age(ep.CreationTimestamp, now)}
	},
}

// formatEndpoints prints the ready address:port pairs, the first three
// and a count of the rest, "<none>" when there are none.
func formatEndpoints(subsets []corev1.EndpointSubset) string {
	var shown []string
	total := 0
	for _, ss := range subsets {
		if len(ss.Ports) == 0 {
			for _, a := range ss.Addresses {
				if len(shown) < maxEndpointsShown {
					shown = append(shown, a.IP)
				}
				total++
			}
			continue
		}
		for _, p := range ss.Ports {
			for _, a := range ss.Addresses {
				if len(shown) < maxEndpointsShown {
					shown = append(shown, net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
				}
				total++
			}
		}
	}
	out := strings.Join(shown, ",")
	if total > len(shown) {
		out += fmt.Sprintf(" + %d more...", total-len(shown))
	}
	if out == "" {
		return "<none>"
	}
	return out
}

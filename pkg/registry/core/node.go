package core

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"

	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/podspec"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// NodeResource registers core/v1 nodes, cluster-scoped, with their status
// subresource. A node agent registers its node with a status, which kube
// keeps on create; later the status is written through /status.
func NodeResource() *generic.Resource {
	gvk := corev1.SchemeGroupVersion.WithKind("Node")
	newFunc := func() runtime.Object { return &corev1.Node{} }
	return &generic.Resource{
		Resource: rest.Resource{
			GroupVersionKind: gvk,
			Plural:           "nodes",
			Singular:         "node",
			ShortNames:       []string{"no"},
			New:              newFunc,
			NewList:          func() runtime.Object { return &corev1.NodeList{} },
			Table:            nodeTable,
			Default:          defaultNode,
		},
		Codec:        codec.Protobuf(gvk, newFunc),
		Strategy:     nodeStrategy{},
		Subresources: map[string]generic.Strategy{"status": nodeStatusStrategy{}},
		SelectableFields: func(obj runtime.Object) fields.Set {
			return fields.Set{"spec.unschedulable": strconv.FormatBool(obj.(*corev1.Node).Spec.Unschedulable)}
		},
		FieldLabels: func(label string) (string, error) {
			switch label {
			case "metadata.name", "spec.unschedulable":
				return label, nil
			}
			return "", fmt.Errorf("field label not supported: %s", label)
		},
	}
}

// defaultNode applies kube's v1 defaults (allocatable is the capacity
// unless given) and the rewrite of its round trip: podCIDR is the first
// of podCIDRs, and wins when a client sets it apart from the list.
func defaultNode(obj runtime.Object) {
	node := obj.(*corev1.Node)
	if node.Status.Allocatable == nil && node.Status.Capacity != nil {
		node.Status.Allocatable = node.Status.Capacity.DeepCopy()
	}
	spec := &node.Spec
	if spec.PodCIDR != "" && (len(spec.PodCIDRs) == 0 || spec.PodCIDRs[0] != spec.PodCIDR) {
		spec.PodCIDRs = []string{spec.PodCIDR}
	}
	if len(spec.PodCIDRs) > 0 {
		spec.PodCIDR = spec.PodCIDRs[0]
	}
}

// nodeStrategy holds the rules of writes through /nodes: the status is
// kept on update, not on create.
type nodeStrategy struct{ generic.DefaultStrategy }

func (nodeStrategy) ResetsField(name string) bool { return name == "status" }

func (nodeStrategy) PrepareForCreate(obj runtime.Object) { dropNodeConfig(obj.(*corev1.Node), nil) }

func (nodeStrategy) PrepareForUpdate(obj, old runtime.Object) {
	node, oldNode := obj.(*corev1.Node), old.(*corev1.Node)
	node.Status = oldNode.Status
	dropNodeConfig(node, oldNode)
}

// dropNodeConfig drops the dynamic kubelet configuration, whose feature
// v1.29 no longer has, unless the stored node uses it.
//
//nolint:staticcheck // ConfigSource is deprecated; kube still drops it.
func dropNodeConfig(node, old *corev1.Node) {
	if old == nil || old.Spec.ConfigSource == nil {
		node.Spec.ConfigSource = nil
	}
	if old == nil || old.Status.Config == nil {
		node.Status.Config = nil
	}
}

func (nodeStrategy) Validate(obj runtime.Object) field.ErrorList {
	node := obj.(*corev1.Node)
	return append(validateKubeFinalizers(&node.ObjectMeta), validateNode(node)...)
}

// ValidateUpdate checks the node as on create, then the update, as kube
// does (metadata checked once more on the way).
func (nodeStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	node := obj.(*corev1.Node)
	errs := append(validateKubeFinalizers(&node.ObjectMeta), validateNode(node)...)
	return append(errs, validateNodeUpdate(node, old.(*corev1.Node))...)
}

// nodeStatusStrategy holds the rules of writes through nodes/status.
type nodeStatusStrategy struct{ generic.StatusStrategy }

func (s nodeStatusStrategy) PrepareForUpdate(obj, old runtime.Object) {
	s.StatusStrategy.PrepareForUpdate(obj, old)
	dropNodeConfig(obj.(*corev1.Node), old.(*corev1.Node))
}

func (nodeStatusStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	return validateNodeUpdate(obj.(*corev1.Node), old.(*corev1.Node))
}

// validateNode checks what kube checks of any node written: taints (at
// kube's path, under metadata), resource quantities and pod CIDRs.
func validateNode(node *corev1.Node) field.ErrorList {
	errs := validateTaints(node.Spec.Taints, field.NewPath("metadata", "taints"))
	errs = append(errs, validateNodeResources(node)...)
	cidrs := node.Spec.PodCIDRs
	path := field.NewPath("spec", "podCIDRs")
	for i, c := range cidrs {
		if _, _, err := netutils.ParseCIDRSloppy(c); err != nil {
			errs = append(errs, field.Invalid(path.Index(i), cidrs, "must be valid CIDR"))
		}
	}
	if len(cidrs) > 1 {
		dual, err := netutils.IsDualStackCIDRStrings(cidrs)
		if err != nil {
			errs = append(errs, field.InternalError(path, fmt.Errorf("invalid PodCIDRs. failed to check with dual stack with error:%v", err)))
		}
		if !dual || len(cidrs) > 2 {
			errs = append(errs, field.Invalid(path, cidrs, "may specify no more than one CIDR for each IP family"))
		}
		seen := map[string]bool{}
		for i, c := range cidrs {
			if seen[c] {
				errs = append(errs, field.Duplicate(path.Index(i), c))
			}
			seen[c] = true
		}
	}
	return errs
}

// validateNodeUpdate checks what a node update, or a status write, may
// change: pod CIDRs and the provider ID are set once; addresses are
// unique; quantities and taints are checked again.
func validateNodeUpdate(node, old *corev1.Node) field.ErrorList {
	errs := validateCoreMetaUpdate(&node.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validateNodeResources(node)...)
	seen := map[corev1.NodeAddress]bool{}
	for i, a := range node.Status.Addresses {
		if seen[a] {
			errs = append(errs, field.Duplicate(field.NewPath("status", "addresses").Index(i), podspec.InternalValue(a)))
		}
		seen[a] = true
	}
	if oldCIDRs := old.Spec.PodCIDRs; len(oldCIDRs) > 0 {
		changed := field.Forbidden(field.NewPath("spec", "podCIDRs"), `node updates may not change podCIDR except from "" to valid`)
		if len(oldCIDRs) != len(node.Spec.PodCIDRs) {
			errs = append(errs, changed)
		} else {
			for i, c := range oldCIDRs {
				if c != node.Spec.PodCIDRs[i] {
					errs = append(errs, changed)
				}
			}
		}
	}
	if id := old.Spec.ProviderID; id != "" && id != node.Spec.ProviderID {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "providerID"), `node updates may not change providerID except from "" to valid`))
	}
	errs = append(errs, validateTaints(node.Spec.Taints, field.NewPath("metadata", "taints"))...)
	if node.Spec.DoNotUseExternalID != old.Spec.DoNotUseExternalID {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "externalID"), "may not be updated"))
	}
	return errs
}

// validateNodeResources checks the quantities of capacity and
// allocatable, in name order.
func validateNodeResources(node *corev1.Node) field.ErrorList {
	var errs field.ErrorList
	for _, list := range []struct {
		name string
		rl   corev1.ResourceList
	}{{"capacity", node.Status.Capacity}, {"allocatable", node.Status.Allocatable}} {
		names := make([]string, 0, len(list.rl))
		for k := range list.rl {
			names = append(names, string(k))
		}
		sort.Strings(names)
		for _, k := range names {
			errs = append(errs, podspec.ValidateResourceQuantity(k, list.rl[corev1.ResourceName(k)], field.NewPath("status", list.name, k))...)
		}
	}
	return errs
}

var taintEffects = []string{string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule), string(corev1.TaintEffectNoExecute)}

// validateTaints: qualified keys, label values, a known effect, and one
// taint per key and effect.
func validateTaints(taints []corev1.Taint, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[corev1.TaintEffect]map[string]bool{}
	for i, t := range taints {
		p := path.Index(i)
		for _, msg := range validation.IsQualifiedName(t.Key) {
			errs = append(errs, field.Invalid(p.Child("key"), t.Key, msg))
		}
		if msgs := validation.IsValidLabelValue(t.Value); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child("value"), t.Value, strings.Join(msgs, ";")))
		}
		switch t.Effect {
		case "":
			errs = append(errs, field.Required(p.Child("effect"), ""))
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, taintEffects))
		}
		if seen[t.Effect][t.Key] {
			dup := field.Duplicate(p, podspec.InternalValue(t))
			dup.Detail = "taints must be unique by key and effect pair"
			errs = append(errs, dup)
			continue
		}
		if seen[t.Effect] == nil {
			seen[t.Effect] = map[string]bool{}
		}
		seen[t.Effect][t.Key] = true
	}
	return errs
}

var (
	nodeStatusDoc = corev1.NodeStatus{}.SwaggerDoc()
	nodeInfoDoc   = corev1.NodeSystemInfo{}.SwaggerDoc()
)

var nodeTable = &rest.TableSpec{
	Columns: []metav1.TableColumnDefinition{
		rest.NameColumn,
		{Name: "Status", Type: "string", Description: "The status of the node"},
		{Name: "Roles", Type: "string", Description: "The roles of the node"},
		rest.AgeColumn,
		{Name: "Version", Type: "string", Description: nodeInfoDoc["kubeletVersion"]},
		{Name: "Internal-IP", Type: "string", Priority: 1, Description: nodeStatusDoc["addresses"]},
		{Name: "External-IP", Type: "string", Priority: 1, Description: nodeStatusDoc["addresses"]},
		{Name: "OS-Image", Type: "string", Priority: 1, Description: nodeInfoDoc["osImage"]},
		{Name: "Kernel-Version", Type: "string", Priority: 1, Description: nodeInfoDoc["kernelVersion"]},
		{Name: "Container-Runtime", Type: "string", Priority: 1, Description: nodeInfoDoc["containerRuntimeVersion"]},
	},
	Cells: func(obj runtime.Object, now time.Time) []interface{} {
		node := obj.(*corev1.Node)
		info := node.Status.NodeInfo
		unknown := func(s string) string {
			if s == "" {
				return "<unknown>"
			}
			return s
		}
		return []interface{}{node.Name, nodeStatusCell(node), orNone(strings.Join(nodeRoles(node), ",")), rest.Age(node.CreationTimestamp, now), info.KubeletVersion,
			orNone(nodeAddress(node, corev1.NodeInternalIP)), orNone(nodeAddress(node, corev1.NodeExternalIP)),
			unknown(info.OSImage), unknown(info.KernelVersion), unknown(info.ContainerRuntimeVersion)}
	},
}

// nodeStatusCell is Ready, NotReady or Unknown (no Ready condition), with
// SchedulingDisabled for a cordoned node.
func nodeStatusCell(node *corev1.Node) string {
	status := "Unknown"
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			status = "NotReady"
			if c.Status == corev1.ConditionTrue {
				status = "Ready"
			}
		}
	}
	if node.Spec.Unschedulable {
		status += ",SchedulingDisabled"
	}
	return status
}

// nodeRoles are the roles the node's labels name, sorted: the suffixes of
// node-role.kubernetes.io/ labels and the value of kubernetes.io/role.
func nodeRoles(node *corev1.Node) []string {
	set := map[string]bool{}
	for k, v := range node.Labels {
		if role, ok := strings.CutPrefix(k, "node-role.kubernetes.io/"); ok && role != "" {
			set[role] = true
		} else if k == "kubernetes.io/role" && v != "" {
			set[v] = true
		}
	}
	roles := make([]string, 0, len(set))
	for r := range set {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	return roles
}

func nodeAddress(node *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range node.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return ""
}

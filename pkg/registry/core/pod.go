package core

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
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

// PodResource registers core/v1 pods with their status, binding,
// eviction, log and exec subresources; the log is read from the pod's
// node, and an exec proxied to it, through nodes. What a Pod may be created with is pkg/podspec's; what an
// update may change, what a status write may, and when a delete waits for
// the node's agent are the pod's own rules, below.
func PodResource(nodes NodeConnector) *generic.Resource {
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	newFunc := func() runtime.Object { return &corev1.Pod{} }
	return &generic.Resource{
		Resource: rest.Resource{
			GroupVersionKind: gvk,
			Plural:           "pods",
			Singular:         "pod",
			ShortNames:       []string{"po"},
			Categories:       []string{"all"},
			Namespaced:       true,
			New:              newFunc,
			NewList:          func() runtime.Object { return &corev1.PodList{} },
			Table:            podTable,
			Default:          defaultPod,
		},
		Codec:               codec.Protobuf(gvk, newFunc),
		Strategy:            podStrategy{},
		Subresources:        map[string]generic.Strategy{"status": podStatusStrategy{}},
		SelectableFields:    podSelectableFields,
		FieldLabels:         podFieldLabels,
		ReturnDeletedObject: true,
		Serve: func(s *generic.Store) (rest.Storage, map[string]rest.Storage) {
			return s, map[string]rest.Storage{"status": s.Subresource("status"), "binding": &bindingStorage{pods: s}, "eviction": &evictionStorage{pods: s}, "log": &podLogStorage{pods: s, logs: nodes}, "exec": &podExecStorage{pods: s, nodes: nodes}}
		},
	}
}

// defaultPod applies kube's Pod defaults and the rewrite of its round
// trip through the internal version: podIP is the first of podIPs, and a
// client that sets only podIP (or sets it apart from the list) has it
// win, as older clients expect. hostIP and hostIPs are not synced: a
// status write keeps them equal (see podStatusStrategy).
func defaultPod(obj runtime.Object) {
	pod := obj.(*corev1.Pod)
	podspec.DefaultPod(pod)
	st := &pod.Status
	if st.PodIP != "" && (len(st.PodIPs) == 0 || st.PodIPs[0].IP != st.PodIP) {
		st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
	}
	if len(st.PodIPs) > 0 {
		st.PodIP = st.PodIPs[0].IP
	}
}

// podSelectableFields are the fields kube lets a field selector match on
// a Pod, besides its name and namespace.
func podSelectableFields(obj runtime.Object) fields.Set {
	pod := obj.(*corev1.Pod)
	podIP := ""
	if len(pod.Status.PodIPs) > 0 {
		podIP = pod.Status.PodIPs[0].IP
	}
	return fields.Set{
		"spec.nodeName":            pod.Spec.NodeName,
		"spec.restartPolicy":       string(pod.Spec.RestartPolicy),
		"spec.schedulerName":       pod.Spec.SchedulerName,
		"spec.serviceAccountName":  pod.Spec.ServiceAccountName,
		"spec.hostNetwork":         strconv.FormatBool(pod.Spec.HostNetwork),
		"status.phase":             string(pod.Status.Phase),
		"status.podIP":             podIP,
		"status.nominatedNodeName": pod.Status.NominatedNodeName,
		// kube takes a selector on podIPs but has no value for it.
		"status.podIPs": "",
	}
}

// podFieldLabels is kube's field label conversion of v1 Pods, which takes
// spec.host, the old name of spec.nodeName.
func podFieldLabels(label string) (string, error) {
	switch label {
	case "metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName", "spec.hostNetwork",
		"status.phase", "status.podIP", "status.podIPs", "status.nominatedNodeName":
		return label, nil
	case "spec.host":
		return "spec.nodeName", nil
	}
	return "", fmt.Errorf("field label not supported: %s", label)
}

// podStrategy holds the rules of writes through /pods. A Pod has no
// generation in v1.29.
type podStrategy struct{ generic.DefaultStrategy }

// ResetsField: the status is written only through /status.
func (podStrategy) ResetsField(name string) bool { return name == "status" }

// PrepareForCreate starts the status over as kube does: Pending, with the
// pod's QoS class, and the scheduling gates reported in a PodScheduled
// condition.
func (podStrategy) PrepareForCreate(obj runtime.Object) {
	pod := obj.(*corev1.Pod)
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: podQOS(pod)}
	podspec.DropDisabledFields(&pod.Spec, nil)
	if len(pod.Spec.SchedulingGates) > 0 {
		pod.Status.Conditions = []corev1.PodCondition{{
			Type:    corev1.PodScheduled,
			Status:  corev1.ConditionFalse,
			Reason:  corev1.PodReasonSchedulingGated,
			Message: "Scheduling is blocked due to non-empty scheduling gates",
		}}
	}
}

func (podStrategy) PrepareForUpdate(obj, old runtime.Object) {
	pod, oldPod := obj.(*corev1.Pod), old.(*corev1.Pod)
	pod.Status = oldPod.Status
	podspec.DropDisabledFields(&pod.Spec, &oldPod.Spec)
}

func (podStrategy) Validate(obj runtime.Object) field.ErrorList {
	pod := obj.(*corev1.Pod)
	errs := validateKubeFinalizers(&pod.ObjectMeta)
	return append(errs, podspec.ValidatePod(pod, podspec.OptionsFor(nil, nil))...)
}

func (podStrategy) WarningsOnCreate(obj runtime.Object) []string {
	return podspec.PodWarnings(obj.(*corev1.Pod))
}

func (podStrategy) WarningsOnUpdate(obj, _ runtime.Object) []string {
	return podspec.PodWarnings(obj.(*corev1.Pod))
}

// GracePeriod gives a pod on a node the seconds asked for, or its
// terminationGracePeriodSeconds, for its node agent to stop it; a pod on
// no node, or one that has finished, has nothing to stop and goes at once.
func (podStrategy) GracePeriod(obj runtime.Object, requested *int64) int64 {
	pod := obj.(*corev1.Pod)
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return 0
	}
	switch {
	case requested != nil:
		return *requested
	case pod.Spec.TerminationGracePeriodSeconds != nil && *pod.Spec.TerminationGracePeriodSeconds >= 0:
		return *pod.Spec.TerminationGracePeriodSeconds
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		return 1
	}
	return 0
}

// podUpdateForbidden opens kube's error for a change of a Pod's spec
// outside what may change; the difference follows it.
const podUpdateForbidden = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"

// ValidateUpdate checks the Pod as on create (kube checks the metadata
// and the pod's annotations once more), then what an update may change:
// images, a shorter activeDeadlineSeconds, added tolerations, removed
// scheduling gates, and nothing else of the spec. A negative
// terminationGracePeriodSeconds reads as 1 (pkg/podspec's defaults), so
// setting it to 1 changes nothing.
func (podStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	pod, oldPod := obj.(*corev1.Pod), old.(*corev1.Pod)
	opts := podspec.OptionsFor(&oldPod.Spec, &oldPod.ObjectMeta)
	errs := validateCoreMetaUpdate(&pod.ObjectMeta, &oldPod.ObjectMeta)
	errs = append(errs, validateCoreMeta(&pod.ObjectMeta)...)
	errs = append(errs, podspec.ValidatePodForUpdate(pod, opts)...)
	errs = append(errs, validatePodAnnotationUpdates(pod, oldPod, opts)...)
	spec := field.NewPath("spec")
	for _, list := range []struct {
		name    string
		cs, old []corev1.Container
	}{{"containers", pod.Spec.Containers, oldPod.Spec.Containers}, {"initContainers", pod.Spec.InitContainers, oldPod.Spec.InitContainers}} {
		path := spec.Child(list.name)
		if len(list.cs) != len(list.old) {
			return append(errs, field.Forbidden(path, "pod updates may not add or remove containers"))
		}
		for i, c := range list.cs {
			if c.Image == "" {
				errs = append(errs, field.Required(path.Index(i).Child("image"), ""))
			}
			if len(strings.TrimSpace(c.Image)) != len(c.Image) {
				errs = append(errs, field.Invalid(path.Index(i).Child("image"), c.Image, "must not have leading or trailing whitespace"))
			}
		}
	}
	deadline := spec.Child("activeDeadlineSeconds")
	switch d, oldD := pod.Spec.ActiveDeadlineSeconds, oldPod.Spec.ActiveDeadlineSeconds; {
	case d != nil && (*d < 0 || *d > math.MaxInt32):
		return append(errs, field.Invalid(deadline, *d, validation.InclusiveRangeError(0, math.MaxInt32)))
	case d != nil && oldD != nil && *oldD < *d:
		return append(errs, field.Invalid(deadline, *d, "must be less than or equal to previous value"))
	case d == nil && oldD != nil:
		errs = append(errs, field.Invalid(deadline, d, "must not update from a positive integer to nil value"))
	}
	errs = append(errs, validateAddedTolerations(pod.Spec.Tolerations, oldPod.Spec.Tolerations, spec.Child("tolerations"))...)
	errs = append(errs, validateRemovedSchedulingGates(pod.Spec.SchedulingGates, oldPod.Spec.SchedulingGates, spec.Child("schedulingGates"))...)
	if equality.Semantic.DeepEqual(pod.Spec, oldPod.Spec) {
		return errs
	}
	if oldQOS := oldPod.Status.QOSClass; oldQOS != "" && oldQOS != podQOS(pod) {
		errs = append(errs, field.Invalid(field.NewPath("metadata"), pod.Status.QOSClass, "Pod QoS is immutable"))
	}
	// Everything that may change is taken from the old spec; what differs
	// then may not.
	same := pod.Spec.DeepCopy()
	for i := range same.Containers {
		same.Containers[i].Image = oldPod.Spec.Containers[i].Image
	}
	for i := range same.InitContainers {
		same.InitContainers[i].Image = oldPod.Spec.InitContainers[i].Image
	}
	same.ActiveDeadlineSeconds = oldPod.Spec.ActiveDeadlineSeconds
	same.SchedulingGates = oldPod.Spec.SchedulingGates
	same.Tolerations = oldPod.Spec.Tolerations
	if len(oldPod.Spec.SchedulingGates) > 0 {
		// A gated pod may gain node selector terms and node affinity.
		same.NodeSelector = oldPod.Spec.NodeSelector
		same.Affinity = withNodeAffinityOf(same.Affinity, oldPod.Spec.Affinity)
	}
	if !equality.Semantic.DeepEqual(*same, oldPod.Spec) {
		errs = append(errs, field.Forbidden(spec, podUpdateForbidden+"\n"+cmp.Diff(oldPod.Spec, *same)))
	}
	return errs
}

// withNodeAffinityOf returns a with the node affinity of old.
func withNodeAffinityOf(a, old *corev1.Affinity) *corev1.Affinity {
	var oldNode *corev1.NodeAffinity
	if old != nil {
		oldNode = old.NodeAffinity
	}
	if a == nil {
		if oldNode == nil {
			return nil
		}
		return &corev1.Affinity{NodeAffinity: oldNode}
	}
	a = a.DeepCopy()
	a.NodeAffinity = oldNode
	if *a == (corev1.Affinity{}) && old == nil {
		return nil
	}
	return a
}

// validatePodAnnotationUpdates: the mirror pod and AppArmor annotations
// are set once, on create; then the pod's annotations are checked again.
func validatePodAnnotationUpdates(pod, old *corev1.Pod, opts podspec.Options) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("metadata", "annotations")
	fixed := func(k string) bool {
		return k == corev1.MirrorPodAnnotationKey || strings.HasPrefix(k, corev1.AppArmorBetaContainerAnnotationKeyPrefix)
	}
	for _, k := range sortedKeys(old.Annotations) {
		if v, ok := pod.Annotations[k]; (ok && v == old.Annotations[k]) || !fixed(k) {
			continue
		}
		if k == corev1.MirrorPodAnnotationKey {
			errs = append(errs, field.Forbidden(path.Key(k), "may not remove or update mirror pod annotation"))
		} else {
			errs = append(errs, field.Forbidden(path.Key(k), "may not remove or update AppArmor annotations"))
		}
	}
	for _, k := range sortedKeys(pod.Annotations) {
		if _, ok := old.Annotations[k]; ok || !fixed(k) {
			continue
		}
		if k == corev1.MirrorPodAnnotationKey {
			errs = append(errs, field.Forbidden(path.Key(k), "may not add mirror pod annotation"))
		} else {
			errs = append(errs, field.Forbidden(path.Key(k), "may not add AppArmor annotations"))
		}
	}
	return append(errs, podspec.ValidatePodAnnotations(pod.Annotations, &pod.Spec, path, opts)...)
}

// validateAddedTolerations: every old toleration stays, but for its
// tolerationSeconds.
func validateAddedTolerations(tolerations, old []corev1.Toleration, path *field.Path) field.ErrorList {
	for _, o := range old {
		kept := false
		for _, t := range tolerations {
			o.TolerationSeconds = t.TolerationSeconds
			if reflect.DeepEqual(o, t) {
				kept = true
				break
			}
		}
		if !kept {
			return field.ErrorList{field.Forbidden(path, "existing toleration can not be modified except its tolerationSeconds")}
		}
	}
	return podspec.ValidateTolerations(tolerations, path)
}

// validateRemovedSchedulingGates: gates may only go.
func validateRemovedSchedulingGates(gates, old []corev1.PodSchedulingGate, path *field.Path) field.ErrorList {
	had := map[string]bool{}
	for _, g := range old {
		had[g.Name] = true
	}
	var errs field.ErrorList
	for i, g := range gates {
		if !had[g.Name] {
			errs = append(errs, field.Forbidden(path.Index(i).Child("name"), fmt.Sprintf("only deletion is allowed, but found new scheduling gate '%s'", g.Name)))
		}
	}
	return errs
}

// podQOS is the quality of service class kube gives a Pod from the CPU
// and memory requests and limits of its containers: none at all is
// BestEffort; limits on both for every container, equal to the summed
// requests, Guaranteed; anything else Burstable.
func podQOS(pod *corev1.Pod) corev1.PodQOSClass {
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	guaranteed := true
	add := func(sum corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
		total := sum[name]
		total.Add(q)
		sum[name] = total
	}
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range cs {
			limited := 0
			for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if q, ok := c.Resources.Requests[name]; ok && q.Sign() > 0 {
					add(requests, name, q)
				}
				if q, ok := c.Resources.Limits[name]; ok && q.Sign() > 0 {
					add(limits, name, q)
					limited++
				}
			}
			if limited < 2 {
				guaranteed = false
			}
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	for name, req := range requests {
		if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
			guaranteed = false
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

// podStatusStrategy holds the rules of writes through pods/status: the
// spec and owner references stay as stored (old node agents damaged the
// latter), the QoS class is kept when a writer drops it, and the status
// is checked as kube checks it.
type podStatusStrategy struct{ generic.StatusStrategy }

func (s podStatusStrategy) PrepareForUpdate(obj, old runtime.Object) {
	s.StatusStrategy.PrepareForUpdate(obj, old)
	pod, oldPod := obj.(*corev1.Pod), old.(*corev1.Pod)
	pod.OwnerReferences = oldPod.OwnerReferences
	if pod.Status.QOSClass == "" {
		pod.Status.QOSClass = oldPod.Status.QOSClass
	}
}

// systemPodConditions are the condition types of kube's own, which need
// not be qualified names.
var systemPodConditions = map[corev1.PodConditionType]bool{corev1.PodScheduled: true, corev1.PodReady: true, corev1.PodInitialized: true}

// ValidateUpdate checks a status write as kube does: the metadata and
// the pod's annotations, condition types (at kube's path, under
// metadata), the nominated node's name, containers that may not run again
// once terminated, and the pod's and host's IPs.
func (podStatusStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	pod, oldPod := obj.(*corev1.Pod), old.(*corev1.Pod)
	opts := podspec.OptionsFor(&oldPod.Spec, &oldPod.ObjectMeta)
	errs := validateCoreMetaUpdate(&pod.ObjectMeta, &oldPod.ObjectMeta)
	errs = append(errs, validatePodAnnotationUpdates(pod, oldPod, opts)...)
	conditions := field.NewPath("metadata", "conditions")
	for i, c := range pod.Status.Conditions {
		if !systemPodConditions[c.Type] {
			errs = append(errs, validateQualifiedName(string(c.Type), conditions.Index(i).Child("Type"))...)
		}
	}
	status := field.NewPath("status")
	if n := pod.Status.NominatedNodeName; n != "" && n != oldPod.Status.NominatedNodeName {
		for _, msg := range validation.IsDNS1123Subdomain(n) {
			errs = append(errs, field.Invalid(status.Child("nominatedNodeName"), n, msg))
		}
	}
	errs = append(errs, validateTerminatedStay(pod.Status.ContainerStatuses, oldPod.Status.ContainerStatuses, status.Child("containerStatuses"), oldPod.Spec.RestartPolicy, nil)...)
	errs = append(errs, validateTerminatedStay(pod.Status.InitContainerStatuses, oldPod.Status.InitContainerStatuses, status.Child("initContainerStatuses"), oldPod.Spec.RestartPolicy, oldPod.Spec.InitContainers)...)
	errs = append(errs, validateTerminatedStay(pod.Status.EphemeralContainerStatuses, oldPod.Status.EphemeralContainerStatuses, status.Child("ephemeralContainerStatuses"), corev1.RestartPolicyNever, nil)...)
	podIPs := make([]string, len(pod.Status.PodIPs))
	for i, ip := range pod.Status.PodIPs {
		podIPs[i] = ip.IP
	}
	errs = append(errs, validateIPList(podIPs, pod.Status.PodIPs, status.Child("podIPs"))...)
	hostIPs := make([]string, len(pod.Status.HostIPs))
	for i, ip := range pod.Status.HostIPs {
		hostIPs[i] = ip.IP
	}
	if len(hostIPs) > 0 && hostIPs[0] != pod.Status.HostIP {
		errs = append(errs, field.Invalid(status.Child("hostIPs").Index(0).Child("ip"), hostIPs[0], "must be equal to `hostIP`"))
	}
	return append(errs, validateIPList(hostIPs, pod.Status.HostIPs, status.Child("hostIPs"))...)
}

func validateQualifiedName(v string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(v) {
		errs = append(errs, field.Invalid(path, v, msg))
	}
	return errs
}

// validateTerminatedStay refuses to bring back a container that
// terminated and that the restart policy does not restart: none is
// refused under Always; one that failed is not under OnFailure, nor an
// init container that restarts on its own (a sidecar).
func validateTerminatedStay(statuses, old []corev1.ContainerStatus, path *field.Path, policy corev1.RestartPolicy, initContainers []corev1.Container) field.ErrorList {
	if policy == corev1.RestartPolicyAlways {
		return nil
	}
	sidecar := map[string]bool{}
	for _, c := range initContainers {
		sidecar[c.Name] = c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
	}
	var errs field.ErrorList
	for i, o := range old {
		t := o.State.Terminated
		if t == nil || sidecar[o.Name] || (t.ExitCode != 0 && policy == corev1.RestartPolicyOnFailure) {
			continue
		}
		for _, s := range statuses {
			if s.Name == o.Name && s.State.Terminated == nil {
				errs = append(errs, field.Forbidden(path.Index(i).Child("state"), "may not be transitioned to non-terminated state"))
			}
		}
	}
	return errs
}

// validateIPList checks a pod's or host's IPs: each an IP, and more than
// one only as one of each family.
func validateIPList[T any](ips []string, values []T, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ip := range ips {
		for _, msg := range validation.IsValidIP(ip) {
			errs = append(errs, field.Invalid(path.Index(i), ip, msg))
		}
	}
	if len(ips) < 2 {
		return errs
	}
	dual, err := netutils.IsDualStackIPStrings(ips)
	if err != nil {
		errs = append(errs, field.InternalError(path, fmt.Errorf("failed to check for dual stack with error:%v", err)))
	}
	if !dual || len(ips) > 2 {
		errs = append(errs, field.Invalid(path, podspec.InternalValue(values), "may specify no more than one IP for each IP family"))
	}
	seen := map[string]bool{}
	for i, ip := range ips {
		if seen[ip] {
			errs = append(errs, field.Duplicate(path.Index(i), podspec.InternalValue(values[i])))
		}
		seen[ip] = true
	}
	return errs
}

// Package podenv owns how a container's environment is made from its pod,
// as the kubelet makes it: an ordered set of variables where a later
// definition replaces an earlier one in place, the $(VAR) expansion of
// values, command and args, and the resolution of envFrom and env
// (value, fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef) with
// kube's messages, shared by the node agent and the fake node.
package podenv

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

type envVar struct{ name, value string }

// Env is an ordered environment; a later definition of a name replaces
// the earlier value in place, as the runtime sets them.
type Env struct {
	vars  []envVar
	index map[string]int
}

// Set defines name, or replaces its value where it was first defined.
func (e *Env) Set(name, value string) {
	if e.index == nil {
		e.index = map[string]int{}
	}
	if i, ok := e.index[name]; ok {
		e.vars[i].value = value
		return
	}
	e.index[name] = len(e.vars)
	e.vars = append(e.vars, envVar{name, value})
}

// Lookup returns the value of name and whether it is defined.
func (e *Env) Lookup(name string) (string, bool) {
	i, ok := e.index[name]
	if !ok {
		return "", false
	}
	return e.vars[i].value, true
}

// List is the NAME=value list, in the order of first definition.
func (e *Env) List() []string {
	out := make([]string, len(e.vars))
	for i, v := range e.vars {
		out[i] = v.name + "=" + v.value
	}
	return out
}

// ExpandAll expands every string of list against e; nil for an empty list.
func (e *Env) ExpandAll(list []string) []string {
	if len(list) == 0 {
		return nil
	}
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = Expand(s, e.Lookup)
	}
	return out
}

// Expand replaces $(NAME) with the value of a defined NAME and $$ with
// $, leaving references to undefined names as they are, as kube expands
// env values, command and args.
func Expand(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteByte(s[i])
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Resolver resolves a container's envFrom and env.
type Resolver struct {
	// Client reads the ConfigMaps and Secrets the container refers to.
	Client kubernetes.Interface
	// Allocatable is the node's, what a resourceFieldRef to a limit the
	// container does not set gives; nil: 0.
	Allocatable corev1.ResourceList
}

// Resolve adds c's envFrom (keys in order) then its env to env, each
// value expanded against what comes before it.
func (r Resolver) Resolve(ctx context.Context, pod *corev1.Pod, c *corev1.Container, env *Env) error {
	for _, from := range c.EnvFrom {
		data, err := r.source(ctx, pod.Namespace, from)
		if err != nil {
			return err
		}
		for _, k := range slices.Sorted(maps.Keys(data)) {
			env.Set(from.Prefix+k, data[k])
		}
	}
	for _, v := range c.Env {
		if v.ValueFrom == nil {
			env.Set(v.Name, Expand(v.Value, env.Lookup))
			continue
		}
		value, ok, err := r.valueFrom(ctx, pod, c, v.ValueFrom)
		if err != nil {
			return err
		}
		if ok {
			env.Set(v.Name, value)
		}
	}
	return nil
}

func (r Resolver) configMap(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
	if r.Client == nil {
		return nil, fmt.Errorf("configmap %q: the node has no client", name)
	}
	return r.Client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
}

func (r Resolver) secret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	if r.Client == nil {
		return nil, fmt.Errorf("secret %q: the node has no client", name)
	}
	return r.Client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
}

// source reads a ConfigMap or Secret named by envFrom; a missing
// optional one gives nothing.
func (r Resolver) source(ctx context.Context, ns string, from corev1.EnvFromSource) (map[string]string, error) {
	switch {
	case from.ConfigMapRef != nil:
		cm, err := r.configMap(ctx, ns, from.ConfigMapRef.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && from.ConfigMapRef.Optional != nil && *from.ConfigMapRef.Optional {
				return nil, nil
			}
			return nil, err
		}
		return cm.Data, nil
	case from.SecretRef != nil:
		s, err := r.secret(ctx, ns, from.SecretRef.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && from.SecretRef.Optional != nil && *from.SecretRef.Optional {
				return nil, nil
			}
			return nil, err
		}
		out := make(map[string]string, len(s.Data))
		for k, v := range s.Data {
			out[k] = string(v)
		}
		return out, nil
	}
	return nil, nil
}

// valueFrom resolves a valueFrom; ok is false for an optional key or
// object that is missing.
func (r Resolver) valueFrom(ctx context.Context, pod *corev1.Pod, c *corev1.Container, from *corev1.EnvVarSource) (string, bool, error) {
	switch {
	case from.FieldRef != nil:
		v, err := FieldValue(pod, from.FieldRef.FieldPath)
		return v, err == nil, err
	case from.ResourceFieldRef != nil:
		v, err := ResourceValue(pod, c, from.ResourceFieldRef, r.Allocatable)
		return v, err == nil, err
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		optional := ref.Optional != nil && *ref.Optional
		cm, err := r.configMap(ctx, pod.Namespace, ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && optional {
				return "", false, nil
			}
			return "", false, err
		}
		if v, ok := cm.Data[ref.Key]; ok {
			return v, true, nil
		}
		if v, ok := cm.BinaryData[ref.Key]; ok {
			return string(v), true, nil
		}
		if optional {
			return "", false, nil
		}
		return "", false, fmt.Errorf("couldn't find key %s in ConfigMap %s/%s", ref.Key, pod.Namespace, ref.Name)
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		optional := ref.Optional != nil && *ref.Optional
		s, err := r.secret(ctx, pod.Namespace, ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && optional {
				return "", false, nil
			}
			return "", false, err
		}
		if v, ok := s.Data[ref.Key]; ok {
			return string(v), true, nil
		}
		if optional {
			return "", false, nil
		}
		return "", false, fmt.Errorf("couldn't find key %s in Secret %s/%s", ref.Key, pod.Namespace, ref.Name)
	}
	return "", false, nil
}

// FieldValue is the downward API's value of a pod field, for env and
// downwardAPI volumes.
func FieldValue(pod *corev1.Pod, path string) (string, error) {
	if k, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[k], nil
	}
	if k, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[k], nil
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP":
		return pod.Status.HostIP, nil
	case "status.hostIPs":
		var ips []string
		for _, ip := range pod.Status.HostIPs {
			ips = append(ips, ip.IP)
		}
		return strings.Join(ips, ","), nil
	case "status.podIP":
		return pod.Status.PodIP, nil
	case "status.podIPs":
		var ips []string
		for _, ip := range pod.Status.PodIPs {
			ips = append(ips, ip.IP)
		}
		return strings.Join(ips, ","), nil
	}
	return "", fmt.Errorf("unsupported fieldPath: %s", path)
}

// subscript reads the key of field['key'].
func subscript(path, field string) (string, bool) {
	if !strings.HasPrefix(path, field+"['") || !strings.HasSuffix(path, "']") {
		return "", false
	}
	return path[len(field)+2 : len(path)-2], true
}

// formatMap is the downward API's key="value" lines, sorted by key.
func formatMap(m map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "%s=%q\n", k, m[k])
	}
	return b.String()
}

// ResourceValue is a container's limit or request in units of the
// divisor (default 1), rounded up; a limit not set is the node's
// allocatable, a request not set 0.
func ResourceValue(pod *corev1.Pod, c *corev1.Container, ref *corev1.ResourceFieldSelector, allocatable corev1.ResourceList) (string, error) {
	target := c
	if ref.ContainerName != "" {
		target = nil
		for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
			for i := range list {
				if list[i].Name == ref.ContainerName {
					target = &list[i]
				}
			}
		}
		if target == nil {
			return "", fmt.Errorf("container %s not found", ref.ContainerName)
		}
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || kind != "limits" && kind != "requests" {
		return "", fmt.Errorf("unsupported container resource: %v", ref.Resource)
	}
	list := target.Resources.Limits
	if kind == "requests" {
		list = target.Resources.Requests
	}
	q, set := list[corev1.ResourceName(name)]
	if !set && kind == "limits" {
		q = allocatable[corev1.ResourceName(name)]
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if name == string(corev1.ResourceCPU) {
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
}

package nodeagent

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// envVar is one variable of a container's environment.
type envVar struct{ name, value string }

// environment is an ordered environment where a later definition of a
// name replaces the earlier value in place.
type environment struct {
	vars  []envVar
	index map[string]int
}

func (e *environment) set(name, value string) {
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

func (e *environment) lookup(name string) (string, bool) {
	i, ok := e.index[name]
	if !ok {
		return "", false
	}
	return e.vars[i].value, true
}

func envList(e *environment) []string {
	out := make([]string, len(e.vars))
	for i, v := range e.vars {
		out[i] = v.name + "=" + v.value
	}
	return out
}

// expand replaces $(NAME) with the value of a defined NAME and $$ with
// $, leaving references to undefined names as they are, as kube expands
// env values, command and args.
func expand(s string, lookup func(string) (string, bool)) string {
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

func expandAll(list []string, env *environment) []string {
	if len(list) == 0 {
		return nil
	}
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = expand(s, env.lookup)
	}
	return out
}

// containerEnv is c's environment as the kubelet makes it: the
// apiserver's service variables, then envFrom, then env, each value
// expanded against what comes before it.
func (a *Agent) containerEnv(ctx context.Context, pod *corev1.Pod, c *corev1.Container) (*environment, error) {
	env := &environment{}
	if h, p := a.opts.APIServerHost, a.opts.APIServerPort; h != "" {
		port := strconv.Itoa(p)
		url := "tcp://" + joinHostPort(h, port)
		prefix := "KUBERNETES_PORT_" + port + "_TCP"
		for _, kv := range [][2]string{
			{"KUBERNETES_SERVICE_HOST", h}, {"KUBERNETES_SERVICE_PORT", port}, {"KUBERNETES_SERVICE_PORT_HTTPS", port},
			{"KUBERNETES_PORT", url}, {prefix, url}, {prefix + "_PROTO", "tcp"}, {prefix + "_PORT", port}, {prefix + "_ADDR", h},
		} {
			env.set(kv[0], kv[1])
		}
	}
	for _, from := range c.EnvFrom {
		data, err := a.envSource(ctx, pod.Namespace, from)
		if err != nil {
			return nil, err
		}
		for _, k := range sortedKeys(data) {
			env.set(from.Prefix+k, data[k])
		}
	}
	for _, v := range c.Env {
		if v.ValueFrom == nil {
			env.set(v.Name, expand(v.Value, env.lookup))
			continue
		}
		value, ok, err := a.envValueFrom(ctx, pod, c, v.ValueFrom)
		if err != nil {
			return nil, err
		}
		if ok {
			env.set(v.Name, value)
		}
	}
	return env, nil
}

func joinHostPort(h, p string) string {
	if strings.Contains(h, ":") {
		return "[" + h + "]:" + p
	}
	return h + ":" + p
}

// envSource reads a ConfigMap or Secret named by envFrom; a missing
// optional one gives nothing.
func (a *Agent) envSource(ctx context.Context, ns string, from corev1.EnvFromSource) (map[string]string, error) {
	switch {
	case from.ConfigMapRef != nil:
		cm, err := a.client.CoreV1().ConfigMaps(ns).Get(ctx, from.ConfigMapRef.Name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) && from.ConfigMapRef.Optional != nil && *from.ConfigMapRef.Optional {
				return nil, nil
			}
			return nil, err
		}
		return cm.Data, nil
	case from.SecretRef != nil:
		s, err := a.client.CoreV1().Secrets(ns).Get(ctx, from.SecretRef.Name, metav1.GetOptions{})
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

// envValueFrom resolves a valueFrom; ok is false for an optional key or
// object that is missing.
func (a *Agent) envValueFrom(ctx context.Context, pod *corev1.Pod, c *corev1.Container, from *corev1.EnvVarSource) (string, bool, error) {
	switch {
	case from.FieldRef != nil:
		v, err := fieldValue(pod, from.FieldRef.FieldPath)
		return v, err == nil, err
	case from.ResourceFieldRef != nil:
		v, err := a.resourceValue(pod, c, from.ResourceFieldRef)
		return v, err == nil, err
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		optional := ref.Optional != nil && *ref.Optional
		cm, err := a.client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
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
		s, err := a.client.CoreV1().Secrets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
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

// fieldValue is the downward API's value of a pod field.
func fieldValue(pod *corev1.Pod, path string) (string, error) {
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
	for _, k := range sortedKeys(m) {
		fmt.Fprintf(&b, "%s=%q\n", k, m[k])
	}
	return b.String()
}

// resourceValue is a container's limit or request in units of the
// divisor, rounded up; a limit not set is the node's allocatable.
func (a *Agent) resourceValue(pod *corev1.Pod, c *corev1.Container, ref *corev1.ResourceFieldSelector) (string, error) {
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
	if !set {
		q, set = a.allocatable()[corev1.ResourceName(name)]
	}
	if !set && kind == "requests" {
		q = resource.Quantity{}
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

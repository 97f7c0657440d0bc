package nodeagent

import (
	"context"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/cronplane/cronplane/pkg/nodeagent/engine"
	"github.com/cronplane/cronplane/pkg/version"
)

// The kubelet's default hard eviction thresholds, which it takes off the
// capacity to report allocatable.
var evictionMemory = resource.MustParse("100Mi")

// register creates the Node, or takes over the one of the same name, as
// the kubelet registers; it retries until ctx ends.
func (a *Agent) register(ctx context.Context) error {
	return wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		if err := a.registerOnce(ctx); err != nil {
			klog.FromContext(ctx).Info("registering node", "node", a.opts.NodeName, "err", err)
			return false, nil
		}
		return true, nil
	})
}

func (a *Agent) registerOnce(ctx context.Context) error {
	info, err := a.engine.Info(ctx)
	if err != nil {
		return fmt.Errorf("container engine: %w", err)
	}
	a.engineHealthy.Store(true)
	nodes := a.client.CoreV1().Nodes()
	node, err := nodes.Get(ctx, a.opts.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name: a.opts.NodeName,
			// The kubelet leaves attach and detach to the controller.
			Annotations: map[string]string{"volumes.kubernetes.io/controller-managed-attach-detach": "true"},
		}}
		node.Labels = nodeLabels(a.opts.NodeName, info)
		node.Spec.Taints = a.opts.Taints
		node, err = nodes.Create(ctx, node, metav1.CreateOptions{})
	} else if err == nil {
		changed := false
		for k, v := range nodeLabels(a.opts.NodeName, info) {
			if node.Labels[k] != v {
				if node.Labels == nil {
					node.Labels = map[string]string{}
				}
				node.Labels[k], changed = v, true
			}
		}
		if changed {
			node, err = nodes.Update(ctx, node, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return err
	}
	return a.updateNodeStatus(ctx, node, info, true)
}

func (a *Agent) hostname() string {
	if a.opts.Hostname != "" {
		return a.opts.Hostname
	}
	return a.opts.NodeName
}

func nodeLabels(name string, info engine.Info) map[string]string {
	return map[string]string{
		corev1.LabelHostname:      name,
		corev1.LabelOSStable:      info.OS,
		corev1.LabelArchStable:    info.Arch,
		"beta.kubernetes.io/os":   info.OS,
		"beta.kubernetes.io/arch": info.Arch,
	}
}

// nodeStatus is the status the agent reports, conditions keeping their
// transition times from old.
func (a *Agent) nodeStatus(old corev1.NodeStatus, info engine.Info, now metav1.Time) corev1.NodeStatus {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(info.NCPU), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(info.MemTotal, resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(int64(a.opts.MaxPods), resource.DecimalSI),
	}
	allocatable := capacity.DeepCopy()
	mem := allocatable[corev1.ResourceMemory]
	mem.Sub(evictionMemory)
	if mem.Sign() < 0 {
		mem = resource.MustParse("0")
	}
	allocatable[corev1.ResourceMemory] = mem
	s := corev1.NodeStatus{
		Capacity:    capacity,
		Allocatable: allocatable,
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: a.opts.NodeIP},
			{Type: corev1.NodeHostName, Address: a.hostname()},
		},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: a.opts.Port}},
		NodeInfo: corev1.NodeSystemInfo{
			MachineID: old.NodeInfo.MachineID, SystemUUID: old.NodeInfo.SystemUUID, BootID: old.NodeInfo.BootID,
			KernelVersion:           info.KernelVersion,
			OSImage:                 info.OperatingSystem,
			ContainerRuntimeVersion: "docker://" + info.Version,
			KubeletVersion:          version.Info.GitVersion,
			KubeProxyVersion:        version.Info.GitVersion,
			OperatingSystem:         info.OS,
			Architecture:            info.Arch,
		},
		Images: old.Images,
	}
	if a.opts.NodeIP == "" {
		s.Addresses = s.Addresses[1:]
	}
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"}
	if !a.engineHealthy.Load() {
		ready = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", Message: "container runtime is down"}
	}
	conditions := []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
		ready,
	}
	for i := range conditions {
		c := &conditions[i]
		c.LastHeartbeatTime, c.LastTransitionTime = now, now
		for _, o := range old.Conditions {
			if o.Type == c.Type && o.Status == c.Status {
				c.LastTransitionTime = o.LastTransitionTime
			}
		}
	}
	// Conditions other agents own (e.g. NetworkUnavailable) stay.
	for _, o := range old.Conditions {
		switch o.Type {
		case corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeReady:
		default:
			conditions = append(conditions, o)
		}
	}
	s.Conditions = conditions
	a.nodeAllocatable.Store(&allocatable)
	return s
}

// updateNodeStatus writes the node's status when it changed, when force,
// or when StatusReportFrequency passed since the last heartbeat.
func (a *Agent) updateNodeStatus(ctx context.Context, node *corev1.Node, info engine.Info, force bool) error {
	now := metav1.Now()
	s := a.nodeStatus(node.Status, info, now)
	if !force && !a.statusChanged(node.Status, s, now.Time) {
		return nil
	}
	n := node.DeepCopy()
	n.Status = s
	_, err := a.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	return err
}

func (a *Agent) statusChanged(old, s corev1.NodeStatus, now time.Time) bool {
	var lastHeartbeat time.Time
	for _, c := range old.Conditions {
		if c.Type == corev1.NodeReady {
			lastHeartbeat = c.LastHeartbeatTime.Time
		}
	}
	if now.Sub(lastHeartbeat) >= a.opts.StatusReportFrequency {
		return true
	}
	o, n := old.DeepCopy(), s.DeepCopy()
	for _, st := range []*corev1.NodeStatus{o, n} {
		for i := range st.Conditions {
			st.Conditions[i].LastHeartbeatTime = metav1.Time{}
		}
	}
	return !apiequality.Semantic.DeepEqual(o, n)
}

// heartbeat renews the Lease every quarter of its duration and checks
// the node's status every StatusUpdateFrequency, until ctx ends.
func (a *Agent) heartbeat(ctx context.Context) {
	logger := klog.FromContext(ctx)
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := a.renewLease(ctx); err != nil {
			logger.Info("renewing node lease", "err", err)
		}
	}, a.opts.LeaseDuration/4)
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		info, err := a.engine.Info(ctx)
		a.engineHealthy.Store(err == nil)
		node, gerr := a.client.CoreV1().Nodes().Get(ctx, a.opts.NodeName, metav1.GetOptions{})
		if gerr != nil {
			logger.Info("reading node", "err", gerr)
			return
		}
		if err != nil {
			// Keep what was last reported of the machine.
			info = infoFromNode(node)
		}
		if err := a.updateNodeStatus(ctx, node, info, false); err != nil {
			logger.Info("updating node status", "err", err)
		}
	}, a.opts.StatusUpdateFrequency)
}

func infoFromNode(n *corev1.Node) engine.Info {
	i := n.Status.NodeInfo
	return engine.Info{
		Version: strings.TrimPrefix(i.ContainerRuntimeVersion, "docker://"), KernelVersion: i.KernelVersion,
		OperatingSystem: i.OSImage, OS: i.OperatingSystem, Arch: i.Architecture,
		NCPU: int(n.Status.Capacity.Cpu().Value()), MemTotal: n.Status.Capacity.Memory().Value(),
	}
}

func (a *Agent) renewLease(ctx context.Context) error {
	leases := a.client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	lease, err := leases.Get(ctx, a.opts.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: a.opts.NodeName, Namespace: corev1.NamespaceNodeLease},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(a.opts.NodeName),
				LeaseDurationSeconds: ptr.To(int32(a.opts.LeaseDuration / time.Second)),
				RenewTime:            &now,
			},
		}
		if err := a.setLeaseOwner(ctx, lease); err != nil {
			return err
		}
		_, err = leases.Create(ctx, lease, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	lease.Spec.HolderIdentity = ptr.To(a.opts.NodeName)
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(a.opts.LeaseDuration / time.Second))
	lease.Spec.RenewTime = &now
	if len(lease.OwnerReferences) == 0 {
		if err := a.setLeaseOwner(ctx, lease); err != nil {
			return err
		}
	}
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	return err
}

// setLeaseOwner makes the Node own its Lease, so the Lease goes with it.
func (a *Agent) setLeaseOwner(ctx context.Context, lease *coordinationv1.Lease) error {
	node, err := a.client.CoreV1().Nodes().Get(ctx, a.opts.NodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	lease.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}
	return nil
}

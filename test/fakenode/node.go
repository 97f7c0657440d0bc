// Package fakenode plays the kubelet for tests and benchmarks: it registers
// a Node as the kubelet does (capacity, labels, conditions, addresses,
// nodeInfo), keeps its Lease in kube-node-lease renewed and its status
// fresh, and takes the pods bound to it through their lifecycle as the
// kubelet reports it (Pending, Running, Succeeded or Failed, container
// restarts in place, graceful deletion confirmed with a 0-second delete,
// activeDeadlineSeconds), with no container engine: a Runner decides how a
// container "runs", either a fixed outcome or, opt-in, a local process.
package fakenode

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// LeaseNamespace holds the nodes' heartbeats, as on kube.
const LeaseNamespace = "kube-node-lease"

// KubeletVersion is what the node reports in nodeInfo: the release whose
// kubelet it plays.
const KubeletVersion = "v1.29.15"

// Config describes one fake node. Zero fields take the defaults of
// DefaultConfig.
type Config struct {
	Name string
	// CPU, Memory, Pods and EphemeralStorage make the node's capacity;
	// allocatable is capacity less the kubelet's default hard eviction
	// thresholds (memory.available<100Mi, nodefs.available<10%).
	CPU, Memory, EphemeralStorage resource.Quantity
	Pods                          int64
	// KubeletPort is status.daemonEndpoints.kubeletEndpoint.Port.
	KubeletPort int32
	// Address is the node's InternalIP, also the pods' IP: with no
	// network of their own, the pods share the host's.
	Address string
	Labels  map[string]string
	// Taints are registered with the node, as --register-with-taints.
	Taints []corev1.Taint
	// LeaseDuration is the Lease's leaseDurationSeconds; it is renewed
	// every quarter of it (kube: 40 s, renewed every 10 s).
	LeaseDuration time.Duration
	// StatusUpdate is how often the node checks its status (kube: 10 s);
	// it writes it when it changed or StatusReport passed (kube: 5 m).
	StatusUpdate, StatusReport time.Duration
	// RestartBackoff is the first delay before restarting a container
	// that exited again, doubled each time up to MaxRestartBackoff
	// (kube: 10 s and 5 m); the first restart is immediate, as kube's.
	RestartBackoff, MaxRestartBackoff time.Duration
	// Runner runs the containers; nil means every container exits 0 at
	// once.
	Runner Runner
	// Dir holds a directory per pod (work directory, volumes, logs).
	Dir string
}

// DefaultConfig is a node of 4 CPUs, 8Gi of memory and 110 pods with
// kube's timings, running every container to exit code 0 at once.
func DefaultConfig(name string) Config {
	return Config{
		Name: name, CPU: resource.MustParse("4"), Memory: resource.MustParse("8Gi"),
		EphemeralStorage: resource.MustParse("100Gi"), Pods: 110, Address: "127.0.0.1",
		LeaseDuration: 40 * time.Second, StatusUpdate: 10 * time.Second, StatusReport: 5 * time.Minute,
		RestartBackoff: 10 * time.Second, MaxRestartBackoff: 5 * time.Minute,
		Runner: Fixed{}, Dir: "/tmp/fakenode/" + name,
	}
}

func (c Config) complete() Config {
	d := DefaultConfig(c.Name)
	if c.CPU.IsZero() {
		c.CPU = d.CPU
	}
	if c.Memory.IsZero() {
		c.Memory = d.Memory
	}
	if c.EphemeralStorage.IsZero() {
		c.EphemeralStorage = d.EphemeralStorage
	}
	if c.Pods == 0 {
		c.Pods = d.Pods
	}
	if c.Address == "" {
		c.Address = d.Address
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = d.LeaseDuration
	}
	if c.StatusUpdate == 0 {
		c.StatusUpdate = d.StatusUpdate
	}
	if c.StatusReport == 0 {
		c.StatusReport = d.StatusReport
	}
	if c.RestartBackoff == 0 {
		c.RestartBackoff = d.RestartBackoff
	}
	if c.MaxRestartBackoff == 0 {
		c.MaxRestartBackoff = d.MaxRestartBackoff
	}
	if c.Runner == nil {
		c.Runner = d.Runner
	}
	if c.Dir == "" {
		c.Dir = d.Dir
	}
	return c
}

// Node is one running fake node.
type Node struct {
	cfg    Config
	client kubernetes.Interface

	mu      sync.Mutex
	workers map[types.UID]*podWorker
	wg      sync.WaitGroup
	ready   chan struct{}
	stats   struct{ started, succeeded, failed atomic.Int64 }
}

// Stats counts the pods the node started and those it saw end.
type Stats struct{ Started, Succeeded, Failed int64 }

// Stats is what the node did so far.
func (n *Node) Stats() Stats {
	return Stats{Started: n.stats.started.Load(), Succeeded: n.stats.succeeded.Load(), Failed: n.stats.failed.Load()}
}

// New makes a fake node that acts through client.
func New(client kubernetes.Interface, cfg Config) *Node {
	return &Node{cfg: cfg.complete(), client: client, workers: map[types.UID]*podWorker{}, ready: make(chan struct{})}
}

// NewForConfig makes a fake node with a client of config.
func NewForConfig(config *rest.Config, cfg Config) (*Node, error) {
	c := rest.CopyConfig(config)
	if c.UserAgent == "" {
		c.UserAgent = "kubelet/" + KubeletVersion + " (fakenode)"
	}
	client, err := kubernetes.NewForConfig(c)
	if err != nil {
		return nil, err
	}
	return New(client, cfg), nil
}

// Name is the node's name.
func (n *Node) Name() string { return n.cfg.Name }

// PodDir is the pod's directory on the node: its work directory, its
// emptyDir volumes and, under each container's name, a log file per run
// (0.log, 1.log, … as the kubelet keeps them).
func (n *Node) PodDir(pod *corev1.Pod) string {
	return filepath.Join(n.cfg.Dir, "pods", pod.Namespace+"_"+pod.Name+"_"+string(pod.UID))
}

// Ready is closed once the node is registered and watches its pods.
func (n *Node) Ready() <-chan struct{} { return n.ready }

// Run registers the node and serves its pods until ctx ends; then it
// stops the containers it runs (the Node object stays, as a stopped
// kubelet's does).
func (n *Node) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("node", n.cfg.Name)
	ctx = klog.NewContext(ctx, logger)
	if err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		if err := n.register(ctx); err != nil {
			logger.Error(err, "Unable to register node, retrying")
			return false, nil
		}
		return true, nil
	}); err != nil {
		return err
	}
	logger.Info("Node registered")

	factory := informers.NewSharedInformerFactoryWithOptions(n.client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", n.cfg.Name).String()
	}))
	podInformer := factory.Core().V1().Pods().Informer()
	if _, err := podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { n.podChanged(ctx, obj.(*corev1.Pod)) },
		UpdateFunc: func(_, obj interface{}) { n.podChanged(ctx, obj.(*corev1.Pod)) },
		DeleteFunc: func(obj interface{}) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				n.podGone(pod.UID)
			}
		},
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), podInformer.HasSynced) {
		return ctx.Err()
	}
	close(n.ready)

	var loops sync.WaitGroup
	loops.Add(2)
	go func() { defer loops.Done(); n.renewLease(ctx) }()
	go func() { defer loops.Done(); n.updateStatus(ctx) }()
	<-ctx.Done()
	factory.Shutdown()
	loops.Wait()
	n.wg.Wait()
	return nil
}

func (n *Node) podChanged(ctx context.Context, pod *corev1.Pod) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if w, ok := n.workers[pod.UID]; ok {
		w.update(pod)
		return
	}
	terminal := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	if terminal && pod.DeletionTimestamp == nil {
		return
	}
	w := newPodWorker(n, pod)
	n.workers[pod.UID] = w
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		w.run(ctx)
	}()
}

// podGone stops the containers of a pod deleted from the API at once (a
// forced deletion) and forgets it.
func (n *Node) podGone(uid types.UID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if w, ok := n.workers[uid]; ok {
		w.gone()
		delete(n.workers, uid)
	}
}

func (n *Node) capacity() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU: n.cfg.CPU, corev1.ResourceMemory: n.cfg.Memory,
		corev1.ResourcePods: *resource.NewQuantity(n.cfg.Pods, resource.DecimalSI), corev1.ResourceEphemeralStorage: n.cfg.EphemeralStorage,
		"hugepages-1Gi": resource.MustParse("0"), "hugepages-2Mi": resource.MustParse("0"),
	}
}

func (n *Node) allocatable() corev1.ResourceList {
	a := n.capacity()
	mem := n.cfg.Memory.DeepCopy()
	mem.Sub(resource.MustParse("100Mi"))
	a[corev1.ResourceMemory] = mem
	a[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(n.cfg.EphemeralStorage.Value()/10*9, resource.DecimalSI)
	return a
}

func (n *Node) labels() map[string]string {
	l := map[string]string{
		"kubernetes.io/hostname": n.cfg.Name, "kubernetes.io/os": runtime.GOOS, "kubernetes.io/arch": runtime.GOARCH,
		"beta.kubernetes.io/os": runtime.GOOS, "beta.kubernetes.io/arch": runtime.GOARCH,
	}
	for k, v := range n.cfg.Labels {
		l[k] = v
	}
	return l
}

// conditions are the kubelet's four, all healthy; a condition keeps its
// lastTransitionTime while its status stays.
func (n *Node) conditions(old []corev1.NodeCondition, now metav1.Time) []corev1.NodeCondition {
	want := []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"},
	}
	for i := range want {
		want[i].LastHeartbeatTime, want[i].LastTransitionTime = now, now
		for _, o := range old {
			if o.Type == want[i].Type && o.Status == want[i].Status {
				want[i].LastTransitionTime = o.LastTransitionTime
			}
		}
	}
	return want
}

func (n *Node) status(old corev1.NodeStatus, now metav1.Time) corev1.NodeStatus {
	return corev1.NodeStatus{
		Capacity: n.capacity(), Allocatable: n.allocatable(),
		Conditions: n.conditions(old.Conditions, now),
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: n.cfg.Address},
			{Type: corev1.NodeHostName, Address: n.cfg.Name},
		},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: n.cfg.KubeletPort}},
		NodeInfo: corev1.NodeSystemInfo{
			MachineID: machineID(n.cfg.Name), SystemUUID: machineID(n.cfg.Name + "-uuid"), BootID: machineID(n.cfg.Name + "-boot"),
			KernelVersion: "fakenode", OSImage: "cronplane fakenode", ContainerRuntimeVersion: "fakenode://" + KubeletVersion,
			KubeletVersion: KubeletVersion, KubeProxyVersion: KubeletVersion,
			OperatingSystem: runtime.GOOS, Architecture: runtime.GOARCH,
		},
		Images:          old.Images,
		VolumesInUse:    old.VolumesInUse,
		VolumesAttached: old.VolumesAttached,
	}
}

// machineID is a stable 32-hex-digit id derived from s.
func machineID(s string) string {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return fmt.Sprintf("%016x%016x", h, h*31+7)
}

// register creates the Node, or takes over the one of the same name, as
// the kubelet does on start; then writes its status.
func (n *Node) register(ctx context.Context) error {
	nodes := n.client.CoreV1().Nodes()
	now := metav1.Now()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: n.cfg.Name, Labels: n.labels(),
			Annotations: map[string]string{"volumes.kubernetes.io/controller-managed-attach-detach": "true"},
		},
		Spec:   corev1.NodeSpec{Taints: n.cfg.Taints},
		Status: n.status(corev1.NodeStatus{}, now),
	}
	created, err := nodes.Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = nodes.Get(ctx, n.cfg.Name, metav1.GetOptions{})
		if err == nil {
			changed := false
			if created.Labels == nil {
				created.Labels = map[string]string{}
			}
			for k, v := range node.Labels {
				if created.Labels[k] != v {
					created.Labels[k], changed = v, true
				}
			}
			if changed {
				created, err = nodes.Update(ctx, created, metav1.UpdateOptions{})
			}
		}
	}
	if err != nil {
		return err
	}
	created.Status = n.status(created.Status, now)
	_, err = nodes.UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

// updateStatus checks the Node's status every StatusUpdate and writes it
// when it differs from the node's own view (a controller marked it
// Unknown, say) or StatusReport passed since the last heartbeat.
func (n *Node) updateStatus(ctx context.Context) {
	logger := klog.FromContext(ctx)
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		node, err := n.client.CoreV1().Nodes().Get(ctx, n.cfg.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			// Deleted under a running kubelet: it registers again.
			err = n.register(ctx)
		}
		if err != nil {
			if ctx.Err() == nil {
				logger.Error(err, "Unable to update node status")
			}
			return
		}
		now := metav1.Now()
		if !n.statusStale(node, now) {
			return
		}
		node.Status = n.status(node.Status, now)
		if _, err := n.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil {
			logger.Error(err, "Unable to update node status")
		}
	}, n.cfg.StatusUpdate)
}

func (n *Node) statusStale(node *corev1.Node, now metav1.Time) bool {
	want := n.status(node.Status, now)
	if len(node.Status.Conditions) != len(want.Conditions) {
		return true
	}
	for i, c := range node.Status.Conditions {
		w := want.Conditions[i]
		if c.Type != w.Type || c.Status != w.Status || c.Reason != w.Reason || now.Sub(c.LastHeartbeatTime.Time) >= n.cfg.StatusReport {
			return true
		}
	}
	for k, v := range want.Allocatable {
		if got, ok := node.Status.Allocatable[k]; !ok || got.Cmp(v) != 0 {
			return true
		}
	}
	return node.Status.DaemonEndpoints != want.DaemonEndpoints
}

// renewLease keeps the node's Lease, owned by its Node, renewed every
// quarter of its duration.
func (n *Node) renewLease(ctx context.Context) {
	logger := klog.FromContext(ctx)
	leases := n.client.CoordinationV1().Leases(LeaseNamespace)
	seconds := int32(n.cfg.LeaseDuration / time.Second)
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		now := metav1.NewMicroTime(time.Now())
		lease, err := leases.Get(ctx, n.cfg.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			node, nerr := n.client.CoreV1().Nodes().Get(ctx, n.cfg.Name, metav1.GetOptions{})
			if nerr != nil {
				logger.Error(nerr, "Unable to read node for its lease")
				return
			}
			lease = &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: n.cfg.Name, OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
				}}},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(n.cfg.Name), LeaseDurationSeconds: &seconds, RenewTime: &now},
			}
			_, err = leases.Create(ctx, lease, metav1.CreateOptions{})
		} else if err == nil {
			lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds, lease.Spec.RenewTime = ptr.To(n.cfg.Name), &seconds, &now
			_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
		}
		if err != nil && ctx.Err() == nil {
			logger.Error(err, "Unable to renew node lease")
		}
	}, n.cfg.LeaseDuration/4)
}

// Package nodeagent is cronplane's kubelet: it registers a Node, keeps its
// Lease and status fresh, and runs the Pods bound to it as containers of a
// container engine (package engine), writing their status, events and
// terminal deletion back as the kubelet does. Its state is the engine's:
// every container carries its pod's uid, namespace, name, container name
// and attempt in labels, so a restarted agent adopts what runs and never
// runs a container twice that must not restart.
package nodeagent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/pkg/nodeagent/engine"
)

// Options configure an Agent.
type Options struct {
	// NodeName is the Node the agent registers and whose pods it runs.
	NodeName string
	// Hostname is the node's Hostname address, which the apiserver
	// prefers to reach the node's API at; empty: NodeName.
	Hostname string
	// NodeIP is the node's InternalIP, and the pods' hostIP.
	NodeIP string
	// Port is the port the node's HTTPS server listens on, reported as
	// status.daemonEndpoints.kubeletEndpoint.
	Port int32
	// Taints are the node's taints when the agent creates it.
	Taints []corev1.Taint
	// MaxPods is the pods capacity.
	MaxPods int
	// RootDir holds the pods' volumes; in a container, the engine's host
	// must see it at the same path.
	RootDir string
	// Network is the engine network the pods' sandboxes join.
	Network string
	// SandboxImage runs each pod's sandbox, the container holding its
	// network namespace: an image with a POSIX shell (busybox).
	SandboxImage string
	// APIServerHost and APIServerPort are the apiserver address the pods
	// reach it at, given them as KUBERNETES_SERVICE_HOST/PORT.
	APIServerHost string
	APIServerPort int
	// LeaseDuration is the node Lease's duration; the agent renews it
	// every quarter of it, as the kubelet.
	LeaseDuration time.Duration
	// StatusUpdateFrequency is how often the node's status is computed;
	// it is written when it changed or StatusReportFrequency passed.
	StatusUpdateFrequency, StatusReportFrequency time.Duration
	// SyncPeriod is how often the node's containers are listed (the
	// kubelet's PLEG relist): a pod whose containers changed state since
	// the last listing is synced, and so is every pod not settled.
	SyncPeriod time.Duration
	// FullSyncPeriod is how often every pod is synced, settled or not
	// (the kubelet's --sync-frequency).
	FullSyncPeriod time.Duration
	// Workers sync that many pods at once (the kubelet has a worker per
	// pod): 16, where 4 left the engine idle between calls when tens of
	// pods start at once (docs/performance.md, "Pod startup").
	Workers int
	// PreferLocalImages takes an image present locally without pulling
	// it, whatever the pull policy: for a machine without a registry,
	// where the pull policy Always (the default for :latest) can only
	// fail.
	PreferLocalImages bool
}

// DefaultOptions are the kubelet's defaults.
func DefaultOptions() Options {
	return Options{
		Port: 10250, MaxPods: 110, RootDir: "/var/lib/cronplane-node", Network: "bridge", SandboxImage: "busybox",
		APIServerPort: 443, LeaseDuration: 40 * time.Second,
		StatusUpdateFrequency: 10 * time.Second, StatusReportFrequency: 5 * time.Minute,
		SyncPeriod: time.Second, FullSyncPeriod: time.Minute, Workers: 16,
	}
}

// Agent is a running node agent.
type Agent struct {
	opts   Options
	client kubernetes.Interface
	// events posts the agent's events: the kubelet gives them a client
	// of their own, so that a burst of events (three or four per pod
	// started) does not spend the rate limit its status writes wait on.
	events   kubernetes.Interface
	engine   engine.Engine
	recorder record.EventRecorder
	pods     corelisters.PodLister
	synced   cache.InformerSynced
	factory  informers.SharedInformerFactory
	queue    workqueue.RateLimitingInterface
	// backoff is the crash-loop backoff per container, pullBackoff the
	// image pull backoff per image and container, both kube's 10 s
	// doubling to 5 minutes.
	backoff, pullBackoff *flowcontrol.Backoff

	mu sync.Mutex
	// waiting is why a container of a pod is not running, while the
	// agent cannot start it: keyed by pod uid then container name.
	waiting map[types.UID]map[string]*corev1.ContainerStateWaiting
	// terminating are the pods whose containers are being stopped.
	terminating map[types.UID]bool
	// volumesReady are the pods whose volumes are written.
	volumesReady map[types.UID]bool

	// engineHealthy is the last engine check, for the Ready condition.
	engineHealthy atomic.Bool
	// nodeAllocatable is what the node last reported allocatable, for
	// the limits a container does not set.
	nodeAllocatable atomic.Pointer[corev1.ResourceList]

	// relisted is each pod's containers and their states at the last
	// relist, and lastFull when every pod was last queued; only resync
	// touches them.
	relisted map[string]string
	lastFull time.Time
}

func (a *Agent) allocatable() corev1.ResourceList {
	if l := a.nodeAllocatable.Load(); l != nil {
		return *l
	}
	return nil
}

// New makes an Agent talking to the apiserver with client (its events
// too, unless SetEventClient gives them another) and running containers
// on eng.
func New(opts Options, client kubernetes.Interface, eng engine.Engine) (*Agent, error) {
	if opts.NodeName == "" {
		return nil, fmt.Errorf("a node name is required")
	}
	a := &Agent{
		opts: opts, client: client, events: client, engine: eng,
		queue:        workqueue.NewNamedRateLimitingQueue(workqueue.DefaultControllerRateLimiter(), "pods"),
		backoff:      flowcontrol.NewBackOff(10*time.Second, 300*time.Second),
		pullBackoff:  flowcontrol.NewBackOff(10*time.Second, 300*time.Second),
		waiting:      map[types.UID]map[string]*corev1.ContainerStateWaiting{},
		terminating:  map[types.UID]bool{},
		volumesReady: map[types.UID]bool{},
	}
	a.factory = informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", opts.NodeName).String()
	}))
	inf := a.factory.Core().V1().Pods()
	a.pods, a.synced = inf.Lister(), inf.Informer().HasSynced
	_, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    a.enqueue,
		UpdateFunc: a.updated,
		DeleteFunc: a.enqueue,
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// SetEventClient has the agent post its events with client.
func (a *Agent) SetEventClient(client kubernetes.Interface) { a.events = client }

// updated queues a pod whose update the agent acts on: any but one of
// its status alone, which is the agent's own write coming back (the
// kubelet's pod config ignores those too); a sync it would start finds
// nothing to do, at the cost of a listing and an inspection per
// container of an engine the starting pods wait on.
func (a *Agent) updated(old, cur interface{}) {
	o, ok1 := old.(*corev1.Pod)
	c, ok2 := cur.(*corev1.Pod)
	if ok1 && ok2 && statusOnly(o, c) {
		return
	}
	a.enqueue(cur)
}

func statusOnly(old, cur *corev1.Pod) bool {
	return old.UID == cur.UID &&
		equality.Semantic.DeepEqual(old.DeletionTimestamp, cur.DeletionTimestamp) &&
		equality.Semantic.DeepEqual(old.DeletionGracePeriodSeconds, cur.DeletionGracePeriodSeconds) &&
		equality.Semantic.DeepEqual(old.Labels, cur.Labels) &&
		equality.Semantic.DeepEqual(old.Annotations, cur.Annotations) &&
		equality.Semantic.DeepEqual(old.Spec, cur.Spec)
}

func (a *Agent) enqueue(obj interface{}) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		a.queue.Add(key)
	}
}

// Run registers the node and runs its pods until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	events := record.NewBroadcaster()
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: a.events.CoreV1().Events("")})
	defer events.Shutdown()
	a.recorder = events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: a.opts.NodeName})
	defer a.queue.ShutDown()

	if err := a.register(ctx); err != nil {
		return err
	}
	logger.Info("node registered", "node", a.opts.NodeName)
	go a.heartbeat(ctx)

	a.factory.Start(ctx.Done())
	defer a.factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), a.synced) {
		return ctx.Err()
	}
	var wg sync.WaitGroup
	for i := 0; i < a.opts.Workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a.processNext(ctx) {
			}
		}()
	}
	wait.UntilWithContext(ctx, a.resync, a.opts.SyncPeriod)
	a.queue.ShutDown()
	wg.Wait()
	return nil
}

// resync is the agent's relist, as the kubelet's PLEG: one listing of
// the node's containers, without inspecting them, queues the pods whose
// containers changed state since the last one and the pods not settled,
// every pod each FullSyncPeriod, and removes the containers of pods that
// are gone. A pod whose containers run on, status written, costs nothing
// here: with tens of pods, syncing each every second (a listing and an
// inspection per container) loaded the engine the starting pods wait on.
func (a *Agent) resync(ctx context.Context) {
	// The containers and the pods' directories first: every pod they
	// belong to that is still bound is in the pods listed after (a pod is
	// in the cache before a worker makes its sandbox or volumes), so none
	// started meanwhile is taken for an orphan. Listing the pods first
	// once removed the volume directory a worker had just written.
	containers, engineErr := a.engine.ListStates(ctx, a.ownLabels())
	entries, _ := os.ReadDir(filepath.Join(a.opts.RootDir, "pods"))
	pods, err := a.pods.List(labelsEverything())
	if err != nil {
		return
	}
	if engineErr != nil {
		// The engine does not answer: every sync reports it.
		for _, p := range pods {
			a.enqueue(p)
		}
		return
	}
	states := podStates(containers)
	full := time.Since(a.lastFull) >= a.opts.FullSyncPeriod
	if full {
		a.lastFull = time.Now()
	}
	known := make(map[string]bool, len(pods))
	for _, p := range pods {
		uid := string(p.UID)
		known[uid] = true
		if full || states[uid] != a.relisted[uid] || !settled(p) {
			a.enqueue(p)
		}
	}
	a.relisted = states
	a.removeOrphans(ctx, known, containers, entries)
}

// podStates sums up each pod's containers and their states, by pod uid.
func podStates(containers []engine.Container) map[string]string {
	sort.Slice(containers, func(i, j int) bool { return containers[i].ID < containers[j].ID })
	out := map[string]string{}
	for _, c := range containers {
		uid := c.Labels[labelPodUID]
		out[uid] += c.ID + "=" + string(c.State) + ";"
	}
	return out
}

// settled says a pod's status stands while its containers keep their
// states: it is not being deleted, has no deadline to watch, and every
// container was last seen running or terminated, none waiting (to
// start, restart, or pull), with the phase to match.
func settled(pod *corev1.Pod) bool {
	s := &pod.Status
	switch {
	case pod.DeletionTimestamp != nil,
		pod.Spec.ActiveDeadlineSeconds != nil && !isTerminal(s.Phase),
		s.Phase != corev1.PodRunning && !isTerminal(s.Phase),
		len(s.ContainerStatuses) != len(pod.Spec.Containers),
		len(s.InitContainerStatuses) != len(pod.Spec.InitContainers):
		return false
	}
	for _, list := range [][]corev1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses} {
		for _, c := range list {
			if c.State.Waiting != nil {
				return false
			}
		}
	}
	return true
}

func (a *Agent) processNext(ctx context.Context) bool {
	item, quit := a.queue.Get()
	if quit {
		return false
	}
	defer a.queue.Done(item)
	key := item.(string)
	if err := a.syncPod(ctx, key); err != nil {
		// A conflict is a status written from a cache behind our own
		// last write: the next sync sees it.
		if !apierrors.IsConflict(err) {
			klog.FromContext(ctx).Info("syncing pod", "pod", key, "err", err)
		}
		a.queue.AddRateLimited(key)
		return true
	}
	a.queue.Forget(key)
	return true
}

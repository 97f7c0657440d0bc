package nodeagent

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/cronplane/cronplane/pkg/nodeagent/engine"
)

// fakeEngine runs no process: a started container runs until the test
// makes it exit.
type fakeEngine struct {
	mu         sync.Mutex
	images     map[string]bool
	containers map[string]*engine.Container
	specs      map[string]engine.Spec
	pulls      int
	n          int
}

func newFakeEngine(images ...string) *fakeEngine {
	f := &fakeEngine{images: map[string]bool{}, containers: map[string]*engine.Container{}, specs: map[string]engine.Spec{}}
	for _, i := range images {
		f.images[i] = true
	}
	return f
}

func (f *fakeEngine) Info(context.Context) (engine.Info, error) {
	return engine.Info{Version: "20.10.24", NCPU: 2, MemTotal: 4 << 30, OS: "linux", Arch: "amd64"}, nil
}

func (f *fakeEngine) Image(_ context.Context, ref string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.images[ref] {
		return "", engine.ErrNotFound
	}
	return "sha256:" + ref, nil
}

func (f *fakeEngine) Pull(_ context.Context, ref string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pulls++
	return fmt.Errorf("dial tcp: lookup registry: no such host")
}

func (f *fakeEngine) Create(_ context.Context, s engine.Spec) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	id := fmt.Sprintf("c%d", f.n)
	f.containers[id] = &engine.Container{ID: id, Name: s.Name, Image: s.Image, Labels: s.Labels, State: engine.Created, CreatedAt: time.Now()}
	f.specs[id] = s
	return id, nil
}

func (f *fakeEngine) Start(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.containers[id]
	c.State, c.StartedAt = engine.Running, time.Now()
	// A container in its sandbox's network has no address of its own.
	if !strings.HasPrefix(f.specs[id].Network, "container:") {
		c.IP = "172.17.0.9"
	}
	return nil
}

func (f *fakeEngine) Stop(_ context.Context, id string, _ time.Duration) error {
	f.exit(id, 143)
	return nil
}

func (f *fakeEngine) exit(id string, code int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.containers[id]
	c.State, c.ExitCode, c.FinishedAt, c.IP = engine.Exited, code, time.Now(), ""
}

func (f *fakeEngine) Remove(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.containers, id)
	return nil
}

func (f *fakeEngine) List(_ context.Context, labels map[string]string) ([]engine.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []engine.Container
outer:
	for _, c := range f.containers {
		for k, v := range labels {
			if c.Labels[k] != v {
				continue outer
			}
		}
		out = append(out, *c)
	}
	return out, nil
}

func (f *fakeEngine) ListStates(ctx context.Context, labels map[string]string) ([]engine.Container, error) {
	return f.List(ctx, labels)
}

func (f *fakeEngine) Inspect(_ context.Context, id string) (engine.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[id]
	if !ok {
		return engine.Container{}, engine.ErrNotFound
	}
	return *c, nil
}

func (f *fakeEngine) Logs(context.Context, string, bool) (io.ReadCloser, error) {
	return io.NopCloser(strings.NewReader("")), nil
}

// Exec answers on stdout which container ran the command.
func (f *fakeEngine) Exec(_ context.Context, id string, cmd []string, s engine.ExecIO) (int, error) {
	f.mu.Lock()
	c, ok := f.containers[id]
	f.mu.Unlock()
	if !ok || c.State != engine.Running {
		return 0, fmt.Errorf("container %s is not running", id)
	}
	if s.Stdout != nil {
		fmt.Fprintf(s.Stdout, "%s: %s", id, strings.Join(cmd, " "))
	}
	return 0, nil
}

// running are the running containers but sandboxes.
func (f *fakeEngine) running() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for id, c := range f.containers {
		if c.State == engine.Running && !isSandbox(*c) {
			ids = append(ids, id)
		}
	}
	return ids
}

// count counts the containers but sandboxes.
func (f *fakeEngine) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.containers {
		if !isSandbox(*c) {
			n++
		}
	}
	return n
}

// sandboxes are the sandbox containers.
func (f *fakeEngine) sandboxes() []engine.Container {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []engine.Container
	for _, c := range f.containers {
		if isSandbox(*c) {
			out = append(out, *c)
		}
	}
	return out
}

// testAgent is an agent over a fake engine and a fake clientset holding
// objs, its pods cache fed by hand.
func testAgent(t testing.TB, eng engine.Engine, objs ...*corev1.Pod) (*Agent, *fake.Clientset) {
	t.Helper()
	client := fake.NewSimpleClientset()
	opts := DefaultOptions()
	opts.NodeName, opts.NodeIP, opts.RootDir = "node-0", "10.0.0.1", t.TempDir()
	opts.APIServerHost, opts.APIServerPort = "10.0.0.2", 6443
	a, err := New(opts, client, eng)
	if err != nil {
		t.Fatal(err)
	}
	a.recorder = record.NewFakeRecorder(1000)
	for _, p := range objs {
		a.setPod(t, client, p)
	}
	return a, client
}

func (a *Agent) setPod(t testing.TB, client *fake.Clientset, p *corev1.Pod) {
	t.Helper()
	if _, err := client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), p.Namespace, p.Name); err == nil {
		_ = client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), p, p.Namespace)
	} else if err := client.Tracker().Add(p); err != nil {
		t.Fatal(err)
	}
	if err := a.factory.Core().V1().Pods().Informer().GetIndexer().Update(p); err != nil {
		t.Fatal(err)
	}
}

// sync syncs the pod and feeds the status written back into the cache.
func (a *Agent) sync(t *testing.T, client *fake.Clientset, ns, name string) *corev1.Pod {
	t.Helper()
	if err := a.syncPod(context.Background(), ns+"/"+name); err != nil {
		t.Fatal(err)
	}
	p, err := client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	a.setPod(t, client, p)
	return p
}

func jobPod(policy corev1.RestartPolicy, pull corev1.PullPolicy) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1"},
		Spec: corev1.PodSpec{NodeName: "node-0", RestartPolicy: policy, Containers: []corev1.Container{{
			Name: "c", Image: "busybox", ImagePullPolicy: pull, Command: []string{"echo", "$(GREETING)"},
			Env: []corev1.EnvVar{{Name: "GREETING", Value: "hi"}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
		}}},
	}
}

func TestSyncPod_NeverRunsANeverContainerTwice(t *testing.T) {
	eng := newFakeEngine("busybox")
	a, client := testAgent(t, eng, jobPod(corev1.RestartPolicyNever, corev1.PullIfNotPresent))
	p := a.sync(t, client, "ns", "p")
	ids := eng.running()
	if len(ids) != 1 || p.Status.Phase != corev1.PodRunning || p.Status.PodIP != "172.17.0.9" || p.Status.HostIP != "10.0.0.1" {
		t.Fatalf("running %v, status %+v", ids, p.Status)
	}
	sandboxes := eng.sandboxes()
	if len(sandboxes) != 1 || sandboxes[0].State != engine.Running || eng.specs[sandboxes[0].ID].Hostname != "p" {
		t.Fatalf("sandboxes %+v", sandboxes)
	}
	spec := eng.specs[ids[0]]
	if spec.Network != "container:"+sandboxes[0].ID || spec.Hostname != "" {
		t.Fatalf("the container is not in its sandbox's network: %+v", spec)
	}
	if spec.NanoCPUs != 5e8 || spec.Memory != 64<<20 || len(spec.Entrypoint) != 2 || spec.Entrypoint[1] != "hi" ||
		spec.Labels[labelPodUID] != "uid-1" || spec.Labels[labelContainerName] != "c" {
		t.Fatalf("spec %+v", spec)
	}
	eng.exit(ids[0], 1)
	p = a.sync(t, client, "ns", "p")
	// A new agent, as after a restart, adopts the exited container.
	b, _ := testAgent(t, eng)
	b.setPod(t, client, p)
	p = b.sync(t, client, "ns", "p")
	if eng.count() != 1 || p.Status.Phase != corev1.PodFailed || p.Status.ContainerStatuses[0].State.Terminated.Reason != "Error" {
		t.Fatalf("%d containers, status %+v", eng.count(), p.Status)
	}
}

func TestSyncPod_RestartsOnFailureWithCrashLoopBackoff(t *testing.T) {
	eng := newFakeEngine("busybox")
	a, client := testAgent(t, eng, jobPod(corev1.RestartPolicyOnFailure, corev1.PullIfNotPresent))
	a.sync(t, client, "ns", "p")
	eng.exit(eng.running()[0], 2)
	// The first failure restarts at once.
	p := a.sync(t, client, "ns", "p")
	if len(eng.running()) != 1 || p.Status.ContainerStatuses[0].RestartCount != 1 {
		t.Fatalf("status %+v", p.Status.ContainerStatuses)
	}
	eng.exit(eng.running()[0], 2)
	p = a.sync(t, client, "ns", "p")
	s := p.Status.ContainerStatuses[0]
	if len(eng.running()) != 0 || s.State.Waiting == nil || s.State.Waiting.Reason != "CrashLoopBackOff" || s.LastTerminationState.Terminated.ExitCode != 2 {
		t.Fatalf("status %+v", s)
	}
	if eng.count() != 2 {
		t.Fatalf("%d containers kept, want the last two attempts", eng.count())
	}
}

func TestSyncPod_ReportsImagePullFailuresAsTheKubelet(t *testing.T) {
	for _, tc := range []struct {
		pull   corev1.PullPolicy
		prefer bool
		images []string
		want   string
	}{
		{corev1.PullAlways, false, []string{"busybox"}, "ErrImagePull"},
		{corev1.PullIfNotPresent, false, nil, "ErrImagePull"},
		{corev1.PullNever, false, nil, "ErrImageNeverPull"},
		{corev1.PullAlways, true, []string{"busybox"}, ""},
	} {
		t.Run(fmt.Sprintf("%s prefer local %v", tc.pull, tc.prefer), func(t *testing.T) {
			eng := newFakeEngine(tc.images...)
			a, client := testAgent(t, eng, jobPod(corev1.RestartPolicyNever, tc.pull))
			a.opts.PreferLocalImages = tc.prefer
			p := a.sync(t, client, "ns", "p")
			got := ""
			if w := p.Status.ContainerStatuses[0].State.Waiting; w != nil {
				got = w.Reason
			}
			if got != tc.want {
				t.Fatalf("waiting reason %q, want %q", got, tc.want)
			}
			if tc.want == "ErrImagePull" {
				p = a.sync(t, client, "ns", "p")
				if w := p.Status.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "ImagePullBackOff" {
					t.Fatalf("second try %+v", p.Status.ContainerStatuses[0].State)
				}
			}
		})
	}
}

func TestSyncPod_StopsADeletedPodThenDeletesIt(t *testing.T) {
	eng := newFakeEngine("busybox")
	pod := jobPod(corev1.RestartPolicyAlways, corev1.PullIfNotPresent)
	a, client := testAgent(t, eng, pod)
	p := a.sync(t, client, "ns", "p")
	now := metav1.Now()
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, ptrTo(int64(30))
	a.setPod(t, client, p)
	a.sync(t, client, "ns", "p")
	deadline := time.Now().Add(5 * time.Second)
	for len(eng.running()) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	for time.Now().Before(deadline) {
		a.mu.Lock()
		busy := a.terminating[pod.UID]
		a.mu.Unlock()
		if !busy {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if p = a.sync(t, client, "ns", "p"); p != nil {
		t.Fatalf("pod not deleted: %+v", p.Status)
	}
	var deleted bool
	for _, act := range client.Actions() {
		if act.GetVerb() == "delete" {
			deleted = true
		}
	}
	if !deleted {
		t.Fatal("no delete")
	}
}

func ptrTo[T any](v T) *T { return &v }

// queued drains the agent's queue and returns the keys it held.
func (a *Agent) queued() []string {
	var keys []string
	for a.queue.Len() > 0 {
		item, _ := a.queue.Get()
		keys = append(keys, item.(string))
		a.queue.Done(item)
		a.queue.Forget(item)
	}
	sort.Strings(keys)
	return keys
}

func TestResync_QueuesOnlyPodsWhoseContainersChangedOrThatAreNotSettled(t *testing.T) {
	eng := newFakeEngine("busybox")
	pods := map[string]*corev1.Pod{}
	for _, name := range []string{"a", "b", "c"} {
		p := jobPod(corev1.RestartPolicyNever, corev1.PullIfNotPresent)
		p.Name, p.UID = name, types.UID("uid-"+name)
		pods[name] = p
	}
	// c asks for an image the node does not have: it stays waiting.
	pods["c"].Spec.Containers[0].Image = "missing"
	a, client := testAgent(t, eng, pods["a"], pods["b"], pods["c"])
	for _, name := range []string{"a", "b", "c"} {
		a.sync(t, client, "ns", name)
	}
	ctx := context.Background()
	a.resync(ctx)
	if got := a.queued(); !slices.Equal(got, []string{"ns/a", "ns/b", "ns/c"}) {
		t.Fatalf("first pass queued %v, want every pod", got)
	}
	a.resync(ctx)
	if got := a.queued(); !slices.Equal(got, []string{"ns/c"}) {
		t.Fatalf("queued %v with nothing changed, want the waiting pod only", got)
	}
	var running string
	for _, id := range eng.running() {
		if eng.containers[id].Labels[labelPodUID] == "uid-b" {
			running = id
		}
	}
	eng.exit(running, 0)
	a.resync(ctx)
	if got := a.queued(); !slices.Equal(got, []string{"ns/b", "ns/c"}) {
		t.Fatalf("queued %v after b's container exited", got)
	}
	a.lastFull = time.Now().Add(-a.opts.FullSyncPeriod)
	a.resync(ctx)
	if got := a.queued(); !slices.Equal(got, []string{"ns/a", "ns/b", "ns/c"}) {
		t.Fatalf("full pass queued %v, want every pod", got)
	}
}

func TestResync_RemovesOrphansOfItsOwnNodeOnly(t *testing.T) {
	eng := newFakeEngine("busybox")
	a, _ := testAgent(t, eng)
	ctx := context.Background()
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: "ns", UID: "uid-gone"}}
	mine, err := eng.Create(ctx, engine.Spec{Name: "mine", Labels: a.containerLabels(orphan, "c", 0, false)})
	if err != nil {
		t.Fatal(err)
	}
	other := a.containerLabels(orphan, "c", 0, false)
	other[labelNode] = "node-1"
	theirs, err := eng.Create(ctx, engine.Spec{Name: "theirs", Labels: other})
	if err != nil {
		t.Fatal(err)
	}
	a.resync(ctx)
	if _, err := eng.Inspect(ctx, mine); err == nil {
		t.Fatal("the orphan of this node is still there")
	}
	if _, err := eng.Inspect(ctx, theirs); err != nil {
		t.Fatalf("another node's container was removed: %v", err)
	}
}

func TestUpdated_QueuesAPodUnlessOnlyItsStatusChanged(t *testing.T) {
	a, _ := testAgent(t, newFakeEngine("busybox"))
	old := jobPod(corev1.RestartPolicyNever, corev1.PullIfNotPresent)
	now := metav1.Now()
	for _, tc := range []struct {
		name   string
		change func(*corev1.Pod)
		queued bool
	}{
		{"status", func(p *corev1.Pod) { p.Status.Phase, p.ResourceVersion = corev1.PodRunning, "2" }, false},
		{"deletion", func(p *corev1.Pod) { p.DeletionTimestamp = &now }, true},
		{"spec", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptrTo(int64(5)) }, true},
		{"labels", func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur := old.DeepCopy()
			tc.change(cur)
			a.updated(old, cur)
			if got := len(a.queued()) == 1; got != tc.queued {
				t.Fatalf("queued %v, want %v", got, tc.queued)
			}
		})
	}
}

// hookedEngine runs hook once, at the start of the next ListStates:
// what happens while the resync asks the engine for its containers.
type hookedEngine struct {
	*fakeEngine
	hook func()
}

func (h *hookedEngine) ListStates(ctx context.Context, labels map[string]string) ([]engine.Container, error) {
	if hook := h.hook; hook != nil {
		h.hook = nil
		hook()
	}
	return h.fakeEngine.ListStates(ctx, labels)
}

// A pod that arrives while the resync looks for orphans keeps what its
// first sync made: its sandbox, its container and its volume directory.
func TestResync_KeepsWhatAPodArrivingMeanwhileMade(t *testing.T) {
	eng := &hookedEngine{fakeEngine: newFakeEngine("busybox")}
	a, client := testAgent(t, eng)
	p := jobPod(corev1.RestartPolicyNever, corev1.PullIfNotPresent)
	p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	eng.hook = func() {
		a.setPod(t, client, p)
		a.sync(t, client, "ns", "p")
	}
	a.resync(context.Background())
	if eng.count() != 1 || len(eng.sandboxes()) != 1 {
		t.Fatalf("%d containers and %d sandboxes after the resync, want 1 and 1", eng.count(), len(eng.sandboxes()))
	}
	if _, err := os.Stat(a.volumeDir(p, "data")); err != nil {
		t.Fatalf("the pod's emptyDir after the resync: %v", err)
	}
}

func TestSyncPod_PrivilegedContainerRunsPrivileged(t *testing.T) {
	for _, privileged := range []bool{false, true} {
		eng := newFakeEngine("busybox")
		p := jobPod(corev1.RestartPolicyNever, corev1.PullIfNotPresent)
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &privileged}
		a, client := testAgent(t, eng, p)
		a.sync(t, client, "ns", "p")
		ids := eng.running()
		if len(ids) != 1 || eng.specs[ids[0]].Privileged != privileged {
			t.Fatalf("privileged %v: running %v, specs %+v", privileged, ids, eng.specs)
		}
	}
}

func TestSyncPod_HostPathWithoutTypeIsCreatedByTheEngine(t *testing.T) {
	for _, tc := range []struct {
		typ    *corev1.HostPathType
		create bool
	}{{nil, true}, {ptrTo(corev1.HostPathDirectoryOrCreate), true}, {ptrTo(corev1.HostPathDirectory), false}} {
		eng := newFakeEngine("busybox")
		p := jobPod(corev1.RestartPolicyNever, corev1.PullIfNotPresent)
		p.Spec.Volumes = []corev1.Volume{{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/x", Type: tc.typ}}}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "h", MountPath: "/h"}}
		a, client := testAgent(t, eng, p)
		a.sync(t, client, "ns", "p")
		ids := eng.running()
		if len(ids) != 1 || len(eng.specs[ids[0]].Mounts) == 0 || eng.specs[ids[0]].Mounts[0].CreateSource != tc.create {
			t.Fatalf("hostPath type %v: running %v, specs %+v; want CreateSource %v", tc.typ, ids, eng.specs, tc.create)
		}
	}
}

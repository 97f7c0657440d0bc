package job

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
)

var (
	t0       = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	jobsGVR  = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	podsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	jobUID   = types.UID("job-uid")
	selector = map[string]string{batchv1.ControllerUidLabel: string(jobUID)}
)

func ptrTo[T any](v T) *T { return &v }

// newJob is a Job as the apiserver stores it after defaulting.
func newJob(parallelism, completions int32) *batchv1.Job {
	labels := map[string]string{batchv1.ControllerUidLabel: string(jobUID), batchv1.JobNameLabel: "j"}
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", UID: jobUID, ResourceVersion: "1", CreationTimestamp: metav1.NewTime(t0)},
		Spec: batchv1.JobSpec{
			Parallelism:          ptrTo(parallelism),
			BackoffLimit:         ptrTo(int32(6)),
			CompletionMode:       ptrTo(batchv1.NonIndexedCompletion),
			Suspend:              ptrTo(false),
			PodReplacementPolicy: ptrTo(batchv1.TerminatingOrFailed),
			Selector:             &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{"note": "kept"}},
				Spec: corev1.PodSpec{
					RestartPolicy:  corev1.RestartPolicyNever,
					InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
					Containers:     []corev1.Container{{Name: "c", Image: "busybox", Env: []corev1.EnvVar{{Name: "A", Value: "b"}}}},
				},
			},
		},
	}
	if completions >= 0 {
		j.Spec.Completions = ptrTo(completions)
	}
	return j
}

func indexedJob(parallelism, completions int32) *batchv1.Job {
	j := newJob(parallelism, completions)
	j.Spec.CompletionMode = ptrTo(batchv1.IndexedCompletion)
	return j
}

// started is a Job some sync started already.
func started(j *batchv1.Job) *batchv1.Job {
	j.Status.StartTime = &metav1.Time{Time: t0}
	return j
}

type podOpt func(*corev1.Pod)

// newPod is a pod of the Job, tracked, created at t0.
func newPod(name string, phase corev1.PodPhase, opts ...podOpt) *corev1.Pod {
	yes := true
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: types.UID("uid-" + name), ResourceVersion: "1",
			CreationTimestamp: metav1.NewTime(t0),
			Labels:            map[string]string{batchv1.ControllerUidLabel: string(jobUID)},
			Finalizers:        []string{batchv1.JobTrackingFinalizer},
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: jobUID, Controller: &yes}},
		},
		Status: corev1.PodStatus{Phase: phase},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func index(ix int) podOpt {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[batchv1.JobCompletionIndexAnnotation] = strconv.Itoa(ix)
	}
}

func annotated(k, v string) podOpt {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

func ready(p *corev1.Pod) {
	p.Spec.NodeName = "node"
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
}

func untracked(p *corev1.Pod) { p.Finalizers = nil }

func deleting(p *corev1.Pod) {
	p.DeletionTimestamp = &metav1.Time{Time: t0}
}

func orphan(p *corev1.Pod) { p.OwnerReferences = nil; p.Finalizers = nil }

// finishedAt sets the pod's container to have exited with code at t.
func finishedAt(t time.Time, code int32) podOpt {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: code, FinishedAt: metav1.NewTime(t)},
		}}}
	}
}

func withCondition(t corev1.PodConditionType) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue})
	}
}

// fixture is a controller over informers whose caches the test fills by
// hand, a fake clientset that versions Jobs as a server does (a status
// write conditional on its resourceVersion), and a fake clock.
type fixture struct {
	t        *testing.T
	c        *Controller
	client   *fake.Clientset
	clock    *testingclock.FakeClock
	jobs     cache.Indexer
	pods     cache.Indexer
	recorder *record.FakeRecorder

	mu      sync.Mutex
	version int
	created int
}

func newFixture(t *testing.T, job *batchv1.Job, pods ...*corev1.Pod) *fixture {
	t.Helper()
	objs := []runtime.Object{job}
	for _, p := range pods {
		objs = append(objs, p)
	}
	f := &fixture{t: t, client: fake.NewSimpleClientset(objs...), clock: testingclock.NewFakeClock(t0.Add(time.Minute)),
		recorder: record.NewFakeRecorder(1000), version: 100}
	f.client.PrependReactor("create", "pods", f.createPod)
	f.client.PrependReactor("update", "jobs", f.updateJob)
	factory := informers.NewSharedInformerFactory(f.client, 0)
	c, err := New(f.client, factory.Batch().V1().Jobs(), factory.Core().V1().Pods(), f.recorder, f.clock)
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	f.jobs = factory.Batch().V1().Jobs().Informer().GetIndexer()
	f.pods = factory.Core().V1().Pods().Informer().GetIndexer()
	f.cache(job)
	for _, p := range pods {
		f.cache(p)
	}
	t.Cleanup(func() { c.queue.ShutDown(); c.orphans.ShutDown() })
	return f
}

// cache puts obj in its informer's cache.
func (f *fixture) cache(obj runtime.Object) {
	f.t.Helper()
	var err error
	switch o := obj.(type) {
	case *batchv1.Job:
		err = f.jobs.Update(o)
	case *corev1.Pod:
		err = f.pods.Update(o)
	}
	if err != nil {
		f.t.Fatal(err)
	}
}

// createPod names a pod by its generateName, as the apiserver does.
func (f *fixture) createPod(action k8stesting.Action) (bool, runtime.Object, error) {
	pod := action.(k8stesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy()
	f.mu.Lock()
	f.created++
	if pod.Name == "" {
		pod.Name = fmt.Sprintf("%s%05d", pod.GenerateName, f.created)
	}
	pod.UID = types.UID("uid-" + pod.Name)
	f.mu.Unlock()
	if err := f.client.Tracker().Create(podsGVR, pod, pod.Namespace); err != nil {
		return true, nil, err
	}
	return true, pod, nil
}

// updateJob refuses a write from a stale resourceVersion and gives each
// stored version a new one.
func (f *fixture) updateJob(action k8stesting.Action) (bool, runtime.Object, error) {
	job := action.(k8stesting.UpdateAction).GetObject().(*batchv1.Job).DeepCopy()
	cur, err := f.client.Tracker().Get(jobsGVR, job.Namespace, job.Name)
	if err != nil {
		return true, nil, err
	}
	if job.ResourceVersion != cur.(*batchv1.Job).ResourceVersion {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "batch", Resource: "jobs"}, job.Name, fmt.Errorf("the object has been modified"))
	}
	if action.GetSubresource() == "status" {
		stored := cur.(*batchv1.Job).DeepCopy()
		stored.Status = job.Status
		job = stored
	}
	f.mu.Lock()
	f.version++
	job.ResourceVersion = strconv.Itoa(f.version)
	f.mu.Unlock()
	if err := f.client.Tracker().Update(jobsGVR, job, job.Namespace); err != nil {
		return true, nil, err
	}
	return true, job, nil
}

func (f *fixture) sync() error {
	f.t.Helper()
	return f.c.sync(context.Background(), "ns/j")
}

func (f *fixture) mustSync() {
	f.t.Helper()
	if err := f.sync(); err != nil {
		f.t.Fatalf("sync: %v", err)
	}
}

// stored is the Job as the server has it.
func (f *fixture) stored() *batchv1.Job {
	f.t.Helper()
	obj, err := f.client.Tracker().Get(jobsGVR, "ns", "j")
	if err != nil {
		f.t.Fatal(err)
	}
	return obj.(*batchv1.Job)
}

// storedPods are the pods the server has, by name.
func (f *fixture) storedPods() []*corev1.Pod {
	f.t.Helper()
	objs, err := f.client.Tracker().List(podsGVR, schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, "ns")
	if err != nil {
		f.t.Fatal(err)
	}
	var out []*corev1.Pod
	for i := range objs.(*corev1.PodList).Items {
		out = append(out, &objs.(*corev1.PodList).Items[i])
	}
	sort.Slice(out, func(i, k int) bool { return out[i].Name < out[k].Name })
	return out
}

// createdPods are the pods the syncs created, in order.
func (f *fixture) createdPods() []*corev1.Pod {
	var out []*corev1.Pod
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "create" && a.GetResource() == podsGVR {
			out = append(out, a.(k8stesting.CreateAction).GetObject().(*corev1.Pod))
		}
	}
	return out
}

// calls lists the requests made, as "verb resource[/subresource] [name]".
func (f *fixture) calls() []string {
	var out []string
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		s := a.GetVerb() + " " + a.GetResource().Resource
		if sub := a.GetSubresource(); sub != "" {
			s += "/" + sub
		}
		switch a := a.(type) {
		case k8stesting.DeleteAction:
			s += " " + a.GetName()
		case k8stesting.PatchAction:
			s += " " + a.GetName()
		case k8stesting.GetAction:
			s += " " + a.GetName()
		}
		out = append(out, s)
	}
	return out
}

// statusWrites are the statuses the syncs wrote, in order.
func (f *fixture) statusWrites() []batchv1.JobStatus {
	var out []batchv1.JobStatus
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			out = append(out, a.(k8stesting.UpdateAction).GetObject().(*batchv1.Job).Status)
		}
	}
	return out
}

// events drains the recorded events as "Type Reason Message".
func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func (f *fixture) reasons() []string {
	var out []string
	for _, e := range f.events() {
		out = append(out, strings.SplitN(e, " ", 3)[1])
	}
	return out
}

// reset forgets the requests made so far.
func (f *fixture) reset() { f.client.ClearActions() }

func conditionOf(job *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	return findCondition(job.Status.Conditions, t)
}

func count(ss []string, prefix string) int {
	n := 0
	for _, s := range ss {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}

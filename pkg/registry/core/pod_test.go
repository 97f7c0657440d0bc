package core

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

func newPod() *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", ResourceVersion: "5"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	PodResource(nil).Default(pod)
	podStrategy{}.PrepareForCreate(pod)
	return pod
}

// firstLines keeps the first line of each error: kube's message for a
// forbidden spec change goes on with a difference of its internal types.
func firstLines(errs []string) []string {
	for i, e := range errs {
		errs[i], _, _ = strings.Cut(e, "\n")
	}
	return errs
}

const forbiddenSpecChange = "spec: Forbidden: " + podUpdateForbidden

// The messages are those kube-apiserver v1.29 answered for the same
// updates.
func TestPodValidateUpdate_OnlyWhatKubeLetsChange(t *testing.T) {
	seconds := func(v int64) *int64 { return &v }
	cases := []struct {
		name   string
		old    func(*corev1.Pod)
		mutate func(*corev1.Pod)
		want   []string
	}{
		{"labels", nil, func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} }, nil},
		{"image", nil, func(p *corev1.Pod) { p.Spec.Containers[0].Image = "busybox:2" }, nil},
		{"image removed", nil, func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" }, []string{
			"spec.containers[0].image: Required value", "spec.containers[0].image: Required value"}},
		{"container added", nil, func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, p.Spec.Containers[0]) },
			[]string{`spec.containers[1].name: Duplicate value: "c"`, "spec.containers: Forbidden: pod updates may not add or remove containers"}},
		{"deadline set", nil, func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = seconds(100) }, nil},
		{"deadline shortened", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = seconds(100) },
			func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = seconds(50) }, nil},
		{"deadline lengthened", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = seconds(100) },
			func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = seconds(200) },
			[]string{"spec.activeDeadlineSeconds: Invalid value: 200: must be less than or equal to previous value"}},
		{"deadline removed", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = seconds(100) },
			func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = nil },
			[]string{`spec.activeDeadlineSeconds: Invalid value: "null": must not update from a positive integer to nil value`}},
		{"toleration added", nil, func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "a", Operator: corev1.TolerationOpExists}}
		}, nil},
		{"toleration replaced", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "a", Operator: corev1.TolerationOpExists}}
		},
			func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: "b", Operator: corev1.TolerationOpExists}}
			},
			[]string{"spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"}},
		{"scheduling gate added", nil, func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "g"}} },
			[]string{"spec.schedulingGates[0].name: Forbidden: only deletion is allowed, but found new scheduling gate 'g'"}},
		{"scheduling gate removed", func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "g"}} },
			func(p *corev1.Pod) { p.Spec.SchedulingGates = nil }, nil},
		{"gated pod gains a node selector", func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "g"}} },
			func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "a"} }, nil},
		{"restart policy", nil, func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyNever }, []string{forbiddenSpecChange}},
		{"grace period", nil, func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = seconds(1) }, []string{forbiddenSpecChange}},
		{"mirror annotation added", nil, func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} }, []string{
			`metadata.annotations[kubernetes.io/config.mirror]: Invalid value: "x": must set spec.nodeName if mirror pod annotation is set`,
			`metadata.annotations[kubernetes.io/config.mirror]: Forbidden: may not add mirror pod annotation`,
			`metadata.annotations[kubernetes.io/config.mirror]: Invalid value: "x": must set spec.nodeName if mirror pod annotation is set`,
		}},
		{"resources change the QoS class", nil, func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		}, []string{`metadata: Invalid value: "BestEffort": Pod QoS is immutable`, forbiddenSpecChange}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := newPod()
			if tc.old != nil {
				tc.old(old)
			}
			pod := old.DeepCopy()
			tc.mutate(pod)
			podStrategy{}.PrepareForUpdate(pod, old)
			got := firstLines(errStrings(podStrategy{}.ValidateUpdate(pod, old)))
			if tc.want == nil {
				tc.want = []string{}
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestPodPrepareForCreate_StatusStartsPendingWithQOSClass(t *testing.T) {
	cpu := func(v string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v), corev1.ResourceMemory: resource.MustParse("1Gi")}
	}
	cases := []struct {
		name      string
		resources corev1.ResourceRequirements
		gated     bool
		want      corev1.PodQOSClass
	}{
		{"nothing asked", corev1.ResourceRequirements{}, false, corev1.PodQOSBestEffort},
		{"limits equal requests", corev1.ResourceRequirements{Limits: cpu("1")}, false, corev1.PodQOSGuaranteed},
		{"requests below limits", corev1.ResourceRequirements{Limits: cpu("2"), Requests: cpu("1")}, true, corev1.PodQOSBurstable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i", Resources: tc.resources}}}}
			if tc.gated {
				pod.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "g"}}
			}
			pod.Status.Phase = corev1.PodRunning
			PodResource(nil).Default(pod)
			podStrategy{}.PrepareForCreate(pod)
			if pod.Status.Phase != corev1.PodPending || pod.Status.QOSClass != tc.want {
				t.Fatalf("status %+v, want Pending and %s", pod.Status, tc.want)
			}
			if gated := len(pod.Status.Conditions) == 1 && pod.Status.Conditions[0].Reason == corev1.PodReasonSchedulingGated; gated != tc.gated {
				t.Fatalf("conditions %+v, gated %v", pod.Status.Conditions, tc.gated)
			}
		})
	}
}

func TestPodStatusUpdate_KeepsSpecAndChecksStatus(t *testing.T) {
	cases := []struct {
		name   string
		policy corev1.RestartPolicy
		old    func(*corev1.PodStatus)
		mutate func(*corev1.Pod)
		want   []string
	}{
		{"running with an IP", corev1.RestartPolicyAlways, nil, func(p *corev1.Pod) {
			p.Status.Phase, p.Status.PodIPs = corev1.PodRunning, []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "fd00::1"}}
		}, nil},
		{"bad condition type", corev1.RestartPolicyAlways, nil, func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: "my bad", Status: corev1.ConditionTrue}}
		}, []string{`metadata.conditions[0].Type: Invalid value: "my bad": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`}},
		{"two IPv4", corev1.RestartPolicyAlways, nil, func(p *corev1.Pod) {
			p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "10.0.0.2"}}
		}, []string{`status.podIPs: Invalid value: []core.PodIP{core.PodIP{IP:"10.0.0.1"}, core.PodIP{IP:"10.0.0.2"}}: may specify no more than one IP for each IP family`}},
		{"hostIPs apart from hostIP", corev1.RestartPolicyAlways, nil, func(p *corev1.Pod) {
			p.Status.HostIP, p.Status.HostIPs = "1.2.3.4", []corev1.HostIP{{IP: "1.2.3.5"}}
		}, []string{"status.hostIPs[0].ip: Invalid value: \"1.2.3.5\": must be equal to `hostIP`"}},
		{"terminated container runs again", corev1.RestartPolicyNever, func(s *corev1.PodStatus) {
			s.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}}
		}, func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
		}, []string{"status.containerStatuses[0].state: Forbidden: may not be transitioned to non-terminated state"}},
		{"failed container restarts on failure", corev1.RestartPolicyOnFailure, func(s *corev1.PodStatus) {
			s.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}}
		}, func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := newPod()
			old.Spec.RestartPolicy = tc.policy
			if tc.old != nil {
				tc.old(&old.Status)
			}
			pod := old.DeepCopy()
			tc.mutate(pod)
			pod.Spec.NodeName = "elsewhere"
			pod.Status.QOSClass = ""
			s := podStatusStrategy{}
			s.PrepareForUpdate(pod, old)
			if pod.Spec.NodeName != "" || pod.Status.QOSClass != corev1.PodQOSBestEffort {
				t.Fatalf("status write changed the spec or dropped the QoS class: %q %q", pod.Spec.NodeName, pod.Status.QOSClass)
			}
			checkErrs(t, s.ValidateUpdate(pod, old), tc.want)
		})
	}
}

func TestPodSelectableFields_AsKubeNamesThem(t *testing.T) {
	pod := newPod()
	pod.Spec.NodeName = "n1"
	pod.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.1"}}
	cases := []struct {
		selector string
		match    bool
	}{
		{"spec.nodeName=n1", true},
		{"spec.host=n1", true},
		{"status.phase=Pending,spec.restartPolicy=Always", true},
		{"spec.schedulerName=default-scheduler", true},
		{"spec.hostNetwork=false", true},
		{"status.podIP=10.0.0.1", true},
		{"status.podIPs=10.0.0.1", false},
		{"status.nominatedNodeName=", true},
		{"spec.serviceAccountName=default", false},
	}
	for _, tc := range cases {
		t.Run(tc.selector, func(t *testing.T) {
			sel, err := fields.ParseSelector(tc.selector)
			if err != nil {
				t.Fatal(err)
			}
			sel, err = sel.Transform(func(f, v string) (string, string, error) {
				f, err := podFieldLabels(f)
				return f, v, err
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := sel.Matches(podSelectableFields(pod)); got != tc.match {
				t.Fatalf("matches %v, want %v", got, tc.match)
			}
		})
	}
	if _, err := podFieldLabels("metadata.uid"); err == nil || err.Error() != "field label not supported: metadata.uid" {
		t.Fatalf("metadata.uid: %v", err)
	}
}

func TestPodTable_StatusWordAsKubectlShowsIt(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	started := true
	always := corev1.ContainerRestartPolicyAlways
	cases := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   []interface{}
	}{
		{"pending", func(*corev1.Pod) {}, []interface{}{"0/1", "Pending", "0", "<none>", "<none>", "<none>", "<none>"}},
		{"running and ready, restarted", func(p *corev1.Pod) {
			p.Spec.NodeName = "n1"
			p.Status.Phase, p.Status.PodIPs = corev1.PodRunning, []corev1.PodIP{{IP: "10.0.0.1"}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", Ready: true, RestartCount: 2,
				State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(now.Add(-5 * time.Minute))}}}}
		}, []interface{}{"1/1", "Running", "2 (5m ago)", "10.0.0.1", "n1", "<none>", "<none>"}},
		{"waiting to pull", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}}
		}, []interface{}{"0/1", "ImagePullBackOff", "0", "<none>", "<none>", "<none>", "<none>"}},
		{"init container running, sidecar started", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "side", RestartPolicy: &always}, {Name: "init"}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "side", Started: &started, Ready: true}, {Name: "init"}}
		}, []interface{}{"1/2", "Init:1/2", "0", "<none>", "<none>", "<none>", "<none>"}},
		{"gated", func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Reason: corev1.PodReasonSchedulingGated}}
			p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "x"}}
		}, []interface{}{"0/1", "SchedulingGated", "0", "<none>", "<none>", "<none>", "0/1"}},
		{"being deleted", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: now} },
			[]interface{}{"0/1", "Terminating", "0", "<none>", "<none>", "<none>", "<none>"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod()
			pod.CreationTimestamp = metav1.NewTime(now.Add(-time.Hour))
			tc.mutate(pod)
			cells := podTable.Cells(pod, now)
			got := append([]interface{}{}, cells[1:4]...)
			got = append(got, cells[5:]...)
			if len(got) != len(tc.want) {
				t.Fatalf("cells %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("cells %q, want %q", got, tc.want)
				}
			}
		})
	}
}

func TestPodGracePeriod_OnlyForAPodANodeRuns(t *testing.T) {
	seconds := func(v int64) *int64 { return &v }
	cases := []struct {
		name      string
		node      string
		phase     corev1.PodPhase
		own       *int64
		requested *int64
		want      int64
	}{
		{"unbound", "", corev1.PodPending, seconds(30), nil, 0},
		{"unbound, grace asked", "", corev1.PodPending, seconds(30), seconds(10), 0},
		{"bound, the pod's own", "n1", corev1.PodRunning, seconds(30), nil, 30},
		{"bound, grace asked", "n1", corev1.PodRunning, seconds(30), seconds(5), 5},
		{"bound, zero asked", "n1", corev1.PodRunning, seconds(30), seconds(0), 0},
		{"succeeded", "n1", corev1.PodSucceeded, seconds(30), nil, 0},
		{"failed", "n1", corev1.PodFailed, seconds(30), seconds(10), 0},
		{"no grace of its own", "n1", corev1.PodRunning, nil, nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{NodeName: tc.node, TerminationGracePeriodSeconds: tc.own}, Status: corev1.PodStatus{Phase: tc.phase}}
			if got := (podStrategy{}).GracePeriod(pod, tc.requested); got != tc.want {
				t.Fatalf("grace period %d, want %d", got, tc.want)
			}
		})
	}
}

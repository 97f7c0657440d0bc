package events

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func newEvent() *eventsv1.Event {
	return &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "e", Namespace: "ns"},
		EventTime:           metav1.NewMicroTime(time.Unix(1700000000, 0)),
		Series:              &eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(time.Unix(1700000100, 0))},
		ReportingController: "example.com/c",
		ReportingInstance:   "c-1",
		Action:              "Act",
		Reason:              "Why",
		Regarding:           corev1.ObjectReference{Kind: "CronJob", Namespace: "ns", Name: "x"},
		Note:                "note",
		Type:                corev1.EventTypeWarning,
	}
}

func TestConversion_RoundTripsThroughCore(t *testing.T) {
	e := newEvent()
	core := ToCore(e)
	if core.Message != "note" || core.InvolvedObject.Name != "x" || core.ReportingController != "example.com/c" || core.Series.Count != 2 {
		t.Fatalf("core %+v", core)
	}
	back := FromCore(core)
	e.SetGroupVersionKind(eventsv1.SchemeGroupVersion.WithKind("Event"))
	if !equality.Semantic.DeepEqual(back, e) {
		t.Fatalf("round trip:\n%+v\n%+v", back, e)
	}
}

func TestConversion_OldStyleCoreEventKeepsDeprecatedFields(t *testing.T) {
	now := metav1.Now()
	core := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: "ns"},
		Source:     corev1.EventSource{Component: "kubelet", Host: "n1"},
		Count:      3, FirstTimestamp: now, LastTimestamp: now, Message: "m",
	}
	e := FromCore(core)
	if e.DeprecatedCount != 3 || e.DeprecatedSource.Host != "n1" || e.Note != "m" || !e.DeprecatedFirstTimestamp.Equal(&now) {
		t.Fatalf("events view %+v", e)
	}
}

func TestValidate_StrictRulesOfEventsV1(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*eventsv1.Event)
		want   string
	}{
		{"valid", func(*eventsv1.Event) {}, ""},
		{"bad type", func(e *eventsv1.Event) { e.Type = "Bogus" }, "type"},
		{"no reportingController", func(e *eventsv1.Event) { e.ReportingController = "" }, "reportingController"},
		{"no reportingInstance", func(e *eventsv1.Event) { e.ReportingInstance = "" }, "reportingInstance"},
		{"no action", func(e *eventsv1.Event) { e.Action = "" }, "action"},
		{"no reason", func(e *eventsv1.Event) { e.Reason = "" }, "reason"},
		{"no eventTime", func(e *eventsv1.Event) { e.EventTime = metav1.MicroTime{} }, "eventTime"},
		{"deprecatedCount set", func(e *eventsv1.Event) { e.DeprecatedCount = 1 }, "deprecatedCount"},
		{"deprecatedSource set", func(e *eventsv1.Event) { e.DeprecatedSource.Component = "x" }, "deprecatedSource"},
		{"series count 1", func(e *eventsv1.Event) { e.Series.Count = 1 }, "series.count"},
		{"note too long", func(e *eventsv1.Event) { e.Note = strings.Repeat("x", 1025) }, "message"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEvent()
			tc.mutate(e)
			var got []string
			for _, err := range (strategy{}).Validate(e) {
				got = append(got, err.Field)
			}
			if strings.Join(got, ",") != tc.want {
				t.Fatalf("fields %v, want %q", got, tc.want)
			}
		})
	}
}

func TestValidateUpdate_ImmutableFields(t *testing.T) {
	old := newEvent()
	e := old.DeepCopy()
	e.Note = "changed"
	if errs := (strategy{}).ValidateUpdate(e, old); len(errs) != 1 || errs[0].Field != "message" {
		t.Fatalf("errors %v", errs)
	}
	e = old.DeepCopy()
	e.Series.Count = 3
	if errs := (strategy{}).ValidateUpdate(e, old); len(errs) != 0 {
		t.Fatalf("series update rejected: %v", errs)
	}
}

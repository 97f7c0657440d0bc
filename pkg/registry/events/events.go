// Package events registers events.k8s.io/v1 events: a view, with its own
// field names and stricter validation, of the core/v1 events stored under
// the same keys.
package events

import (
	"fmt"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/registry/core"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// Resources registers events.k8s.io/v1 events.
func Resources() []*generic.Resource {
	gvk := eventsv1.SchemeGroupVersion.WithKind("Event")
	newFunc := func() runtime.Object { return &eventsv1.Event{} }
	return []*generic.Resource{{
		Resource: rest.Resource{
			GroupVersionKind: gvk,
			Plural:           "events",
			Singular:         "event",
			ShortNames:       []string{"ev"},
			Namespaced:       true,
			New:              newFunc,
			NewList:          func() runtime.Object { return &eventsv1.EventList{} },
			Table: &rest.TableSpec{
				Columns: core.EventTable.Columns,
				Cells: func(obj runtime.Object, now time.Time) []interface{} {
					return core.EventCells(ToCore(obj.(*eventsv1.Event)), now)
				},
			},
		},
		Codec:           codec.Protobuf(gvk, newFunc),
		Strategy:        strategy{},
		StorageResource: "events",
		StorageGVK:      corev1.SchemeGroupVersion.WithKind("Event"),
		Conversion: &generic.Conversion{
			StorageCodec: core.EventCodec(),
			ToStorage:    func(obj runtime.Object) (runtime.Object, error) { return ToCore(obj.(*eventsv1.Event)), nil },
			FromStorage: func(obj runtime.Object) (runtime.Object, error) {
				e, ok := obj.(*corev1.Event)
				if !ok {
					return nil, fmt.Errorf("stored event is a %T", obj)
				}
				return FromCore(e), nil
			},
		},
		SelectableFields: core.EventFields,
		FieldLabels:      fieldLabels,
	}}
}

// storedFields maps the field labels of events.k8s.io/v1 to the fields of
// the stored core/v1 event they select by; other labels are refused.
var storedFields = map[string]string{
	"metadata.name":             "metadata.name",
	"metadata.namespace":        "metadata.namespace",
	"regarding.kind":            "involvedObject.kind",
	"regarding.namespace":       "involvedObject.namespace",
	"regarding.name":            "involvedObject.name",
	"regarding.uid":             "involvedObject.uid",
	"regarding.apiVersion":      "involvedObject.apiVersion",
	"regarding.resourceVersion": "involvedObject.resourceVersion",
	"regarding.fieldPath":       "involvedObject.fieldPath",
	"reason":                    "reason",
	"reportingController":       "reportingComponent",
	"type":                      "type",
}

func fieldLabels(label string) (string, error) {
	if f, ok := storedFields[label]; ok {
		return f, nil
	}
	return "", fmt.Errorf("field label not supported: %s", label)
}

// ToCore converts an events.k8s.io/v1 event to the stored core/v1 form.
func ToCore(e *eventsv1.Event) *corev1.Event {
	out := &corev1.Event{
		ObjectMeta:          e.ObjectMeta,
		InvolvedObject:      e.Regarding,
		Related:             e.Related,
		Reason:              e.Reason,
		Message:             e.Note,
		Source:              e.DeprecatedSource,
		FirstTimestamp:      e.DeprecatedFirstTimestamp,
		LastTimestamp:       e.DeprecatedLastTimestamp,
		Count:               e.DeprecatedCount,
		Type:                e.Type,
		EventTime:           e.EventTime,
		Action:              e.Action,
		ReportingController: e.ReportingController,
		ReportingInstance:   e.ReportingInstance,
	}
	if e.Series != nil {
		out.Series = &corev1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	out.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Event"))
	return out
}

// FromCore converts a stored core/v1 event to events.k8s.io/v1.
func FromCore(e *corev1.Event) *eventsv1.Event {
	out := &eventsv1.Event{
		ObjectMeta:               e.ObjectMeta,
		EventTime:                e.EventTime,
		ReportingController:      e.ReportingController,
		ReportingInstance:        e.ReportingInstance,
		Action:                   e.Action,
		Reason:                   e.Reason,
		Regarding:                e.InvolvedObject,
		Related:                  e.Related,
		Note:                     e.Message,
		Type:                     e.Type,
		DeprecatedSource:         e.Source,
		DeprecatedFirstTimestamp: e.FirstTimestamp,
		DeprecatedLastTimestamp:  e.LastTimestamp,
		DeprecatedCount:          e.Count,
	}
	if e.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	out.SetGroupVersionKind(eventsv1.SchemeGroupVersion.WithKind("Event"))
	return out
}

type strategy struct{ generic.DefaultStrategy }

// AllowCreateOnUpdate: a PUT of a missing Event creates it, as through
// the core API (kube stores both APIs' events in one registry).
func (strategy) AllowCreateOnUpdate() bool { return true }

// Validate is kube's strict validation of events created through
// events.k8s.io/v1.
func (strategy) Validate(obj runtime.Object) field.ErrorList {
	e := obj.(*eventsv1.Event)
	errs := core.ValidateEventLegacy(ToCore(e), "reportingController")
	errs = append(errs, validateSeries(e)...)
	if e.EventTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("eventTime"), ""))
	}
	if e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning {
		errs = append(errs, field.Invalid(field.NewPath("type"), "", fmt.Sprintf("has invalid value: %v", e.Type)))
	}
	if !e.DeprecatedFirstTimestamp.IsZero() {
		errs = append(errs, field.Invalid(field.NewPath("deprecatedFirstTimestamp"), "", "needs to be unset"))
	}
	if !e.DeprecatedLastTimestamp.IsZero() {
		errs = append(errs, field.Invalid(field.NewPath("deprecatedLastTimestamp"), "", "needs to be unset"))
	}
	if e.DeprecatedCount != 0 {
		errs = append(errs, field.Invalid(field.NewPath("deprecatedCount"), "", "needs to be unset"))
	}
	if e.DeprecatedSource.Component != "" || e.DeprecatedSource.Host != "" {
		errs = append(errs, field.Invalid(field.NewPath("deprecatedSource"), "", "needs to be unset"))
	}
	return errs
}

func (strategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	e, o := obj.(*eventsv1.Event), old.(*eventsv1.Event)
	errs := core.ValidateEventLegacy(ToCore(e), "reportingController")
	if !reflect.DeepEqual(e.Series, o.Series) {
		errs = append(errs, validateSeries(e)...)
	}
	return append(errs, core.ImmutableEventFieldsChanged(ToCore(e), ToCore(o))...)
}

func validateSeries(e *eventsv1.Event) field.ErrorList {
	if e.Series == nil {
		return nil
	}
	var errs field.ErrorList
	if e.Series.Count < 2 {
		errs = append(errs, field.Invalid(field.NewPath("series", "count"), "", "should be at least 2"))
	}
	if e.Series.LastObservedTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("series", "lastObservedTime"), ""))
	}
	return errs
}

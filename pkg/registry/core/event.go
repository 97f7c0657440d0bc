package core

import (
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
	"github.com/cronplane/cronplane/pkg/storage"
)

// Length limits of event fields, as kube enforces them.
const (
	reportingInstanceLengthLimit = 128
	actionLengthLimit            = 128
	reasonLengthLimit            = 128
	noteLengthLimit              = 1024
)

// EventResource registers core/v1 events. events.k8s.io/v1 events are a
// second view of the same stored objects.
func EventResource() *generic.Resource {
	gvk := corev1.SchemeGroupVersion.WithKind("Event")
	newFunc := func() runtime.Object { return &corev1.Event{} }
	return &generic.Resource{
		Resource: rest.Resource{
			GroupVersionKind: gvk,
			Plural:           "events",
			Singular:         "event",
			ShortNames:       []string{"ev"},
			Namespaced:       true,
			New:              newFunc,
			NewList:          func() runtime.Object { return &corev1.EventList{} },
			Table:            EventTable,
		},
		Codec:            EventCodec(),
		Strategy:         eventStrategy{},
		SelectableFields: EventFields,
		FieldLabels:      EventFieldLabels,
	}
}

// EventCodec is the storage codec of events.
func EventCodec() storage.Codec {
	return codec.Protobuf(corev1.SchemeGroupVersion.WithKind("Event"), func() runtime.Object { return &corev1.Event{} })
}

// EventFields are the fields a fieldSelector on events may use, computed
// from a stored core/v1 Event.
// EventFieldLabels are the field labels of core/v1 events: the names of
// EventFields and of the object's name and namespace.
var EventFieldLabels = generic.SupportedFieldLabels("metadata.name", "metadata.namespace",
	"involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
	"involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
	"reason", "reportingComponent", "source", "type")

func EventFields(obj runtime.Object) fields.Set {
	e := obj.(*corev1.Event)
	source := e.Source.Component
	if source == "" {
		source = e.ReportingController
	}
	return fields.Set{
		"involvedObject.kind":            e.InvolvedObject.Kind,
		"involvedObject.namespace":       e.InvolvedObject.Namespace,
		"involvedObject.name":            e.InvolvedObject.Name,
		"involvedObject.uid":             string(e.InvolvedObject.UID),
		"involvedObject.apiVersion":      e.InvolvedObject.APIVersion,
		"involvedObject.resourceVersion": e.InvolvedObject.ResourceVersion,
		"involvedObject.fieldPath":       e.InvolvedObject.FieldPath,
		"reason":                         e.Reason,
		"reportingComponent":             e.ReportingController,
		"source":                         source,
		"type":                           e.Type,
	}
}

type eventStrategy struct{ generic.DefaultStrategy }

// AllowCreateOnUpdate: event recorders PUT events whether or not they exist.
func (eventStrategy) AllowCreateOnUpdate() bool { return true }

func (eventStrategy) Validate(obj runtime.Object) field.ErrorList {
	return ValidateEventLegacy(obj.(*corev1.Event), "reportingComponent")
}

func (eventStrategy) ValidateUpdate(obj, _ runtime.Object) field.ErrorList {
	return ValidateEventLegacy(obj.(*corev1.Event), "reportingComponent")
}

// ValidateEventLegacy is the validation every event passes, whatever API
// version wrote it: events with an eventTime (new-style) must say who
// reported what, and the involved object's namespace must fit.
// reportingField names the reporting controller's field in the writer's
// version.
func ValidateEventLegacy(e *corev1.Event, reportingField string) field.ErrorList {
	var errs field.ErrorList
	involvedNS := field.NewPath("involvedObject", "namespace")
	if e.EventTime.IsZero() {
		if e.InvolvedObject.Namespace == "" {
			if e.Namespace != metav1.NamespaceNone && e.Namespace != metav1.NamespaceDefault {
				errs = append(errs, field.Invalid(involvedNS, e.InvolvedObject.Namespace, "does not match event.namespace"))
			}
		} else if e.Namespace != e.InvolvedObject.Namespace {
			errs = append(errs, field.Invalid(involvedNS, e.InvolvedObject.Namespace, "does not match event.namespace"))
		}
		return errs
	}
	if e.InvolvedObject.Namespace == "" && e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
		errs = append(errs, field.Invalid(involvedNS, e.InvolvedObject.Namespace, "does not match event.namespace"))
	}
	if e.ReportingController == "" {
		errs = append(errs, field.Required(field.NewPath(reportingField), ""))
	} else {
		for _, msg := range validation.IsQualifiedName(e.ReportingController) {
			errs = append(errs, field.Invalid(field.NewPath(reportingField), e.ReportingController, msg))
		}
	}
	errs = append(errs, requiredWithLimit(e.ReportingInstance, "reportingInstance", reportingInstanceLengthLimit)...)
	errs = append(errs, requiredWithLimit(e.Action, "action", actionLengthLimit)...)
	errs = append(errs, requiredWithLimit(e.Reason, "reason", reasonLengthLimit)...)
	if len(e.Message) > noteLengthLimit {
		errs = append(errs, field.Invalid(field.NewPath("message"), "", fmt.Sprintf("can have at most %v characters", noteLengthLimit)))
	}
	return errs
}

func requiredWithLimit(v, name string, limit int) field.ErrorList {
	switch {
	case v == "":
		return field.ErrorList{field.Required(field.NewPath(name), "")}
	case len(v) > limit:
		return field.ErrorList{field.Invalid(field.NewPath(name), "", fmt.Sprintf("can have at most %v characters", limit))}
	}
	return nil
}

// ImmutableEventFieldsChanged lists the fields of an event that an update
// through events.k8s.io/v1 may not change.
func ImmutableEventFieldsChanged(e, old *corev1.Event) field.ErrorList {
	var errs field.ErrorList
	pairs := []struct {
		name     string
		new, old interface{}
	}{
		{"involvedObject", e.InvolvedObject, old.InvolvedObject},
		{"reason", e.Reason, old.Reason},
		{"message", e.Message, old.Message},
		{"source", e.Source, old.Source},
		{"firstTimestamp", e.FirstTimestamp, old.FirstTimestamp},
		{"lastTimestamp", e.LastTimestamp, old.LastTimestamp},
		{"count", e.Count, old.Count},
		{"type", e.Type, old.Type},
		{"eventTime", e.EventTime, old.EventTime},
		{"action", e.Action, old.Action},
		{"related", e.Related, old.Related},
		{"reportingController", e.ReportingController, old.ReportingController},
		{"reportingInstance", e.ReportingInstance, old.ReportingInstance},
	}
	for _, p := range pairs {
		if !reflect.DeepEqual(p.new, p.old) {
			errs = append(errs, field.Invalid(field.NewPath(p.name), p.new, "field is immutable"))
		}
	}
	return errs
}

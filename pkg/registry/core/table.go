package core

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cronplane/cronplane/pkg/registry/rest"
)

var namespaceTable = &rest.TableSpec{
	Columns: []metav1.TableColumnDefinition{
		rest.NameColumn,
		{Name: "Status", Type: "string", Description: corev1.NamespaceStatus{}.SwaggerDoc()["phase"]},
		rest.AgeColumn,
	},
	Cells: func(obj runtime.Object, now time.Time) []interface{} {
		ns := obj.(*corev1.Namespace)
		return []interface{}{ns.Name, string(ns.Status.Phase), rest.Age(ns.CreationTimestamp, now)}
	},
}

var eventDoc = corev1.Event{}.SwaggerDoc()

// EventTable renders core/v1 events; events.k8s.io/v1 converts to them.
var EventTable = &rest.TableSpec{
	Columns: []metav1.TableColumnDefinition{
		{Name: "Last Seen", Type: "string", Description: eventDoc["lastTimestamp"]},
		{Name: "Type", Type: "string", Description: eventDoc["type"]},
		{Name: "Reason", Type: "string", Description: eventDoc["reason"]},
		{Name: "Object", Type: "string", Description: eventDoc["involvedObject"]},
		{Name: "Subobject", Type: "string", Priority: 1, Description: corev1.ObjectReference{}.SwaggerDoc()["fieldPath"]},
		{Name: "Source", Type: "string", Priority: 1, Description: corev1.EventSource{}.SwaggerDoc()["component"]},
		{Name: "Message", Type: "string", Description: eventDoc["message"]},
		{Name: "First Seen", Type: "string", Priority: 1, Description: eventDoc["firstTimestamp"]},
		{Name: "Count", Type: "string", Priority: 1, Description: eventDoc["count"]},
		{Name: "Name", Type: "string", Format: "name", Priority: 1, Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
	},
	Cells: func(obj runtime.Object, now time.Time) []interface{} { return EventCells(obj.(*corev1.Event), now) },
}

// EventCells are the cells of one event's row.
func EventCells(e *corev1.Event, now time.Time) []interface{} {
	first := rest.Age(e.FirstTimestamp, now)
	if e.FirstTimestamp.IsZero() {
		first = rest.Age(metav1.Time{Time: e.EventTime.Time}, now)
	}
	last := rest.Age(e.LastTimestamp, now)
	if e.LastTimestamp.IsZero() {
		last = first
	}
	count := e.Count
	if e.Series != nil {
		last = rest.Age(metav1.Time{Time: e.Series.LastObservedTime.Time}, now)
		count = e.Series.Count
	} else if count == 0 {
		count = 1
	}
	target := strings.ToLower(e.InvolvedObject.Kind)
	if e.InvolvedObject.Name != "" {
		target += "/" + e.InvolvedObject.Name
	}
	source := e.Source.Component
	if source != "" {
		if e.Source.Host != "" {
			source += ", " + e.Source.Host
		}
	} else {
		source = e.ReportingController
		if e.ReportingInstance != "" {
			source += ", " + e.ReportingInstance
		}
	}
	return []interface{}{last, e.Type, e.Reason, target, e.InvolvedObject.FieldPath, source, strings.TrimSpace(e.Message), first, int64(count), e.Name}
}

package flowcontrol

import (
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cronplane/cronplane/pkg/registry/rest"
)

const none = "<none>"

// flowSchemaTable has kube's columns; as v1 names and v1beta3 objects
// print alike, each version passes its objects through v1.
func flowSchemaTable(asV1 func(runtime.Object) *flowcontrolv1.FlowSchema) *rest.TableSpec {
	spec := flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()
	return &rest.TableSpec{
		Columns: []metav1.TableColumnDefinition{
			rest.NameColumn,
			{Name: "PriorityLevel", Type: "string", Description: flowcontrolv1.PriorityLevelConfigurationReference{}.SwaggerDoc()["name"]},
			{Name: "MatchingPrecedence", Type: "string", Description: spec["matchingPrecedence"]},
			{Name: "DistinguisherMethod", Type: "string", Description: spec["distinguisherMethod"]},
			rest.AgeColumn,
			{Name: "MissingPL", Type: "string", Description: "references a broken or non-existent PriorityLevelConfiguration"},
		},
		Cells: func(obj runtime.Object, now time.Time) []interface{} {
			fs := asV1(obj)
			method := none
			if fs.Spec.DistinguisherMethod != nil {
				method = string(fs.Spec.DistinguisherMethod.Type)
			}
			// The Dangling condition says whether the level is missing;
			// "?" until something has looked.
			missing := "?"
			for _, c := range fs.Status.Conditions {
				if c.Type == flowcontrolv1.FlowSchemaConditionDangling {
					missing = string(c.Status)
					break
				}
			}
			return []interface{}{fs.Name, fs.Spec.PriorityLevelConfiguration.Name, int64(fs.Spec.MatchingPrecedence), method, rest.Age(fs.CreationTimestamp, now), missing}
		},
	}
}

func levelTable(asV1 func(runtime.Object) *flowcontrolv1.PriorityLevelConfiguration) *rest.TableSpec {
	queuing := flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()
	return &rest.TableSpec{
		Columns: []metav1.TableColumnDefinition{
			rest.NameColumn,
			{Name: "Type", Type: "string", Description: flowcontrolv1.PriorityLevelConfigurationSpec{}.SwaggerDoc()["type"]},
			{Name: "NominalConcurrencyShares", Type: "string", Description: flowcontrolv1.LimitedPriorityLevelConfiguration{}.SwaggerDoc()["nominalConcurrencyShares"]},
			{Name: "Queues", Type: "string", Description: queuing["queues"]},
			{Name: "HandSize", Type: "string", Description: queuing["handSize"]},
			{Name: "QueueLengthLimit", Type: "string", Description: queuing["queueLengthLimit"]},
			rest.AgeColumn,
		},
		Cells: func(obj runtime.Object, now time.Time) []interface{} {
			pl := asV1(obj)
			var shares, queues, handSize, queueLengthLimit interface{} = none, none, none, none
			if l := pl.Spec.Limited; l != nil {
				if l.NominalConcurrencyShares != nil {
					shares = int64(*l.NominalConcurrencyShares)
				}
				if q := l.LimitResponse.Queuing; q != nil {
					queues, handSize, queueLengthLimit = int64(q.Queues), int64(q.HandSize), int64(q.QueueLengthLimit)
				}
			}
			return []interface{}{pl.Name, string(pl.Spec.Type), shares, queues, handSize, queueLengthLimit, rest.Age(pl.CreationTimestamp, now)}
		},
	}
}

// Package table owns the Table representation (meta.k8s.io Table) that
// kubectl get asks for: column definitions and one row of cells per
// object, from the resource's registered columns, or Name and Created At
// for a resource without its own.
package table

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/cronplane/cronplane/pkg/registry"
	"github.com/cronplane/cronplane/pkg/storage"
)

// IncludeObject values of ?includeObject.
const (
	IncludeNone     = "None"
	IncludeMetadata = "Metadata"
	IncludeObject   = "Object"
)

var nameDescription = metav1.ObjectMeta{}.SwaggerDoc()["name"]

// defaultColumns are those of a resource without columns of its own.
var defaultColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: nameDescription},
	{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
}

// Convert renders obj (one object or a *registry.List) as a Table of the
// given meta.k8s.io version.
func Convert(res *registry.Resource, obj runtime.Object, include, version string, now time.Time) (*metav1.Table, error) {
	t := &metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/" + version}}
	columns, cells := defaultColumns, defaultCells
	if res.Table != nil {
		columns, cells = res.Table.Columns, res.Table.Cells
	}
	t.ColumnDefinitions = columns
	items := []runtime.Object{obj}
	if l, ok := obj.(*registry.List); ok {
		items = l.Items
		t.ListMeta = l.ListMeta
	} else if m, err := meta.Accessor(storage.Unwrap(obj)); err == nil {
		t.ResourceVersion = m.GetResourceVersion()
	}
	t.Rows = make([]metav1.TableRow, 0, len(items))
	for _, it := range items {
		o := storage.Unwrap(it)
		row := metav1.TableRow{Cells: cells(o, now)}
		switch include {
		case IncludeNone:
		case IncludeObject:
			row.Object = runtime.RawExtension{Object: it}
		default:
			m, err := meta.Accessor(o)
			if err != nil {
				return nil, err
			}
			pm := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/" + version}}
			meta.AsPartialObjectMetadata(m).ObjectMeta.DeepCopyInto(&pm.ObjectMeta)
			pm.ManagedFields = nil
			row.Object = runtime.RawExtension{Object: pm}
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

func defaultCells(obj runtime.Object, _ time.Time) []interface{} {
	m, err := meta.Accessor(obj)
	if err != nil {
		return []interface{}{"", ""}
	}
	return []interface{}{m.GetName(), m.GetCreationTimestamp().UTC().Format(time.RFC3339)}
}

// Age renders how long ago t was, as kubectl shows ages.
func Age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// NameColumn and AgeColumn are the first and usual last columns.
var (
	NameColumn = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: nameDescription}
	AgeColumn  = metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}
)

// Package table owns the Table representation (meta.k8s.io Table) that
// kubectl get asks for: column definitions and one row of cells per
// object, from the resource's registered columns, or Name and Created At
// for a resource without its own.
package table

import (
	"encoding/json"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cronplane/cronplane/pkg/registry/rest"
	"github.com/cronplane/cronplane/pkg/storage"
)

// IncludeObject values of ?includeObject.
const (
	IncludeNone     = "None"
	IncludeMetadata = "Metadata"
	IncludeObject   = "Object"
)

// defaultColumns are those of a resource without columns of its own.
var defaultColumns = []metav1.TableColumnDefinition{
	rest.NameColumn,
	{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
}

// Table is a rendered Table that writes its rows' objects from their
// memoized encodings.
type Table struct {
	metav1.Table
	// objects are the rows' objects as read (possibly shared).
	objects []runtime.Object
	include string
}

// Convert renders obj (one object or a *rest.List) with spec's columns (nil: Name and Created At) as a Table of the
// given meta.k8s.io version.
func Convert(spec *rest.TableSpec, obj runtime.Object, include, version string, now time.Time) (*Table, error) {
	t := &Table{include: include}
	t.TypeMeta = metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/" + version}
	columns, cells := defaultColumns, defaultCells
	if spec != nil {
		columns, cells = spec.Columns, spec.Cells
	}
	t.ColumnDefinitions = columns
	items := []runtime.Object{obj}
	if l, ok := obj.(*rest.List); ok {
		items = l.Items
		t.ListMeta = l.ListMeta
	} else if m, err := meta.Accessor(storage.Unwrap(obj)); err == nil {
		t.ResourceVersion = m.GetResourceVersion()
	}
	t.objects = items
	t.Rows = make([]metav1.TableRow, len(items))
	for i, it := range items {
		t.Rows[i].Cells = cells(storage.Unwrap(it), now)
		switch include {
		case IncludeNone:
		case IncludeObject:
			t.Rows[i].Object = runtime.RawExtension{Object: it}
		default:
			pm, err := PartialObjectMetadata(it, version)
			if err != nil {
				return nil, err
			}
			t.Rows[i].Object = runtime.RawExtension{Object: pm}
		}
	}
	return t, nil
}

// PartialObjectMetadata is the metadata-only form of an object, as
// meta.k8s.io of version names it. It is meant to be encoded, not changed:
// it shares the object's maps and slices, so that thousands of rows or
// list items copy none of them.
func PartialObjectMetadata(obj runtime.Object, version string) (*metav1.PartialObjectMetadata, error) {
	m, err := meta.Accessor(storage.Unwrap(obj))
	if err != nil {
		return nil, err
	}
	pm := meta.AsPartialObjectMetadata(m)
	pm.TypeMeta = metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/" + version}
	return pm, nil
}

// WriteJSON writes the table as encoding/json would, taking each row's
// object from the memoized encodings of shared objects.
func (t *Table) WriteJSON(w io.Writer) error {
	head, err := json.Marshal(struct {
		metav1.TypeMeta   `json:",inline"`
		Meta              metav1.ListMeta                `json:"metadata"`
		ColumnDefinitions []metav1.TableColumnDefinition `json:"columnDefinitions"`
	}{t.TypeMeta, t.ListMeta, t.ColumnDefinitions})
	if err != nil {
		return err
	}
	version := strings.TrimPrefix(t.APIVersion, "meta.k8s.io/")
	buf := make([]byte, 0, 64*1024)
	buf = append(buf, head[:len(head)-1]...)
	buf = append(buf, `,"rows":[`...)
	for i, row := range t.Rows {
		if i > 0 {
			buf = append(buf, ',')
		}
		cells, err := json.Marshal(row.Cells)
		if err != nil {
			return err
		}
		buf = append(buf, `{"cells":`...)
		buf = append(buf, cells...)
		buf = append(buf, `,"object":`...)
		obj, err := t.rowObject(i, version)
		if err != nil {
			return err
		}
		buf = append(buf, obj...)
		buf = append(buf, '}')
		if len(buf) > 48*1024 {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	buf = append(buf, "]}\n"...)
	_, err = w.Write(buf)
	return err
}

func (t *Table) rowObject(i int, version string) ([]byte, error) {
	if t.include == IncludeNone {
		return []byte("null"), nil
	}
	shared, isShared := t.objects[i].(*storage.SharedObject)
	if t.include == IncludeObject {
		if isShared {
			return shared.MarshalJSON()
		}
		return json.Marshal(t.objects[i])
	}
	if isShared {
		return shared.Encoded("json-partial-metadata-"+version, func(o runtime.Object) ([]byte, error) {
			pm, err := PartialObjectMetadata(o, version)
			if err != nil {
				return nil, err
			}
			return json.Marshal(pm)
		})
	}
	return json.Marshal(t.Rows[i].Object.Object)
}

func defaultCells(obj runtime.Object, _ time.Time) []interface{} {
	m, err := meta.Accessor(obj)
	if err != nil {
		return []interface{}{"", ""}
	}
	return []interface{}{m.GetName(), m.GetCreationTimestamp().UTC().Format(time.RFC3339)}
}

// Package flowcontrol registers the API Priority and Fairness objects,
// flowcontrol.apiserver.k8s.io FlowSchemas and PriorityLevelConfigurations,
// served as v1 and as the deprecated v1beta3 and stored, as kube-apiserver
// v1.29 stores them, as v1beta3 protobuf under /registry/flowschemas and
// /registry/prioritylevelconfigurations. It owns their defaults, validation
// and Table columns; the bootstrap objects live in pkg/flowcontrol/bootstrap.
package flowcontrol

import (
	"fmt"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
	"github.com/cronplane/cronplane/pkg/storage"
)

var (
	flowSchemaV1    = flowcontrolv1.SchemeGroupVersion.WithKind("FlowSchema")
	levelV1         = flowcontrolv1.SchemeGroupVersion.WithKind("PriorityLevelConfiguration")
	flowSchemaBeta3 = flowcontrolv1beta3.SchemeGroupVersion.WithKind("FlowSchema")
	levelBeta3      = flowcontrolv1beta3.SchemeGroupVersion.WithKind("PriorityLevelConfiguration")
)

// Resources registers flowschemas and prioritylevelconfigurations in v1 and
// v1beta3.
func Resources() []*generic.Resource {
	return []*generic.Resource{flowSchemaV1Resource(), levelV1Resource(), flowSchemaBeta3Resource(), levelBeta3Resource()}
}

func newFlowSchemaBeta3() runtime.Object { return &flowcontrolv1beta3.FlowSchema{} }
func newLevelBeta3() runtime.Object      { return &flowcontrolv1beta3.PriorityLevelConfiguration{} }

// flowSchemaStorageCodec reads and writes the stored v1beta3 FlowSchemas,
// defaulting what it reads as kube's decoder does.
func flowSchemaStorageCodec() storage.Codec {
	return defaulting{codec.Protobuf(flowSchemaBeta3, newFlowSchemaBeta3), defaultFlowSchemaBeta3}
}

func levelStorageCodec() storage.Codec {
	return defaulting{codec.Protobuf(levelBeta3, newLevelBeta3), defaultLevelBeta3}
}

type defaulting struct {
	storage.Codec
	defaults func(runtime.Object)
}

func (c defaulting) Decode(data []byte) (runtime.Object, error) {
	obj, err := c.Codec.Decode(data)
	if err != nil {
		return nil, err
	}
	c.defaults(obj)
	return obj, nil
}

func flowSchemaV1Resource() *generic.Resource {
	newFunc := func() runtime.Object { return &flowcontrolv1.FlowSchema{} }
	return &generic.Resource{
		Resource: rest.Resource{
			GroupVersionKind: flowSchemaV1,
			Plural:           "flowschemas",
			Singular:         "flowschema",
			New:              newFunc,
			NewList:          func() runtime.Object { return &flowcontrolv1.FlowSchemaList{} },
			Default:          defaultFlowSchemaV1,
			Table:            flowSchemaTable(mustV1FlowSchema),
		},
		Codec:        codec.Protobuf(flowSchemaV1, newFunc),
		Strategy:     flowSchemaStrategy{toV1: asV1FlowSchema},
		Subresources: map[string]generic.Strategy{"status": flowSchemaStatusStrategy(asV1FlowSchema)},
		StorageGVK:   flowSchemaBeta3,
		Conversion: &generic.Conversion{
			StorageCodec: flowSchemaStorageCodec(),
			ToStorage: func(obj runtime.Object) (runtime.Object, error) {
				out := &flowcontrolv1beta3.FlowSchema{}
				return out, convert(obj, out, flowSchemaBeta3)
			},
			FromStorage: func(obj runtime.Object) (runtime.Object, error) {
				out := &flowcontrolv1.FlowSchema{}
				return out, convert(obj, out, flowSchemaV1)
			},
		},
	}
}

func levelV1Resource() *generic.Resource {
	newFunc := func() runtime.Object { return &flowcontrolv1.PriorityLevelConfiguration{} }
	return &generic.Resource{
		Resource: rest.Resource{
			GroupVersionKind: levelV1,
			Plural:           "prioritylevelconfigurations",
			Singular:         "prioritylevelconfiguration",
			New:              newFunc,
			NewList:          func() runtime.Object { return &flowcontrolv1.PriorityLevelConfigurationList{} },
			Default:          defaultLevelV1,
			Table:            levelTable(mustV1Level),
		},
		Codec:        codec.Protobuf(levelV1, newFunc),
		Strategy:     levelStrategy{toV1: asV1Level},
		Subresources: map[string]generic.Strategy{"status": levelStatusStrategy(asV1Level)},
		StorageGVK:   levelBeta3,
		Conversion: &generic.Conversion{
			StorageCodec: levelStorageCodec(),
			ToStorage: func(obj runtime.Object) (runtime.Object, error) {
				out := &flowcontrolv1beta3.PriorityLevelConfiguration{}
				if err := convert(obj, out, levelBeta3); err != nil {
					return nil, err
				}
				markZeroShares(out)
				return out, nil
			},
			FromStorage: func(obj runtime.Object) (runtime.Object, error) {
				out := &flowcontrolv1.PriorityLevelConfiguration{}
				if err := convert(obj, out, levelV1); err != nil {
					return nil, err
				}
				dropZeroSharesMark(out)
				return out, nil
			},
		},
	}
}

// v1beta3 is deprecated in v1.29 and goes in v1.32, as kube warns.
func deprecatedFor(replacement schema.GroupVersionKind) *rest.Deprecation {
	return &rest.Deprecation{Since: "1.29", RemovedIn: "1.32", Replacement: replacement}
}

func flowSchemaBeta3Resource() *generic.Resource {
	return &generic.Resource{
		Resource: rest.Resource{
			GroupVersionKind: flowSchemaBeta3,
			Plural:           "flowschemas",
			Singular:         "flowschema",
			New:              newFlowSchemaBeta3,
			NewList:          func() runtime.Object { return &flowcontrolv1beta3.FlowSchemaList{} },
			Default:          defaultFlowSchemaBeta3,
			Table:            flowSchemaTable(mustV1FlowSchema),
			Deprecated:       deprecatedFor(flowSchemaV1),
		},
		Codec:        codec.Protobuf(flowSchemaBeta3, newFlowSchemaBeta3),
		Strategy:     flowSchemaStrategy{toV1: asV1FlowSchema},
		Subresources: map[string]generic.Strategy{"status": flowSchemaStatusStrategy(asV1FlowSchema)},
	}
}

func levelBeta3Resource() *generic.Resource {
	return &generic.Resource{
		Resource: rest.Resource{
			GroupVersionKind: levelBeta3,
			Plural:           "prioritylevelconfigurations",
			Singular:         "prioritylevelconfiguration",
			New:              newLevelBeta3,
			NewList:          func() runtime.Object { return &flowcontrolv1beta3.PriorityLevelConfigurationList{} },
			Default:          defaultLevelBeta3,
			Table:            levelTable(mustV1Level),
			Deprecated:       deprecatedFor(levelV1),
		},
		Codec:        codec.Protobuf(levelBeta3, newLevelBeta3),
		Strategy:     levelStrategy{toV1: asV1Level, beta3: true},
		Subresources: map[string]generic.Strategy{"status": levelStatusStrategy(asV1Level)},
	}
}

// protoMessage is what the generated API types implement; v1 and v1beta3
// share their field numbers, so one version's bytes decode as the other.
type protoMessage interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

// convert copies in into out, an object of the same kind in another
// version, through their common protobuf form. A v1 field that is nil
// where v1beta3 has a plain value (nominalConcurrencyShares) becomes 0.
func convert(in, out runtime.Object, gvk schema.GroupVersionKind) error {
	src, ok := in.(protoMessage)
	if !ok {
		return fmt.Errorf("flowcontrol: cannot convert %T", in)
	}
	data, err := src.Marshal()
	if err != nil {
		return err
	}
	if err := out.(protoMessage).Unmarshal(data); err != nil {
		return err
	}
	out.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}

// asV1FlowSchema returns the served object as v1, the version validation
// and Tables work on.
func asV1FlowSchema(obj runtime.Object) (*flowcontrolv1.FlowSchema, error) {
	if fs, ok := obj.(*flowcontrolv1.FlowSchema); ok {
		return fs, nil
	}
	out := &flowcontrolv1.FlowSchema{}
	return out, convert(obj, out, flowSchemaV1)
}

func asV1Level(obj runtime.Object) (*flowcontrolv1.PriorityLevelConfiguration, error) {
	if pl, ok := obj.(*flowcontrolv1.PriorityLevelConfiguration); ok {
		return pl, nil
	}
	out := &flowcontrolv1.PriorityLevelConfiguration{}
	if err := convert(obj, out, levelV1); err != nil {
		return nil, err
	}
	dropZeroSharesMark(out)
	return out, nil
}

// mustV1FlowSchema is asV1FlowSchema for Tables, whose objects of either
// version came out of storage and so convert.
func mustV1FlowSchema(obj runtime.Object) *flowcontrolv1.FlowSchema {
	fs, err := asV1FlowSchema(obj)
	if err != nil {
		return &flowcontrolv1.FlowSchema{}
	}
	return fs
}

func mustV1Level(obj runtime.Object) *flowcontrolv1.PriorityLevelConfiguration {
	pl, err := asV1Level(obj)
	if err != nil {
		return &flowcontrolv1.PriorityLevelConfiguration{}
	}
	return pl
}

// markZeroShares records on a v1beta3 level that its 0
// nominalConcurrencyShares is meant, not unset, so that v1beta3 defaulting
// keeps it; kube keeps the mark in storage and shows it to v1beta3 clients
// only.
func markZeroShares(pl *flowcontrolv1beta3.PriorityLevelConfiguration) {
	if pl.Spec.Limited == nil || pl.Spec.Limited.NominalConcurrencyShares != 0 {
		return
	}
	if pl.Annotations == nil {
		pl.Annotations = map[string]string{}
	}
	pl.Annotations[flowcontrolv1beta3.PriorityLevelPreserveZeroConcurrencySharesKey] = ""
}

// dropZeroSharesMark removes the v1beta3 mark from a level served as v1.
func dropZeroSharesMark(pl *flowcontrolv1.PriorityLevelConfiguration) {
	if _, ok := pl.Annotations[flowcontrolv1beta3.PriorityLevelPreserveZeroConcurrencySharesKey]; !ok {
		return
	}
	delete(pl.Annotations, flowcontrolv1beta3.PriorityLevelPreserveZeroConcurrencySharesKey)
	if len(pl.Annotations) == 0 {
		pl.Annotations = nil
	}
}

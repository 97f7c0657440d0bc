package core

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/podspec"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// PodTemplateResource registers core/v1 podtemplates: a pod template with
// metadata, checked by pkg/podspec as a Job's template is. Like kube, the
// server counts changes of the template in metadata.generation.
func PodTemplateResource() *generic.Resource {
	gvk := corev1.SchemeGroupVersion.WithKind("PodTemplate")
	newFunc := func() runtime.Object { return &corev1.PodTemplate{} }
	return &generic.Resource{
		Resource: rest.Resource{
			GroupVersionKind: gvk,
			Plural:           "podtemplates",
			Singular:         "podtemplate",
			Namespaced:       true,
			New:              newFunc,
			NewList:          func() runtime.Object { return &corev1.PodTemplateList{} },
			Table:            podTemplateTable,
			Default:          func(obj runtime.Object) { podspec.DefaultTemplate(&obj.(*corev1.PodTemplate).Template) },
		},
		Codec:    codec.Protobuf(gvk, newFunc),
		Strategy: podTemplateStrategy{},
	}
}

type podTemplateStrategy struct{ generic.DefaultStrategy }

var templatePath = field.NewPath("template")

func (podTemplateStrategy) PrepareForCreate(obj runtime.Object) {
	pt := obj.(*corev1.PodTemplate)
	pt.Generation = 1
	podspec.DropDisabledFields(&pt.Template.Spec, nil)
}

func (podTemplateStrategy) PrepareForUpdate(obj, old runtime.Object) {
	pt, oldPT := obj.(*corev1.PodTemplate), old.(*corev1.PodTemplate)
	podspec.DropDisabledFields(&pt.Template.Spec, &oldPT.Template.Spec)
	if !equality.Semantic.DeepEqual(pt.Template, oldPT.Template) {
		pt.Generation = oldPT.Generation + 1
	}
}

func (podTemplateStrategy) Validate(obj runtime.Object) field.ErrorList {
	pt := obj.(*corev1.PodTemplate)
	errs := validateKubeFinalizers(&pt.ObjectMeta)
	return append(errs, podspec.ValidateTemplate(&pt.Template, templatePath, podspec.TemplateOptions(nil))...)
}

// ValidateUpdate checks the template as on create, with the leniency owed
// to what the stored one has; any of it may change.
func (podTemplateStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	pt, oldPT := obj.(*corev1.PodTemplate), old.(*corev1.PodTemplate)
	errs := validateCoreMetaUpdate(&pt.ObjectMeta, &oldPT.ObjectMeta)
	return append(errs, podspec.ValidateTemplate(&pt.Template, templatePath, podspec.TemplateOptions(&oldPT.Template))...)
}

func (podTemplateStrategy) WarningsOnCreate(obj runtime.Object) []string {
	return podspec.TemplateWarnings(templatePath, &obj.(*corev1.PodTemplate).Template)
}

// WarningsOnUpdate warns of the template only when it changed.
func (podTemplateStrategy) WarningsOnUpdate(obj, old runtime.Object) []string {
	pt := obj.(*corev1.PodTemplate)
	if pt.Generation == old.(*corev1.PodTemplate).Generation {
		return nil
	}
	return podspec.TemplateWarnings(templatePath, &pt.Template)
}

var podTemplateTable = &rest.TableSpec{
	Columns: []metav1.TableColumnDefinition{
		rest.NameColumn,
		{Name: "Containers", Type: "string", Description: "Names of each container in the template."},
		{Name: "Images", Type: "string", Description: "Images referenced by each container in the template."},
		{Name: "Pod Labels", Type: "string", Description: "The labels for the pod template."},
	},
	Cells: func(obj runtime.Object, _ time.Time) []interface{} {
		pt := obj.(*corev1.PodTemplate)
		names, images := containerCells(pt.Template.Spec.Containers)
		return []interface{}{pt.Name, names, images, labels.FormatLabels(pt.Template.Labels)}
	},
}

// containerCells joins the names and the images of containers, as kube's
// tables show them.
func containerCells(cs []corev1.Container) (names, images string) {
	n := make([]string, len(cs))
	im := make([]string, len(cs))
	for i, c := range cs {
		n[i], im[i] = c.Name, c.Image
	}
	return strings.Join(n, ","), strings.Join(im, ",")
}

// WorkloadResources are the core/v1 resources of pods and what they run
// on, in kube's discovery order.
func WorkloadResources(nodes NodeConnector) []*generic.Resource {
	return []*generic.Resource{NodeResource(), PodResource(nodes), PodTemplateResource()}
}

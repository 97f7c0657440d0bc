package kubescheme

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func gvk(apiVersion, kind string) schema.GroupVersionKind {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		panic(err)
	}
	return gv.WithKind(kind)
}

// The words kube-apiserver v1.29 answered for each body, read as each
// kind.
func TestDecode_AsKubeAnswers(t *testing.T) {
	cronJob, crd, deleteOptions := gvk("batch/v1", "CronJob"), gvk("apiextensions.k8s.io/v1", "CustomResourceDefinition"), gvk("meta.k8s.io/v1", "DeleteOptions")
	for _, tc := range []struct {
		scheme     *Scheme
		body, into schema.GroupVersionKind
		intoType   string
		want       string
	}{
		{Legacy, gvk("batch/v1", "CronJob"), cronJob, "batch.CronJob", ""},
		{Legacy, gvk("batch/v1beta1", "CronJob"), cronJob, "batch.CronJob", ""},
		{Legacy, gvk("v1", "ConfigMap"), cronJob, "batch.CronJob", "converting (v1.ConfigMap) to (batch.CronJob): unknown conversion"},
		{Legacy, gvk("batch/v1", "CronJobList"), cronJob, "batch.CronJob", "converting (v1.CronJobList) to (batch.CronJob): unknown conversion"},
		{Legacy, gvk("batch/v1", "WatchEvent"), cronJob, "batch.CronJob", "converting (v1.WatchEvent) to (batch.CronJob): unknown conversion"},
		{Legacy, gvk("batch/v2alpha1", "Status"), cronJob, "batch.CronJob", "converting (v1.Status) to (batch.CronJob): unknown conversion"},
		{Legacy, gvk("admission.k8s.io/v1beta1", "AdmissionReview"), cronJob, "batch.CronJob", "converting (v1beta1.AdmissionReview) to (batch.CronJob): unknown conversion"},
		{Legacy, gvk("batch/v1", "Bogus"), cronJob, "batch.CronJob", `no kind "Bogus" is registered for version "batch/v1" in scheme "pkg/runtime/scheme.go:100"`},
		{Legacy, gvk("v1", "CronJob"), cronJob, "batch.CronJob", `no kind "CronJob" is registered for version "v1" in scheme "pkg/runtime/scheme.go:100"`},
		{Legacy, gvk("batch/v1beta1", "JobTemplate"), cronJob, "batch.CronJob", `no kind "JobTemplate" is registered for version "batch/v1beta1" in scheme "pkg/runtime/scheme.go:100"`},
		{Legacy, gvk("meta.k8s.io/v1", "DeleteOptions"), cronJob, "batch.CronJob", `no kind "DeleteOptions" is registered for version "meta.k8s.io/v1" in scheme "pkg/runtime/scheme.go:100"`},
		{Legacy, gvk("v1", "Event"), gvk("events.k8s.io/v1", "Event"), "core.Event", ""},
		{Legacy, gvk("authentication.k8s.io/v1beta1", "TokenRequest"), gvk("authentication.k8s.io/v1", "TokenRequest"), "authentication.TokenRequest",
			`no kind "TokenRequest" is registered for version "authentication.k8s.io/v1beta1" in scheme "pkg/runtime/scheme.go:100"`},
		{APIExtensions, gvk("apiextensions.k8s.io/v1beta1", "CustomResourceDefinition"), crd, "apiextensions.CustomResourceDefinition", ""},
		{APIExtensions, gvk("v1", "ConfigMap"), crd, "apiextensions.CustomResourceDefinition", `no kind "ConfigMap" is registered for version "v1" in scheme "pkg/runtime/scheme.go:100"`},
		{APIExtensions, gvk("v1", "ListOptions"), crd, "apiextensions.CustomResourceDefinition", "converting (v1.ListOptions) to (apiextensions.CustomResourceDefinition): unknown conversion"},
		{APIExtensions, gvk("foo/v1", "WatchEvent"), crd, "apiextensions.CustomResourceDefinition", "converting (v1.WatchEvent) to (apiextensions.CustomResourceDefinition): unknown conversion"},
		{APIExtensions, gvk("apiextensions.k8s.io/v1beta1", "ConversionReview"), crd, "apiextensions.CustomResourceDefinition", "converting (v1beta1.ConversionReview) to (apiextensions.CustomResourceDefinition): unknown conversion"},
		{MetaInternal, gvk("batch/v1", "DeleteOptions"), deleteOptions, "v1.DeleteOptions", ""},
		{MetaInternal, gvk("foo/v9", "UpdateOptions"), deleteOptions, "v1.DeleteOptions", "converting (v1.UpdateOptions) to (v1.DeleteOptions): unknown conversion"},
		{MetaInternal, gvk("meta.k8s.io/v1", "WatchEvent"), deleteOptions, "v1.DeleteOptions", "converting (v1.WatchEvent) to (v1.DeleteOptions): unknown conversion"},
		{MetaInternal, gvk("meta.k8s.io/v1beta1", "PartialObjectMetadataList"), deleteOptions, "v1.DeleteOptions", "converting (v1beta1.PartialObjectMetadataList) to (v1.DeleteOptions): unknown conversion"},
		{MetaInternal, gvk("meta.k8s.io/v1beta1", "WatchEvent"), deleteOptions, "v1.DeleteOptions", `no kind "WatchEvent" is registered for version "meta.k8s.io/v1beta1" in scheme "pkg/runtime/scheme.go:100"`},
		{MetaInternal, gvk("v1", "ConfigMap"), deleteOptions, "v1.DeleteOptions", `no kind "ConfigMap" is registered for version "v1" in scheme "pkg/runtime/scheme.go:100"`},
	} {
		got := ""
		if err := tc.scheme.Decode(tc.body, tc.into, tc.intoType); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%v as %v: %q, want %q", tc.body, tc.into, got, tc.want)
		}
	}
}

func TestInternalType_GroupsPackage(t *testing.T) {
	for gk, want := range map[schema.GroupKind]string{
		{Kind: "Namespace"}:                                               "core.Namespace",
		{Group: "events.k8s.io", Kind: "Event"}:                           "core.Event",
		{Group: "batch", Kind: "CronJob"}:                                 "batch.CronJob",
		{Group: "rbac.authorization.k8s.io", Kind: "Role"}:                "rbac.Role",
		{Group: "authentication.k8s.io", Kind: "TokenRequest"}:            "authentication.TokenRequest",
		{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}: "apiextensions.CustomResourceDefinition",
	} {
		if got := InternalType(gk); got != want {
			t.Errorf("%v: %s, want %s", gk, got, want)
		}
	}
}

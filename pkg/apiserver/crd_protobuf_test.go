package apiserver_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	sigsjson "sigs.k8s.io/json"

	apiextensionsv1 "github.com/cronplane/cronplane/pkg/apis/apiextensions/v1"
	"github.com/cronplane/cronplane/pkg/codec"
)

// crdProtobuf is a client-go serializer of definitions in kube's
// protobuf form, through cronplane's own codec: definitions, their
// lists and Status errors; and the WatchEvents of a watch, which come
// without an envelope (watchEvents).
type crdProtobuf struct{}

const protobufType = "application/vnd.kubernetes.protobuf"

func (crdProtobuf) Identifier() runtime.Identifier { return "crd-protobuf" }

func (crdProtobuf) Encode(obj runtime.Object, w io.Writer) error {
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return fmt.Errorf("cannot encode %T", obj)
	}
	raw, err := crd.Marshal()
	if err != nil {
		return err
	}
	data, err := codec.Envelope("apiextensions.k8s.io/v1", "CustomResourceDefinition", raw)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

func (crdProtobuf) Decode(data []byte, _ *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	u, err := codec.OpenEnvelope(data)
	if err != nil {
		return nil, nil, err
	}
	gvk := schema.FromAPIVersionAndKind(u.APIVersion, u.Kind)
	var obj interface {
		runtime.Object
		Unmarshal([]byte) error
	}
	switch {
	case u.Kind == "Status":
		obj = &metav1.Status{}
	case gvk == apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"):
		obj = &apiextensionsv1.CustomResourceDefinition{}
	case gvk == apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinitionList"):
		obj = &apiextensionsv1.CustomResourceDefinitionList{}
	default:
		return nil, nil, fmt.Errorf("unexpected %s %s", u.APIVersion, u.Kind)
	}
	if into != nil && reflect.TypeOf(into) == reflect.TypeOf(obj) {
		obj = into.(interface {
			runtime.Object
			Unmarshal([]byte) error
		})
	}
	if err := obj.Unmarshal(u.Raw); err != nil {
		return nil, nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, &gvk, nil
}

// The negotiated serializer of the REST client: protobuf only, with
// kube's watch framing (each frame after its big-endian length).
func (s crdProtobuf) SupportedMediaTypes() []runtime.SerializerInfo {
	return []runtime.SerializerInfo{{MediaType: protobufType, MediaTypeType: "application", MediaTypeSubType: "vnd.kubernetes.protobuf",
		Serializer: s, StreamSerializer: &runtime.StreamSerializerInfo{Serializer: watchEvents{}, Framer: lengthFramer{}}}}
}
func (crdProtobuf) EncoderForVersion(e runtime.Encoder, _ runtime.GroupVersioner) runtime.Encoder {
	return e
}
func (crdProtobuf) DecoderToVersion(d runtime.Decoder, _ runtime.GroupVersioner) runtime.Decoder {
	return d
}

// watchEvents reads the frames of a protobuf watch: WatchEvent
// messages, each holding its object in the envelope.
type watchEvents struct{ crdProtobuf }

func (watchEvents) Decode(data []byte, _ *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	e, ok := into.(*metav1.WatchEvent)
	if !ok {
		return nil, nil, fmt.Errorf("a watch frame decoded into %T", into)
	}
	return e, nil, e.Unmarshal(data)
}

type lengthFramer struct{}

func (lengthFramer) NewFrameWriter(w io.Writer) io.Writer { return w }
func (lengthFramer) NewFrameReader(r io.ReadCloser) io.ReadCloser {
	return &frameReader{r: r}
}

// frameReader hands out one frame per Read, as client-go's decoder
// expects: a frame larger than p comes in parts, each but the last
// with io.ErrShortBuffer.
type frameReader struct {
	r         io.ReadCloser
	remaining int
}

func (f *frameReader) Read(p []byte) (int, error) {
	if f.remaining == 0 {
		var size [4]byte
		if _, err := io.ReadFull(f.r, size[:]); err != nil {
			return 0, err
		}
		f.remaining = int(binary.BigEndian.Uint32(size[:]))
	}
	n, err := io.ReadFull(f.r, p[:min(len(p), f.remaining)])
	f.remaining -= n
	if err == nil && f.remaining > 0 {
		err = io.ErrShortBuffer
	}
	return n, err
}
func (f *frameReader) Close() error { return f.r.Close() }

func crdProtobufClient(t *testing.T) *rest.RESTClient {
	cfg := rest.CopyConfig(srv.Config)
	cfg.APIPath = "/apis"
	cfg.GroupVersion = &apiextensionsv1.SchemeGroupVersion
	cfg.ContentType = protobufType
	cfg.AcceptContentTypes = protobufType
	cfg.NegotiatedSerializer = crdProtobuf{}
	c, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Definitions are created, read, listed and watched in protobuf, as with
// kube: the bytes are kube's messages, and the definition read in
// protobuf is the one read in JSON.
func TestCustomResourceDefinitions_ServedInProtobuf(t *testing.T) {
	c := ctx(t)
	client := crdProtobufClient(t)
	const name = "protos.proto.example.com"
	in := &apiextensionsv1.CustomResourceDefinition{}
	if err := json.Unmarshal([]byte(`{"metadata":{"name":"protos.proto.example.com","labels":{"a":"b"}},
	 "spec":{"group":"proto.example.com","scope":"Namespaced","names":{"plural":"protos","kind":"Proto","shortNames":["pr"]},
	  "versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{}},
	   "additionalPrinterColumns":[{"name":"Size","type":"integer","jsonPath":".spec.size"}],
	   "schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","required":["size"],"properties":{
	    "size":{"type":"integer","minimum":0,"maximum":10.5,"default":1},
	    "mode":{"type":"string","enum":["a","b"],"nullable":true},
	    "ports":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],
	     "items":{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"port":{"x-kubernetes-int-or-string":true}}}},
	    "config":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"default":{"z":1,"a":[1.5,"x"]}},
	    "labels":{"type":"object","additionalProperties":{"type":"string"},
	     "x-kubernetes-validations":[{"rule":"self.size() < 5","message":"too many","reason":"FieldValueForbidden"}]}}}}}}}]}}`), in); err != nil {
		t.Fatal(err)
	}

	list := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := client.Get().Resource("customresourcedefinitions").Do(c).Into(list); err != nil {
		t.Fatalf("list: %v", err)
	}
	w, err := client.Get().Resource("customresourcedefinitions").Param("watch", "true").
		Param("resourceVersion", list.ResourceVersion).Param("fieldSelector", "metadata.name="+name).Watch(c)
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()

	created := &apiextensionsv1.CustomResourceDefinition{}
	if err := client.Post().Resource("customresourcedefinitions").Body(in).Do(c).Into(created); err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { _ = client.Delete().Resource("customresourcedefinitions").Name(name).Do(ctx(t)).Error() })
	if created.Name != name || created.Spec.Names.Singular != "proto" || created.Spec.Conversion == nil ||
		created.Spec.Versions[0].Schema.OpenAPIV3Schema["properties"] == nil {
		t.Fatalf("created %+v", created)
	}

	select {
	case e := <-w.ResultChan():
		crd, ok := e.Object.(*apiextensionsv1.CustomResourceDefinition)
		if e.Type != watch.Added || !ok || crd.Name != name || crd.ResourceVersion != created.ResourceVersion {
			t.Fatalf("watch event %s %#v", e.Type, e.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event")
	}

	// Once Established, the controller leaves the definition alone.
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	waitCondition(c, t, dyn, name, "Established", "True")
	got := &apiextensionsv1.CustomResourceDefinition{}
	if err := client.Get().Resource("customresourcedefinitions").Name(name).Do(c).Into(got); err != nil {
		t.Fatalf("get: %v", err)
	}
	u, err := dyn.Resource(crdsGVR).Get(c, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fromProto := asJSONMap(t, got); !reflect.DeepEqual(fromProto, u.Object) {
		t.Errorf("protobuf GET differs from JSON GET:\n%v\n%v", fromProto, u.Object)
	}

	if err := client.Get().Resource("customresourcedefinitions").Do(c).Into(list); err != nil {
		t.Fatalf("list: %v", err)
	}
	var listed *apiextensionsv1.CustomResourceDefinition
	for i := range list.Items {
		if list.Items[i].Name == name {
			listed = &list.Items[i]
		}
	}
	if listed == nil || listed.ResourceVersion == "" || listed.Spec.Group != "proto.example.com" {
		t.Errorf("list of %d items without %s", len(list.Items), name)
	}

	// An update in protobuf, and a Status error answered in protobuf.
	got.Spec.Versions[0].AdditionalPrinterColumns[0].Priority = 1
	updated := &apiextensionsv1.CustomResourceDefinition{}
	if err := client.Put().Resource("customresourcedefinitions").Name(name).Body(got).Do(c).Into(updated); err != nil {
		t.Fatalf("update: %v", err)
	}
	if updated.Spec.Versions[0].AdditionalPrinterColumns[0].Priority != 1 || updated.Generation != 2 {
		t.Errorf("updated %+v", updated.Spec.Versions[0].AdditionalPrinterColumns)
	}
	err = client.Get().Resource("customresourcedefinitions").Name("nope.proto.example.com").Do(c).Error()
	if status, ok := err.(interface{ Status() metav1.Status }); !ok || status.Status().Code != 404 {
		t.Errorf("missing definition: %v", err)
	}
}

// asJSONMap is obj's JSON as decoded JSON, with kind and apiVersion.
func asJSONMap(t *testing.T, obj *apiextensionsv1.CustomResourceDefinition) map[string]interface{} {
	t.Helper()
	obj = obj.DeepCopy()
	obj.APIVersion, obj.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]interface{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(bytes.TrimSpace(data), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// kubeCRDTestdata holds the definition created on kube-apiserver v1.29.15
// and kube's protobuf answer to a GET of it (see its README.md).
var kubeCRDTestdata = filepath.Join("..", "apis", "apiextensions", "v1", "testdata")

// The definition kube answered in protobuf, created here from the same
// manifest, is answered with the same bytes, once what differs between
// any two creations (uid, resourceVersion, times, managedFields) is set
// alike.
func TestCustomResourceDefinitions_ProtobufIsKubes(t *testing.T) {
	c := ctx(t)
	manifest, err := os.ReadFile(filepath.Join(kubeCRDTestdata, "widgets-crd.json"))
	if err != nil {
		t.Fatal(err)
	}
	obj := object(t, string(manifest))
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	if _, err := dyn.Resource(crdsGVR).Create(c, obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dyn.Resource(crdsGVR).Delete(ctx(t), obj.GetName(), metav1.DeleteOptions{}) })
	waitCondition(c, t, dyn, obj.GetName(), "Established", "True")

	resp, body := send(t, "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+obj.GetName(), "", "Accept", protobufType)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != protobufType {
		t.Fatalf("GET: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	kube, err := os.ReadFile(filepath.Join(kubeCRDTestdata, "kube-crd.pb"))
	if err != nil {
		t.Fatal(err)
	}
	got, want := normalizedCRD(t, []byte(body)), normalizedCRD(t, kube)
	if !bytes.Equal(got, want) {
		t.Errorf("protobuf differs from kube's:\n got %x\nwant %x", got, want)
	}
}

// normalizedCRD decodes a protobuf definition, sets what differs between
// two creations alike, and encodes it again, in the envelope.
func normalizedCRD(t *testing.T, data []byte) []byte {
	t.Helper()
	obj, _, err := crdProtobuf{}.Decode(data, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	crd := obj.(*apiextensionsv1.CustomResourceDefinition)
	crd.UID, crd.ResourceVersion, crd.ManagedFields = "uid", "1", nil
	at := metav1.NewTime(time.Unix(1, 0))
	crd.CreationTimestamp = at
	for i := range crd.Status.Conditions {
		crd.Status.Conditions[i].LastTransitionTime = at
	}
	var out bytes.Buffer
	if err := (crdProtobuf{}).Encode(crd, &out); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

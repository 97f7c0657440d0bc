package apiserver_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/cronplane/cronplane/pkg/apiserver"
	"github.com/cronplane/cronplane/pkg/apiserver/apiservertest"
	"github.com/cronplane/cronplane/pkg/etcdserver"
)

var crdsGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// gadgetCRD declares gadgets.example.org: v1 served and stored with a
// status and a scale subresource and printer columns, v1beta1 served and
// deprecated.
const gadgetCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"gadgets.example.org"},
 "spec":{"group":"example.org","scope":"Namespaced",
  "names":{"plural":"gadgets","singular":"gadget","kind":"Gadget","shortNames":["gd"],"categories":["all","toys"]},
  "versions":[
   {"name":"v1","served":true,"storage":true,
    "subresources":{"status":{},"scale":{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas","labelSelectorPath":".status.selector"}},
    "additionalPrinterColumns":[{"name":"Colour","type":"string","jsonPath":".spec.colour"},{"name":"Replicas","type":"integer","jsonPath":".spec.replicas"},
     {"name":"Secret","type":"string","priority":1,"jsonPath":".spec.secret"}],
    "schema":{"openAPIV3Schema":{"type":"object","properties":{
     "spec":{"type":"object","properties":{"colour":{"type":"string","description":"The gadget's colour."},"replicas":{"type":"integer"},"secret":{"type":"string"},
      "parts":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],"items":{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"size":{"type":"integer"}}}}}},
     "status":{"type":"object","properties":{"replicas":{"type":"integer"},"selector":{"type":"string"}}}}}}},
   {"name":"v1beta1","served":true,"storage":false,"deprecated":true,"deprecationWarning":"example.org/v1beta1 Gadget is old; use v1",
    "schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`

func createCRD(ctx context.Context, t *testing.T, dyn dynamic.Interface, body string) *unstructured.Unstructured {
	t.Helper()
	out, err := dyn.Resource(crdsGVR).Create(ctx, object(t, body), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating CRD: %v", err)
	}
	return out
}

// waitServed creates obj until the resource is served, and returns how
// long that took.
func waitServed(ctx context.Context, t *testing.T, ri dynamic.ResourceInterface, obj *unstructured.Unstructured) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		_, err := ri.Create(ctx, obj, metav1.CreateOptions{})
		if err == nil {
			return time.Since(start)
		}
		if !apierrors.IsNotFound(err) || time.Since(start) > 10*time.Second {
			t.Fatalf("creating %s after %v: %v", obj.GetName(), time.Since(start), err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCustomResourceDefinition_ServedStatusScaleTableAndCascadingDelete(t *testing.T) {
	s := apiservertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := s.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "g"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(s.Config)
	created := time.Now()
	createCRD(ctx, t, dyn, gadgetCRD)
	gadgets := dyn.Resource(schema.GroupVersionResource{Group: "example.org", Version: "v1", Resource: "gadgets"}).Namespace("g")
	took := waitServed(ctx, t, gadgets, object(t, `{"apiVersion":"example.org/v1","kind":"Gadget","metadata":{"name":"a"},
		"spec":{"colour":"red","replicas":2,"secret":"s","bogus":1},"status":{"replicas":5}}`))
	t.Logf("served %v after the CRD was created (first create after %v)", time.Since(created), took)
	if took > 2*time.Second {
		t.Errorf("the new resource was served after %v, want under 2s", took)
	}

	// The definition's conditions, as kube sets them: Established follows
	// the names being served.
	waitCondition(ctx, t, dyn, "gadgets.example.org", "Established", "True")
	crd, err := dyn.Resource(crdsGVR).Get(ctx, "gadgets.example.org", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	got := map[string]string{}
	for _, c := range conds {
		m := c.(map[string]interface{})
		got[m["type"].(string)] = m["status"].(string) + "/" + m["reason"].(string)
	}
	if got["NamesAccepted"] != "True/NoConflicts" || got["Established"] != "True/InitialNamesAccepted" {
		t.Errorf("conditions = %v", got)
	}
	if sv, _, _ := unstructured.NestedStringSlice(crd.Object, "status", "storedVersions"); strings.Join(sv, ",") != "v1" {
		t.Errorf("storedVersions = %v", sv)
	}

	// Pruned, status cleared, generation 1.
	a, err := gadgets.Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.Object["status"]; ok || a.GetGeneration() != 1 {
		t.Errorf("created gadget kept status %v, generation %d", a.Object["status"], a.GetGeneration())
	}
	if _, ok, _ := unstructured.NestedFieldNoCopy(a.Object, "spec", "bogus"); ok {
		t.Errorf("unknown field kept: %v", a.Object["spec"])
	}

	// Status subresource.
	a.Object["status"] = map[string]interface{}{"replicas": int64(2), "selector": "app=x"}
	if _, err := gadgets.UpdateStatus(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Scale subresource: read and written through autoscaling/v1 Scale.
	scale, err := gadgets.Get(ctx, "a", metav1.GetOptions{}, "scale")
	if err != nil {
		t.Fatal(err)
	}
	if scale.GetKind() != "Scale" || scale.GetAPIVersion() != "autoscaling/v1" {
		t.Errorf("scale is %s %s", scale.GetAPIVersion(), scale.GetKind())
	}
	if r, _, _ := unstructured.NestedInt64(scale.Object, "status", "replicas"); r != 2 {
		t.Errorf("scale status = %v", scale.Object["status"])
	}
	if sel, _, _ := unstructured.NestedString(scale.Object, "status", "selector"); sel != "app=x" {
		t.Errorf("scale selector = %q", sel)
	}
	if _, err := gadgets.Patch(ctx, "a", types.MergePatchType, []byte(`{"spec":{"replicas":7}}`), metav1.PatchOptions{}, "scale"); err != nil {
		t.Fatal(err)
	}
	a, _ = gadgets.Get(ctx, "a", metav1.GetOptions{})
	if r, _, _ := unstructured.NestedInt64(a.Object, "spec", "replicas"); r != 7 {
		t.Errorf("after scaling spec.replicas = %d, want 7", r)
	}

	// Table: the printer columns, the priority-1 one only with wide.
	raw, err := s.Client.CoreV1().RESTClient().Get().AbsPath("/apis/example.org/v1/namespaces/g/gadgets").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	if strings.Join(cols, ",") != "Name,Colour,Replicas,Secret" || len(table.Rows) != 1 || table.ColumnDefinitions[3].Priority != 1 {
		t.Errorf("table columns %v, rows %v", cols, table.Rows)
	} else if cells, _ := json.Marshal(table.Rows[0].Cells); string(cells) != `["a","red",7,"s"]` {
		t.Errorf("table cells = %s", cells)
	}

	// The deprecated version: served with the warning, apiVersion rewritten.
	seen := &warnings{}
	cfg := *s.Config
	cfg.WarningHandler = seen
	old := dynamic.NewForConfigOrDie(&cfg).Resource(schema.GroupVersionResource{Group: "example.org", Version: "v1beta1", Resource: "gadgets"}).Namespace("g")
	b, err := old.Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b.GetAPIVersion() != "example.org/v1beta1" || strings.Join(seen.texts, "|") != "example.org/v1beta1 Gadget is old; use v1" {
		t.Errorf("v1beta1 read as %s with warnings %q", b.GetAPIVersion(), seen.texts)
	}

	// Strategic merge patch is not for custom resources.
	if _, err := gadgets.Patch(ctx, "a", types.StrategicMergePatchType, []byte(`{"spec":{"colour":"blue"}}`), metav1.PatchOptions{}); !apierrors.IsUnsupportedMediaType(err) {
		t.Errorf("strategic merge patch: %v, want 415", err)
	}

	// Discovery lists the resource with its short names and categories.
	res, err := s.Client.Discovery().ServerResourcesForGroupVersion("example.org/v1")
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, r := range res.APIResources {
		if r.Name == "gadgets" {
			found = strings.Join(r.ShortNames, ",") == "gd" && strings.Join(r.Categories, ",") == "all,toys"
		}
	}
	if !found {
		t.Errorf("discovery of example.org/v1: %+v", res.APIResources)
	}

	// Stored as kube stores custom objects, and definitions (as v1beta1, kube's storage version for them).
	kv, err := s.EtcdClient().Get(ctx, "/registry/example.org/gadgets/g/a")
	if err != nil || len(kv.Kvs) != 1 || !strings.HasPrefix(string(kv.Kvs[0].Value), `{"apiVersion":"example.org/v1","kind":"Gadget"`) {
		t.Errorf("stored gadget: %v %v", kv, err)
	}
	kv, err = s.EtcdClient().Get(ctx, "/registry/apiextensions.k8s.io/customresourcedefinitions/gadgets.example.org")
	if err != nil || len(kv.Kvs) != 1 || !strings.HasPrefix(string(kv.Kvs[0].Value), `{"kind":"CustomResourceDefinition","apiVersion":"apiextensions.k8s.io/v1beta1"`) {
		t.Errorf("stored CRD: %v %v", kv, err)
	}

	// Deleting the definition deletes its objects first, then stops
	// serving it.
	if err := dyn.Resource(crdsGVR).Delete(ctx, "gadgets.example.org", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := dyn.Resource(crdsGVR).Get(ctx, "gadgets.example.org", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("CRD still there after 10s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if kv, err := s.EtcdClient().Get(ctx, "/registry/example.org/gadgets/", clientv3.WithPrefix()); err != nil || len(kv.Kvs) != 0 {
		t.Errorf("objects left after the CRD went: %v %v", kv, err)
	}
	if _, err := gadgets.List(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("listing gadgets after the CRD went: %v, want 404", err)
	}
}

func TestCustomResourceDefinition_Validation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	for _, tc := range []struct {
		name, body, want string
	}{
		{"wrong name", `{"metadata":{"name":"x.example.org"},"spec":{"group":"example.org","scope":"Cluster","names":{"plural":"things","kind":"Thing"},"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}}`,
			`metadata.name: Invalid value: "x.example.org": must be spec.names.plural+"."+spec.group`},
		{"no scope", `{"metadata":{"name":"things.example.org"},"spec":{"group":"example.org","names":{"plural":"things","kind":"Thing"},"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}}`,
			`spec.scope: Required value`},
		{"no versions", `{"metadata":{"name":"things.example.org"},"spec":{"group":"example.org","scope":"Cluster","names":{"plural":"things","kind":"Thing"},"versions":[]}}`,
			`must have exactly one version marked as storage version`},
		{"two storage versions", `{"metadata":{"name":"things.example.org"},"spec":{"group":"example.org","scope":"Cluster","names":{"plural":"things","kind":"Thing"},"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}},{"name":"v2","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}}`,
			`must have exactly one version marked as storage version`},
		{"no schema", `{"metadata":{"name":"things.example.org"},"spec":{"group":"example.org","scope":"Cluster","names":{"plural":"things","kind":"Thing"},"versions":[{"name":"v1","served":true,"storage":true}]}}`,
			`spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required`},
		{"preserveUnknownFields", `{"metadata":{"name":"things.example.org"},"spec":{"group":"example.org","scope":"Cluster","preserveUnknownFields":true,"names":{"plural":"things","kind":"Thing"},"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}}`,
			`spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead`},
		{"not structural", `{"metadata":{"name":"things.example.org"},"spec":{"group":"example.org","scope":"Cluster","names":{"plural":"things","kind":"Thing"},"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"a":{}}}}}]}}`,
			`spec.validation.openAPIV3Schema.properties[a].type: Required value: must not be empty for specified object fields`},
		{"bad printer column", `{"metadata":{"name":"things.example.org"},"spec":{"group":"example.org","scope":"Cluster","names":{"plural":"things","kind":"Thing"},"versions":[{"name":"v1","served":true,"storage":true,"additionalPrinterColumns":[{"name":"X","type":"colour","jsonPath":".spec"}],"schema":{"openAPIV3Schema":{"type":"object"}}}]}}`,
			`spec.additionalPrinterColumns[0].type: Invalid value: "colour": must be one of boolean,date,integer,number,string`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := object(t, tc.body)
			obj.SetAPIVersion("apiextensions.k8s.io/v1")
			obj.SetKind("CustomResourceDefinition")
			_, err := dyn.Resource(crdsGVR).Create(ctx, obj, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("create: %v, want 422 with %q", err, tc.want)
			}
		})
	}
}

func TestCustomResourceDefinition_NameConflict(t *testing.T) {
	s := apiservertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dyn := dynamic.NewForConfigOrDie(s.Config)
	createCRD(ctx, t, dyn, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"foos.example.org"},
		"spec":{"group":"example.org","scope":"Cluster","names":{"plural":"foos","kind":"Foo","shortNames":["bars"]},
		"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}}`)
	waitCondition(ctx, t, dyn, "foos.example.org", "Established", "True")
	createCRD(ctx, t, dyn, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"bars.example.org"},
		"spec":{"group":"example.org","scope":"Cluster","names":{"plural":"bars","kind":"Bar"},
		"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}}`)
	c := waitCondition(ctx, t, dyn, "bars.example.org", "NamesAccepted", "False")
	if c["reason"] != "PluralConflict" || c["message"] != `"bars" is already in use` {
		t.Errorf("NamesAccepted = %v", c)
	}
}

func waitCondition(ctx context.Context, t *testing.T, dyn dynamic.Interface, name, typ, status string) map[string]interface{} {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		crd, err := dyn.Resource(crdsGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, c := range conds {
			m := c.(map[string]interface{})
			if m["type"] == typ && m["status"] == status {
				return m
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %s=%s condition in %v", name, typ, status, conds)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCustomResourceDefinition_TwoServersOnOneEtcdBothServe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	etcd, stop, err := etcdserver.StartTemp(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	tlsFiles := etcd.ClientTLS()
	shared := func(o *apiserver.Options) {
		o.EtcdServers = []string{etcd.ClientURL()}
		o.EtcdTLS = apiserver.EtcdTLSOptions{CAFile: tlsFiles.CAFile, CertFile: tlsFiles.CertFile, KeyFile: tlsFiles.KeyFile}
	}
	a := apiservertest.Start(t, shared)
	b := apiservertest.Start(t, shared)
	createCRD(ctx, t, dynamic.NewForConfigOrDie(a.Config), `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"dials.example.org"},
		"spec":{"group":"example.org","scope":"Cluster","names":{"plural":"dials","kind":"Dial"},
		"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}}}]}}`)
	for i, s := range []*apiservertest.Server{b, a} {
		ri := dynamic.NewForConfigOrDie(s.Config).Resource(schema.GroupVersionResource{Group: "example.org", Version: "v1", Resource: "dials"})
		obj := object(t, `{"apiVersion":"example.org/v1","kind":"Dial","metadata":{"name":"d"},"spec":{"x":1}}`)
		obj.SetName("d" + string(rune('0'+i)))
		took := waitServed(ctx, t, ri, obj)
		t.Logf("server %d served dials %v after the CRD's creation", i, took)
		if took > 2*time.Second {
			t.Errorf("server %d served dials after %v, want under 2s", i, took)
		}
	}
}

func TestCustomResourceDefinition_ObjectsValidatedAndDefaulted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	createCRD(ctx, t, dyn, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"knobs.example.org"},
		"spec":{"group":"example.org","scope":"Cluster","names":{"plural":"knobs","kind":"Knob"},
		"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{
		 "spec":{"type":"object","x-kubernetes-validations":[{"rule":"self.min <= self.max","message":"min must not exceed max"}],
		  "properties":{"min":{"type":"integer","minimum":0},"max":{"type":"integer","default":10},"mode":{"type":"string","enum":["on","off"]}}}}}}}]}}`)
	knobs := dyn.Resource(schema.GroupVersionResource{Group: "example.org", Version: "v1", Resource: "knobs"})
	waitServed(ctx, t, knobs, object(t, `{"apiVersion":"example.org/v1","kind":"Knob","metadata":{"name":"ok"},"spec":{"min":1}}`))
	ok, err := knobs.Get(ctx, "ok", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if max, _, _ := unstructured.NestedInt64(ok.Object, "spec", "max"); max != 10 {
		t.Errorf("defaulted spec.max = %d, want 10", max)
	}
	for _, tc := range []struct{ body, want string }{
		{`{"min":-1}`, `spec.min: Invalid value: -1: spec.min in body should be greater than or equal to 0`},
		{`{"min":1,"mode":"dim"}`, `spec.mode: Unsupported value: "dim": supported values: "on", "off"`},
		{`{"min":20}`, `min must not exceed max`},
	} {
		_, err := knobs.Create(ctx, object(t, `{"apiVersion":"example.org/v1","kind":"Knob","metadata":{"name":"bad"},"spec":`+tc.body+`}`), metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("create with spec %s: %v, want 422 with %q", tc.body, err, tc.want)
		}
	}
}

func TestCustomResourceDefinition_Kubectl(t *testing.T) {
	dir := t.TempDir()
	crd := dir + "/crd.json"
	body := strings.ReplaceAll(strings.ReplaceAll(gadgetCRD, "gadgets.example.org", "gadgets.kubectl.example.org"), `"group":"example.org"`, `"group":"kubectl.example.org"`)
	if err := os.WriteFile(crd, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, "apply", "-f", crd)
	ns := namespace(t)
	obj := dir + "/gadget.json"
	if err := os.WriteFile(obj, []byte(`{"apiVersion":"kubectl.example.org/v1","kind":"Gadget","metadata":{"name":"g1"},"spec":{"colour":"red","replicas":1,"secret":"x"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, err := kubectl(t, "-n", ns, "apply", "-f", obj)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubectl apply of a gadget: %v\n%s", err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out := mustKubectl(t, "-n", ns, "get", "gadgets"); !strings.HasPrefix(out, "NAME   COLOUR   REPLICAS\ng1     red      1") {
		t.Errorf("kubectl get gadgets:\n%s", out)
	}
	if out := mustKubectl(t, "-n", ns, "get", "gd", "-o", "wide"); !strings.HasPrefix(out, "NAME   COLOUR   REPLICAS   SECRET\ng1     red      1          x") {
		t.Errorf("kubectl get gd -o wide:\n%s", out)
	}
	if out := mustKubectl(t, "explain", "gadgets.spec.colour"); !strings.Contains(out, "The gadget's colour.") {
		t.Errorf("kubectl explain gadgets.spec.colour:\n%s", out)
	}
	mustKubectl(t, "-n", ns, "scale", "gadget/g1", "--replicas=3")
	if out := mustKubectl(t, "-n", ns, "get", "gadget", "g1", "-o", "jsonpath={.spec.replicas}"); out != "3" {
		t.Errorf("replicas after kubectl scale = %q", out)
	}
	mustKubectl(t, "delete", "crd", "gadgets.kubectl.example.org")
	if out, err := kubectl(t, "-n", ns, "get", "gadgets.kubectl.example.org"); err == nil {
		t.Errorf("gadgets still served after kubectl delete crd:\n%s", out)
	}
}

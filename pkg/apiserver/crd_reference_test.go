package apiserver_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cronplane/cronplane/pkg/apiserver"
	"github.com/cronplane/cronplane/pkg/apiserver/apiservertest"
)

// The reference kube-apiserver v1.29 and its etcd, when they run
// (../shared/reference/up.sh; CRONPLANE_REFERENCE_KUBECONFIG and
// CRONPLANE_REFERENCE_ETCD for one on other ports); the test skips
// otherwise.
const referenceEtcdPrefix = "/registry"

func referenceEtcd() string {
	if e := os.Getenv("CRONPLANE_REFERENCE_ETCD"); e != "" {
		return e
	}
	return "http://127.0.0.1:12379"
}

func referenceKubeconfig() string {
	if p := os.Getenv("CRONPLANE_REFERENCE_KUBECONFIG"); p != "" {
		return p
	}
	return "/tmp/cronplane-reference/admin.kubeconfig"
}

var referenceCRDs = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// referenceCRD is a definition in group, with a defaulted field, a status
// subresource and a printer column.
func referenceCRD(t *testing.T, group string) *unstructured.Unstructured {
	return object(t, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"probes.`+group+`"},
 "spec":{"group":"`+group+`","scope":"Namespaced","names":{"plural":"probes","singular":"probe","kind":"Probe","shortNames":["prb"]},
  "versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{}},
   "additionalPrinterColumns":[{"name":"Size","type":"integer","jsonPath":".spec.size"}],
   "schema":{"openAPIV3Schema":{"type":"object","properties":{
    "spec":{"type":"object","properties":{"size":{"type":"integer","default":3},"target":{"type":"string"},
     "ports":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"integer"}}}},
    "status":{"type":"object","properties":{"phase":{"type":"string"}}}}}}}]}}`)
}

func probe(t *testing.T, group, name string) *unstructured.Unstructured {
	return object(t, `{"apiVersion":"`+group+`/v1","kind":"Probe","metadata":{"name":"`+name+`"},"spec":{"target":"db","ports":[80,443]}}`)
}

// TestCustomResourceDefinition_SharesEtcdWithKubeAPIServer writes a
// definition and an object through kube-apiserver and serves them from
// cronplane, and the other way round, by moving the stored bytes between
// the reference's keys and the keys of a cronplane on the same etcd
// under a prefix of its own.
func TestCustomResourceDefinition_SharesEtcdWithKubeAPIServer(t *testing.T) {
	cfg, err := clientcmd.BuildConfigFromFlags("", referenceKubeconfig())
	if err != nil {
		t.Skipf("no reference kube-apiserver: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	kube := dynamic.NewForConfigOrDie(cfg)
	if _, err := kube.Resource(referenceCRDs).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		t.Skipf("reference kube-apiserver not reachable: %v", err)
	}
	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{referenceEtcd()}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Skipf("reference etcd: %v", err)
	}
	// Cleanups run last-in first-out: the client outlives them.
	t.Cleanup(func() { _ = etcd.Close() })
	if _, err := etcd.Get(ctx, referenceEtcdPrefix+"/namespaces/default"); err != nil {
		t.Skipf("reference etcd not reachable: %v", err)
	}
	suffix := randomSuffix()
	prefix := "/cronplane-reference-test-" + suffix
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		if _, err := etcd.Delete(cctx, prefix+"/", clientv3.WithPrefix()); err != nil {
			t.Logf("removing %s: %v", prefix, err)
		}
	})
	// copyKeys puts the values under from+rel at to+rel, for each rel.
	copyKeys := func(from, to string, rels ...string) {
		t.Helper()
		for _, rel := range rels {
			got, err := etcd.Get(ctx, from+rel)
			if err != nil || len(got.Kvs) != 1 {
				t.Fatalf("reading %s%s: %v (%d keys)", from, rel, err, len(got.Kvs))
			}
			if _, err := etcd.Put(ctx, to+rel, string(got.Kvs[0].Value)); err != nil {
				t.Fatal(err)
			}
		}
	}

	// kube-apiserver writes a definition and an object.
	kubeGroup := "kube-" + suffix + ".example.com"
	kubeCRDName := "probes." + kubeGroup
	if _, err := kube.Resource(referenceCRDs).Create(ctx, referenceCRD(t, kubeGroup), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteReferenceCRD(t, kube, kubeCRDName) })
	kubeProbes := schema.GroupVersionResource{Group: kubeGroup, Version: "v1", Resource: "probes"}
	createWhenServed(ctx, t, kube.Resource(kubeProbes).Namespace("default"), probe(t, kubeGroup, "from-kube"))

	// A cronplane on the same etcd reads those bytes at start.
	crdKey := func(name string) string { return "/apiextensions.k8s.io/customresourcedefinitions/" + name }
	objKey := func(group, name string) string { return "/" + group + "/probes/default/" + name }
	copyKeys(referenceEtcdPrefix, prefix, crdKey(kubeCRDName), objKey(kubeGroup, "from-kube"))
	s := apiservertest.Start(t, func(o *apiserver.Options) {
		o.EtcdServers = []string{referenceEtcd()}
		o.EtcdPrefix = prefix
		o.CompactionInterval = 0
	})
	cron := dynamic.NewForConfigOrDie(s.Config)
	got := getWhenServed(ctx, t, cron.Resource(kubeProbes).Namespace("default"), "from-kube")
	if size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); size != 3 {
		t.Errorf("cronplane reads kube's object with spec.size %d, want the default 3", size)
	}
	if ports, _, _ := unstructured.NestedSlice(got.Object, "spec", "ports"); len(ports) != 2 {
		t.Errorf("cronplane reads kube's object with spec.ports %v", ports)
	}
	crd, err := cron.Resource(referenceCRDs).Get(ctx, kubeCRDName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cols, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions"); len(cols) != 1 {
		t.Errorf("cronplane reads kube's definition with versions %v", cols)
	}

	// cronplane writes a definition and an object, and kube-apiserver
	// serves them once the bytes are under its prefix.
	cronGroup := "cron-" + suffix + ".example.com"
	cronCRDName := "probes." + cronGroup
	if _, err := cron.Resource(referenceCRDs).Create(ctx, referenceCRD(t, cronGroup), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cronProbes := schema.GroupVersionResource{Group: cronGroup, Version: "v1", Resource: "probes"}
	createWhenServed(ctx, t, cron.Resource(cronProbes).Namespace("default"), probe(t, cronGroup, "from-cronplane"))
	waitCRDEstablished(ctx, t, cron, cronCRDName)
	t.Cleanup(func() { deleteReferenceCRD(t, kube, cronCRDName) })
	copyKeys(prefix, referenceEtcdPrefix, crdKey(cronCRDName), objKey(cronGroup, "from-cronplane"))
	got = getWhenServed(ctx, t, kube.Resource(cronProbes).Namespace("default"), "from-cronplane")
	if size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); size != 3 || got.GetUID() == "" {
		t.Errorf("kube-apiserver reads cronplane's object with spec.size %d, uid %q", size, got.GetUID())
	}
	crd, err = kube.Resource(referenceCRDs).Get(ctx, cronCRDName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if names, _, _ := unstructured.NestedStringSlice(crd.Object, "status", "acceptedNames", "shortNames"); len(names) != 1 || names[0] != "prb" {
		t.Errorf("kube-apiserver reads cronplane's definition with accepted short names %v", names)
	}
}

func randomSuffix() string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// createWhenServed creates obj, retrying while its resource is not
// served yet (a definition just created).
func createWhenServed(ctx context.Context, t *testing.T, ri dynamic.ResourceInterface, obj *unstructured.Unstructured) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, err := ri.Create(ctx, obj, metav1.CreateOptions{})
		if err == nil {
			return
		}
		if !apierrors.IsNotFound(err) || time.Now().After(deadline) {
			t.Fatalf("creating %s: %v", obj.GetName(), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// getWhenServed reads name, retrying while it or its resource is not
// found yet.
func getWhenServed(ctx context.Context, t *testing.T, ri dynamic.ResourceInterface, name string) *unstructured.Unstructured {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		got, err := ri.Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			return got
		}
		if !apierrors.IsNotFound(err) || time.Now().After(deadline) {
			t.Fatalf("reading %s: %v", name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitCRDEstablished(ctx context.Context, t *testing.T, dyn dynamic.Interface, name string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		crd, err := dyn.Resource(referenceCRDs).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]interface{})
				if m["type"] == "Established" && m["status"] == "True" {
					return
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s not Established within 15s", name)
}

// deleteReferenceCRD deletes a definition from the reference and waits
// until kube-apiserver has removed its objects and it is gone.
func deleteReferenceCRD(t *testing.T, kube dynamic.Interface, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := kube.Resource(referenceCRDs).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Logf("deleting %s from the reference: %v", name, err)
		return
	}
	for ctx.Err() == nil {
		if _, err := kube.Resource(referenceCRDs).Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%s still on the reference after 30s", name)
}

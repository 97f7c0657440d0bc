package core

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/registry/generic"
)

// keyMsg is kube's message for a key that is not a valid config key.
const keyMsg = `a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`

// errStrings renders errors as kube's Status causes read: "field: detail".
func errStrings(errs field.ErrorList) []string {
	out := []string{}
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

func checkErrs(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if got := errStrings(errs); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func validConfigMap() *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "default", ResourceVersion: "5"},
		Data:       map[string]string{"a": "1", "game.properties": "x=1\n"},
		BinaryData: map[string][]byte{"bin": {0, 1, 2}},
	}
}

// The messages are those kube-apiserver v1.29 answered for the same
// objects.
func TestConfigMapValidate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*corev1.ConfigMap)
		want   []string
	}{
		{"valid", func(*corev1.ConfigMap) {}, nil},
		{"no data", func(cm *corev1.ConfigMap) { cm.Data, cm.BinaryData = nil, nil }, nil},
		{"bad data key", func(cm *corev1.ConfigMap) { cm.Data["a b"] = "x" },
			[]string{`data[a b]: Invalid value: "a b": ` + keyMsg}},
		{"bad binaryData key", func(cm *corev1.ConfigMap) { cm.BinaryData["c/d"] = []byte("z") },
			[]string{`binaryData[c/d]: Invalid value: "c/d": ` + keyMsg}},
		{"key in both", func(cm *corev1.ConfigMap) { cm.Data["bin"] = "z" },
			[]string{`data[bin]: Invalid value: "bin": duplicate of key present in binaryData`}},
		{"key too long", func(cm *corev1.ConfigMap) { cm.Data[strings.Repeat("k", 254)] = "" },
			[]string{`data[` + strings.Repeat("k", 254) + `]: Invalid value: "` + strings.Repeat("k", 254) + `": must be no more than 253 characters`}},
		{"exactly 1 MiB", func(cm *corev1.ConfigMap) {
			cm.Data = map[string]string{"a": strings.Repeat("x", 1<<20-3)}
			cm.BinaryData = map[string][]byte{"b": {1, 2, 3}}
		}, nil},
		{"over 1 MiB across data and binaryData", func(cm *corev1.ConfigMap) {
			cm.Data = map[string]string{"a": strings.Repeat("x", 700000)}
			cm.BinaryData = map[string][]byte{"b": bytes.Repeat([]byte("y"), 400000)}
		}, []string{`[]: Too long: must have at most 1048576 bytes`}},
		{"finalizer without domain", func(cm *corev1.ConfigMap) { cm.Finalizers = []string{"foo", "kubernetes", "orphan", "a.b/c"} },
			[]string{`metadata.finalizers[0]: Invalid value: "foo": name is neither a standard finalizer name nor is it fully qualified`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cm := validConfigMap()
			tc.mutate(cm)
			s := configMapStrategy{}
			defaultConfigMap(cm)
			s.PrepareForCreate(cm)
			checkErrs(t, s.Validate(cm), tc.want)
		})
	}
}

func TestConfigMapValidateUpdate(t *testing.T) {
	forbidden := func(f string) string { return f + ": Forbidden: field is immutable when `immutable` is set" }
	yes, no := true, false
	cases := []struct {
		name      string
		immutable bool
		mutate    func(*corev1.ConfigMap)
		want      []string
	}{
		{"mutable: data changes", false, func(cm *corev1.ConfigMap) { cm.Data["a"] = "2"; cm.BinaryData = nil }, nil},
		{"mutable: made immutable", false, func(cm *corev1.ConfigMap) { cm.Immutable = &yes }, nil},
		{"immutable: labels change", true, func(cm *corev1.ConfigMap) { cm.Labels = map[string]string{"x": "z"} }, nil},
		{"immutable: data change", true, func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" }, []string{forbidden("data")}},
		{"immutable: everything changes", true, func(cm *corev1.ConfigMap) {
			cm.Immutable = nil
			cm.Data = map[string]string{"a": "2"}
			cm.BinaryData = map[string][]byte{"b": []byte("z")}
		}, []string{forbidden("immutable"), forbidden("data"), forbidden("binaryData")}},
		{"immutable: set to false", true, func(cm *corev1.ConfigMap) { cm.Immutable = &no }, []string{forbidden("immutable")}},
		// kube compares with reflect.DeepEqual: an empty binaryData is a
		// change from none.
		{"immutable: empty binaryData for none", true, func(cm *corev1.ConfigMap) { cm.BinaryData = map[string][]byte{} }, []string{forbidden("binaryData")}},
		{"immutable: data removed", true, func(cm *corev1.ConfigMap) { cm.Data = nil }, []string{forbidden("data")}},
		// Metadata errors appear twice more, as in kube's causes (the store
		// adds the other two).
		{"bad label", false, func(cm *corev1.ConfigMap) { cm.Labels = map[string]string{"x/": "z"} }, []string{
			`metadata.labels: Invalid value: "x/": name part must be non-empty`,
			`metadata.labels: Invalid value: "x/": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			`metadata.labels: Invalid value: "x/": name part must be non-empty`,
			`metadata.labels: Invalid value: "x/": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
		}},
		{"bad finalizer and key", false, func(cm *corev1.ConfigMap) { cm.Finalizers = []string{"foo"}; cm.Data["a b"] = "1" }, []string{
			`metadata.finalizers[0]: Invalid value: "foo": name is neither a standard finalizer name nor is it fully qualified`,
			`metadata.finalizers[0]: Invalid value: "foo": name is neither a standard finalizer name nor is it fully qualified`,
			`data[a b]: Invalid value: "a b": ` + keyMsg,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := validConfigMap()
			old.BinaryData = nil
			if tc.immutable {
				old.Immutable = &yes
			}
			s := configMapStrategy{}
			defaultConfigMap(old)
			cm := old.DeepCopy()
			tc.mutate(cm)
			defaultConfigMap(cm)
			s.PrepareForUpdate(cm, old)
			checkErrs(t, s.ValidateUpdate(cm, old), tc.want)
		})
	}
}

func TestConfigMapCreate_NoGeneration(t *testing.T) {
	cm := validConfigMap()
	s := configMapStrategy{}
	s.PrepareForCreate(cm)
	if cm.Generation != 0 {
		t.Fatalf("generation %d", cm.Generation)
	}
	old := cm.DeepCopy()
	cm.Data["a"] = "2"
	s.PrepareForUpdate(cm, old)
	if cm.Generation != 0 {
		t.Fatalf("generation %d after a data change", cm.Generation)
	}
}

func TestConfigMapTable(t *testing.T) {
	res := ConfigMapResource()
	var names []string
	for _, c := range res.Table.Columns {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, ","); got != "Name,Data,Age" {
		t.Fatalf("columns %s", got)
	}
	if d := res.Table.Columns[1].Description; !strings.HasPrefix(d, "Data contains the configuration data.") {
		t.Fatalf("Data description %q", d)
	}
	now := time.Now()
	cm := validConfigMap()
	cm.CreationTimestamp = metav1.NewTime(now.Add(-90 * time.Second))
	cells := res.Table.Cells(cm, now)
	if len(cells) != 3 || cells[0] != "cm" || cells[1] != int64(3) || cells[2] != "90s" {
		t.Fatalf("cells %#v", cells)
	}
	if len(res.ShortNames) != 1 || res.ShortNames[0] != "cm" || !res.Namespaced {
		t.Fatalf("registration %+v", res)
	}
}

// storedLikeKube checks that what the store writes for a request equals,
// byte for byte, what kube-apiserver v1.29 wrote to etcd for the same
// request (testdata), once the fields the server assigns (uid, creation
// time, managedFields) are taken from kube's object.
func storedLikeKube(t *testing.T, res *generic.Resource, file string, request runtime.Object) {
	t.Helper()
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := res.Codec.Decode(want)
	if err != nil {
		t.Fatal(err)
	}
	km := kube.(metav1.ObjectMetaAccessor).GetObjectMeta()
	rm := request.(metav1.ObjectMetaAccessor).GetObjectMeta()
	rm.SetUID(km.GetUID())
	rm.SetCreationTimestamp(km.GetCreationTimestamp())
	rm.SetManagedFields(km.GetManagedFields())
	res.Defaults(request)
	res.Strategy.PrepareForCreate(request)
	if errs := res.Strategy.Validate(request); len(errs) > 0 {
		t.Fatal(errs)
	}
	got, err := res.Codec.Encode(request)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("stored bytes differ from kube's:\n got %q\nwant %q", got, want)
	}
	// What is read back is what was written.
	back, err := res.StorageCodec().Decode(got)
	if err != nil {
		t.Fatal(err)
	}
	again, err := res.Codec.Encode(back)
	if err != nil || !bytes.Equal(again, want) {
		t.Fatalf("read back and re-encoded: %v\n%q", err, again)
	}
}

func TestConfigMapStorage_MatchesKube(t *testing.T) {
	yes := true
	storedLikeKube(t, ConfigMapResource(), "testdata/kube-configmap.pb", &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-cm", Namespace: "cmprobe"},
		Immutable:  &yes,
		Data:       map[string]string{"k": "v", "game.properties": "x=1\ny=2\n"},
		BinaryData: map[string][]byte{"bin": {0, 1, 2}},
	})
}

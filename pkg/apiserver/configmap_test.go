package apiserver_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/cronplane/cronplane/pkg/codec"
)

// configMapKeyMsg is kube's message for a key that is not a config key.
const configMapKeyMsg = `a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`

func TestConfigMap_CreateGetListUpdateDelete(t *testing.T) {
	ns := namespace(t)
	cms := srv.Client.CoreV1().ConfigMaps(ns)
	created, err := cms.Create(ctx(t), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Labels: map[string]string{"app": "demo"}},
		Data:       map[string]string{"greeting": "hello"},
		BinaryData: map[string][]byte{"bin": {0, 1, 2}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.UID == "" || created.ResourceVersion == "" || created.Generation != 0 {
		t.Fatalf("system fields: %+v", created.ObjectMeta)
	}
	got, err := cms.Get(ctx(t), "app", metav1.GetOptions{})
	if err != nil || got.Data["greeting"] != "hello" || !bytes.Equal(got.BinaryData["bin"], []byte{0, 1, 2}) {
		t.Fatalf("get: %v %+v", err, got)
	}
	list, err := cms.List(ctx(t), metav1.ListOptions{LabelSelector: "app=demo"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "app" {
		t.Fatalf("list: %v %+v", err, list)
	}
	got.Data["greeting"] = "bye"
	updated, err := cms.Update(ctx(t), got, metav1.UpdateOptions{})
	if err != nil || updated.Data["greeting"] != "bye" || updated.Generation != 0 || updated.ResourceVersion == got.ResourceVersion {
		t.Fatalf("update: %v %+v", err, updated)
	}
	if err := cms.Delete(ctx(t), "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = cms.Get(ctx(t), "app", metav1.GetOptions{})
	if se := wantStatus(t, err, 404, metav1.StatusReasonNotFound); se.Message != `configmaps "app" not found` {
		t.Fatalf("message %q", se.Message)
	}
}

// The messages are kube-apiserver v1.29's for the same requests.
func TestConfigMap_InvalidKeysAndSize(t *testing.T) {
	ns := namespace(t)
	cms := srv.Client.CoreV1().ConfigMaps(ns)
	_, err := cms.Create(ctx(t), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Data:       map[string]string{"a b": "x", "ok": "y", "dup": "z"},
		BinaryData: map[string][]byte{"dup": []byte("z"), "c/d": []byte("z")},
	}, metav1.CreateOptions{})
	se := wantStatus(t, err, 422, metav1.StatusReasonInvalid)
	want := `ConfigMap "bad" is invalid: [data[a b]: Invalid value: "a b": ` + configMapKeyMsg +
		`, data[dup]: Invalid value: "dup": duplicate of key present in binaryData, binaryData[c/d]: Invalid value: "c/d": ` + configMapKeyMsg + `]`
	if se.Message != want {
		t.Fatalf("message:\n%s\nwant:\n%s", se.Message, want)
	}
	_, err = cms.Create(ctx(t), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "big"},
		Data:       map[string]string{"a": strings.Repeat("x", 700000)},
		BinaryData: map[string][]byte{"b": bytes.Repeat([]byte("y"), 400000)},
	}, metav1.CreateOptions{})
	se = wantStatus(t, err, 422, metav1.StatusReasonInvalid)
	if want := `ConfigMap "big" is invalid: []: Too long: must have at most 1048576 bytes`; se.Message != want {
		t.Fatalf("message %q, want %q", se.Message, want)
	}
	if c := se.Details.Causes; len(c) != 1 || c[0].Field != "[]" || c[0].Type != metav1.CauseType("FieldValueTooLong") {
		t.Fatalf("causes %+v", c)
	}
}

func TestConfigMap_ImmutableKeepsDataAndCannotBeUnset(t *testing.T) {
	ns := namespace(t)
	cms := srv.Client.CoreV1().ConfigMaps(ns)
	created, err := cms.Create(ctx(t), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "imm"},
		Immutable:  boolPtr(true),
		Data:       map[string]string{"a": "1"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	changed := created.DeepCopy()
	changed.Immutable = nil
	changed.Data["a"] = "2"
	changed.BinaryData = map[string][]byte{"b": []byte("z")}
	_, err = cms.Update(ctx(t), changed, metav1.UpdateOptions{})
	se := wantStatus(t, err, 422, metav1.StatusReasonInvalid)
	want := "ConfigMap \"imm\" is invalid: [immutable: Forbidden: field is immutable when `immutable` is set, " +
		"data: Forbidden: field is immutable when `immutable` is set, binaryData: Forbidden: field is immutable when `immutable` is set]"
	if se.Message != want {
		t.Fatalf("message:\n%s\nwant:\n%s", se.Message, want)
	}
	unset := created.DeepCopy()
	unset.Immutable = boolPtr(false)
	_, err = cms.Update(ctx(t), unset, metav1.UpdateOptions{})
	se = wantStatus(t, err, 422, metav1.StatusReasonInvalid)
	if want := "ConfigMap \"imm\" is invalid: immutable: Forbidden: field is immutable when `immutable` is set"; se.Message != want {
		t.Fatalf("message %q", se.Message)
	}
	// Metadata stays writable.
	labelled := created.DeepCopy()
	labelled.Labels = map[string]string{"x": "z"}
	if _, err := cms.Update(ctx(t), labelled, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// As in kube, a merge patch to data is refused too.
	_, err = cms.Patch(ctx(t), "imm", "application/merge-patch+json", []byte(`{"data":{"a":"3"}}`), metav1.PatchOptions{})
	wantStatus(t, err, 422, metav1.StatusReasonInvalid)
}

// kube-apiserver v1.29 stored this secret as testdata/kube-secret.pb, from
// `kubectl create` of data {a: 1, c: 3} and stringData {a: override, b: 2}.
const kubeSecretManagedFields = `{"f:data":{".":{},"f:a":{},"f:b":{},"f:c":{}},"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:type":{}}`

func TestSecret_StringDataFoldedIntoDataAndStoredAsKube(t *testing.T) {
	ns := namespace(t)
	secrets := srv.Client.CoreV1().Secrets(ns)
	created, err := secrets.Create(ctx(t), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-secret", Labels: map[string]string{"app": "demo"}},
		Data:       map[string][]byte{"a": []byte("1"), "c": []byte("3")},
		StringData: map[string]string{"a": "override", "b": "2"},
	}, metav1.CreateOptions{FieldManager: "kubectl-create"})
	if err != nil {
		t.Fatal(err)
	}
	wantData := map[string]string{"a": "override", "b": "2", "c": "3"}
	check := func(what string, s *corev1.Secret) {
		t.Helper()
		got := map[string]string{}
		for k, v := range s.Data {
			got[k] = string(v)
		}
		if s.Type != corev1.SecretTypeOpaque || s.StringData != nil || len(got) != 3 || got["a"] != "override" || got["b"] != "2" || got["c"] != "3" {
			t.Fatalf("%s: type %q data %v stringData %v, want Opaque %v", what, s.Type, got, s.StringData, wantData)
		}
	}
	check("create", created)
	if created.Generation != 0 {
		t.Fatalf("generation %d", created.Generation)
	}
	if len(created.ManagedFields) != 1 || string(created.ManagedFields[0].FieldsV1.Raw) != kubeSecretManagedFields {
		t.Fatalf("managedFields %+v", created.ManagedFields)
	}
	got, err := secrets.Get(ctx(t), "kube-secret", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check("get", got)

	// The stored bytes are kube's, but for what the server assigns.
	resp, err := srv.EtcdClient().Get(ctx(t), "/registry/secrets/"+ns+"/kube-secret")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("etcd: %v %+v", err, resp)
	}
	stored := resp.Kvs[0].Value
	want, err := os.ReadFile(filepath.Join("..", "registry", "core", "testdata", "kube-secret.pb"))
	if err != nil {
		t.Fatal(err)
	}
	gvk := corev1.SchemeGroupVersion.WithKind("Secret")
	c := codec.Protobuf(gvk, func() runtime.Object { return &corev1.Secret{} })
	obj, err := c.Decode(stored)
	if err != nil {
		t.Fatal(err)
	}
	kubeObj, err := c.Decode(want)
	if err != nil {
		t.Fatal(err)
	}
	s, k := obj.(*corev1.Secret), kubeObj.(*corev1.Secret)
	s.Namespace, s.UID, s.CreationTimestamp = k.Namespace, k.UID, k.CreationTimestamp
	s.ManagedFields[0].Time = k.ManagedFields[0].Time
	normalized, err := c.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(normalized, want) {
		t.Fatalf("stored bytes differ from kube's:\n got %q\nwant %q", normalized, want)
	}

	// stringData on an update overrides data the same way.
	got.StringData = map[string]string{"c": "updated"}
	updated, err := secrets.Update(ctx(t), got, metav1.UpdateOptions{})
	if err != nil || string(updated.Data["c"]) != "updated" || string(updated.Data["a"]) != "override" || updated.StringData != nil {
		t.Fatalf("update: %v %+v", err, updated)
	}
	patched, err := secrets.Patch(ctx(t), "kube-secret", "application/merge-patch+json", []byte(`{"stringData":{"d":"4"}}`), metav1.PatchOptions{})
	if err != nil || string(patched.Data["d"]) != "4" || len(patched.Data) != 4 || patched.StringData != nil {
		t.Fatalf("patch: %v %+v", err, patched)
	}
	list, err := secrets.List(ctx(t), metav1.ListOptions{FieldSelector: "type=Opaque"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list by type: %v %+v", err, list)
	}
	if list, _ := secrets.List(ctx(t), metav1.ListOptions{FieldSelector: "type=kubernetes.io/tls"}); len(list.Items) != 0 {
		t.Fatalf("type selector not applied: %d items", len(list.Items))
	}
	if err := secrets.Delete(ctx(t), "kube-secret", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = secrets.Get(ctx(t), "kube-secret", metav1.GetOptions{})
	if se := wantStatus(t, err, 404, metav1.StatusReasonNotFound); se.Message != `secrets "kube-secret" not found` {
		t.Fatalf("message %q", se.Message)
	}
}

// The messages are kube-apiserver v1.29's for the same requests.
func TestSecret_TypedSecretsAndImmutability(t *testing.T) {
	ns := namespace(t)
	secrets := srv.Client.CoreV1().Secrets(ns)
	for _, tc := range []struct {
		typ  corev1.SecretType
		want string
	}{
		{corev1.SecretTypeServiceAccountToken, `Secret "s" is invalid: metadata.annotations[kubernetes.io/service-account.name]: Required value`},
		{corev1.SecretTypeDockercfg, `Secret "s" is invalid: data[.dockercfg]: Required value`},
		{corev1.SecretTypeDockerConfigJson, `Secret "s" is invalid: data[.dockerconfigjson]: Required value`},
		{corev1.SecretTypeBasicAuth, `Secret "s" is invalid: [data[username]: Required value, data[password]: Required value]`},
		{corev1.SecretTypeSSHAuth, `Secret "s" is invalid: data[ssh-privatekey]: Required value`},
		{corev1.SecretTypeTLS, `Secret "s" is invalid: [data[tls.crt]: Required value, data[tls.key]: Required value]`},
	} {
		_, err := secrets.Create(ctx(t), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Type: tc.typ}, metav1.CreateOptions{})
		if se := wantStatus(t, err, 422, metav1.StatusReasonInvalid); se.Message != tc.want {
			t.Errorf("%s: %q, want %q", tc.typ, se.Message, tc.want)
		}
	}
	_, err := secrets.Create(ctx(t), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "dj"},
		Type:       corev1.SecretTypeDockerConfigJson,
		StringData: map[string]string{".dockerconfigjson": "{bad"},
	}, metav1.CreateOptions{})
	se := wantStatus(t, err, 422, metav1.StatusReasonInvalid)
	if want := `Secret "dj" is invalid: data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": invalid character 'b' looking for beginning of object key string`; se.Message != want {
		t.Fatalf("message %q", se.Message)
	}
	// kube leaves bootstrap tokens to their consumers.
	if _, err := secrets.Create(ctx(t), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-abcdef"}, Type: corev1.SecretTypeBootstrapToken}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	created, err := secrets.Create(ctx(t), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "imm"},
		Immutable:  boolPtr(true),
		Data:       map[string][]byte{"a": []byte("1")},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	changed := created.DeepCopy()
	changed.Type = "Other"
	changed.Immutable = nil
	changed.StringData = map[string]string{"b": "3"}
	_, err = secrets.Update(ctx(t), changed, metav1.UpdateOptions{})
	se = wantStatus(t, err, 422, metav1.StatusReasonInvalid)
	want := "Secret \"imm\" is invalid: [type: Invalid value: \"Other\": field is immutable, immutable: Forbidden: field is immutable when `immutable` is set, " +
		"data: Forbidden: field is immutable when `immutable` is set]"
	if se.Message != want {
		t.Fatalf("message:\n%s\nwant:\n%s", se.Message, want)
	}
	// stringData that repeats data changes nothing.
	same := created.DeepCopy()
	same.StringData = map[string]string{"a": "1"}
	if _, err := secrets.Update(ctx(t), same, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const appConfigMapYAML = `apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config
  labels: {app: demo}
data:
  greeting: hello
`

const appCronJobYAML = `apiVersion: batch/v1
kind: CronJob
metadata:
  name: app-cron
  labels: {app: demo}
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: c
            image: busybox
            command: [echo, hi]
`

func TestKubectl_ApplyListAndDirectoryWithConfigMapAndCronJob(t *testing.T) {
	ns := namespace(t)
	var items []interface{}
	for _, doc := range []string{appConfigMapYAML, appCronJobYAML} {
		var m map[string]interface{}
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		items = append(items, m)
	}
	list, err := json.Marshal(map[string]interface{}{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		t.Fatal(err)
	}
	listPath := writeFile(t, t.TempDir(), "list.json", string(list))
	out := mustKubectl(t, "-n", ns, "apply", "-f", listPath)
	if !strings.Contains(out, "configmap/app-config created") || !strings.Contains(out, "cronjob.batch/app-cron created") {
		t.Fatalf("apply of a List:\n%s", out)
	}
	out = mustKubectl(t, "-n", ns, "apply", "-f", listPath)
	if !strings.Contains(out, "configmap/app-config unchanged") || !strings.Contains(out, "cronjob.batch/app-cron unchanged") {
		t.Fatalf("second apply of the List:\n%s", out)
	}

	// A directory with both, one changed.
	dir := t.TempDir()
	writeFile(t, dir, "cm.yaml", strings.Replace(appConfigMapYAML, "hello", "bonjour", 1))
	writeFile(t, dir, "cj.yaml", appCronJobYAML)
	out = mustKubectl(t, "-n", ns, "apply", "-f", dir)
	if !strings.Contains(out, "configmap/app-config configured") || !strings.Contains(out, "cronjob.batch/app-cron unchanged") {
		t.Fatalf("apply of a directory:\n%s", out)
	}
	cm, err := srv.Client.CoreV1().ConfigMaps(ns).Get(ctx(t), "app-config", metav1.GetOptions{})
	if err != nil || cm.Data["greeting"] != "bonjour" || cm.Annotations[corev1.LastAppliedConfigAnnotation] == "" {
		t.Fatalf("configmap after apply: %v %+v", err, cm)
	}
	if cj, err := srv.Client.BatchV1().CronJobs(ns).Get(ctx(t), "app-cron", metav1.GetOptions{}); err != nil || cj.Spec.Schedule != "*/5 * * * *" {
		t.Fatalf("cronjob after apply: %v %+v", err, cj)
	}
	if out := mustKubectl(t, "-n", ns, "get", "cm", "app-config", "-o", "jsonpath={.data.greeting}"); out != "bonjour" {
		t.Fatalf("get cm by short name: %q", out)
	}

	// Pruning what the directory no longer holds. kubectl's default list
	// of kinds to prune names kinds not served here (Pods, Services,
	// Deployments, ...), so the kinds are given, as kubectl recommends.
	pruneDir := t.TempDir()
	writeFile(t, pruneDir, "cm.yaml", appConfigMapYAML)
	out = mustKubectl(t, "-n", ns, "apply", "--prune", "-l", "app=demo", "--prune-allowlist=core/v1/ConfigMap",
		"--prune-allowlist=core/v1/Secret", "--prune-allowlist=batch/v1/CronJob", "-f", pruneDir)
	if !strings.Contains(out, "configmap/app-config configured") || !strings.Contains(out, "cronjob.batch/app-cron pruned") {
		t.Fatalf("apply --prune:\n%s", out)
	}
}

func TestKubectl_GetConfigMapsAndSecretsColumns(t *testing.T) {
	ns := namespace(t)
	dir := t.TempDir()
	path := writeFile(t, dir, "objs.yaml", appConfigMapYAML+`---
apiVersion: v1
kind: Secret
metadata:
  name: creds
type: kubernetes.io/basic-auth
stringData:
  username: admin
  password: pw
---
apiVersion: v1
kind: Secret
metadata:
  name: cert
type: kubernetes.io/tls
stringData:
  tls.crt: x
  tls.key: k
`)
	out := mustKubectl(t, "-n", ns, "create", "-f", path)
	if !strings.Contains(out, "Warning: tls: failed to find any PEM data in certificate input") {
		t.Fatalf("create without the TLS warning:\n%s", out)
	}
	out = mustKubectl(t, "-n", ns, "get", "cm,secret")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := []string{
		"NAME                   DATA   AGE",
		"configmap/app-config   1      ",
		"",
		"NAME           TYPE                       DATA   AGE",
		"secret/cert    kubernetes.io/tls          2      ",
		"secret/creds   kubernetes.io/basic-auth   2      ",
	}
	if len(lines) != len(want) {
		t.Fatalf("kubectl get cm,secret:\n%s", out)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Fatalf("line %d %q, want prefix %q; output:\n%s", i, lines[i], w, out)
		}
	}
}

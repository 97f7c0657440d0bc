package apiserver_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// TestManagedFields_MatchKubeForEveryServedKind writes the same manifests
// as kubectl users do (create, client-side apply, server-side apply, and
// client-side apply followed by server-side apply) and compares the
// managedFields entries, without their times, with those kube-apiserver
// v1.29.15 recorded for the same commands (testdata/managedfields, taken
// from the reference with kubectl 1.29). The manifests carry what the
// merge schema must know beyond the Go types: atomic ownerReferences and
// object references, map lists keyed by defaulted fields (ports by
// containerPort and protocol), atomic maps and fields the server fills
// in (a Job's selector and labels, owned by nobody), the conditions the
// server writes into a CustomResourceDefinition's status (a map list by
// type), and a custom object typed by its definition's schema. The
// namespace's name (in cluster-scoped names and the custom group) reads
// as NSNAME.
func TestManagedFields_MatchKubeForEveryServedKind(t *testing.T) {
	dir := "testdata/managedfields"
	modes := map[string][][]string{
		"create":       {{"create", "-f"}},
		"csa":          {{"apply", "-f"}},
		"ssa":          {{"apply", "--server-side", "-f"}},
		"csa-then-ssa": {{"apply", "-f"}, {"apply", "--server-side", "-f"}},
	}
	for mode, commands := range modes {
		ns := namespace(t)
		for _, kind := range []string{"cj", "job", "lease", "ev", "ev2", "ns", "sa", "cm", "secret", "role", "rb", "cr", "crb", "crd", "widget"} {
			t.Run(mode+"/"+kind, func(t *testing.T) {
				// Cluster-scoped objects are named after the namespace, so
				// that each mode has its own.
				manifest := strings.ReplaceAll(readFile(t, filepath.Join(dir, kind+".yaml")), "NSNAME", ns)
				path := filepath.Join(t.TempDir(), kind+".yaml")
				if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
					t.Fatal(err)
				}
				for i, args := range commands {
					out, err := kubectl(t, append(append([]string{"-n", ns}, args...), path)...)
					// Server-side apply takes over from client-side apply the
					// fields whose values are still those of the last-applied
					// configuration; the CronJob's atomic fieldRef is not one
					// (the server filled in its apiVersion), and kube refuses
					// that apply as this.
					if mode == "csa-then-ssa" && kind == "cj" && i == 1 {
						if err == nil || !strings.HasPrefix(out, cronJobTakeOverConflict) {
							t.Fatalf("kubectl %v: %v, want kube's conflict\n%s", args, err, out)
						}
						continue
					}
					if err != nil {
						t.Fatalf("kubectl %v: %v\n%s", args, err, out)
					}
				}
				if kind == "crd" {
					// The server's status entry is complete once the
					// definition is established.
					mustKubectl(t, "wait", "--for=condition=Established", "--timeout=30s", "crd/widgets."+ns+".example.com")
				}
				out := mustKubectl(t, "-n", ns, "get", "-f", path, "-o", "json", "--show-managed-fields")
				got, times := managedFieldsWithoutTimes(t, strings.ReplaceAll(out, ns, "NSNAME"))
				var want []interface{}
				if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, mode+"-"+kind+".golden.json"))), &want); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) && !reorderedByTime(got, times, want) {
					g, _ := json.MarshalIndent(got, "", " ")
					w, _ := json.MarshalIndent(want, "", " ")
					t.Fatalf("managedFields differ from kube's\ngot  %s\nwant %s", g, w)
				}
			})
		}
	}
}

// cronJobTakeOverConflict is kube's answer to the server-side apply of
// testdata/managedfields/cj.yaml after its client-side apply.
const cronJobTakeOverConflict = `error: Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using batch/v1: ` +
	`.spec.jobTemplate.spec.template.spec.containers[name="main"].env[name="B"].valueFrom.fieldRef` + "\n"

func managedFieldsWithoutTimes(t *testing.T, objJSON string) (entries []interface{}, times []string) {
	t.Helper()
	var obj struct {
		Metadata struct {
			ManagedFields []map[string]interface{} `json:"managedFields"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(objJSON), &obj); err != nil {
		t.Fatal(err)
	}
	entries = []interface{}{}
	for _, e := range obj.Metadata.ManagedFields {
		tm, _ := e["time"].(string)
		times = append(times, tm)
		delete(e, "time")
		entries = append(entries, e)
	}
	return entries, times
}

// reorderedByTime says got holds want's entries in another order that
// their times explain: kube sorts the entries of one operation by time
// (to the second) before their managers' names, so a CRD's status entry,
// written by the server once the definition is established, comes after
// kubectl's when that took the next second, and before it (by name)
// within the same one, as in the golden file. Without a change of second
// between entries of one operation, the golden order must hold exactly.
func reorderedByTime(got []interface{}, times []string, want []interface{}) bool {
	if len(got) != len(want) {
		return false
	}
	canon := func(l []interface{}) []string {
		out := make([]string, len(l))
		for i, e := range l {
			b, _ := json.Marshal(e)
			out[i] = string(b)
		}
		sort.Strings(out)
		return out
	}
	if !reflect.DeepEqual(canon(got), canon(want)) {
		return false
	}
	explained := false
	for i := 1; i < len(got); i++ {
		prev, cur := got[i-1].(map[string]interface{}), got[i].(map[string]interface{})
		if prev["operation"] != cur["operation"] {
			continue
		}
		if times[i] < times[i-1] {
			return false
		}
		explained = explained || times[i] != times[i-1]
	}
	return explained
}

func TestReorderedByTime_OnlyAChangeOfSecondExplainsAnotherOrder(t *testing.T) {
	csa := map[string]interface{}{"manager": "kubectl-client-side-apply", "operation": "Update"}
	status := map[string]interface{}{"manager": "kube-apiserver", "operation": "Update", "subresource": "status"}
	want := []interface{}{status, csa}
	for _, tc := range []struct {
		name  string
		got   []interface{}
		times []string
		ok    bool
	}{
		{"status a second later", []interface{}{csa, status}, []string{"2026-11-29T20:37:41Z", "2026-11-29T20:37:42Z"}, true},
		{"same second", []interface{}{csa, status}, []string{"2026-11-29T20:37:41Z", "2026-11-29T20:37:41Z"}, false},
		{"times going back", []interface{}{csa, status}, []string{"2026-11-29T20:37:42Z", "2026-11-29T20:37:41Z"}, false},
		{"an entry missing", []interface{}{csa}, []string{"2026-11-29T20:37:41Z"}, false},
	} {
		if got := reorderedByTime(tc.got, tc.times, want); got != tc.ok {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.ok)
		}
	}
}

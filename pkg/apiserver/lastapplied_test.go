package apiserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// kubectlSession is what a kubectl user types, in a namespace of its own:
// commands, and edits of the manifests between them.
type kubectlSession struct {
	name      string
	manifests []string // in testdata/lastapplied, or ../managedfields
	steps     []kubectlStep
}

type kubectlStep struct {
	// edit replaces, before the command, old with new in a manifest:
	// {file, old, new}.
	edit []string
	// args are kubectl's; a manifest's name stands for its path, NSNAME
	// for the namespace.
	args []string
	// object: the output is an object in JSON, of which the transcript
	// keeps what these sessions are about: its labels, annotations,
	// generation, managedFields and spec.
	object bool
}

func step(args ...string) kubectlStep { return kubectlStep{args: args} }

func getStep(args ...string) kubectlStep {
	return kubectlStep{args: append(args, "-o", "json", "--show-managed-fields"), object: true}
}

func edit(file, old, new string) kubectlStep { return kubectlStep{edit: []string{file, old, new}} }

// clientSideToServerSide are the sessions of issue 34 (items 1, 2 and the
// first half of 6): client-side apply, then server-side apply of a
// changed manifest, which takes over the fields that client-side apply
// set without --force-conflicts (a Job's, a CronJob's, a custom
// object's); server-side apply rewriting the last-applied annotation,
// against which a later client-side apply merges; and kubectl scale of a
// custom object, recorded in its managedFields as the scale
// subresource's write.
var clientSideToServerSide = []kubectlSession{
	{name: "job", manifests: []string{"job.yaml"}, steps: []kubectlStep{
		step("apply", "-f", "job.yaml"),
		edit("job.yaml", "backoffLimit: 2", "backoffLimit: 5"),
		step("diff", "--server-side", "-f", "job.yaml"),
		step("apply", "--server-side", "-f", "job.yaml"),
		getStep("get", "job", "j"),
		step("apply", "view-last-applied", "job", "j"),
	}},
	{name: "cronjob", manifests: []string{"cj.yaml"}, steps: []kubectlStep{
		step("apply", "-f", "cj.yaml"),
		edit("cj.yaml", `"*/5 * * * *"`, "'@hourly'"),
		edit("cj.yaml", "image: busybox", "image: busybox:1.36"),
		step("diff", "--server-side", "-f", "cj.yaml"),
		step("apply", "--server-side", "-f", "cj.yaml"),
		getStep("get", "cronjob", "c"),
		step("apply", "view-last-applied", "cronjob", "c"),
	}},
	{name: "widget", manifests: []string{"crd.yaml", "widget.yaml"}, steps: []kubectlStep{
		step("apply", "-f", "crd.yaml"),
		step("wait", "--for=condition=Established", "--timeout=30s", "crd/widgets.NSNAME.example.com"),
		step("apply", "-f", "widget.yaml"),
		edit("widget.yaml", "size: 5", "size: 6"),
		step("diff", "--server-side", "-f", "widget.yaml"),
		step("apply", "--server-side", "-f", "widget.yaml"),
		getStep("get", "widget", "w1"),
	}},
	// A label added by server-side apply, with nothing to take over, is in
	// the annotation then, so that client-side apply removes it once the
	// manifest drops it.
	{name: "last-applied", manifests: []string{"cj.yaml"}, steps: []kubectlStep{
		step("apply", "-f", "cj.yaml"),
		edit("cj.yaml", "  name: c\n", "  name: c\n  labels: {tier: x}\n"),
		step("apply", "--server-side", "-f", "cj.yaml"),
		step("apply", "view-last-applied", "cronjob", "c"),
		edit("cj.yaml", "  labels: {tier: x}\n", ""),
		step("apply", "-f", "cj.yaml"),
		getStep("get", "cronjob", "c"),
	}},
	{name: "scale", manifests: []string{"crd.yaml", "widget.yaml", "widget2.yaml"}, steps: []kubectlStep{
		step("apply", "-f", "crd.yaml"),
		step("wait", "--for=condition=Established", "--timeout=30s", "crd/widgets.NSNAME.example.com"),
		step("apply", "--server-side", "-f", "widget.yaml"),
		step("scale", "widget", "w1", "--replicas=3"),
		getStep("get", "widget", "w1"),
		step("apply", "--server-side", "-f", "widget.yaml"),
		// A scale to the same count still moves the replicas of the
		// client-side applier's entry to one of its own, as in kube; the
		// Scale then has no owners, and kube does not start tracking an
		// update of an object without any.
		step("apply", "-f", "widget2.yaml"),
		step("scale", "widget", "w2", "--replicas=1"),
		getStep("get", "widget", "w2"),
		step("scale", "widget", "w2", "--replicas=2"),
		getStep("get", "widget", "w2"),
	}},
}

// TestLastApplied_ServerSideApplyTakesOverFromClientSideApplyAsKube runs
// the sessions against cronplane and compares their transcripts with
// kube-apiserver v1.29.15's (testdata/lastapplied/*.golden, taken with
// kubectl 1.29 by TestLastApplied_GoldensAreKubeAPIServers).
func TestLastApplied_ServerSideApplyTakesOverFromClientSideApplyAsKube(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not installed")
	}
	for _, s := range clientSideToServerSide {
		t.Run(s.name, func(t *testing.T) {
			got := runSession(t, srv.KubeconfigPath, namespace(t), s)
			want := readFile(t, filepath.Join("testdata/lastapplied", s.name+".golden"))
			if got != want {
				t.Fatalf("transcript differs from kube's\n%s", lineDiff(want, got))
			}
		})
	}
}

// TestLastApplied_GoldensAreKubeAPIServers runs the sessions against the
// reference kube-apiserver (see crd_reference_test.go), when it runs, and
// checks the goldens are its answers; CRONPLANE_UPDATE_GOLDEN=1 rewrites
// them instead.
func TestLastApplied_GoldensAreKubeAPIServers(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not installed")
	}
	kubeconfig := referenceKubeconfig()
	if out, err := kubectlWith(t, kubeconfig, "get", "--raw", "/readyz", "--request-timeout=5s"); err != nil {
		t.Skipf("no reference kube-apiserver: %v %s", err, out)
	}
	for _, s := range clientSideToServerSide {
		t.Run(s.name, func(t *testing.T) {
			ns := "lastapplied-" + s.name + "-" + randomSuffix()
			if out, err := kubectlWith(t, kubeconfig, "create", "namespace", ns); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			t.Cleanup(func() { _, _ = kubectlWith(t, kubeconfig, "delete", "namespace", ns, "--wait=false") })
			got := runSession(t, kubeconfig, ns, s)
			path := filepath.Join("testdata/lastapplied", s.name+".golden")
			if os.Getenv("CRONPLANE_UPDATE_GOLDEN") == "1" {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if want := readFile(t, path); got != want {
				t.Fatalf("the reference's transcript differs from the golden\n%s", lineDiff(want, got))
			}
		})
	}
}

// runSession runs s in namespace ns of the server of kubeconfig and
// returns its transcript: each command, its output (stdout and stderr),
// and its exit code, in words that do not depend on the run.
func runSession(t *testing.T, kubeconfig, ns string, s kubectlSession) string {
	t.Helper()
	dir := t.TempDir()
	for _, m := range s.manifests {
		src := filepath.Join("testdata/lastapplied", m)
		if _, err := os.Stat(src); err != nil {
			src = filepath.Join("testdata/managedfields", m)
		}
		if err := os.WriteFile(filepath.Join(dir, m), []byte(strings.ReplaceAll(readFile(t, src), "NSNAME", ns)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		// Definitions are cluster-scoped: they go with the session.
		if slices.Contains(s.manifests, "crd.yaml") {
			_, _ = kubectlWith(t, kubeconfig, "delete", "-f", filepath.Join(dir, "crd.yaml"), "--wait=false")
		}
	})
	norm := transcriptNormalizer(t, kubeconfig, ns)
	var b strings.Builder
	for _, st := range s.steps {
		if st.edit != nil {
			path := filepath.Join(dir, st.edit[0])
			before := readFile(t, path)
			after := strings.Replace(before, st.edit[1], st.edit[2], 1)
			if after == before {
				t.Fatalf("edit of %s: no %q", st.edit[0], st.edit[1])
			}
			if err := os.WriteFile(path, []byte(after), 0o644); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "# %s: %q -> %q\n", st.edit[0], st.edit[1], st.edit[2])
			continue
		}
		args := []string{"-n", ns}
		for _, a := range st.args {
			if slices.Contains(s.manifests, a) {
				a = filepath.Join(dir, a)
			}
			args = append(args, strings.ReplaceAll(a, "NSNAME", ns))
		}
		out, err := kubectlWith(t, kubeconfig, args...)
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatalf("kubectl %v: %v", args, err)
		}
		if st.object && code == 0 {
			out = reducedObject(t, out)
		}
		fmt.Fprintf(&b, "$ kubectl %s\n%s[exit %d]\n", strings.Join(st.args, " "), norm(out), code)
	}
	return b.String()
}

func kubectlWith(t *testing.T, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(c, "kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}

var (
	uidPattern        = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timePattern       = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
	rvPattern         = regexp.MustCompile(`resourceVersion: "\d+"`)
	userAgentPattern  = regexp.MustCompile(`User-Agent: ([^/\s]+)/`)
	kubectlLogPattern = regexp.MustCompile(`^[IWE]\d{4} `)
)

// transcriptNormalizer returns what normalizes kubectl's output: the
// namespace, uids, times and resourceVersions become names; the temporary
// files of kubectl diff and its log lines go. A write that names no field
// manager is kubectl's user agent, the name of its binary: "kubectl" in
// the goldens, whatever this one is called.
func transcriptNormalizer(t *testing.T, kubeconfig, ns string) func(string) string {
	t.Helper()
	out, err := kubectlWith(t, kubeconfig, "get", "--raw", "/version", "-v=7")
	m := userAgentPattern.FindStringSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("kubectl's user agent: %v\n%s", err, out)
	}
	agent := m[1]
	return func(s string) string {
		var lines []string
		for _, l := range strings.SplitAfter(s, "\n") {
			if strings.HasPrefix(l, "diff -u") || strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ ") || kubectlLogPattern.MatchString(l) {
				continue
			}
			lines = append(lines, l)
		}
		s = strings.Join(lines, "")
		s = strings.ReplaceAll(s, ns, "NSNAME")
		s = uidPattern.ReplaceAllString(s, "UID")
		s = timePattern.ReplaceAllString(s, "TIME")
		s = rvPattern.ReplaceAllString(s, "resourceVersion: RV")
		if agent != "kubectl" {
			s = strings.ReplaceAll(s, `"`+agent+`"`, `"kubectl"`)
		}
		return s
	}
}

// reducedObject keeps of an object in JSON its labels, annotations,
// generation, managedFields and spec.
func reducedObject(t *testing.T, out string) string {
	t.Helper()
	var obj struct {
		Metadata map[string]interface{} `json:"metadata"`
		Spec     interface{}            `json:"spec"`
	}
	if err := json.Unmarshal([]byte(out), &obj); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	kept := map[string]interface{}{"spec": obj.Spec}
	md := map[string]interface{}{}
	for _, k := range []string{"labels", "annotations", "generation", "managedFields"} {
		if v, ok := obj.Metadata[k]; ok {
			md[k] = v
		}
	}
	kept["metadata"] = md
	b, err := json.MarshalIndent(kept, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

// lineDiff shows the lines of got that differ from want's, with their
// numbers.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "%d\n- %s\n+ %s\n", i+1, wl, gl)
		}
	}
	return b.String()
}

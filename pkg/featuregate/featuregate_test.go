package featuregate

import (
	"bytes"
	"flag"
	"strings"
	"testing"

	"k8s.io/klog/v2"
)

func TestSet_OverridesDefaultsAndRejectsUnknown(t *testing.T) {
	g := New(map[string]Spec{"A": {Default: false, Stage: Alpha}, "B": {Default: true, Stage: Beta}, "C": {Default: true, Stage: GA, LockToDefault: true}})
	if g.Enabled("A") || !g.Enabled("B") {
		t.Fatal("defaults not applied")
	}
	if err := g.Set("A=true, B=false"); err != nil {
		t.Fatal(err)
	}
	if !g.Enabled("A") || g.Enabled("B") || g.String() != "A=true,B=false" {
		t.Fatalf("after set: %s", g)
	}
	for _, bad := range []string{"Nope=true", "A", "A=maybe", "C=false"} {
		if err := g.Set(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// Setting a GA or deprecated gate logs a klog warning (a W line), as kube
// does while it parses its flags; alpha and beta gates say nothing.
func TestSet_GAAndDeprecatedGatesLogWarnings(t *testing.T) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	var buf bytes.Buffer
	klog.SetOutput(&buf)
	t.Cleanup(func() { _ = fs.Set("logtostderr", "true"); klog.SetOutput(nil) })

	g := New(map[string]Spec{"A": {Stage: Alpha}, "Old": {Default: true, Stage: Deprecated}, "Done": {Default: true, Stage: GA, LockToDefault: true}})
	if err := g.Set("A=true,Old=false,Done=true"); err != nil {
		t.Fatal(err)
	}
	klog.Flush()
	want := []string{
		"Setting deprecated feature gate Old=false. It will be removed in a future release.",
		"Setting GA feature gate Done=true. It will be removed in a future release.",
	}
	// klog writes a warning to its INFO and WARNING outputs, here one buffer.
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if len(lines) == 0 || lines[len(lines)-1] != line {
			lines = append(lines, line)
		}
	}
	if len(lines) != len(want) {
		t.Fatalf("logged %q, want a line each for %q", lines, want)
	}
	for i, line := range lines {
		if !strings.HasPrefix(line, "W") || !strings.HasSuffix(line, "] "+want[i]) {
			t.Errorf("line %q, want a warning ending %q", line, want[i])
		}
	}
	if g.Enabled("Old") {
		t.Fatal("a deprecated gate did not take its value")
	}
}

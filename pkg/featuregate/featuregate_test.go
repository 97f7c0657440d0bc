package featuregate

import "testing"

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

func TestSet_GAAndDeprecatedGatesWarn(t *testing.T) {
	g := New(map[string]Spec{"A": {Stage: Alpha}, "Old": {Default: true, Stage: Deprecated}, "Done": {Default: true, Stage: GA, LockToDefault: true}})
	if err := g.Set("A=true,Old=false,Done=true"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Setting deprecated feature gate Old=false. It will be removed in a future release.",
		"Setting GA feature gate Done=true. It will be removed in a future release.",
	}
	if got := g.Warnings(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("warnings %q, want %q", got, want)
	}
	if g.Enabled("Old") {
		t.Fatal("a deprecated gate did not take its value")
	}
}

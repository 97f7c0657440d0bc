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

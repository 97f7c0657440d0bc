package bootstrap

import (
	"encoding/json"
	"os"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// reference reads the objects a fresh kube-apiserver v1.29.15 stored,
// captured with kubectl get flowschemas,prioritylevelconfigurations -o yaml.
func reference(t *testing.T) (map[string]*flowcontrolv1.FlowSchema, map[string]*flowcontrolv1.PriorityLevelConfiguration) {
	t.Helper()
	data, err := os.ReadFile("testdata/reference-v1.29.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := yaml.Unmarshal(data, &list); err != nil {
		t.Fatal(err)
	}
	fs, pl := map[string]*flowcontrolv1.FlowSchema{}, map[string]*flowcontrolv1.PriorityLevelConfiguration{}
	for _, raw := range list.Items {
		var tm metav1.TypeMeta
		if err := json.Unmarshal(raw, &tm); err != nil {
			t.Fatal(err)
		}
		switch tm.Kind {
		case "FlowSchema":
			o := &flowcontrolv1.FlowSchema{}
			if err := json.Unmarshal(raw, o); err != nil {
				t.Fatal(err)
			}
			fs[o.Name] = o
		case "PriorityLevelConfiguration":
			o := &flowcontrolv1.PriorityLevelConfiguration{}
			if err := json.Unmarshal(raw, o); err != nil {
				t.Fatal(err)
			}
			pl[o.Name] = o
		}
	}
	return fs, pl
}

func TestMandatoryAndSuggested_MatchKubeStoredObjects(t *testing.T) {
	wantFS, wantPL := reference(t)
	mfs, mpl := Mandatory()
	sfs, spl := Suggested()
	gotFS := append(mfs, sfs...)
	gotPL := append(mpl, spl...)
	if len(gotFS) != len(wantFS) || len(gotPL) != len(wantPL) {
		t.Fatalf("got %d FlowSchemas and %d levels, kube has %d and %d", len(gotFS), len(gotPL), len(wantFS), len(wantPL))
	}
	for _, o := range gotFS {
		w, ok := wantFS[o.Name]
		if !ok {
			t.Errorf("FlowSchema %s is not in kube's configuration", o.Name)
			continue
		}
		if !equality.Semantic.DeepEqual(o.Spec, w.Spec) || !equality.Semantic.DeepEqual(o.Annotations, w.Annotations) {
			t.Errorf("FlowSchema %s:\n got %+v %v\nwant %+v %v", o.Name, o.Spec, o.Annotations, w.Spec, w.Annotations)
		}
	}
	for _, o := range gotPL {
		w, ok := wantPL[o.Name]
		if !ok {
			t.Errorf("level %s is not in kube's configuration", o.Name)
			continue
		}
		if !equality.Semantic.DeepEqual(o.Spec, w.Spec) || !equality.Semantic.DeepEqual(o.Annotations, w.Annotations) {
			t.Errorf("level %s:\n got %+v\nwant %+v", o.Name, o.Spec, w.Spec)
		}
	}
}

func TestMandatory_ReturnsFreshCopies(t *testing.T) {
	fs, pl := Mandatory()
	fs[0].Spec.MatchingPrecedence = 42
	pl[0].Annotations["x"] = "y"
	fs2, pl2 := Mandatory()
	if fs2[0].Spec.MatchingPrecedence == 42 || pl2[0].Annotations["x"] == "y" {
		t.Fatal("Mandatory shares state between calls")
	}
}

func withMeta(annotation string, generation int64) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: "workload-low", Generation: generation}
	if annotation != "" {
		m.Annotations = map[string]string{flowcontrolv1.AutoUpdateAnnotationKey: annotation}
	}
	return m
}

func TestRevisePriorityLevel_FollowsAutoUpdateAnnotation(t *testing.T) {
	_, suggested := Suggested()
	var desired *flowcontrolv1.PriorityLevelConfiguration
	for _, o := range suggested {
		if o.Name == "workload-low" {
			desired = o
		}
	}
	edited := desired.Spec.DeepCopy()
	edited.Limited.NominalConcurrencyShares = new(int32)
	*edited.Limited.NominalConcurrencyShares = 7
	tests := []struct {
		name       string
		meta       metav1.ObjectMeta
		spec       flowcontrolv1.PriorityLevelConfigurationSpec
		mandatory  bool
		wantUpdate bool
	}{
		{"unchanged, annotated true", withMeta("true", 1), desired.Spec, false, false},
		{"unchanged, annotation missing", withMeta("", 1), desired.Spec, false, true},
		{"edited, annotated true", withMeta("true", 2), *edited, false, true},
		{"edited, annotated false", withMeta("false", 2), *edited, false, false},
		{"edited, annotation garbage, generation 1", withMeta("maybe", 1), *edited, false, true},
		{"edited, annotation missing, generation 2", withMeta("", 2), *edited, false, false},
		{"mandatory edited, annotated false", withMeta("false", 2), *edited, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			current := &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: tt.meta, Spec: tt.spec}
			out, update := RevisePriorityLevel(current, desired, tt.mandatory)
			if update != tt.wantUpdate {
				t.Fatalf("update = %v, want %v", update, tt.wantUpdate)
			}
			if !update {
				return
			}
			if !equality.Semantic.DeepEqual(out.Spec, desired.Spec) || out.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "true" {
				t.Fatalf("revised to %+v %v", out.Spec, out.Annotations)
			}
			if out.Generation != tt.meta.Generation {
				t.Fatal("revision lost the stored metadata")
			}
		})
	}
}

func TestRevisePriorityLevel_KeepsExemptTuning(t *testing.T) {
	_, mandatory := Mandatory()
	desired := mandatory[0]
	current := desired.DeepCopy()
	five := int32(5)
	current.Spec.Exempt.NominalConcurrencyShares = &five
	if _, update := RevisePriorityLevel(current, desired, true); update {
		t.Fatal("the exempt level's tuned shares were reverted")
	}
	current.Spec.Type = flowcontrolv1.PriorityLevelEnablementLimited
	out, update := RevisePriorityLevel(current, desired, true)
	if !update || out.Spec.Type != flowcontrolv1.PriorityLevelEnablementExempt || *out.Spec.Exempt.NominalConcurrencyShares != 5 {
		t.Fatalf("got %v %+v", update, out)
	}
}

func TestReviseFlowSchema_RestoresMandatorySpec(t *testing.T) {
	mandatory, _ := Mandatory()
	desired := mandatory[0]
	current := desired.DeepCopy()
	if _, update := ReviseFlowSchema(current, desired, true); update {
		t.Fatal("an unchanged FlowSchema was revised")
	}
	current.Spec.MatchingPrecedence = 5
	current.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = "false"
	out, update := ReviseFlowSchema(current, desired, true)
	if !update || out.Spec.MatchingPrecedence != 1 || out.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "true" {
		t.Fatalf("got %v %+v", update, out)
	}
}

func TestObsolete_DeletesOnlyAutoUpdatedObjects(t *testing.T) {
	for _, tt := range []struct {
		annotation string
		want       bool
	}{{"true", true}, {"false", false}, {"", false}} {
		m := withMeta(tt.annotation, 1)
		if got := Obsolete(&m); got != tt.want {
			t.Errorf("annotation %q: got %v, want %v", tt.annotation, got, tt.want)
		}
	}
}

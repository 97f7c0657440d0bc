package flowcontrol

import (
	"strings"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

func errorStrings(errs field.ErrorList) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}

func decodeV1Level(t *testing.T, doc string) *flowcontrolv1.PriorityLevelConfiguration {
	t.Helper()
	pl := &flowcontrolv1.PriorityLevelConfiguration{}
	if err := yaml.UnmarshalStrict([]byte(doc), pl); err != nil {
		t.Fatal(err)
	}
	defaultLevelV1(pl)
	return pl
}

// The messages are those kube-apiserver v1.29.15 answered for the same
// objects.
func TestValidateLevel_ReportsAsKube(t *testing.T) {
	tests := []struct {
		name, doc string
		want      []string
	}{
		{"limited out of range", `{metadata: {name: bad4}, spec: {type: Limited, limited: {nominalConcurrencyShares: 0, lendablePercent: 101, borrowingLimitPercent: -1, limitResponse: {type: Queue, queuing: {queues: 100000000, handSize: 200000000, queueLengthLimit: -1}}}}}`, []string{
			"spec.limited.nominalConcurrencyShares: Invalid value: 0: must be positive",
			"spec.limited.limitResponse.queuing.queueLengthLimit: Invalid value: -1: must be positive",
			"spec.limited.limitResponse.queuing.queues: Invalid value: 100000000: must not be greater than 10000000",
			"spec.limited.limitResponse.queuing.handSize: Invalid value: 200000000: should not be greater than queues (100000000)",
			"spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive",
			"spec.limited.borrowingLimitPercent: Invalid value: -1: if specified, must be a non-negative integer",
		}},
		{"exempt type on another name", `{metadata: {name: bad3}, spec: {type: Exempt, limited: {nominalConcurrencyShares: 1, limitResponse: {type: Reject}}, exempt: {nominalConcurrencyShares: -1, lendablePercent: -1}}}`, []string{
			`spec.type: Invalid value: "Exempt": type must be 'Exempt' if and only if name is 'exempt'`,
			"spec.limited: Forbidden: must be nil if the type is not Limited",
			"spec.exempt.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer",
			"spec.exempt.lendablePercent: Invalid value: -1: must be between 0 and 100, inclusive",
		}},
		{"too much entropy", `{metadata: {name: bad5}, spec: {type: Limited, limited: {limitResponse: {type: Queue, queuing: {queues: 128, handSize: 20}}}}}`, []string{
			"spec.limited.limitResponse.queuing.handSize: Invalid value: 20: required entropy bits of deckSize 128 and handSize 20 should not be greater than 60",
		}},
		{"catch-all changed", `{metadata: {name: catch-all}, spec: {type: Limited, limited: {nominalConcurrencyShares: 6, limitResponse: {type: Reject}}}}`, []string{
			"spec: Invalid value: flowcontrol.PriorityLevelConfigurationSpec{Type:\"Limited\", Limited:(*flowcontrol.LimitedPriorityLevelConfiguration)(0x",
		}},
		{"exempt tuned", `{metadata: {name: exempt}, spec: {type: Exempt, exempt: {nominalConcurrencyShares: 7, lendablePercent: 10}}}`, nil},
		{"valid", `{metadata: {name: ok}, spec: {type: Limited, limited: {limitResponse: {type: Queue, queuing: {}}}}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := errorStrings(validateLevel(decodeV1Level(t, tt.doc), false))
			if len(got) != len(tt.want) {
				t.Fatalf("got %q\nwant %q", got, tt.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("got  %s\nwant %s", got[i], tt.want[i])
				}
			}
		})
	}
}

func TestValidateFlowSchema_ReportsAsKube(t *testing.T) {
	doc := `{metadata: {name: bad1}, spec: {matchingPrecedence: 1, distinguisherMethod: {type: ByFoo}, priorityLevelConfiguration: {name: ""},
  rules: [{subjects: []}, {subjects: [{kind: User}, {kind: Group, group: {name: ""}, user: {name: x}}, {kind: ServiceAccount, serviceAccount: {name: "Bad_", namespace: ""}}, {kind: Robot}],
    resourceRules: [{verbs: [get, foo], apiGroups: ["*", x], resources: [], namespaces: [Bad_NS]}],
    nonResourceRules: [{verbs: [], nonResourceURLs: [foo, "/a b", "/a//b", "/a*", "/x/*", ""]}]}]}}`
	want := []string{
		"spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1",
		`spec.distinguisherMethod.type: Unsupported value: flowcontrol.FlowDistinguisherMethod{Type:"ByFoo"}: supported values: "ByNamespace", "ByUser"`,
		"spec.priorityLevelConfiguration.name: Required value: must reference a priority level",
		"spec.rules[0].subjects: Required value: subjects must contain at least one value",
		"spec.rules[0]: Required value: at least one of resourceRules and nonResourceRules has to be non-empty",
		"spec.rules[1].subjects[0].user: Required value: user is required when subject kind is 'User'",
		"spec.rules[1].subjects[1].group.name: Required value",
		"spec.rules[1].subjects[1].user: Forbidden: user is forbidden when subject kind is not 'User'",
		`spec.rules[1].subjects[2].serviceAccount.name: Invalid value: "Bad_": a lowercase RFC 1123 subdomain must consist of`,
		"spec.rules[1].subjects[2].serviceAccount.namespace: Required value: must specify namespace for service account",
		`spec.rules[1].subjects[3].kind: Unsupported value: "Robot": supported values: "Group", "ServiceAccount", "User"`,
		`spec.rules[1].resourceRules[0].verbs: Unsupported value: []string{"get", "foo"}: supported values: "create", "delete",`,
		`spec.rules[1].resourceRules[0].apiGroups: Invalid value: []string{"*", "x"}: if '*' is present, must not specify other api groups`,
		"spec.rules[1].resourceRules[0].resources: Required value: resource rules must supply at least one resource",
		`spec.rules[1].resourceRules[0].namespaces[0]: Invalid value: "Bad_NS": each member of this list must be '*' or a DNS-1123 label; a lowercase RFC 1123 label`,
		"spec.rules[1].nonResourceRules[0].verbs: Required value: verbs must contain at least one value",
		`spec.rules[1].nonResourceRules[0].nonResourceURLs[0]: Invalid value: "foo": must start with slash`,
		`spec.rules[1].nonResourceRules[0].nonResourceURLs[1]: Invalid value: "/a b": must not contain white-space`,
		`spec.rules[1].nonResourceRules[0].nonResourceURLs[2]: Invalid value: "/a//b": must not contain double slash`,
		`spec.rules[1].nonResourceRules[0].nonResourceURLs[3]: Invalid value: "/a*": wildcard can only do suffix matching`,
		`spec.rules[1].nonResourceRules[0].nonResourceURLs[5]: Invalid value: "": must not be empty`,
	}
	fs := &flowcontrolv1.FlowSchema{}
	if err := yaml.UnmarshalStrict([]byte(doc), fs); err != nil {
		t.Fatal(err)
	}
	got := errorStrings(validateFlowSchema(fs))
	if len(got) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range got {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("got  %s\nwant %s", got[i], want[i])
		}
	}
}

// nominalConcurrencyShares defaults differ: v1 fills it only when unset,
// v1beta3 whenever it is 0 unless marked as meant.
func TestDefaultLevel_SharesPerVersion(t *testing.T) {
	zero := int32(0)
	v1 := &flowcontrolv1.PriorityLevelConfiguration{Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
		Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: &zero}}}
	defaultLevelV1(v1)
	if *v1.Spec.Limited.NominalConcurrencyShares != 0 || *v1.Spec.Limited.LendablePercent != 0 {
		t.Errorf("v1: %+v", v1.Spec.Limited)
	}
	for _, tt := range []struct {
		marked bool
		want   int32
	}{{false, 30}, {true, 0}} {
		pl := &flowcontrolv1beta3.PriorityLevelConfiguration{Spec: flowcontrolv1beta3.PriorityLevelConfigurationSpec{
			Limited: &flowcontrolv1beta3.LimitedPriorityLevelConfiguration{}}}
		if tt.marked {
			pl.Annotations = map[string]string{flowcontrolv1beta3.PriorityLevelPreserveZeroConcurrencySharesKey: ""}
		}
		defaultLevelBeta3(pl)
		if got := pl.Spec.Limited.NominalConcurrencyShares; got != tt.want {
			t.Errorf("v1beta3 marked=%v: %d, want %d", tt.marked, got, tt.want)
		}
	}
}

// A v1 level with 0 shares is stored marked, so that v1beta3 reads keep
// the 0, and reads back through v1 without the mark.
func TestLevelConversion_MarksZeroSharesInStorage(t *testing.T) {
	conv := levelV1Resource().Conversion
	zero := int32(0)
	pl := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "jail"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: &zero,
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}},
		},
	}
	stored, err := conv.ToStorage(pl)
	if err != nil {
		t.Fatal(err)
	}
	beta := stored.(*flowcontrolv1beta3.PriorityLevelConfiguration)
	if _, ok := beta.Annotations[flowcontrolv1beta3.PriorityLevelPreserveZeroConcurrencySharesKey]; !ok || beta.Name != "jail" {
		t.Fatalf("stored %+v", beta.ObjectMeta)
	}
	data, err := levelStorageCodec().Encode(beta)
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := levelStorageCodec().Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	back, err := conv.FromStorage(decoded)
	if err != nil {
		t.Fatal(err)
	}
	got := back.(*flowcontrolv1.PriorityLevelConfiguration)
	if *got.Spec.Limited.NominalConcurrencyShares != 0 || got.Annotations != nil || got.APIVersion != "flowcontrol.apiserver.k8s.io/v1" {
		t.Fatalf("read back %+v %+v", got.ObjectMeta, got.Spec.Limited)
	}
}

package apiserver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/cronplane/cronplane/pkg/apiserver"
	"github.com/cronplane/cronplane/pkg/apiserver/apiservertest"
)

// ratchetingServer starts a server with the CRDValidationRatcheting gate
// on.
func ratchetingServer(t *testing.T) *apiservertest.Server {
	return apiservertest.Start(t, func(o *apiserver.Options) {
		if err := o.FeatureGates.Set("CRDValidationRatcheting=true"); err != nil {
			t.Fatal(err)
		}
	})
}

// ratchetCRD is rats.ratchet.example.org, loose (the schema objects were
// written under) or tight (the same fields with value validations and
// rules added).
func ratchetCRD(t *testing.T, tight bool) *unstructured.Unstructured {
	t.Helper()
	add := func(loose, extra string) string {
		if tight && extra != "" {
			return strings.TrimSuffix(loose, "}") + "," + extra + "}"
		}
		return loose
	}
	str := `{"type":"string"}`
	spec := `{"type":"object","properties":{
	 "other":` + str + `,"r":` + str + `,
	 "s":` + add(str, `"maxLength":3`) + `,
	 "nested":{"type":"object","properties":{"inner":{"type":"object","properties":{"s":` + add(str, `"maxLength":3`) + `,"o":` + str + `}}}},
	 "req":` + add(`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}`, `"required":["a"]`) + `,
	 "mapl":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["k"],"items":{"type":"object","required":["k"],
	   "properties":{"k":` + str + `,"v":` + add(str, `"maxLength":3`) + `,"w":` + str + `}}},
	 "atomic":{"type":"array","items":` + add(str, `"maxLength":3`) + `},
	 "m":{"type":"object","additionalProperties":` + add(str, `"maxLength":3`) + `},
	 "jo":` + add(`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}`, `"allOf":[{"properties":{"a":{"maxLength":3}}}]`) + `,
	 "emb":` + add(`{"type":"object","x-kubernetes-preserve-unknown-fields":true}`, `"x-kubernetes-embedded-resource":true`) + `,
	 "dup":` + add(`{"type":"array","items":{"type":"string"}}`, `"x-kubernetes-list-type":"set"`) + `,
	 "c":` + add(str, `"x-kubernetes-validations":[{"rule":"size(self) <= 3","message":"c too long"}]`) + `,
	 "catomic":{"type":"array","items":` + add(str, `"x-kubernetes-validations":[{"rule":"size(self) <= 3","message":"item too long"}]`) + `},
	 "t":` + add(`{"type":"integer"}`, `"x-kubernetes-validations":[{"rule":"self > oldSelf","message":"t must grow"}]`) + `,
	 "rk":` + add(`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}`, `"x-kubernetes-validations":[{"rule":"self.a == 'x'","message":"rk.a must be x"}]`) + `}}`
	status := `{"type":"object","properties":{"s":` + add(str, `"maxLength":3`) + `,"x":` + str + `}}`
	root := add(`{"type":"object","properties":{"spec":`+spec+`,"status":`+status+`}}`,
		`"x-kubernetes-validations":[{"rule":"!has(self.spec.r) || self.spec.r != 'bad'","message":"root rule"}]`)
	return object(t, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"rats.ratchet.example.org"},
	 "spec":{"group":"ratchet.example.org","scope":"Namespaced","names":{"plural":"rats","kind":"Rat"},
	  "versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{}},"schema":{"openAPIV3Schema":`+root+`}}]}}`)
}

const rulesSkipped = `<nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`

// TestCustomResource_ValidationRatcheting: a definition is tightened
// after its objects were written; updates are then answered as
// kube-apiserver v1.29 answers them with its CRDValidationRatcheting
// gate off (every error counts) and on (errors of values the update left
// unchanged are forgiven, node by node, the forgiven rule violations
// sent as warnings; transition rules, rules at the root, evaluation
// errors, junctors of a changed object, embedded resources and the
// status subresource are not forgiven). Some answers do not depend on
// the gate: duplicates the old object had, the status checked alone.
func TestCustomResource_ValidationRatcheting(t *testing.T) {
	type mutation func(spec, status map[string]interface{})
	setSpec := func(k string, v interface{}) mutation {
		return func(spec, _ map[string]interface{}) { spec[k] = v }
	}
	tooLong := func(p string) string { return p + ": Too long: may not be longer than 3" }
	cases := []struct {
		name, spec, status string
		// subresource is "status" for an update through /status
		subresource string
		mutate      mutation
		// the errors after "is invalid: " ("" for success), and the
		// warnings, with the gate off and on
		off, on string
		offWarn []string
		onWarn  []string
	}{
		{name: "UnchangedTooLongValue", spec: `{"s":"toolong"}`, mutate: setSpec("other", "q"),
			off: "[" + tooLong("spec.s") + ", " + rulesSkipped + "]"},
		{name: "ChangedTooLongValue", spec: `{"s":"toolong"}`, mutate: setSpec("s", "toolon2"),
			off: "[" + tooLong("spec.s") + ", " + rulesSkipped + "]", on: "[" + tooLong("spec.s") + ", " + rulesSkipped + "]"},
		{name: "NestedValueWithAChangedSibling", spec: `{"nested":{"inner":{"s":"toolong","o":"x"}}}`,
			mutate: func(spec, _ map[string]interface{}) {
				spec["nested"] = map[string]interface{}{"inner": map[string]interface{}{"s": "toolong", "o": "q"}}
			},
			off: "[" + tooLong("spec.nested.inner.s") + ", " + rulesSkipped + "]"},
		{name: "RequiredInAChangedObject", spec: `{"req":{"b":"x"}}`, mutate: setSpec("req", map[string]interface{}{"b": "q"}),
			off: "[spec.req.a: Required value, " + rulesSkipped + "]", on: "[spec.req.a: Required value, " + rulesSkipped + "]"},
		{name: "RequiredInAnUnchangedObject", spec: `{"req":{"b":"x"}}`, mutate: setSpec("other", "q"),
			off: "[spec.req.a: Required value, " + rulesSkipped + "]"},
		{name: "MapListItemsPairedByKeys", spec: `{"mapl":[{"k":"a","v":"toolong"},{"k":"b","v":"x"}]}`,
			mutate: setSpec("mapl", []interface{}{map[string]interface{}{"k": "b", "v": "q"}, map[string]interface{}{"k": "a", "v": "toolong", "w": "z"}}),
			off:    "[" + tooLong("spec.mapl[1].v") + ", " + rulesSkipped + "]"},
		{name: "ItemsOfAChangedAtomicList", spec: `{"atomic":["toolong"]}`, mutate: setSpec("atomic", []interface{}{"toolong", "a"}),
			off: "[" + tooLong("spec.atomic[0]") + ", " + rulesSkipped + "]", on: "[" + tooLong("spec.atomic[0]") + ", " + rulesSkipped + "]"},
		{name: "MapValueWithAnotherKeyChanged", spec: `{"m":{"a":"toolong","b":"x"}}`, mutate: setSpec("m", map[string]interface{}{"a": "toolong", "b": "q"}),
			off: "[" + tooLong("spec.m.a") + ", " + rulesSkipped + "]"},
		{name: "JunctorsOfAChangedObject", spec: `{"jo":{"a":"toolong","b":"x"}}`, mutate: setSpec("jo", map[string]interface{}{"a": "toolong", "b": "q"}),
			off: "[" + tooLong("spec.jo.a") + `, <nil>: Invalid value: "": "spec.jo" must validate all the schemas (allOf). None validated, ` + rulesSkipped + "]",
			on:  "[" + tooLong("spec.jo.a") + `, <nil>: Invalid value: "": "spec.jo" must validate all the schemas (allOf). None validated, ` + rulesSkipped + "]"},
		{name: "UnchangedEmbeddedResource", spec: `{"emb":{"apiVersion":"v1"}}`, mutate: setSpec("other", "q"),
			off: "[spec.emb.kind: Required value: must not be empty, " + rulesSkipped + "]", on: "[spec.emb.kind: Required value: must not be empty, " + rulesSkipped + "]"},
		{name: "DuplicatesTheOldObjectHad", spec: `{"dup":["a","a"]}`, mutate: setSpec("dup", []interface{}{"a", "a", "b"})},
		{name: "RuleAtAnUnchangedValue", spec: `{"c":"toolong"}`, mutate: setSpec("other", "q"),
			off: `spec.c: Invalid value: "string": c too long`, onWarn: []string{`spec.c: Invalid value: "string": c too long`}},
		{name: "RuleAtAChangedValue", spec: `{"c":"toolong"}`, mutate: setSpec("c", "toolon2"),
			off: `spec.c: Invalid value: "string": c too long`, on: `spec.c: Invalid value: "string": c too long`},
		{name: "RuleOnItemsOfAnUnchangedList", spec: `{"catomic":["toolong"]}`, mutate: setSpec("other", "q"),
			off: `spec.catomic[0]: Invalid value: "string": item too long`, onWarn: []string{`spec.catomic[0]: Invalid value: "string": item too long`}},
		{name: "TransitionRule", spec: `{"t":5}`, mutate: setSpec("other", "q"),
			off: `spec.t: Invalid value: "integer": t must grow`, on: `spec.t: Invalid value: "integer": t must grow`},
		{name: "RuleAtTheRoot", spec: `{"r":"bad"}`, mutate: setSpec("other", "q"),
			off: `<nil>: Invalid value: "object": root rule`, on: `<nil>: Invalid value: "object": root rule`},
		{name: "RuleEvaluationError", spec: `{"rk":{"b":"x"}}`, mutate: setSpec("other", "q"),
			off: `spec.rk: Invalid value: "object": no such key: a evaluating rule: rk.a must be x`, on: `spec.rk: Invalid value: "object": no such key: a evaluating rule: rk.a must be x`},
		{name: "RulesRunOnceSchemaErrorsAreForgiven", spec: `{"s":"toolong","c":"toolong"}`, mutate: setSpec("c", "toolon2"),
			off: "[" + tooLong("spec.s") + ", " + rulesSkipped + "]", on: `spec.c: Invalid value: "string": c too long`},
		{name: "UnchangedStatusThroughTheMainResource", spec: `{}`, status: `{"s":"toolong"}`, mutate: setSpec("other", "q"),
			off: "[" + tooLong("status.s") + ", " + rulesSkipped + "]"},
		{name: "StatusSubresourceForgivesNothing", spec: `{}`, status: `{"s":"toolong","x":"x"}`, subresource: "status",
			mutate: func(_, status map[string]interface{}) { status["x"] = "q" },
			off:    "[" + tooLong("s") + ", " + rulesSkipped + "]", on: "[" + tooLong("s") + ", " + rulesSkipped + "]"},
		{name: "StatusSubresourceChecksTheStatusAlone", spec: `{"s":"toolong"}`, status: `{"x":"x"}`, subresource: "status",
			mutate: func(_, status map[string]interface{}) { status["x"] = "q" }},
	}
	gvr := schema.GroupVersionResource{Group: "ratchet.example.org", Version: "v1", Resource: "rats"}
	for _, server := range []struct {
		name string
		s    *apiservertest.Server
		on   bool
	}{{"GateOff", srv, false}, {"GateOn", ratchetingServer(t), true}} {
		t.Run(server.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			dyn := dynamic.NewForConfigOrDie(server.s.Config)
			crds := dyn.Resource(crdsGVR)
			if _, err := crds.Create(ctx, ratchetCRD(t, false), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = crds.Delete(context.Background(), "rats.ratchet.example.org", metav1.DeleteOptions{}) }()
			rats := dyn.Resource(gvr).Namespace("default")
			rat := func(name, spec string) *unstructured.Unstructured {
				return object(t, `{"apiVersion":"ratchet.example.org/v1","kind":"Rat","metadata":{"name":"`+name+`"},"spec":`+spec+`}`)
			}
			waitServed(ctx, t, rats, rat("first", `{}`))
			for i, c := range cases {
				created, err := rats.Create(ctx, rat(fmt.Sprintf("r%d", i), c.spec), metav1.CreateOptions{})
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				if c.status != "" {
					created.Object["status"] = object(t, c.status).Object
					if _, err := rats.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
						t.Fatalf("%s: %v", c.name, err)
					}
				}
			}
			tighten(ctx, t, crds, ratchetCRD(t, true))
			waitRefused(ctx, t, rats, rat("probe", `{"s":"toolong"}`))

			for i, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					seen := &warnings{}
					cfg := rest.CopyConfig(server.s.Config)
					cfg.WarningHandler = seen
					ri := dynamic.NewForConfigOrDie(cfg).Resource(gvr).Namespace("default")
					cur, err := ri.Get(ctx, fmt.Sprintf("r%d", i), metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					spec, _ := cur.Object["spec"].(map[string]interface{})
					status, _ := cur.Object["status"].(map[string]interface{})
					c.mutate(spec, status)
					seen.texts = nil
					if c.subresource == "status" {
						_, err = ri.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
					} else {
						_, err = ri.Update(ctx, cur, metav1.UpdateOptions{})
					}
					want, wantWarn := c.off, c.offWarn
					if server.on {
						want, wantWarn = c.on, c.onWarn
					}
					switch {
					case want == "" && err != nil:
						t.Errorf("update: %v, want success", err)
					case want != "" && (!apierrors.IsInvalid(err) || !strings.HasSuffix(err.Error(), "is invalid: "+want)):
						t.Errorf("update: %v\nwant 422 with %s", err, want)
					}
					if strings.Join(seen.texts, "\n") != strings.Join(wantWarn, "\n") {
						t.Errorf("warnings %q, want %q", seen.texts, wantWarn)
					}
				})
			}
		})
	}
}

// tighten replaces the definition's versions by those of tight.
func tighten(ctx context.Context, t *testing.T, crds dynamic.NamespaceableResourceInterface, tight *unstructured.Unstructured) {
	t.Helper()
	for i := 0; ; i++ {
		cur, err := crds.Get(ctx, tight.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Object["spec"] = tight.Object["spec"]
		_, err = crds.Update(ctx, cur, metav1.UpdateOptions{})
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) || i == 20 {
			t.Fatalf("updating the definition: %v", err)
		}
	}
}

// waitRefused dry-runs the create of obj until the server refuses it as
// invalid: the definition's new schema is in force.
func waitRefused(ctx context.Context, t *testing.T, ri dynamic.ResourceInterface, obj *unstructured.Unstructured) {
	t.Helper()
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		_, err := ri.Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if apierrors.IsInvalid(err) {
			return
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("the new schema is not in force after 10s: %v", err)
		}
	}
}

// TestCustomResource_OptionalOldSelf: optionalOldSelf is kept by a
// definition only with the CRDValidationRatcheting gate on (off, it is
// dropped, and a rule that reads oldSelf as an optional does not
// compile, as in kube-apiserver v1.29). On, such a rule runs also where
// there is no old value (on create, for a value an update adds), with
// oldSelf none; its messageExpression sees oldSelf as it is (reading the
// optional fails, the rule's message is given).
func TestCustomResource_OptionalOldSelf(t *testing.T) {
	const crd = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"opts.ratchet.example.org"},
	 "spec":{"group":"ratchet.example.org","scope":"Namespaced","names":{"plural":"opts","kind":"Opt"},
	  "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{
	   "n":{"type":"integer","x-kubernetes-validations":[{"rule":"oldSelf.hasValue() ? self >= oldSelf.value() : self < 100","optionalOldSelf":true,"message":"n bad"}]},
	   "f":{"type":"integer","x-kubernetes-validations":[{"rule":"self >= oldSelf","optionalOldSelf":false,"message":"f may not decrease"}]},
	   "m":{"type":"string","maxLength":10,"x-kubernetes-validations":[{"rule":"!oldSelf.hasValue() || oldSelf.value() == self","optionalOldSelf":true,
	     "messageExpression":"oldSelf.hasValue() ? 'm changed' : 'm new'"}]}}}}}}}]}}`

	t.Run("GateOff", func(t *testing.T) {
		dyn := dynamic.NewForConfigOrDie(srv.Config)
		_, err := dyn.Resource(crdsGVR).Create(ctx(t), object(t, crd), metav1.CreateOptions{})
		if want := "found no matching overload for 'hasValue' applied to 'int.()'"; !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("create: %v, want 422 with %s", err, want)
		}
	})

	t.Run("GateOn", func(t *testing.T) {
		s := ratchetingServer(t)
		dyn := dynamic.NewForConfigOrDie(s.Config)
		created := createCRD(ctx(t), t, dyn, crd)
		versions, _, _ := unstructured.NestedSlice(created.Object, "spec", "versions")
		fields, _, _ := unstructured.NestedMap(versions[0].(map[string]interface{}), "schema", "openAPIV3Schema", "properties", "spec", "properties")
		for name, want := range map[string]bool{"n": true, "f": false} {
			rules, _, _ := unstructured.NestedSlice(fields, name, "x-kubernetes-validations")
			if got, ok := rules[0].(map[string]interface{})["optionalOldSelf"]; !ok || got != want {
				t.Errorf("%s: optionalOldSelf stored as %v (set: %t), want %t", name, got, ok, want)
			}
		}
		opts := dyn.Resource(schema.GroupVersionResource{Group: "ratchet.example.org", Version: "v1", Resource: "opts"}).Namespace("default")
		opt := func(name, spec string) *unstructured.Unstructured {
			return object(t, `{"apiVersion":"ratchet.example.org/v1","kind":"Opt","metadata":{"name":"`+name+`"},"spec":`+spec+`}`)
		}
		waitServed(ctx(t), t, opts, opt("a", `{"n":50,"f":5,"m":"x"}`))
		if _, err := opts.Create(ctx(t), opt("plain", `{}`), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			name, create, update string // update: the spec of a (or of plain, when it adds a value)
			on                   string
			want                 string
		}{
			{name: "CreateRunsWithOldSelfNone", create: `{"n":500}`, want: `spec.n: Invalid value: "integer": n bad`},
			{name: "UpdateComparesWithOldSelf", update: `{"n":40,"f":5,"m":"x"}`, on: "a", want: `spec.n: Invalid value: "integer": n bad`},
			{name: "UpdateWithinTheRule", update: `{"n":60,"f":5,"m":"x"}`, on: "a"},
			{name: "AddedValueRunsWithOldSelfNone", update: `{"n":500}`, on: "plain", want: `spec.n: Invalid value: "integer": n bad`},
			{name: "OptionalOldSelfFalseIsATransitionRule", update: `{"n":60,"f":4,"m":"x"}`, on: "a", want: `spec.f: Invalid value: "integer": f may not decrease`},
			{name: "MessageExpressionReadingTheOptionalFallsBack", update: `{"n":60,"f":5,"m":"y"}`, on: "a",
				want: `spec.m: Invalid value: "string": failed rule: !oldSelf.hasValue() || oldSelf.value() == self`},
		} {
			t.Run(tt.name, func(t *testing.T) {
				var err error
				if tt.create != "" {
					_, err = opts.Create(ctx(t), opt("new", tt.create), metav1.CreateOptions{})
				} else {
					cur, gerr := opts.Get(ctx(t), tt.on, metav1.GetOptions{})
					if gerr != nil {
						t.Fatal(gerr)
					}
					cur.Object["spec"] = object(t, tt.update).Object
					_, err = opts.Update(ctx(t), cur, metav1.UpdateOptions{})
				}
				switch {
				case tt.want == "" && err != nil:
					t.Errorf("%v, want success", err)
				case tt.want != "" && (!apierrors.IsInvalid(err) || !strings.HasSuffix(err.Error(), "is invalid: "+tt.want)):
					t.Errorf("%v\nwant 422 with %s", err, tt.want)
				}
			})
		}
	})
}

package schema

import (
	"testing"
)

// ratchetSchema is widgetSchema's kind of schema as tightened after
// objects were written under a looser one.
const ratchetSchema = `
type: object
required: [must]
properties:
  must: {type: string}
  spec:
    type: object
    properties:
      other: {type: string}
      s: {type: string, maxLength: 3}
      e: {type: string, enum: [a, b]}
      num: {type: integer, minimum: 10}
      req: {type: object, required: [a], properties: {a: {type: string}, b: {type: string}}}
      nested: {type: object, properties: {inner: {type: object, properties: {s: {type: string, maxLength: 3}, o: {type: string}}}}}
      atomic: {type: array, maxItems: 2, items: {type: string, maxLength: 3}}
      set: {type: array, x-kubernetes-list-type: set, items: {type: string, maxLength: 3}}
      mapl:
        type: array
        x-kubernetes-list-type: map
        x-kubernetes-list-map-keys: [k, zone]
        items: {type: object, required: [k], properties: {k: {type: string}, zone: {type: string, default: z1}, v: {type: string, maxLength: 3}, w: {type: string}}}
      m: {type: object, additionalProperties: {type: string, maxLength: 3}}
      jo: {type: object, properties: {a: {type: string}, b: {type: string}}, allOf: [{properties: {a: {maxLength: 3}}}]}
      emb: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}
      dup: {type: array, x-kubernetes-list-type: set, items: {type: string}}
      dup2: {type: array, x-kubernetes-list-type: set, items: {type: string}}
`

// TestValidateUpdate_RatchetingForgivesUnchangedValues: with ratcheting
// (kube's CRDValidationRatcheting), an update is forgiven the errors of
// the values it leaves unchanged, node by node, as kube-apiserver v1.29
// forgives them; without, every error counts. The object itself is
// never unchanged, embedded resources are checked as on create, and set
// and map lists are not checked when the old object already had
// duplicates, ratcheting or not.
func TestValidateUpdate_RatchetingForgivesUnchangedValues(t *testing.T) {
	st := mustSchema(t, ratchetSchema)
	cases := []struct {
		name, old, new string
		// want is with ratcheting, wantOff without
		want, wantOff string
	}{
		{"UnchangedTooLongWhileAnotherFieldChangesIsForgiven",
			`{other: x, s: toolong}`, `{other: q, s: toolong}`,
			"", "spec.s: Too long: may not be longer than 3"},
		{"ChangedTooLongIsReported",
			`{s: toolong}`, `{s: toolon2}`,
			"spec.s: Too long: may not be longer than 3", "spec.s: Too long: may not be longer than 3"},
		{"UnchangedEnumAndMinimumAreForgiven",
			`{e: z, num: 1}`, `{e: z, num: 1, other: q}`,
			"", "spec.e: Unsupported value: \"z\": supported values: \"a\", \"b\"\nspec.num: Invalid value: 1: spec.num in body should be greater than or equal to 10"},
		{"RequiredIsForgivenWhileItsObjectIsUnchanged",
			`{req: {b: x}}`, `{req: {b: x}, other: q}`,
			"", "spec.req.a: Required value"},
		{"RequiredIsReportedOnceItsObjectChanges",
			`{req: {b: x}}`, `{req: {b: q}}`,
			"spec.req.a: Required value", "spec.req.a: Required value"},
		{"NestedValueIsForgivenWhenASiblingChanges",
			`{nested: {inner: {s: toolong, o: x}}}`, `{nested: {inner: {s: toolong, o: q}}}`,
			"", "spec.nested.inner.s: Too long: may not be longer than 3"},
		{"AtomicListIsForgivenWhileUnchanged",
			`{atomic: [toolong, a, b]}`, `{atomic: [toolong, a, b], other: q}`,
			"", "spec.atomic[0]: Too long: may not be longer than 3\nspec.atomic: Too many: 3: must have at most 2 items"},
		{"AtomicListItemsHaveNoCounterpartOnceTheListChanges",
			`{atomic: [toolong]}`, `{atomic: [toolong, a]}`,
			"spec.atomic[0]: Too long: may not be longer than 3", "spec.atomic[0]: Too long: may not be longer than 3"},
		{"SetItemsHaveNoCounterpartOnceTheSetChanges",
			`{set: [toolong]}`, `{set: [toolong, a]}`,
			"spec.set[0]: Too long: may not be longer than 3", "spec.set[0]: Too long: may not be longer than 3"},
		{"MapListItemsPairByKeysWhateverTheirOrder",
			`{mapl: [{k: a, v: toolong}, {k: b, v: x}]}`, `{mapl: [{k: b, v: q}, {k: a, v: toolong, w: z}, {k: c, v: c}]}`,
			"", "spec.mapl[1].v: Too long: may not be longer than 3"},
		{"MapListKeyMissingCountsWithItsDefault",
			`{mapl: [{k: a, zone: z1, v: toolong}]}`, `{mapl: [{k: a, v: toolong, w: z}]}`,
			"", "spec.mapl[0].v: Too long: may not be longer than 3"},
		{"MapListItemWithOtherKeysHasNoCounterpart",
			`{mapl: [{k: a, zone: z1, v: toolong}]}`, `{mapl: [{k: a, zone: z2, v: toolong}]}`,
			"spec.mapl[0].v: Too long: may not be longer than 3", "spec.mapl[0].v: Too long: may not be longer than 3"},
		{"MapValuesPairByKey",
			`{m: {a: toolong, b: x}}`, `{m: {a: toolong, b: q, c: z}}`,
			"", "spec.m.a: Too long: may not be longer than 3"},
		{"JunctorsAreForgivenOnlyWithTheirObject",
			`{jo: {a: toolong, b: x}}`, `{jo: {a: toolong, b: q}}`,
			"spec.jo.a: Too long: may not be longer than 3\n<nil>: Invalid value: \"\": \"spec.jo\" must validate all the schemas (allOf). None validated",
			"spec.jo.a: Too long: may not be longer than 3\n<nil>: Invalid value: \"\": \"spec.jo\" must validate all the schemas (allOf). None validated"},
		{"JunctorsOfAnUnchangedObjectAreForgiven",
			`{jo: {a: toolong, b: x}}`, `{jo: {a: toolong, b: x}, other: q}`,
			"", "spec.jo.a: Too long: may not be longer than 3\n<nil>: Invalid value: \"\": \"spec.jo\" must validate all the schemas (allOf). None validated"},
		{"EmbeddedResourcesAreCheckedAsOnCreate",
			`{emb: {apiVersion: v1}}`, `{emb: {apiVersion: v1}, other: q}`,
			"spec.emb.kind: Required value: must not be empty", "spec.emb.kind: Required value: must not be empty"},
		{"DuplicatesAreNotCheckedWhenTheOldObjectHadSome",
			`{dup: [a, a]}`, `{dup: [a, a, b], dup2: [x, x]}`,
			"", ""},
		{"DuplicatesAreCheckedWhenTheOldObjectHadNone",
			`{dup: [a]}`, `{dup: [a, a]}`,
			"spec.dup[1]: Duplicate value: \"a\"", "spec.dup[1]: Duplicate value: \"a\""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			old := decode(t, "{must: x, spec: "+c.old+"}")
			obj := decode(t, "{must: x, spec: "+c.new+"}")
			if got := errStrings(st.ValidateUpdate(obj, old, true)); got != c.want {
				t.Errorf("with ratcheting got\n%s\nwant\n%s", got, c.want)
			}
			if got := errStrings(st.ValidateUpdate(obj, old, false)); got != c.wantOff {
				t.Errorf("without ratcheting got\n%s\nwant\n%s", got, c.wantOff)
			}
		})
	}
	t.Run("TheObjectItselfIsNeverUnchanged", func(t *testing.T) {
		obj := decode(t, "{spec: {other: x}}")
		if got, want := errStrings(st.ValidateUpdate(obj, decode(t, "{spec: {other: x}}"), true)), "must: Required value"; got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	})
}

// TestValidateStatusUpdate_ChecksTheStatusAlone: through /status, kube
// validates the status as a document of its own (paths relative to it),
// not the rest of the object nor embedded resources, and the lists of
// the whole object unless the old one had duplicates.
func TestValidateStatusUpdate_ChecksTheStatusAlone(t *testing.T) {
	st := mustSchema(t, `
type: object
properties:
  spec: {type: object, properties: {s: {type: string, maxLength: 3}}}
  status:
    type: object
    required: [x]
    properties:
      x: {type: string}
      num: {type: integer, maximum: 3}
      emb: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}
      l: {type: array, x-kubernetes-list-type: set, items: {type: string}}
`)
	cases := []struct{ name, old, new, want string }{
		{"ValidStatus", `{status: {x: a}}`, `{status: {x: b}}`, ""},
		{"PathsAreRelativeToTheStatus", `{status: {x: a}}`, `{status: {num: 5}}`,
			"num: Invalid value: 5: num in body should be less than or equal to 3\nx: Required value"},
		{"WrongTypeHasNoName", `{status: {x: a}}`, `{status: str}`, `<nil>: Invalid value: "string":  in body must be of type object: "string"`},
		{"NullStatusIsNotChecked", `{status: {x: a}}`, `{status: null}`, ""},
		{"TheSpecIsNotChecked", `{spec: {s: toolong}}`, `{spec: {s: toolong}, status: {x: a}}`, ""},
		{"EmbeddedResourcesAreNotChecked", `{status: {x: a}}`, `{status: {x: a, emb: {apiVersion: v1}}}`, ""},
		{"ListsAreCheckedInTheWholeObject", `{status: {x: a}}`, `{status: {x: a, l: [a, a]}}`, `status.l[1]: Duplicate value: "a"`},
		{"ListsAreNotCheckedWhenTheOldObjectHadDuplicates", `{status: {x: a, l: [a, a]}}`, `{status: {x: b, l: [b, b]}}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := errStrings(st.ValidateStatusUpdate(decode(t, c.new), decode(t, c.old))); got != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}

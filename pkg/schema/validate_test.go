package schema

import (
	"testing"
)

func mustSchema(t testing.TB, y string) *Structural {
	t.Helper()
	s, errs := FromOpenAPIV3(decode(t, y), nil)
	if len(errs) > 0 {
		t.Fatal(errStrings(errs))
	}
	return &Structural{Root: s}
}

const widgetSchema = `
type: object
properties:
  spec:
    type: object
    required: [name]
    properties:
      name: {type: string, pattern: "^[a-z]+$", minLength: 2, maxLength: 5}
      replicas: {type: integer, minimum: 1, maximum: 10}
      ratio: {type: number, minimum: 0, exclusiveMinimum: true, maximum: 1, exclusiveMaximum: true}
      scale: {type: number, maximum: 1.5}
      color: {type: string, enum: [red, blue]}
      size: {type: integer, enum: [1, 2]}
      nick: {type: string, nullable: true}
      enabled: {type: boolean}
      port: {x-kubernetes-int-or-string: true}
      tags: {type: array, minItems: 1, maxItems: 2, items: {type: string}}
      set: {type: array, x-kubernetes-list-type: set, items: {type: string}}
      ports:
        type: array
        x-kubernetes-list-type: map
        x-kubernetes-list-map-keys: [port]
        items: {type: object, required: [port], properties: {port: {type: integer}, name: {type: string}}}
      labels: {type: object, minProperties: 1, maxProperties: 2, additionalProperties: {type: string, maxLength: 3}}
      raw: {type: object, x-kubernetes-preserve-unknown-fields: true}
      tmpl: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}
      id: {type: string, format: uuid}
      addr: {type: string, format: ipv4}
      mystery: {type: string, format: no-such-format}
`

func TestValidate_Keywords(t *testing.T) {
	st := mustSchema(t, widgetSchema)
	cases := []struct {
		name, spec, want string
	}{
		{"ValidObjectHasNoErrors", `{name: abc, replicas: 3, ratio: 0.5, color: red, size: 2, nick: null, port: http, tags: [a], set: [a, b], ports: [{port: 80}, {port: 81}], labels: {a: b}, raw: {x: 1}, id: 123e4567-e89b-12d3-a456-426614174000, addr: 10.0.0.1, mystery: anything}`, ""},
		{"MissingRequiredIsRequired", `{}`, "spec.name: Required value"},
		{"MaximumExceededIsInvalid", `{name: ab, replicas: 11}`, "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"},
		{"MinimumUnderIsInvalid", `{name: ab, replicas: 0}`, "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1"},
		{"ExclusiveMaximumIsInvalid", `{name: ab, ratio: 1}`, "spec.ratio: Invalid value: 1: spec.ratio in body should be less than 1"},
		{"ExclusiveMinimumIsInvalid", `{name: ab, ratio: 0}`, "spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0"},
		{"StringForIntegerIsTypeInvalid", `{name: ab, replicas: "3"}`, "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\""},
		{"FractionForIntegerIsTypeInvalid", `{name: ab, replicas: 1.5}`, "spec.replicas: Invalid value: \"number\": spec.replicas in body must be of type integer: \"number\""},
		{"IntegerAgainstFractionalBoundUsesTruncatedBound", `{name: ab, scale: 2}`, "spec.scale: Invalid value: 2: spec.scale in body should be less than or equal to 1"},
		{"NumberAgainstFractionalBoundUsesBound", `{name: ab, scale: 1.75}`, "spec.scale: Invalid value: 1.75: spec.scale in body should be less than or equal to 1.5"},
		{"IntegerForNumberIsValid", `{name: ab, ratio: 0.25}`, ""},
		{"NullNotNullableIsTypeInvalidAndNotInEnum", `{name: ab, color: null}`, "spec.color: Invalid value: \"null\": spec.color in body must be of type string: \"null\"\nspec.color: Unsupported value: \"null\": supported values: \"red\", \"blue\""},
		{"NullNullableIsValid", `{name: ab, nick: null}`, ""},
		{"EnumMismatchIsUnsupported", `{name: ab, color: pink}`, "spec.color: Unsupported value: \"pink\": supported values: \"red\", \"blue\""},
		{"NumericEnumMismatchIsUnsupported", `{name: ab, size: 3}`, "spec.size: Unsupported value: 3: supported values: \"1\", \"2\""},
		{"PatternMismatchIsInvalid", `{name: AB}`, "spec.name: Invalid value: \"AB\": spec.name in body should match '^[a-z]+$'"},
		{"TooLongIsTooLong", `{name: abcdef}`, "spec.name: Too long: may not be longer than 5"},
		{"MaxLengthCountsCharacters", `{name: ab, labels: {a: "äöü"}}`, ""},
		{"TooShortIsInvalid", `{name: a}`, "spec.name: Invalid value: \"a\": spec.name in body should be at least 2 chars long"},
		{"TooManyItemsIsTooMany", `{name: ab, tags: [a, b, c]}`, "spec.tags: Too many: 3: must have at most 2 items"},
		{"TooFewItemsIsInvalid", `{name: ab, tags: []}`, "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items"},
		{"TooManyPropertiesIsTooMany", `{name: ab, labels: {a: x, b: x, c: x}}`, "spec.labels: Too many: 3: must have at most 2 items"},
		{"TooFewPropertiesIsInvalid", `{name: ab, labels: {}}`, "spec.labels: Invalid value: 0: spec.labels in body should have at least 1 properties"},
		{"AdditionalPropertiesAreValidated", `{name: ab, labels: {a: toolong}}`, "spec.labels.a: Too long: may not be longer than 3"},
		{"BooleanTypeIsChecked", `{name: ab, enabled: "yes"}`, "spec.enabled: Invalid value: \"string\": spec.enabled in body must be of type boolean: \"string\""},
		{"IntOrStringTakesInteger", `{name: ab, port: 80}`, ""},
		{"IntOrStringRejectsBoolean", `{name: ab, port: true}`, "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\""},
		{"SetDuplicateIsDuplicate", `{name: ab, set: [a, b, a]}`, "spec.set[2]: Duplicate value: \"a\""},
		{"MapDuplicateKeyIsDuplicate", `{name: ab, ports: [{port: 80}, {port: 80, name: x}]}`, "spec.ports[1]: Duplicate value: map[string]interface {}{\"port\":80}"},
		{"ItemsAreValidated", `{name: ab, ports: [{name: x}]}`, "spec.ports[0].port: Required value"},
		{"FormatMismatchIsTypeInvalid", `{name: ab, id: nope}`, "spec.id: Invalid value: \"nope\": spec.id in body must be of type uuid: \"nope\""},
		{"IPv4FormatIsChecked", `{name: ab, addr: "::1"}`, "spec.addr: Invalid value: \"::1\": spec.addr in body must be of type ipv4: \"::1\""},
		{"EmbeddedResourceNeedsApiVersionAndKind", `{name: ab, tmpl: {metadata: {name: x}}}`, "spec.tmpl.apiVersion: Required value: must not be empty\nspec.tmpl.kind: Required value: must not be empty"},
		{"EmbeddedResourceMetadataIsObjectMeta", `{name: ab, tmpl: {apiVersion: v1, kind: Pod, metadata: {name: "a/b", labels: {"-": x}}}}`,
			"spec.tmpl.metadata.name: Invalid value: \"a/b\": may not contain '/'\nspec.tmpl.metadata.labels: Invalid value: \"-\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"},
		{"WrongTypeStopsFurtherChecks", `{name: 5}`, "spec.name: Invalid value: \"integer\": spec.name in body must be of type string: \"integer\""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obj := decode(t, "spec: "+c.spec)
			if got := errStrings(st.Validate(obj)); got != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}

func TestValidate_Formats(t *testing.T) {
	cases := []struct {
		format, good, bad string
	}{
		{"bsonobjectid", "507f1f77bcf86cd799439011", "507f1f77"},
		{"uri", "https://example.com/x", "not a uri"},
		{"email", "a@example.com", "nobody"},
		{"hostname", "a.example.com", "-bad-.com"},
		{"ipv4", "192.168.0.1", "300.1.1.1"},
		{"ipv6", "fe80::1", "1.2.3.4"},
		{"cidr", "10.0.0.0/8", "10.0.0.0"},
		{"mac", "01:23:45:67:89:ab", "01:23"},
		{"uuid", "123E4567-E89B-12D3-A456-426614174000", "123"},
		{"uuid3", "a3bb189e-8bf9-3888-9912-ace4e6543002", "a3bb189e-8bf9-4888-9912-ace4e6543002"},
		{"uuid4", "0b6b8e0c-6f0e-4c47-9d6f-3f7f0c5b8a1e", "0b6b8e0c-6f0e-3c47-9d6f-3f7f0c5b8a1e"},
		{"uuid5", "a6edc906-2f9f-5fb2-a373-efac406f0ef2", "a6edc906-2f9f-4fb2-a373-efac406f0ef2"},
		{"isbn10", "0321751043", "0321751044"},
		{"isbn13", "978-0321751041", "978-0321751042"},
		{"isbn", "0321751043", "12345"},
		{"creditcard", "4111 1111 1111 1111", "1234"},
		{"ssn", "123-45-6789", "12-345-6789"},
		{"hexcolor", "#ffaa00", "#ggg"},
		{"rgbcolor", "rgb(255, 0, 12)", "rgb(256,0,0)"},
		{"byte", "aGVsbG8=", "!!"},
		{"date", "2024-02-29", "2023-02-29"},
		{"date-time", "2024-01-02T03:04:05Z", "2024-01-02"},
		{"duration", "3h", "three hours"},
	}
	for _, c := range cases {
		t.Run(c.format, func(t *testing.T) {
			st := mustSchema(t, `{type: object, properties: {f: {type: string, format: `+c.format+`}}}`)
			if errs := st.Validate(map[string]interface{}{"f": c.good}); len(errs) > 0 {
				t.Errorf("%q: %s", c.good, errStrings(errs))
			}
			if errs := st.Validate(map[string]interface{}{"f": c.bad}); len(errs) != 1 {
				t.Errorf("%q: got %d errors, want 1", c.bad, len(errs))
			}
		})
	}
}

func TestValidate_PasswordAndUnknownFormatsAcceptAnything(t *testing.T) {
	st := mustSchema(t, `{type: object, properties: {p: {type: string, format: password}, u: {type: string, format: int32}}}`)
	if errs := st.Validate(map[string]interface{}{"p": "x", "u": "y"}); len(errs) > 0 {
		t.Error(errStrings(errs))
	}
}

func BenchmarkValidate(b *testing.B) {
	st := mustSchema(b, widgetSchema)
	obj := decode(b, `
spec:
  name: abc
  replicas: 3
  ratio: 0.5
  color: red
  port: http
  tags: [a, b]
  set: [a, b]
  ports: [{port: 80, name: http}, {port: 443, name: https}]
  labels: {a: b, c: d}
  raw: {x: 1}
  id: 123e4567-e89b-12d3-a456-426614174000
  addr: 10.0.0.1
`)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if errs := st.Validate(obj); len(errs) > 0 {
			b.Fatal(errStrings(errs))
		}
	}
}

// junctorSchema and keywordSchema are two CRD schemas as kube-apiserver
// v1.29.15 was given them; the cases are its answers for objects of them
// (but for the order of sibling fields, which kube leaves to map order).
const junctorSchema = `
type: object
properties:
  spec:
    type: object
    properties:
      x: {type: integer, not: {minimum: 3}}
      "y": {type: string, anyOf: [{pattern: "^a"}, {maxLength: 2}]}
      w: {type: string, oneOf: [{pattern: "^a"}, {maxLength: 2}]}
      v: {type: string, allOf: [{pattern: "^a"}, {maxLength: 2}]}
      z: {type: integer, multipleOf: 5}
      zf: {type: number, multipleOf: 0.5}
      o: {type: object, properties: {a: {type: integer}, b: {type: string}}, oneOf: [{required: [a]}, {required: [b]}]}
      p: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}
      q: {x-kubernetes-int-or-string: true, allOf: [{anyOf: [{type: integer}, {type: string}]}, {pattern: "^[0-9]+%$"}]}
      "n": {type: object, properties: {a: {type: integer}}, anyOf: [{properties: {a: {minimum: 10}}}, {properties: {a: {maximum: 2}}}]}
`

const keywordSchema = `
type: object
properties:
  spec:
    type: object
    properties:
      e: {type: string, enum: [a, b]}
      s: {type: string, maxLength: 2, minLength: 4, pattern: "^a", format: uuid}
      "n": {type: integer, minimum: 3, maximum: 1, multipleOf: 2}
      arr: {type: array, items: {type: integer, minimum: 3}, minItems: 4, maxItems: 1}
      obj: {type: object, required: [a, c], maxProperties: 1, minProperties: 5, properties: {a: {type: integer, minimum: 3}, b: {type: integer, minimum: 3}}}
      an2: {type: object, properties: {a: {type: integer}, b: {type: integer}}, anyOf: [{required: [b]}, {properties: {a: {minimum: 10, maximum: 20}}}]}
      nul: {type: string, nullable: true, not: {enum: [null]}}
      nn: {type: integer, anyOf: [{minimum: 10}, {maximum: 2}]}
      set: {type: array, x-kubernetes-list-type: set, items: {type: number}}
`

func TestValidate_JunctorsAndKeywordsAsKube(t *testing.T) {
	for _, c := range []struct {
		schema string
		cases  []struct{ name, spec, want string }
	}{
		{junctorSchema, []struct{ name, spec, want string }{
			{"NotValidated", `{"x":4}`,
				"<nil>: Invalid value: \"\": \"spec.x\" must not validate the schema (not)"},
			{"AnyOfNoneValidReportsTheFirstFailure", `{"y":"bcd"}`,
				"<nil>: Invalid value: \"\": \"spec.y\" must validate at least one schema (anyOf)\nspec.y: Invalid value: \"bcd\": spec.y in body should match '^a'"},
			{"OneOfTwoValid", `{"w":"ab"}`,
				"<nil>: Invalid value: \"\": \"spec.w\" must validate one and only one schema (oneOf). Found 2 valid alternatives"},
			{"OneOfNoneValid", `{"w":"bcd"}`,
				"<nil>: Invalid value: \"\": \"spec.w\" must validate one and only one schema (oneOf). Found none valid\nspec.w: Invalid value: \"bcd\": spec.w in body should match '^a'"},
			{"AllOfNoneValidReportsAll", `{"v":"bcd"}`,
				"spec.v: Invalid value: \"bcd\": spec.v in body should match '^a'\nspec.v: Too long: may not be longer than 2\n<nil>: Invalid value: \"\": \"spec.v\" must validate all the schemas (allOf). None validated"},
			{"MultipleOfInteger", `{"z":7}`,
				"spec.z: Invalid value: 7: spec.z in body should be a multiple of 5"},
			{"MultipleOfFraction", `{"zf":0.7}`,
				"spec.zf: Invalid value: 0.7: spec.zf in body should be a multiple of 0.5"},
			{"MultipleOfFractionHolds", `{"zf":1.5}`, ""},
			{"FractionForIntegerStillChecksMultipleOf", `{"z":7.5}`,
				"spec.z: Invalid value: \"number\": spec.z in body must be of type integer: \"number\"\nspec.z: Invalid value: 7.5: spec.z in body should be a multiple of 5"},
			{"IntegerAgainstFractionalFactor", `{"zf":3}`,
				"spec.zf: Invalid value: 0: factor MultipleOf declared for spec.zf must be positive: 0"},
			{"OneOfObjectBothRequired", `{"o":{"a":1,"b":"x"}}`,
				"<nil>: Invalid value: \"\": \"spec.o\" must validate one and only one schema (oneOf). Found 2 valid alternatives"},
			{"OneOfObjectNoneRequired", `{"o":{}}`,
				"<nil>: Invalid value: \"\": \"spec.o\" must validate one and only one schema (oneOf). Found none valid\nspec.o.a: Required value"},
			{"IntOrStringAnyOfWrongType", `{"p":true}`,
				"spec.p: Invalid value: \"boolean\": spec.p in body must be of type integer,string: \"boolean\"\n<nil>: Invalid value: \"\": \"spec.p\" must validate at least one schema (anyOf)\nspec.p: Invalid value: \"boolean\": spec.p in body must be of type integer: \"boolean\""},
			{"IntOrStringAllOfPattern", `{"q":"5"}`,
				"spec.q: Invalid value: \"5\": spec.q in body should match '^[0-9]+%$'\n<nil>: Invalid value: \"\": \"spec.q\" must validate all the schemas (allOf)"},
			{"IntOrStringAllOfInteger", `{"q":5}`, ""},
			{"AnyOfPropertiesReportsTheFirstFailure", `{"n":{"a":5}}`,
				"<nil>: Invalid value: \"\": \"spec.n\" must validate at least one schema (anyOf)\nspec.n.a: Invalid value: 5: spec.n.a in body should be greater than or equal to 10"},
			{"WrongTypeStillChecksJunctors", `{"x":"s"}`,
				"spec.x: Invalid value: \"string\": spec.x in body must be of type integer: \"string\"\n<nil>: Invalid value: \"\": \"spec.x\" must not validate the schema (not)"},
			{"ObjectOfWrongTypeStillChecksOneOf", `{"o":5}`,
				"spec.o: Invalid value: \"integer\": spec.o in body must be of type object: \"integer\"\n<nil>: Invalid value: \"\": \"spec.o\" must validate one and only one schema (oneOf). Found 2 valid alternatives"},
			{"AllValid", `{"p":"80%","q":"50%","x":1,"y":"a","w":"abc","v":"a","z":10}`, ""},
		}},
		{keywordSchema, []struct{ name, spec, want string }{
			{"WrongTypeStillChecksEnum", `{"e":5}`,
				"spec.e: Invalid value: \"integer\": spec.e in body must be of type string: \"integer\"\nspec.e: Unsupported value: 5: supported values: \"a\", \"b\""},
			{"OnlyFirstStringErrorThenFormat", `{"s":"bcd"}`,
				"spec.s: Too long: may not be longer than 2\nspec.s: Invalid value: \"bcd\": spec.s in body must be of type uuid: \"bcd\""},
			{"NumberOrder", `{"n":7.5}`,
				"spec.n: Invalid value: \"number\": spec.n in body must be of type integer: \"number\"\nspec.n: Invalid value: 7.5: spec.n in body should be a multiple of 2\nspec.n: Invalid value: 7.5: spec.n in body should be less than or equal to 1"},
			{"ItemsBeforeCount", `{"arr":[1,2]}`,
				"spec.arr[0]: Invalid value: 1: spec.arr[0] in body should be greater than or equal to 3\nspec.arr[1]: Invalid value: 2: spec.arr[1] in body should be greater than or equal to 3\nspec.arr: Invalid value: 2: spec.arr in body should have at least 4 items\nspec.arr: Too many: 2: must have at most 1 items"},
			{"ObjectOrder", `{"obj":{"a":1,"b":2}}`,
				"spec.obj: Invalid value: 2: spec.obj in body should have at least 5 properties\nspec.obj: Too many: 2: must have at most 1 items\nspec.obj.a: Invalid value: 1: spec.obj.a in body should be greater than or equal to 3\nspec.obj.b: Invalid value: 2: spec.obj.b in body should be greater than or equal to 3\nspec.obj.c: Required value"},
			{"AnyOfChoosesTheFailureWithMostChecks", `{"an2":{"a":1}}`,
				"<nil>: Invalid value: \"\": \"spec.an2\" must validate at least one schema (anyOf)\nspec.an2.a: Invalid value: 1: spec.an2.a in body should be greater than or equal to 10"},
			{"NullIsNotInNullEnum", `{"nul":null}`, ""},
			{"AnyOfSecondValid", `{"nn":1}`, ""},
			{"NullItem", `{"arr":[null]}`,
				"spec.arr[0]: Invalid value: \"null\": spec.arr[0] in body must be of type integer: \"null\"\nspec.arr: Invalid value: 1: spec.arr in body should have at least 4 items"},
			{"SetDuplicatesAtTheirSecondOccurrence", `{"set":[1,1,1.0,1.5,1.5,1.5]}`,
				"spec.set[1]: Duplicate value: 1\nspec.set[4]: Duplicate value: 1.5"},
		}},
	} {
		st := mustSchema(t, c.schema)
		for _, tc := range c.cases {
			t.Run(tc.name, func(t *testing.T) {
				obj := decode(t, `{"spec":`+tc.spec+`}`)
				if got := errStrings(st.Validate(obj)); got != tc.want {
					t.Errorf("got\n%s\nwant\n%s", got, tc.want)
				}
			})
		}
	}
}

// TestValidate_FormatsAcceptExactlyWhatKubeAccepts pins the edge values
// of each format to kube v1.29's answer (checked on kube-apiserver),
// quirks included: a value kube stores must be stored here, and a value
// kube refuses must be refused.
func TestValidate_FormatsAcceptExactlyWhatKubeAccepts(t *testing.T) {
	cases := []struct {
		format, value string
		valid         bool
	}{
		{"date-time", "2024-01-02T03:04:05Z", true},
		{"date-time", "2024-01-02t03:04:05.123+01:00", true},
		{"date-time", "2024-01-02T03:04:05,5Z", true},
		{"date-time", "2024-01-02T03:04:05ZT", true},
		{"date-time", "2024-01-02T03:04:05", false},
		{"date-time", "2024-01-02 03:04:05Z", false},
		{"date-time", "2024-01-02T24:00:00Z", false},
		{"date-time", "2023-02-29T03:04:05Z", false},
		{"datetime", "2024-01-02T03:04:05", false},
		{"hostname", "a", true},
		{"hostname", "a-b", true},
		{"hostname", "my-host", false},
		{"hostname", "a--b", false},
		{"hostname", "my-host.example.com", true},
		{"hostname", "xn--bcher-kva.ch", true},
		{"hostname", "bücher.de", true},
		{"hostname", "example.com.", false},
		{"hostname", "1.2.3.4", false},
		{"hostname", "host.c", false},
		{"hostname", "host.com1", false},
		{"hostname", "a-.example.com", false},
		{"byte", "", false},
		{"byte", "aGVsbG8=", true},
		{"byte", "aGVsbG8", false},
		{"byte", "aGVs bG8=", false},
		{"byte", "aGVsbG8=\n", false},
		{"duration", "P1D", true},
		{"duration", "1h30m", true},
		{"duration", "3 days", true},
		{"duration", "1.5h", true},
		{"duration", "forever", false},
		{"duration", "5 fortnights", false},
		{"duration", "", false},
		{"ipv4", "010.001.001.001", true},
		{"ipv4", "::ffff:1.2.3.4", true},
		{"ipv4", "256.1.1.1", false},
		{"ipv4", "1.2.3", false},
		{"cidr", "010.0.0.0/8", true},
		{"cidr", "10.0.0.1/8", true},
		{"cidr", "fd00::/8", true},
		{"cidr", "10.0.0.0/33", false},
		{"cidr", "10.0.0.0", false},
		{"ssn", "123-45-6789", true},
		{"ssn", "123 45 6789", true},
		{"ssn", "123456789", false},
		{"creditcard", "4111 1111 1111 1111", true},
		{"creditcard", "4111 1111 1111 1112", false},
		{"isbn10", "0-8044-2957-X", true},
		{"isbn10", "0-8044-2957-x", false},
	}
	for _, c := range cases {
		t.Run(c.format+"/"+c.value, func(t *testing.T) {
			st := mustSchema(t, `{type: object, properties: {f: {type: string, format: `+c.format+`}}}`)
			errs := st.Validate(map[string]interface{}{"f": c.value})
			if got := len(errs) == 0; got != c.valid {
				t.Errorf("%s %q: valid %v, kube says %v (%s)", c.format, c.value, got, c.valid, errStrings(errs))
			}
		})
	}
}

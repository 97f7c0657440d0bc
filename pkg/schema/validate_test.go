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
		{"NullNotNullableIsTypeInvalid", `{name: ab, color: null}`, "spec.color: Invalid value: \"null\": spec.color in body must be of type string: \"null\""},
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

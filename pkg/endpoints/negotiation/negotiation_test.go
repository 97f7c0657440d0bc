package negotiation

import "testing"

// Accept headers below are the ones kube's clients send (kubectl's Table
// request, client-go's protobuf-then-JSON, metadata informers) plus edge
// cases. Each expectation agrees with what kube-apiserver v1.29 answers.
const (
	tableV1      = "application/json;as=Table;v=v1;g=meta.k8s.io"
	tableV1beta1 = "application/json;as=Table;v=v1beta1;g=meta.k8s.io"
)

func TestNegotiate_PicksTheRepresentationKubeWould(t *testing.T) {
	all := Options{Protobuf: true, Table: true}
	cases := []struct {
		name   string
		accept string
		opts   Options
		want   Format
	}{
		{"no Accept is JSON", "", Options{}, Format{MediaType: JSON}},
		{"any type is JSON", "*/*", all, Format{MediaType: JSON}},
		{"JSON", JSON, Options{}, Format{MediaType: JSON}},
		{"YAML", YAML, Options{}, Format{MediaType: YAML}},
		{"protobuf for a type that has it", Protobuf, Options{Protobuf: true}, Format{MediaType: Protobuf}},
		{"client-go's protobuf-then-JSON falls back without protobuf", Protobuf + ", " + JSON, Options{}, Format{MediaType: JSON}},
		{"client-go's protobuf-then-JSON takes protobuf when offered", Protobuf + ", " + JSON, Options{Protobuf: true}, Format{MediaType: Protobuf}},
		{"an unknown type is skipped", "text/html, " + YAML, Options{}, Format{MediaType: YAML}},
		{"a higher q wins over position", JSON + ";q=0.5, " + YAML, Options{}, Format{MediaType: YAML}},
		{"equal q keeps the client's order", YAML + ";q=0.9, " + JSON + ";q=0.9", Options{}, Format{MediaType: YAML}},
		{"a wildcard with a higher q wins", YAML + ";q=0.1, */*;q=0.5", Options{}, Format{MediaType: JSON}},
		{"charset is ignored", JSON + "; charset=utf-8", Options{}, Format{MediaType: JSON}},
		{"pretty is ignored", JSON + ";pretty=1", Options{}, Format{MediaType: JSON}},
		{"an unknown parameter is ignored, as kube ignores it", JSON + ";foo=bar", Options{}, Format{MediaType: JSON}},

		{"Table v1", tableV1, all, Format{MediaType: JSON, As: AsTable, AsVersion: "v1"}},
		{"Table v1beta1", tableV1beta1, all, Format{MediaType: JSON, As: AsTable, AsVersion: "v1beta1"}},
		{"Table in YAML", "application/yaml;as=Table;v=v1;g=meta.k8s.io", all, Format{MediaType: YAML, As: AsTable, AsVersion: "v1"}},
		{"kubectl's Table header prefers v1", tableV1 + "," + tableV1beta1 + "," + JSON, all, Format{MediaType: JSON, As: AsTable, AsVersion: "v1"}},
		{"kubectl's Table header falls back to the object where Table is not served", tableV1 + "," + tableV1beta1 + "," + JSON, Options{Protobuf: true}, Format{MediaType: JSON}},
		// Table has no protobuf form.
		{"Table in protobuf falls back to JSON", "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, " + JSON, all, Format{MediaType: JSON}},

		{"PartialObjectMetadata v1", "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io", Options{}, Format{MediaType: JSON, As: AsPartialObjectMetadata, AsVersion: "v1"}},
		{"PartialObjectMetadataList v1beta1", "application/json;as=PartialObjectMetadataList;v=v1beta1;g=meta.k8s.io", Options{}, Format{MediaType: JSON, As: AsPartialObjectMetadataList, AsVersion: "v1beta1"}},
		// The metadata informers' header: protobuf first.
		{"PartialObjectMetadataList in protobuf", "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1," + JSON + ";as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", Options{Protobuf: true}, Format{MediaType: Protobuf, As: AsPartialObjectMetadataList, AsVersion: "v1"}},

		{"JSON watch stream", JSON + ";stream=watch", Options{Stream: true}, Format{MediaType: JSON}},
		{"protobuf watch stream", Protobuf + ";stream=watch", Options{Protobuf: true, Stream: true}, Format{MediaType: Protobuf}},
		{"any type on a watch is JSON", "*/*", Options{Protobuf: true, Stream: true}, Format{MediaType: JSON}},
		// kubectl get -w.
		{"Table on a watch", tableV1, Options{Table: true, Stream: true}, Format{MediaType: JSON, As: AsTable, AsVersion: "v1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Negotiate(tc.accept, tc.opts)
			if !ok || got != tc.want {
				t.Fatalf("Negotiate(%q, %+v) = %+v, %v; want %+v, true", tc.accept, tc.opts, got, ok, tc.want)
			}
		})
	}
}

func TestNegotiate_RefusesWhatTheEndpointCannotProduce(t *testing.T) {
	all := Options{Protobuf: true, Table: true}
	cases := []struct {
		name   string
		accept string
		opts   Options
	}{
		{"unknown type", "text/html", all},
		{"unknown types only", "text/plain, application/xml", all},
		{"protobuf for a type without it", Protobuf, Options{Table: true}},
		{"Table where Table is not served", tableV1, Options{Protobuf: true}},
		{"Table in protobuf", "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io", all},
		{"Table of an unknown version", "application/json;as=Table;v=v2;g=meta.k8s.io", all},
		{"Table without its group", "application/json;as=Table;v=v1", all},
		{"Table of another group", "application/json;as=Table;v=v1;g=apps", all},
		{"unknown meta.k8s.io kind", "application/json;as=Widget;v=v1;g=meta.k8s.io", all},
		{"group and version without a kind", "application/json;v=v1;g=meta.k8s.io", all},
		{"PartialObjectMetadata without a version", "application/json;as=PartialObjectMetadata;g=meta.k8s.io", all},
		// A watch stream has no YAML form.
		{"YAML on a watch", YAML, Options{Protobuf: true, Stream: true}},
		{"protobuf watch stream for a type without protobuf", Protobuf + ";stream=watch", Options{Stream: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got, ok := Negotiate(tc.accept, tc.opts); ok {
				t.Fatalf("Negotiate(%q, %+v) = %+v, true; want not acceptable", tc.accept, tc.opts, got)
			}
		})
	}
}

func TestNotAcceptableMessage_ListsTheOfferedRepresentations(t *testing.T) {
	const prefix = "406: Not Acceptable\n\nAvailable representations: "
	cases := []struct {
		name string
		opts Options
		want string
	}{
		// kube-apiserver's answers for a configmap and for their collection.
		{"object", Options{Protobuf: true}, "application/json, application/yaml, application/vnd.kubernetes.protobuf"},
		{"collection", Options{Protobuf: true, Collection: true}, "application/json, application/yaml, application/vnd.kubernetes.protobuf, application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"},
		{"object without protobuf", Options{}, "application/json, application/yaml"},
		{"collection without protobuf", Options{Collection: true}, "application/json, application/yaml, application/json;stream=watch"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := NotAcceptableMessage(tc.opts); got != prefix+tc.want {
				t.Fatalf("NotAcceptableMessage(%+v) =\n%q\nwant\n%q", tc.opts, got, prefix+tc.want)
			}
		})
	}
}

func TestPick_ChoosesAmongOffersInTheClientsOrder(t *testing.T) {
	// OpenAPI's offers: JSON, then the protobuf form in both spellings.
	offers := []string{"application/json", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf", "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"}
	cases := []struct {
		name   string
		accept string
		want   string
		ok     bool
	}{
		{"no Accept takes the first offer", "", offers[0], true},
		{"any type takes the first offer", "*/*", offers[0], true},
		{"a type wildcard takes the first offer of its range", "application/*", offers[0], true},
		{"an exact offer", "application/json", offers[0], true},
		// '@' is not allowed in an RFC media type, but clients send it.
		{"the spelling with '@'", offers[1], offers[1], true},
		{"the RFC spelling", offers[2], offers[2], true},
		{"q-values order the client's choices", "application/json;q=0.5, " + offers[2], offers[2], true},
		{"unknown types are skipped", "text/html, " + offers[2], offers[2], true},
		{"nothing offered", "text/html", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Pick(tc.accept, offers)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("Pick(%q) = %q, %v; want %q, %v", tc.accept, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestContentType_ReadsRequestBodyTypes(t *testing.T) {
	cases := []struct {
		header string
		want   string
		ok     bool
	}{
		{"", JSON, true},
		{"application/json", JSON, true},
		{"application/json; charset=utf-8", JSON, true},
		{"Application/JSON", JSON, true},
		{"application/yaml", YAML, true},
		{"application/vnd.kubernetes.protobuf", Protobuf, true},
		{"application/vnd.kubernetes.protobuf;stream=watch", Protobuf, true},
		// A 415 for anything else, patch types included: PATCH reads its
		// own Content-Type.
		{"text/plain", "", false},
		{"application/merge-patch+json", "", false},
		{"application/json;;", "", false},
		{"not a media type", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.header, func(t *testing.T) {
			got, ok := ContentType(tc.header)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("ContentType(%q) = %q, %v; want %q, %v", tc.header, got, ok, tc.want, tc.ok)
			}
		})
	}
}

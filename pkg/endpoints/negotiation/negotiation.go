// Package negotiation owns content negotiation: it reads an Accept header
// (media ranges with parameters, q-values and wildcards) and picks the
// representation a response is written in: JSON, YAML or protobuf, and
// optionally one of the meta.k8s.io transforms (Table,
// PartialObjectMetadata, PartialObjectMetadataList). It also names the
// representations a request body may come in.
package negotiation

import (
	"fmt"
	"mime"
	"sort"
	"strconv"
	"strings"
)

// Media types the server speaks.
const (
	JSON     = "application/json"
	YAML     = "application/yaml"
	Protobuf = "application/vnd.kubernetes.protobuf"
)

// Supported lists the representations, in the order kube names them.
var Supported = []string{JSON, YAML, Protobuf}

// Kinds of meta.k8s.io a client may ask for instead of the object, with
// the media type parameter as=<kind>;g=meta.k8s.io;v=<v1|v1beta1>.
const (
	AsTable                     = "Table"
	AsPartialObjectMetadata     = "PartialObjectMetadata"
	AsPartialObjectMetadataList = "PartialObjectMetadataList"
)

// Aggregated discovery: the one document of every group and version,
// apidiscovery.k8s.io/v2beta1 APIGroupDiscoveryList, asked for with
// as=APIGroupDiscoveryList;g=apidiscovery.k8s.io;v=v2beta1.
const (
	DiscoveryGroup          = "apidiscovery.k8s.io"
	DiscoveryVersion        = "v2beta1"
	AsAPIGroupDiscoveryList = "APIGroupDiscoveryList"
)

// DiscoveryFormat picks how /api and /apis answer: the aggregated
// document, in JSON or protobuf, when the client prefers it to any plain
// type (aggregated true); else the legacy document in JSON.
func DiscoveryFormat(accept string) (mediaType string, aggregated bool) {
	for _, r := range parseAccept(accept) {
		g, v, as := r.params["g"], r.params["v"], r.params["as"]
		if g == "" && v == "" && as == "" {
			return JSON, false
		}
		if g == DiscoveryGroup && v == DiscoveryVersion && as == AsAPIGroupDiscoveryList && (r.typ == JSON || r.typ == Protobuf) {
			return r.typ, true
		}
	}
	return JSON, false
}

// Format is the representation of one response.
type Format struct {
	// MediaType is JSON, YAML or Protobuf.
	MediaType string
	// As names the meta.k8s.io kind that replaces the object (AsTable,
	// AsPartialObjectMetadata, AsPartialObjectMetadataList), of version
	// AsVersion (v1 or v1beta1); empty means the object itself.
	As        string
	AsVersion string
}

// Options say what a request's endpoint can produce.
type Options struct {
	// Protobuf is false for types without a protobuf form.
	Protobuf bool
	// Table is true for get, list and watch, which can answer as a Table.
	Table bool
	// Stream is true for watches, which have no YAML form.
	Stream bool
	// Collection is true for a collection's endpoint, which also serves
	// watches: a 406 from it names the stream representations too.
	Collection bool
}

type mediaRange struct {
	typ    string
	params map[string]string
	q      float64
	index  int
}

func parseAccept(header string) []mediaRange {
	var out []mediaRange
	for i, part := range strings.Split(header, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		typ, params, err := mime.ParseMediaType(part)
		if err != nil {
			// Names such as OpenAPI's "...spec.v2@v1.0+protobuf" are not
			// RFC media types, but clients send them.
			if typ, params, err = lenientMediaType(part); err != nil {
				continue
			}
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				q = f
			}
			delete(params, "q")
		}
		if q <= 0 {
			continue
		}
		out = append(out, mediaRange{typ: typ, params: params, q: q, index: i})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].q > out[j].q })
	return out
}

// lenientMediaType splits "type/subtype; k=v" without RFC 2045's token
// rules.
func lenientMediaType(s string) (string, map[string]string, error) {
	parts := strings.Split(s, ";")
	typ := strings.ToLower(strings.TrimSpace(parts[0]))
	if !strings.Contains(typ, "/") || strings.ContainsAny(typ, " \t\"") {
		return "", nil, fmt.Errorf("invalid media type %q", s)
	}
	params := map[string]string{}
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			continue
		}
		params[strings.ToLower(strings.TrimSpace(k))] = strings.Trim(strings.TrimSpace(v), `"`)
	}
	return typ, params, nil
}

// Pick returns the first of offers, in the client's order of preference
// (q-values, then position; wildcards match any offer of their range), or
// false when the Accept header allows none. An empty header takes the
// first offer.
func Pick(accept string, offers []string) (string, bool) {
	if strings.TrimSpace(accept) == "" {
		return offers[0], true
	}
	for _, r := range parseAccept(accept) {
		for _, o := range offers {
			if r.typ == "*/*" || r.typ == o || (strings.HasSuffix(r.typ, "/*") && strings.HasPrefix(o, strings.TrimSuffix(r.typ, "*"))) {
				return o, true
			}
		}
	}
	return "", false
}

// Negotiate picks the representation for an Accept header; ok is false
// when the header names nothing the endpoint can produce (a 406).
func Negotiate(accept string, opts Options) (Format, bool) {
	if strings.TrimSpace(accept) == "" {
		return Format{MediaType: JSON}, true
	}
	for _, r := range parseAccept(accept) {
		if f, ok := match(r, opts); ok {
			return f, true
		}
	}
	return Format{}, false
}

func match(r mediaRange, opts Options) (Format, bool) {
	var f Format
	switch r.typ {
	case JSON, "*/*", "application/*":
		f.MediaType = JSON
	case YAML:
		if opts.Stream {
			return f, false
		}
		f.MediaType = YAML
	case Protobuf:
		f.MediaType = Protobuf
	default:
		return f, false
	}
	as, hasAs := r.params["as"]
	_, hasGroup := r.params["g"]
	_, hasVersion := r.params["v"]
	// A type without a protobuf form still has its metadata in protobuf,
	// as PartialObjectMetadata, as kube serves a custom resource's.
	if f.MediaType == Protobuf && !opts.Protobuf && as != AsPartialObjectMetadata && as != AsPartialObjectMetadataList {
		return f, false
	}
	if !hasAs {
		// A group or version asks for a conversion of no kind, which kube
		// refuses; parameters it does not know (foo=bar) it ignores.
		return f, !hasGroup && !hasVersion
	}
	if r.params["g"] != "meta.k8s.io" {
		return f, false
	}
	switch as {
	case AsTable:
		// Table has no protobuf form.
		if !opts.Table || f.MediaType == Protobuf {
			return f, false
		}
	case AsPartialObjectMetadata, AsPartialObjectMetadataList:
		// Whether the answer is a list is checked when it is written, as
		// kube does: a mismatch is a 406 of its own, not a fallback.
	default:
		return f, false
	}
	switch v := r.params["v"]; v {
	case "v1", "v1beta1":
		f.As, f.AsVersion = as, v
		return f, true
	}
	return f, false
}

// NotAcceptableMessage is kube's 406 message.
func NotAcceptableMessage(opts Options) string {
	types := []string{JSON}
	if !opts.Stream {
		types = append(types, YAML)
	}
	if opts.Protobuf {
		types = append(types, Protobuf)
	}
	if opts.Collection && !opts.Stream {
		types = append(types, JSON+";stream=watch")
		if opts.Protobuf {
			types = append(types, Protobuf+";stream=watch")
		}
	}
	return "406: Not Acceptable\n\nAvailable representations: " + strings.Join(types, ", ")
}

// ContentType parses a request body's Content-Type into one of the
// supported media types; "" means none given (JSON), ok false means an
// unsupported one (a 415).
func ContentType(header string) (string, bool) {
	if strings.TrimSpace(header) == "" {
		return JSON, true
	}
	typ, _, err := mime.ParseMediaType(header)
	if err != nil {
		return "", false
	}
	for _, s := range Supported {
		if typ == s {
			return typ, true
		}
	}
	return "", false
}

// Command markergen reads the source of the Kubernetes API packages the
// server serves and writes the merge and schema markers their comments
// declare (+listType, +listMapKey, +mapType, +structType, +optional,
// +default, +enum) as Go data, since comments do not survive compilation.
// It is run by `go generate ./pkg/schema` with the module versions in
// go.mod; the output is reviewed and committed like any generated code.
//
//	go run ./hack/markergen -o pkg/schema/markers_generated.go
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// packages whose types are served (and the types they use).
var packages = []struct{ module, dir string }{
	{"k8s.io/apimachinery", "pkg/apis/meta/v1"},
	{"k8s.io/api", "core/v1"},
	{"k8s.io/api", "batch/v1"},
	{"k8s.io/api", "coordination/v1"},
	{"k8s.io/api", "events/v1"},
	{"k8s.io/api", "rbac/v1"},
	{"k8s.io/api", "authentication/v1"},
	{"k8s.io/api", "authorization/v1"},
	// This module's own copy of kube's CustomResourceDefinition types,
	// which carries kube's markers in the same comments.
	{"github.com/cronplane/cronplane", "pkg/apis/apiextensions/v1"},
}

type typeInfo struct {
	structType, mapType string
	enum                bool
}

type fieldInfo struct {
	listType, mapType string
	listMapKeys       []string
	optional          bool
	defaultValue      string
}

func main() {
	out := flag.String("o", "", "output file (stdout if empty)")
	flag.Parse()
	types := map[string]typeInfo{}
	fields := map[string]fieldInfo{}
	enums := map[string][]string{}
	for _, p := range packages {
		dir, err := moduleDir(p.module)
		if err != nil {
			log.Fatal(err)
		}
		pkgPath := p.module + "/" + p.dir
		if err := scan(filepath.Join(dir, p.dir), pkgPath, types, fields, enums); err != nil {
			log.Fatal(err)
		}
	}
	src := render(types, fields, enums)
	if *out == "" {
		if _, err := os.Stdout.Write(src); err != nil {
			log.Fatal(err)
		}
		return
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
}

func moduleDir(module string) (string, error) {
	b, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module).Output()
	if err != nil {
		return "", fmt.Errorf("locating %s: %w", module, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// tags returns the +key=value markers of a comment group; a key may
// repeat (+listMapKey).
func tags(groups ...*ast.CommentGroup) map[string][]string {
	out := map[string][]string{}
	for _, g := range groups {
		if g == nil {
			continue
		}
		for _, c := range g.List {
			text := strings.TrimSpace(strings.TrimPrefix(c.Text, "//"))
			if !strings.HasPrefix(text, "+") {
				continue
			}
			k, v, _ := strings.Cut(text[1:], "=")
			out[k] = append(out[k], v)
		}
	}
	return out
}

func scan(dir, pkgPath string, types map[string]typeInfo, fields map[string]fieldInfo, enums map[string][]string) error {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go") && !strings.Contains(fi.Name(), "generated")
	}, parser.ParseComments)
	if err != nil {
		return err
	}
	enumTypes := map[string]bool{}
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.TYPE {
					continue
				}
				for _, spec := range gd.Specs {
					ts := spec.(*ast.TypeSpec)
					t := tags(gd.Doc, ts.Doc)
					name := pkgPath + "." + ts.Name.Name
					info := typeInfo{}
					if v := t["structType"]; len(v) > 0 {
						info.structType = v[0]
					}
					if v := t["mapType"]; len(v) > 0 {
						info.mapType = v[0]
					}
					if _, ok := t["enum"]; ok {
						info.enum = true
						enumTypes[ts.Name.Name] = true
					}
					if info != (typeInfo{}) {
						types[name] = info
					}
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						continue
					}
					for _, fld := range st.Fields.List {
						jsonName := jsonFieldName(fld)
						if jsonName == "" {
							continue
						}
						ft := tags(fld.Doc)
						fi := fieldInfo{}
						if v := ft["listType"]; len(v) > 0 {
							fi.listType = v[0]
						}
						if v := ft["mapType"]; len(v) > 0 {
							fi.mapType = v[0]
						}
						fi.listMapKeys = ft["listMapKey"]
						if _, ok := ft["optional"]; ok && !omitempty(fld) {
							fi.optional = true
						}
						if v := ft["default"]; len(v) > 0 {
							fi.defaultValue = v[0]
						}
						if fi.listType != "" || fi.mapType != "" || len(fi.listMapKeys) > 0 || fi.optional || fi.defaultValue != "" {
							fields[name+"."+jsonName] = fi
						}
					}
				}
			}
		}
	}
	// The values of enum types are the constants declared with them.
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					id, ok := vs.Type.(*ast.Ident)
					if !ok || !enumTypes[id.Name] || len(vs.Values) != len(vs.Names) {
						continue
					}
					for _, v := range vs.Values {
						lit, ok := v.(*ast.BasicLit)
						if !ok || lit.Kind != token.STRING {
							continue
						}
						s, err := strconv.Unquote(lit.Value)
						if err == nil {
							key := pkgPath + "." + id.Name
							enums[key] = append(enums[key], s)
						}
					}
				}
			}
		}
	}
	return nil
}

func structTag(f *ast.Field) reflect.StructTag {
	if f.Tag == nil {
		return ""
	}
	s, _ := strconv.Unquote(f.Tag.Value)
	return reflect.StructTag(s)
}

func jsonFieldName(f *ast.Field) string {
	name, _, _ := strings.Cut(structTag(f).Get("json"), ",")
	if name == "-" {
		return ""
	}
	return name
}

func omitempty(f *ast.Field) bool {
	return strings.Contains(structTag(f).Get("json"), "omitempty")
}

func render(types map[string]typeInfo, fields map[string]fieldInfo, enums map[string][]string) []byte {
	var b bytes.Buffer
	b.WriteString("// Code generated by hack/markergen from the Kubernetes API sources; DO NOT EDIT.\n\npackage schema\n\n")
	b.WriteString("var generatedTypeMarkers = map[string]TypeMarkers{\n")
	for _, k := range sortedKeys(types) {
		t := types[k]
		var parts []string
		if t.structType != "" {
			parts = append(parts, "StructType: "+strconv.Quote(t.structType))
		}
		if t.mapType != "" {
			parts = append(parts, "MapType: "+strconv.Quote(t.mapType))
		}
		if vals := enums[k]; t.enum && len(vals) > 0 {
			sort.Strings(vals)
			q := make([]string, len(vals))
			for i, v := range vals {
				q[i] = strconv.Quote(v)
			}
			parts = append(parts, "Enum: []string{"+strings.Join(q, ", ")+"}")
		}
		if len(parts) > 0 {
			fmt.Fprintf(&b, "\t%q: {%s},\n", k, strings.Join(parts, ", "))
		}
	}
	b.WriteString("}\n\nvar generatedFieldMarkers = map[string]FieldMarkers{\n")
	for _, k := range sortedKeys(fields) {
		f := fields[k]
		var parts []string
		if f.listType != "" {
			parts = append(parts, "ListType: "+strconv.Quote(f.listType))
		}
		if len(f.listMapKeys) > 0 {
			q := make([]string, len(f.listMapKeys))
			for i, v := range f.listMapKeys {
				q[i] = strconv.Quote(v)
			}
			parts = append(parts, "ListMapKeys: []string{"+strings.Join(q, ", ")+"}")
		}
		if f.mapType != "" {
			parts = append(parts, "MapType: "+strconv.Quote(f.mapType))
		}
		if f.optional {
			parts = append(parts, "Optional: true")
		}
		if f.defaultValue != "" {
			parts = append(parts, "Default: "+strconv.Quote(f.defaultValue))
		}
		fmt.Fprintf(&b, "\t%q: {%s},\n", k, strings.Join(parts, ", "))
	}
	b.WriteString("}\n")
	src, err := format.Source(b.Bytes())
	if err != nil {
		log.Fatalf("formatting: %v", err)
	}
	return src
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

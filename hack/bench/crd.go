package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"strings"
	"time"
)

var customObjects = flag.Int("custom-objects", 5000, "custom objects created per definition in the custom resource scenario (0 skips it)")

// celRules are the five x-kubernetes-validations of the benchmark's
// definition, on spec: bounds, a cross-field check, a list macro and a
// membership test, each within kube's cost limits thanks to the
// schema's maxLength and maxItems.
const celRules = `"x-kubernetes-validations":[
 {"rule":"self.replicas >= 0 && self.replicas <= 1000","message":"replicas out of range"},
 {"rule":"self.minReplicas <= self.replicas","message":"minReplicas above replicas"},
 {"rule":"self.name.startsWith('obj-')","message":"name must start with obj-"},
 {"rule":"self.tags.all(t, t.size() <= 16)","message":"tag too long"},
 {"rule":"self.mode in ['fast', 'safe', 'off']","message":"unknown mode"}],`

// benchCRD is a namespaced definition in group whose spec carries the
// five rules or none.
func benchCRD(group string, rules bool) string {
	validations := ""
	if rules {
		validations = celRules
	}
	return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"benchobjects.` + group + `"},
 "spec":{"group":"` + group + `","scope":"Namespaced","names":{"plural":"benchobjects","singular":"benchobject","kind":"BenchObject"},
  "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{
   "spec":{"type":"object",` + validations + `"properties":{
    "replicas":{"type":"integer"},"minReplicas":{"type":"integer"},
    "name":{"type":"string","maxLength":63},"mode":{"type":"string","maxLength":8},
    "tags":{"type":"array","maxItems":8,"items":{"type":"string","maxLength":32}}}}}}}}]}}`
}

func benchObject(group string, i int) string {
	return fmt.Sprintf(`{"apiVersion":"%s/v1","kind":"BenchObject","metadata":{"name":"obj-%05d"},`+
		`"spec":{"replicas":%d,"minReplicas":1,"name":"obj-%05d","mode":"safe","tags":["a","bb","ccc"]}}`, group, i, 1+i%100, i)
}

// customResources creates *customObjects custom objects of a definition
// with five CEL rules and of the same definition without, and reports
// the rates, their ratio, and how soon each new definition is served
// (a create succeeds). The definitions are deleted at the end, their
// objects with them.
func (b *bench) customResources() {
	if *customObjects == 0 {
		return
	}
	// The namespace exists when the other scenarios ran.
	resp, err := b.request("POST", "/api/v1/namespaces", `{"metadata":{"name":"`+namespace+`"}}`, "")
	check(err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusConflict {
		log.Fatalf("creating namespace %s: %d", namespace, resp.StatusCode)
	}
	rates := map[bool]float64{}
	for _, rules := range []bool{false, true} {
		group, label := "plain.bench.example.com", "no rules"
		if rules {
			group, label = "cel.bench.example.com", "5 CEL rules"
		}
		start := time.Now()
		b.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", benchCRD(group, rules), 201)
		path := "/apis/" + group + "/v1/namespaces/" + namespace + "/benchobjects"
		b.createWhenServed(path, benchObject(group, 0))
		served := time.Since(start)
		report("definition created to first object created ("+label+")", served.Round(time.Millisecond).String(), "< 2s")
		record("CRD served after create ("+label+")", "ms", float64(served.Milliseconds()))
		start = time.Now()
		parallel(*clients, *customObjects-1, func(i int) {
			b.do("POST", path, benchObject(group, i+1), 201)
		})
		rates[rules] = float64(*customObjects-1) / time.Since(start).Seconds()
		report(fmt.Sprintf("create %d custom objects, %d clients (%s)", *customObjects, *clients, label), fmt.Sprintf("%.0f/s", rates[rules]), "")
		record("custom objects create/s ("+label+")", "/s", rates[rules])
	}
	report("custom object creates with 5 CEL rules / without", fmt.Sprintf("%.2f", rates[true]/rates[false]), ">= 0.8")
	for _, group := range []string{"plain.bench.example.com", "cel.bench.example.com"} {
		b.do("DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/benchobjects."+group, "", 200)
	}
}

// createWhenServed posts body to path until the resource is served (404
// before), for at most 30 seconds.
func (b *bench) createWhenServed(path, body string) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := b.request("POST", path, body, "")
		check(err)
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		check(err)
		switch {
		case resp.StatusCode == http.StatusCreated:
			return
		case resp.StatusCode != http.StatusNotFound || time.Now().After(deadline):
			log.Fatalf("POST %s: %d %s", path, resp.StatusCode, strings.TrimSpace(string(data)))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

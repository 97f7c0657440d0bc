package handlers

import (
	"fmt"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestApplyBody_JSONReadsAsYAMLDoes: a JSON apply configuration read on
// the JSON path gives the JSON, the keys and the duplicates that the YAML
// parser gives.
func TestApplyBody_JSONReadsAsYAMLDoes(t *testing.T) {
	for _, body := range []string{
		`{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"c","labels":{"b":"1","a":"2"}},"spec":{"schedule":"*/1 * * * *","suspend":false,"startingDeadlineSeconds":100,"x":1.5,"y":1e3,"z":null,"s":"<&>"}}`,
		`{"kind":"CronJob","s":"\u00e9\"\n","t":"é"}`,
		` {"kind":"CronJob","list":[1,"a",{"k":[]}],"big":9007199254740993,"neg":-0.0} `,
		`{"kind":"CronJob","metadata":{"name":"c","name":"d"}}`,
		"kind: CronJob\nmetadata:\n  name: c\n  labels: {a: '1'}\n",
		"kind: CronJob\nkind: Job\n",
		`{}`,
	} {
		raw, data, dups, err := applyBody([]byte(body))
		if err != nil {
			t.Errorf("%s: %v", body, err)
			continue
		}
		wantRaw := map[string]interface{}{}
		if err := yaml.Unmarshal([]byte(body), &wantRaw); err != nil {
			t.Fatal(err)
		}
		wantData, err := yaml.YAMLToJSON([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if string(data) != string(wantData) {
			t.Errorf("%s:\n JSON %s\n want %s", body, data, wantData)
		}
		// Only the map's shape counts (intersect keeps the typed values),
		// not the Go types of its numbers.
		if fmt.Sprint(floats(raw)) != fmt.Sprint(floats(wantRaw)) {
			t.Errorf("%s:\n map %v\n want %v", body, raw, wantRaw)
		}
		if want := yamlDuplicates([]byte(body)); !reflect.DeepEqual(dups, want) {
			t.Errorf("%s: duplicates %v, want %v", body, dups, want)
		}
	}
	// Valid JSON that the YAML parser refuses is refused, as kube's
	// reading of an apply configuration refuses it.
	for _, body := range []string{"kind: [", `{"kind":"CronJob","s":"a\/b"}`, `{"kind":"CronJob","s":"\ud83d\ude00"}`} {
		if _, _, _, err := applyBody([]byte(body)); err == nil {
			t.Errorf("%s was read", body)
		}
	}
}

// floats is v with every number a float64.
func floats(v interface{}) interface{} {
	switch v := v.(type) {
	case map[string]interface{}:
		out := map[string]interface{}{}
		for k, x := range v {
			out[k] = floats(x)
		}
		return out
	case []interface{}:
		out := make([]interface{}, len(v))
		for i, x := range v {
			out[i] = floats(x)
		}
		return out
	case int64:
		return float64(v)
	}
	return v
}

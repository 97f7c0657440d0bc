package main

import (
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cronplane/cronplane/pkg/certs"
)

var (
	admissionObjects  = flag.Int("admission-objects", 1000, "CronJobs created per round in each admission configuration (no webhook or policy, one validating webhook, one ValidatingAdmissionPolicy); 0 skips the scenario")
	admissionRounds   = flag.Int("admission-rounds", 3, "rounds of the admission scenario, the configurations in a rotating order; the figures are medians")
	admissionProfiles = flag.String("admission-profiles", "", "directory for a CPU profile of the server over the first -profile-seconds of each configuration's first round, and its allocations before and after")
)

// policyArgs turn on ValidatingAdmissionPolicy, beta in v1.29, on either
// server.
var policyArgs = []string{"--feature-gates", "ValidatingAdmissionPolicy=true", "--runtime-config", "admissionregistration.k8s.io/v1beta1=true"}

const (
	admissionNamespace = "admission-bench"
	// probeLabel marks the dry-run CronJob that the webhook and the
	// policy refuse, so that the benchmark sees when either is in force.
	probeLabel = "bench-probe"
)

// admission measures CronJob creates by the clients with no webhook or
// policy, through one validating webhook served by the benchmark on
// loopback, and through one ValidatingAdmissionPolicy of three
// validations, on a server of b's kind started afresh with policies on.
func (b *bench) admission() {
	if *admissionObjects == 0 {
		return
	}
	if b.fresh == nil {
		log.Print("admission: skipped: it needs a server the benchmark starts, with policies on")
		return
	}
	s, stop := b.fresh(policyArgs...)
	defer stop()
	s.admissionRates()
}

// admissionConfig is one configuration of the scenario: what installs it
// and removes it; both return once the server acts on the change.
type admissionConfig struct {
	name, figure string
	on, off      func()
}

func (b *bench) admissionRates() {
	dir, err := os.MkdirTemp("", "cronplane-bench-webhook-")
	check(err)
	defer os.RemoveAll(dir)
	hookURL, caBundle, closeHook := startAllowWebhook(dir)
	defer closeHook()
	b.do("POST", "/api/v1/namespaces", `{"metadata":{"name":"`+admissionNamespace+`"}}`, 201)
	configs := []admissionConfig{
		{"no webhook or policy", "admission: create/s, no webhook or policy", func() {}, func() {}},
		{"one validating webhook", "admission: create/s, one validating webhook", func() {
			b.do("POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", webhookConfiguration(hookURL, caBundle), 201)
			b.awaitProbe(true)
		}, func() {
			b.do("DELETE", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/bench-allow", "", 200)
			b.awaitProbe(false)
		}},
		{"one policy of 3 validations", "admission: create/s, one policy of 3 validations", func() {
			b.do("POST", "/apis/admissionregistration.k8s.io/v1beta1/validatingadmissionpolicies", benchPolicy, 201)
			b.do("POST", "/apis/admissionregistration.k8s.io/v1beta1/validatingadmissionpolicybindings", benchPolicyBinding, 201)
			b.awaitProbe(true)
		}, func() {
			b.do("DELETE", "/apis/admissionregistration.k8s.io/v1beta1/validatingadmissionpolicybindings/bench-policy", "", 200)
			b.do("DELETE", "/apis/admissionregistration.k8s.io/v1beta1/validatingadmissionpolicies/bench-policy", "", 200)
			b.awaitProbe(false)
		}},
	}
	// The server's CPU per create does not depend on what else the
	// machine runs, as the rates do.
	rates, cpu, own := make([][]float64, len(configs)), make([][]float64, len(configs)), make([][]float64, len(configs))
	self := []int{os.Getpid()}
	var hookSeconds, hookCalls float64
	seq := 0
	for round := 0; round < *admissionRounds; round++ {
		for k := range configs {
			c := (k + round) % len(configs)
			configs[c].on()
			profiled := b.profileAdmission(round, configs[c].name)
			base := seq
			secondsStart, callsStart := b.webhookTime()
			start, cpuStart, ownStart := time.Now(), cpuOf(b.pids), cpuOf(self)
			parallel(*clients, *admissionObjects, func(i int) {
				b.do("POST", "/apis/batch/v1/namespaces/"+admissionNamespace+"/cronjobs", cronJobNamed(fmt.Sprintf("adm-%07d", base+i), i), 201)
			})
			rates[c] = append(rates[c], float64(*admissionObjects)/time.Since(start).Seconds())
			cpu[c] = append(cpu[c], 1000*(cpuOf(b.pids)-cpuStart)/float64(*admissionObjects))
			own[c] = append(own[c], 1000*(cpuOf(self)-ownStart)/float64(*admissionObjects))
			seq += *admissionObjects
			seconds, calls := b.webhookTime()
			hookSeconds, hookCalls = hookSeconds+seconds-secondsStart, hookCalls+calls-callsStart
			profiled.Wait()
			configs[c].off()
		}
	}
	none := median(rates[0])
	for c, conf := range configs {
		r := median(rates[c])
		report(fmt.Sprintf("create %d CronJobs x %d rounds, %d clients, %s", *admissionObjects, *admissionRounds, *clients, conf.name),
			fmt.Sprintf("%.0f/s (rounds %.0f-%.0f)", r, slices.Min(rates[c]), slices.Max(rates[c])), "")
		record(conf.figure, "/s", r)
		report("  server CPU per create (apiserver and etcd)", fmt.Sprintf("%.2f ms", median(cpu[c])), "")
		record(fmt.Sprintf("admission: server CPU per create, %s", conf.name), "ms", median(cpu[c]))
		// The clients and the webhook share the two cores with the server.
		report("  the benchmark's CPU per create (clients, webhook)", fmt.Sprintf("%.2f ms", median(own[c])), "")
		record(fmt.Sprintf("admission: benchmark CPU per create, %s", conf.name), "ms", median(own[c]))
		if c == 1 && hookCalls > 0 {
			report("  the webhook call as the server times it, mean", fmt.Sprintf("%.2f ms", 1000*hookSeconds/hookCalls), "")
			record("admission: webhook call, mean", "ms", 1000*hookSeconds/hookCalls)
		}
		if c > 0 {
			report("  its rate / the rate with no webhook or policy", fmt.Sprintf("%.2f", r/none), "target >= 0.8")
			record(fmt.Sprintf("admission: %s / none", conf.name), "", r/none)
		}
	}
}

// webhookTime reads the seconds the server spent calling the
// benchmark's webhook so far, and the calls, from the histogram kube
// and cronplane both keep, apiserver_admission_webhook_admission_duration_seconds.
func (b *bench) webhookTime() (seconds, calls float64) {
	for _, line := range strings.Split(string(b.do("GET", "/metrics", "", 200)), "\n") {
		series, value, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(series, "apiserver_admission_webhook_admission_duration_seconds_") || !strings.Contains(series, `name="allow.bench.example.com"`) {
			continue
		}
		v, _ := strconv.ParseFloat(value, 64)
		switch {
		case strings.HasPrefix(series, "apiserver_admission_webhook_admission_duration_seconds_sum{"):
			seconds += v
		case strings.HasPrefix(series, "apiserver_admission_webhook_admission_duration_seconds_count{"):
			calls += v
		}
	}
	return seconds, calls
}

// profileAdmission takes a CPU profile of the server while the first
// round of a configuration runs, with -admission-profiles.
func (b *bench) profileAdmission(round int, config string) *sync.WaitGroup {
	var wg sync.WaitGroup
	if *admissionProfiles == "" || round > 0 {
		return &wg
	}
	check(os.MkdirAll(*admissionProfiles, 0o755))
	file := func(kind string) string {
		return filepath.Join(*admissionProfiles, fmt.Sprintf("%s-%s-admission-%s.pprof", b.side, kind, strings.ReplaceAll(config, " ", "-")))
	}
	b.saveProfile("/debug/pprof/allocs", file("allocs-before"))
	wg.Add(1)
	go func() {
		defer wg.Done()
		b.saveProfile(fmt.Sprintf("/debug/pprof/profile?seconds=%d", *profileSecs), file("cpu"))
		b.saveProfile("/debug/pprof/allocs", file("allocs"))
	}()
	return &wg
}

// awaitProbe sends a dry-run create of a CronJob the webhook and the
// policy refuse until it is refused (in force) or allowed (removed), for
// at most 30 seconds.
func (b *bench) awaitProbe(refused bool) {
	probe := strings.Replace(cronJobNamed("probe", 0), `"labels":{`, `"labels":{"`+probeLabel+`":"yes",`, 1)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := b.request("POST", "/apis/batch/v1/namespaces/"+admissionNamespace+"/cronjobs?dryRun=All", probe, "")
		check(err)
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		allowed := resp.StatusCode == http.StatusCreated
		// The webhook refuses with 400, the policy with 422.
		denied := resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusUnprocessableEntity
		switch {
		case refused && denied, !refused && allowed:
			return
		case !allowed && !denied, time.Now().After(deadline):
			log.Fatalf("admission probe (want refused %v): %d %s", refused, resp.StatusCode, data)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startAllowWebhook serves, over TLS on loopback, a validating webhook
// that allows every review but the probe's, and returns its URL and the
// PEM of its CA. It runs on the machine it measures, so it is as lean as
// a real webhook would be: it decodes only what it reads (the review's
// version, the request's uid and the object's labels) and answers with
// that uid.
func startAllowWebhook(dir string) (string, []byte, func()) {
	files, err := certs.EnsureServing(dir, nil)
	check(err)
	ca, err := os.ReadFile(files.CAFile)
	check(err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review allowReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		if _, ok := review.Request.Object.Metadata.Labels[probeLabel]; ok {
			resp.Allowed, resp.Result = false, &metav1.Status{Message: "the benchmark's probe", Code: http.StatusBadRequest}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp})
	})}
	go func() { _ = srv.ServeTLS(ln, files.CertFile, files.KeyFile) }()
	return "https://" + ln.Addr().String() + "/validate", ca, func() { _ = srv.Close() }
}

// allowReview is what the benchmark's webhook reads of a review.
type allowReview struct {
	metav1.TypeMeta
	Request *struct {
		UID    types.UID `json:"uid"`
		Object struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
		} `json:"object"`
	} `json:"request"`
}

// webhookConfiguration is one validating webhook on CronJob creates.
func webhookConfiguration(url string, caBundle []byte) string {
	return `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"bench-allow"},
"webhooks":[{"name":"allow.bench.example.com","admissionReviewVersions":["v1"],"sideEffects":"None","failurePolicy":"Fail",
"clientConfig":{"url":"` + url + `","caBundle":"` + base64.StdEncoding.EncodeToString(caBundle) + `"},
"rules":[{"operations":["CREATE"],"apiGroups":["batch"],"apiVersions":["v1"],"resources":["cronjobs"]}]}]}`
}

// benchPolicy validates CronJob creates three ways; the last refuses
// the probe.
const benchPolicy = `{"apiVersion":"admissionregistration.k8s.io/v1beta1","kind":"ValidatingAdmissionPolicy","metadata":{"name":"bench-policy"},
"spec":{"failurePolicy":"Fail","matchConstraints":{"resourceRules":[{"operations":["CREATE"],"apiGroups":["batch"],"apiVersions":["v1"],"resources":["cronjobs"]}]},
"validations":[
 {"expression":"object.spec.schedule.size() > 0","message":"a schedule is needed"},
 {"expression":"object.spec.jobTemplate.spec.template.spec.containers.all(c, c.image.size() > 0)","message":"every container needs an image"},
 {"expression":"!has(object.metadata.labels) || !('` + probeLabel + `' in object.metadata.labels)","message":"the benchmark's probe"}]}}`

const benchPolicyBinding = `{"apiVersion":"admissionregistration.k8s.io/v1beta1","kind":"ValidatingAdmissionPolicyBinding","metadata":{"name":"bench-policy"},
"spec":{"policyName":"bench-policy","validationActions":["Deny"]}}`

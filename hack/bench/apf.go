package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"sigs.k8s.io/yaml"
)

var (
	noisyNeighbour = flag.Bool("noisy-neighbour", true, "run the API Priority and Fairness noisy-neighbour scenario (user A floods full LISTs while user B and a controller-manager Lease renewal are timed)")
	noisyPhase     = flag.Duration("noisy-phase", 20*time.Second, "how long user B and the Lease renewal are timed in each phase (without A, with A)")
	noisyListers   = flag.Int("noisy-listers", 64, "user A's concurrent full LISTs")
	noisyRate      = flag.Int("noisy-rate", 50, "user B's requests per second, four GETs to one create")
	apfProfiles    = flag.String("apf-profiles", "", "directory: a CPU profile and a second's execution trace of the server under A's flood, and after the APF on/off rounds a CPU profile of each server under -profile-seconds of gets")
	apfRounds      = flag.Int("apf-overhead-rounds", 7, "alternating rounds comparing get and create rates of a non-exempt user on cronplane with --enable-priority-and-fairness=true and =false (0 skips; not in -compare)")
)

// The Lease renewal follows kube-controller-manager's leader election:
// a try every retryPeriod, lost if none succeeds within renewDeadline.
const (
	retryPeriod   = 2 * time.Second
	renewDeadline = 10 * time.Second
	// listerTimeout is how long user A waits for a LIST before it counts
	// as a timeout.
	listerTimeout = 30 * time.Second
	// warmUp lets A's flood reach its steady state before B is timed.
	warmUp = 3 * time.Second
)

// identity is a client of the server with credentials of its own.
type identity struct {
	name   string
	client *http.Client
	token  string
	// header carries impersonation when the server gives no way to act
	// as the user itself.
	header http.Header
}

// do sends a request as the identity and returns its status code and
// body; err is the transport's (a timeout among them).
func (id *identity) do(ctx context.Context, url, method, path, body string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	for k, v := range id.header {
		req.Header[k] = v
	}
	if id.token != "" {
		req.Header.Set("Authorization", "Bearer "+id.token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := id.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// discard is do without keeping the body: A's lists are 13 MB each.
func (id *identity) discard(url, path string) (int, error) {
	req, err := http.NewRequest("GET", url+path, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+id.token)
	resp, err := id.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

// newClient is an HTTP/1.1 client for one identity, on its own
// connections so that no identity waits for another's, verifying the
// server as b's admin client does.
func (b *bench) newClient(timeout time.Duration, cert *tls.Certificate) *http.Client {
	base := b.client.Transport.(*http.Transport).TLSClientConfig.Clone()
	if cert != nil {
		base.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		TLSClientConfig:     base,
		MaxIdleConnsPerHost: 256,
		DisableCompression:  !*gzipLists,
	}}
}

// serviceAccount creates a ServiceAccount in the benchmark's namespace
// and returns it with a token from the TokenRequest API, as both
// servers issue them.
func (b *bench) serviceAccount(name string, timeout time.Duration) *identity {
	b.do("POST", "/api/v1/namespaces/"+namespace+"/serviceaccounts", `{"metadata":{"name":"`+name+`"}}`, 201)
	out := b.do("POST", "/api/v1/namespaces/"+namespace+"/serviceaccounts/"+name+"/token",
		`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":3600}}`, 201)
	var tr struct {
		Status struct {
			Token string `json:"token"`
		} `json:"status"`
	}
	check(json.Unmarshal(out, &tr))
	return &identity{name: "system:serviceaccount:" + namespace + ":" + name, client: b.newClient(timeout, nil), token: tr.Status.Token}
}

// controllerManagerFromKubeconfig is the identity of cronplane's
// controller-manager kubeconfig: a client certificate or a token of
// system:kube-controller-manager.
func (b *bench) controllerManagerFromKubeconfig(path string) *identity {
	data, err := os.ReadFile(path)
	check(err)
	var kc struct {
		Users []struct {
			User struct {
				Token    string `json:"token"`
				CertData []byte `json:"client-certificate-data"`
				KeyData  []byte `json:"client-key-data"`
			} `json:"user"`
		} `json:"users"`
	}
	check(yaml.Unmarshal(data, &kc))
	if len(kc.Users) == 0 {
		log.Fatalf("%s names no user", path)
	}
	u := kc.Users[0].User
	id := &identity{name: "system:kube-controller-manager", token: u.Token}
	var cert *tls.Certificate
	if len(u.CertData) > 0 {
		c, err := tls.X509KeyPair(u.CertData, u.KeyData)
		check(err)
		cert = &c
	}
	id.client = b.newClient(renewDeadline, cert)
	return id
}

// controllerManagerFromCA signs a client certificate for
// system:kube-controller-manager with the reference's CA (certs/ca.crt
// and ca.key in its run directory), which kube-apiserver accepts.
func (b *bench) controllerManagerFromCA(certDir string) *identity {
	caCert, err := tls.LoadX509KeyPair(filepath.Join(certDir, "ca.crt"), filepath.Join(certDir, "ca.key"))
	check(err)
	ca, err := x509.ParseCertificate(caCert.Certificate[0])
	check(err)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	check(err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "system:kube-controller-manager"},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caCert.PrivateKey)
	check(err)
	cert, err := tls.X509KeyPair(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	check(err)
	return &identity{name: "system:kube-controller-manager", client: b.newClient(renewDeadline, &cert)}
}

// controllerManagerImpersonated acts as system:kube-controller-manager
// through the admin's impersonation, for a server the benchmark did not
// start (-kubeconfig).
func (b *bench) controllerManagerImpersonated() *identity {
	return &identity{name: "system:kube-controller-manager (impersonated)", client: b.newClient(renewDeadline, nil), token: b.token,
		header: http.Header{"Impersonate-User": {"system:kube-controller-manager"}}}
}

// phaseResult is what one phase measured.
type phaseResult struct {
	b, renewals                             []time.Duration
	bFailed, renewFailed, missed            int
	served, rejected, timedOut, otherErrors int64
	// level holds workload-low's gauges, sampled every second; cores
	// is the server's CPU over the phase, in cores; gcs its garbage
	// collections a second.
	level      []levelSample
	cores, gcs float64
}

// levelSample is workload-low's executing requests and seats and its
// waiting requests at one moment, from the server's /metrics.
type levelSample struct{ executing, seats, waiting float64 }

// sampleLevel reads workload-low's gauges, and the garbage collections
// so far, from /metrics.
func (b *bench) sampleLevel() (levelSample, float64, bool) {
	resp, err := b.request("GET", "/metrics", "", "")
	if err != nil {
		return levelSample{}, 0, false
	}
	defer resp.Body.Close()
	var ls levelSample
	var gcs float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		if strings.HasPrefix(line, "go_gc_duration_seconds_count") {
			gcs = v
			continue
		}
		if !strings.Contains(line, `priority_level="workload-low"`) {
			continue
		}
		switch {
		case strings.HasPrefix(line, "apiserver_flowcontrol_current_executing_requests{"):
			ls.executing += v
		case strings.HasPrefix(line, "apiserver_flowcontrol_current_executing_seats{"):
			ls.seats += v
		case strings.HasPrefix(line, "apiserver_flowcontrol_current_inqueue_requests{"):
			ls.waiting += v
		}
	}
	return ls, gcs, resp.StatusCode == http.StatusOK
}

// levelFigures prints the median and largest of a sampled gauge.
func levelFigures(samples []levelSample, get func(levelSample) float64) string {
	if len(samples) == 0 {
		return "-"
	}
	v := make([]float64, len(samples))
	for i, s := range samples {
		v[i] = get(s)
	}
	return fmt.Sprintf("%.0f (max %.0f)", median(v), slices.Max(v))
}

// noisyNeighbourScenario measures API Priority and Fairness' isolation:
// user A (a ServiceAccount) runs -noisy-listers full LISTs of the
// CronJobs at once, each again as soon as it is answered; user B
// (another ServiceAccount: the same priority level, another flow) sends
// GETs of one CronJob and small ConfigMap creates at a steady rate; the
// controller-manager, as itself, renews its leader-election Lease every
// 2 s. B and the renewals are timed for -noisy-phase without A, then as
// long with A's flood.
func (b *bench) noisyNeighbourScenario() {
	if b.kcmIdentity == nil {
		b.kcmIdentity = b.controllerManagerImpersonated
	}
	const role = `"rules":[{"apiGroups":["batch"],"resources":["cronjobs"],"verbs":["get","list"]},{"apiGroups":[""],"resources":["configmaps"],"verbs":["create"]}]`
	b.do("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/"+namespace+"/roles", `{"metadata":{"name":"apf-bench"},`+role+`}`, 201)
	b.do("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/"+namespace+"/rolebindings",
		`{"metadata":{"name":"apf-bench"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"apf-bench"},"subjects":[`+
			`{"kind":"ServiceAccount","name":"noisy-a","namespace":"`+namespace+`"},{"kind":"ServiceAccount","name":"steady-b","namespace":"`+namespace+`"}]}`, 201)
	a := b.serviceAccount("noisy-a", listerTimeout)
	userB := b.serviceAccount("steady-b", 60*time.Second)
	kcm := b.kcmIdentity()
	listPath := "/apis/batch/v1/namespaces/" + namespace + "/cronjobs"
	getPath := listPath + "/cj-00000"
	// RBAC may take a moment to see the bindings.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, _, err := userB.do(context.Background(), b.url, "GET", getPath, "")
		if err == nil && code == 200 {
			break
		}
		if time.Now().After(deadline) {
			log.Fatalf("%s cannot get %s: %d %v", userB.name, getPath, code, err)
		}
	}
	leasePath := "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager"
	code, body, err := kcm.do(context.Background(), b.url, "POST", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
		`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"kube-controller-manager"},"spec":{"holderIdentity":"bench","leaseDurationSeconds":15}}`)
	if err != nil || (code != 201 && code != 409) {
		log.Fatalf("%s creating its Lease: %d %s %v", kcm.name, code, body, err)
	}

	quiet := b.noisyPhase("without A", a, userB, kcm, listPath, getPath, leasePath, false)
	flood := b.noisyPhase("with A", a, userB, kcm, listPath, getPath, leasePath, true)

	// B's ConfigMaps go, so that the scenario leaves the namespace as it
	// found it for the suite's later figures.
	b.do("DELETE", "/api/v1/namespaces/"+namespace+"/configmaps?labelSelector=apf-bench%3Db", "", 200)

	ratio := float64(pct(flood.b, 99)) / float64(max(pct(quiet.b, 99), time.Microsecond))
	report(fmt.Sprintf("APF: B's GETs and creates, %d/s, without A", *noisyRate),
		fmt.Sprintf("p50 %s p99 %s, %d failed", pct(quiet.b, 50), pct(quiet.b, 99), quiet.bFailed), "")
	report(fmt.Sprintf("APF: the same under A's %d full LISTs at once", *noisyListers),
		fmt.Sprintf("p50 %s p99 %s, %d failed", pct(flood.b, 50), pct(flood.b, 99), flood.bFailed), "")
	report("  B's p99 with A / without A", fmt.Sprintf("%.2f", ratio), "target <= 2, and B's p99 with A <= kube's")
	report("APF: Lease renewals (get + update) every 2s, without A",
		fmt.Sprintf("p50 %s p99 %s max %s", pct(quiet.renewals, 50), pct(quiet.renewals, 99), pct(quiet.renewals, 100)), "")
	report("APF: Lease renewals under A's flood",
		fmt.Sprintf("p50 %s p99 %s max %s", pct(flood.renewals, 50), pct(flood.renewals, 99), pct(flood.renewals, 100)), "")
	report("  renewals failed / deadlines (10 s) missed",
		fmt.Sprintf("%d / %d", quiet.renewFailed+flood.renewFailed, quiet.missed+flood.missed), "target 0 missed")
	report("  workload-low under A's flood: executing requests", levelFigures(flood.level, func(l levelSample) float64 { return l.executing }), "")
	report("  workload-low under A's flood: executing seats", levelFigures(flood.level, func(l levelSample) float64 { return l.seats }), "")
	report("  workload-low under A's flood: waiting requests", levelFigures(flood.level, func(l levelSample) float64 { return l.waiting }), "")
	report("  server CPU (cores) / GCs a second, without A / with A",
		fmt.Sprintf("%.2f / %.1f, %.2f / %.1f", quiet.cores, quiet.gcs, flood.cores, flood.gcs), "")
	report("APF: A's full LISTs: served / 429 / timed out / other errors",
		fmt.Sprintf("%d / %d / %d / %d", flood.served, flood.rejected, flood.timedOut, flood.otherErrors), "target 429s, no timeouts")
	record("APF noisy neighbour: B p50 without A", "ms", ms(pct(quiet.b, 50)))
	record("APF noisy neighbour: B p99 without A", "ms", ms(pct(quiet.b, 99)))
	record("APF noisy neighbour: B p50 with A", "ms", ms(pct(flood.b, 50)))
	record("APF noisy neighbour: B p99 with A", "ms", ms(pct(flood.b, 99)))
	record("APF noisy neighbour: B p99 with A / without A", "", ratio)
	record("APF noisy neighbour: B requests failed", "", float64(quiet.bFailed+flood.bFailed))
	record("APF noisy neighbour: Lease renewal p99 without A", "ms", ms(pct(quiet.renewals, 99)))
	record("APF noisy neighbour: Lease renewal p99 with A", "ms", ms(pct(flood.renewals, 99)))
	record("APF noisy neighbour: Lease renewal max with A", "ms", ms(pct(flood.renewals, 100)))
	record("APF noisy neighbour: Lease renew deadlines missed", "", float64(quiet.missed+flood.missed))
	record("APF noisy neighbour: A's LISTs served", "", float64(flood.served))
	record("APF noisy neighbour: A's 429s", "", float64(flood.rejected))
	record("APF noisy neighbour: A's timeouts", "", float64(flood.timedOut))
	record("APF noisy neighbour: A's other errors", "", float64(flood.otherErrors))
}

// noisyPhase times B and the Lease renewals for -noisy-phase, with A's
// flood running from warmUp before until the phase ends.
func (b *bench) noisyPhase(name string, a, userB, kcm *identity, listPath, getPath, leasePath string, flood bool) phaseResult {
	var res phaseResult
	stopA := make(chan struct{})
	var floodDone sync.WaitGroup
	if flood {
		for w := 0; w < *noisyListers; w++ {
			floodDone.Add(1)
			go func() {
				defer floodDone.Done()
				// Bounded by the phase: at most one LIST a millisecond each.
				for n := 0; n < int((warmUp+*noisyPhase)/time.Millisecond); n++ {
					select {
					case <-stopA:
						return
					default:
					}
					code, err := a.discard(b.url, listPath)
					var ne net.Error
					switch {
					case errors.As(err, &ne) && ne.Timeout():
						atomic.AddInt64(&res.timedOut, 1)
					case err != nil:
						atomic.AddInt64(&res.otherErrors, 1)
					case code == http.StatusOK:
						atomic.AddInt64(&res.served, 1)
					case code == http.StatusTooManyRequests:
						atomic.AddInt64(&res.rejected, 1)
					default:
						atomic.AddInt64(&res.otherErrors, 1)
					}
				}
			}()
		}
		time.Sleep(warmUp)
	}
	start, cpu := time.Now(), cpuOf(b.pids)
	_, gcs, _ := b.sampleLevel()
	end := start.Add(*noisyPhase)
	var mu sync.Mutex
	var wg sync.WaitGroup
	// What runs in workload-low, every second of the phase.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < int(noisyPhase.Seconds()) && time.Now().Before(end); i++ {
			time.Sleep(time.Second)
			if ls, _, ok := b.sampleLevel(); ok {
				mu.Lock()
				res.level = append(res.level, ls)
				mu.Unlock()
			}
		}
	}()
	// The server's CPU profile and then a second of its execution trace
	// (which shows how long goroutines wait to run) under the flood.
	if flood && *apfProfiles != "" {
		check(os.MkdirAll(*apfProfiles, 0o755))
		wg.Add(1)
		go func() {
			defer wg.Done()
			secs := max(1, min(int(noisyPhase.Seconds())-2, *profileSecs))
			b.saveProfile(fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), filepath.Join(*apfProfiles, b.side+"-flood.pprof"))
			b.saveProfile("/debug/pprof/trace?seconds=1", filepath.Join(*apfProfiles, b.side+"-flood.trace"))
		}()
	}
	// B is open-loop: each request leaves at its time whether or not the
	// earlier ones are answered, so that a slow answer shows in the
	// figures instead of slowing B down.
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Second / time.Duration(*noisyRate))
		defer tick.Stop()
		for i := 0; i < int(noisyPhase.Seconds())*(*noisyRate); i++ {
			<-tick.C
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				method, path, body, want := "GET", getPath, "", 200
				if i%5 == 4 {
					method, path, want = "POST", "/api/v1/namespaces/"+namespace+"/configmaps", 201
					body = fmt.Sprintf(`{"metadata":{"name":"b-%s-%d","labels":{"apf-bench":"b"}},"data":{"k":"v"}}`, strings.ReplaceAll(strings.ToLower(name), " ", "-"), i)
				}
				t := time.Now()
				code, _, err := userB.do(context.Background(), b.url, method, path, body)
				d := time.Since(t)
				mu.Lock()
				defer mu.Unlock()
				res.b = append(res.b, d)
				if err != nil || code != want {
					res.bFailed++
				}
			}(i)
		}
	}()
	// The renewals are sequential, as leader election's are.
	wg.Add(1)
	go func() {
		defer wg.Done()
		lastRenew := time.Now()
		for next := time.Now(); next.Before(end); next = next.Add(retryPeriod) {
			time.Sleep(time.Until(next))
			t := time.Now()
			ok := renewLease(b.url, kcm, leasePath)
			d := time.Since(t)
			mu.Lock()
			res.renewals = append(res.renewals, d)
			if !ok {
				res.renewFailed++
			}
			mu.Unlock()
			if ok {
				if time.Since(lastRenew) > renewDeadline {
					res.missed++
				}
				lastRenew = time.Now()
			}
		}
		if time.Since(lastRenew) > renewDeadline {
			res.missed++
		}
	}()
	wg.Wait()
	took := time.Since(start).Seconds()
	res.cores = (cpuOf(b.pids) - cpu) / took
	if _, after, ok := b.sampleLevel(); ok {
		res.gcs = (after - gcs) / took
	}
	close(stopA)
	floodDone.Wait()
	return res
}

// renewLease gets the Lease and updates its renewTime within
// renewDeadline, as a leader renews its lease.
func renewLease(url string, kcm *identity, path string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), renewDeadline)
	defer cancel()
	code, body, err := kcm.do(ctx, url, "GET", path, "")
	if err != nil || code != 200 {
		return false
	}
	var lease map[string]any
	if json.Unmarshal(body, &lease) != nil {
		return false
	}
	spec, _ := lease["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
		lease["spec"] = spec
	}
	spec["renewTime"] = time.Now().UTC().Format("2006-01-02T15:04:05.000000Z07:00")
	update, err := json.Marshal(lease)
	if err != nil {
		return false
	}
	code, _, err = kcm.do(ctx, url, "PUT", path, string(update))
	return err == nil && code == 200
}

// apfOverhead measures what API Priority and Fairness costs: get and
// create rates of two apiservers side by side, one with
// --enable-priority-and-fairness=false (the plain in-flight limits), one
// with it on, measured in turns. The requests are a RoleBinding user's,
// not system:masters', so that they go through a limited priority level
// (global-default) and its queues rather than the exempt one.
func apfOverhead(parent string) {
	offDir, onDir := filepath.Join(parent, "apf-off"), filepath.Join(parent, "apf-on")
	check(os.MkdirAll(offDir, 0o700))
	check(os.MkdirAll(onDir, 0o700))
	off, stopOff := startAPIServer(offDir, "--enable-priority-and-fairness=false")
	defer stopOff()
	on, stopOn := startAPIServer(onDir, "--enable-priority-and-fairness=true")
	defer stopOn()
	for _, b := range []*bench{off, on} {
		b.do("POST", "/api/v1/namespaces", `{"metadata":{"name":"`+namespace+`"}}`, 201)
		b.do("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/"+namespace+"/roles",
			`{"metadata":{"name":"writer"},"rules":[{"apiGroups":["batch"],"resources":["cronjobs"],"verbs":["get","create"]}]}`, 201)
		b.do("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/"+namespace+"/rolebindings", fmt.Sprintf(
			`{"metadata":{"name":"writer"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"writer"},"subjects":[{"kind":"User","name":"%s"}]}`, readerUser), 201)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			// Not found: allowed, and the CronJob does not exist.
			code := b.status("GET", "/apis/batch/v1/namespaces/"+namespace+"/cronjobs/none", readerToken)
			if code == http.StatusNotFound {
				break
			}
			if time.Now().After(deadline) {
				log.Fatalf("%s is still refused (%d) after its binding", readerUser, code)
			}
		}
	}
	// The user's requests are dispatched by a limited level on one, by
	// the in-flight limits on the other.
	for _, b := range []*bench{off, on} {
		resp, err := b.requestAs(readerToken, "GET", "/apis/batch/v1/namespaces/"+namespace+"/cronjobs/none", "", "")
		check(err)
		resp.Body.Close()
		if got := resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID") != ""; got != (b == on) {
			log.Fatalf("priority and fairness headers %v on the server with it %v", got, b == on)
		}
	}
	m := onOffRates(off, on, *apfRounds, func(*bench) string { return readerToken })
	c, g := median(m.creates[on])/median(m.creates[off]), median(m.gets[on])/median(m.gets[off])
	report(fmt.Sprintf("create, APF on vs off, RoleBinding user (%d rounds)", *apfRounds), onOffRatio(m.creates, on, off), "target >= 0.95")
	report(fmt.Sprintf("get, APF on vs off, RoleBinding user (%d rounds)", *apfRounds), onOffRatio(m.gets, on, off), "target >= 0.95")
	report("  server CPU per create, APF on vs off", onOffCPU(m.createCPU, on, off), "")
	report("  server CPU per get, APF on vs off", onOffCPU(m.getCPU, on, off), "")
	record("APF on / off: create rate", "", c)
	record("APF on / off: get rate", "", g)
	record("APF on / off: server CPU per create", "", median(m.createCPU[on])/median(m.createCPU[off]))
	record("APF on / off: server CPU per get", "", median(m.getCPU[on])/median(m.getCPU[off]))
	if *apfProfiles != "" {
		check(os.MkdirAll(*apfProfiles, 0o755))
		for _, side := range []struct {
			name string
			b    *bench
		}{{"apf-off", off}, {"apf-on", on}} {
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				side.b.saveProfile(fmt.Sprintf("/debug/pprof/profile?seconds=%d", *profileSecs), filepath.Join(*apfProfiles, side.name+"-get.pprof"))
			}()
			side.b.getRate(readerToken, 1000, time.Duration(*profileSecs)*time.Second)
			wg.Wait()
		}
		fmt.Printf("profiles in %s: go tool pprof -top -diff_base apf-off-get.pprof bin/apiserver apf-on-get.pprof\n", *apfProfiles)
	}
}

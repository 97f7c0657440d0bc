package filters

import "time"

// workers runs handlers on goroutines that outlive one request. Every
// request runs below the request deadline on a goroutine of its own;
// started afresh, that goroutine grows its stack through the deep chain
// of filters and handlers on every request, which cost about a tenth of
// a get's CPU. A goroutine that has served a request keeps its grown
// stack for the next one, as gRPC's server stream workers do.
type workers struct {
	tasks chan func()
	// idle is how long a goroutine waits for work before it ends.
	idle time.Duration
}

func newWorkers(idle time.Duration) *workers {
	return &workers{tasks: make(chan func()), idle: idle}
}

// run runs f at once: on an idle worker, else on a new one.
func (p *workers) run(f func()) {
	select {
	case p.tasks <- f:
	default:
		go p.work(f)
	}
}

func (p *workers) work(f func()) {
	f()
	t := time.NewTimer(p.idle)
	defer t.Stop()
	for {
		select {
		case f := <-p.tasks:
			f()
			t.Reset(p.idle)
		case <-t.C:
			return
		}
	}
}

package fakenode

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/cronplane/cronplane/pkg/podenv"
)

// Exec runs each container's command and args as a process on the host:
// busybox's applet of that name when busybox is installed (the upstream
// specs use its shell: [[ ]], $RANDOM), else the host's program. The
// process gets the container's environment, a work directory of its pod,
// and, as root, a PID namespace of its own (it is PID 1 as in a container)
// and, when the container mounts emptyDir or hostPath volumes, a private
// mount namespace in which each volume's directory is bound at its
// mountPath; mountPaths missing on the host are created there as empty
// directories. Other volume types are not mounted.
// Its stdout and stderr go to the run's log file in the CRI log format
// the kubelet keeps. It runs the pods' commands on the host: use it only
// for pods you trust.
type Exec struct {
	// Client reads the ConfigMaps and Secrets that env refers to.
	Client kubernetes.Interface
	// Busybox is busybox's path; empty means the host's programs only.
	Busybox string

	once    sync.Once
	applets map[string]bool
}

// NewExec looks busybox up in PATH.
func NewExec(client kubernetes.Interface) *Exec {
	e := &Exec{Client: client}
	if p, err := exec.LookPath("busybox"); err == nil {
		e.Busybox = p
	}
	return e
}

func (e *Exec) applet(name string) bool {
	e.once.Do(func() {
		e.applets = map[string]bool{}
		if e.Busybox == "" {
			return
		}
		out, err := exec.Command(e.Busybox, "--list").Output()
		if err != nil {
			return
		}
		for _, a := range strings.Fields(string(out)) {
			e.applets[a] = true
		}
	})
	return e.applets[name]
}

// image is the entrypoint and cmd of the images the node knows: pause
// blocks until stopped and exits 0 then; busybox has no entrypoint and runs
// sh, which reads no input and exits 0.
func image(ref string) (entrypoint, cmd []string, known bool) {
	name := ref[strings.LastIndex(ref, "/")+1:]
	name, _, _ = strings.Cut(name, "@")
	name, _, _ = strings.Cut(name, ":")
	switch name {
	case "pause":
		return []string{"sh", "-c", `trap "exit 0" TERM; sleep 2147483647 & wait`}, nil, true
	case "busybox":
		return nil, []string{"sh"}, true
	}
	return nil, nil, false
}

// command is what the runtime runs: the container's command, else the
// image's entrypoint, followed by the container's args, else (with no
// command) the image's cmd.
func command(c *corev1.Container) ([]string, error) {
	if len(c.Command) > 0 {
		return append(append([]string{}, c.Command...), c.Args...), nil
	}
	entrypoint, cmd, known := image(c.Image)
	if len(c.Args) > 0 {
		cmd = c.Args
	}
	argv := append(append([]string{}, entrypoint...), cmd...)
	if len(argv) == 0 {
		if known {
			return nil, fmt.Errorf("image %q: no command specified", c.Image)
		}
		return nil, fmt.Errorf("image %q: the fake node knows no default command for it", c.Image)
	}
	return argv, nil
}

// Start implements Runner.
func (e *Exec) Start(ctx context.Context, c *Container) (Process, error) {
	argv, err := command(c.Spec)
	if err != nil {
		return nil, err
	}
	env, err := e.env(ctx, c)
	if err != nil {
		return nil, err
	}
	argv = env.ExpandAll(argv)
	if e.applet(filepath.Base(argv[0])) {
		argv = append([]string{e.Busybox, filepath.Base(argv[0])}, argv[1:]...)
	} else if p, err := exec.LookPath(argv[0]); err == nil {
		argv[0] = p
	} else {
		return nil, fmt.Errorf("exec: %q: executable file not found in $PATH", argv[0])
	}
	mounts, err := volumeMounts(c)
	if err != nil {
		return nil, err
	}
	// As root the process is the init of its own PID namespace, as in a
	// container: a signal it has no handler for does not reach it (sh
	// ignores SIGTERM, its children do not see it), and its end ends
	// everything it started.
	isolate := os.Geteuid() == 0
	var cloneflags uintptr
	if isolate {
		cloneflags = syscall.CLONE_NEWPID
	}
	if len(mounts) > 0 {
		if !isolate {
			return nil, fmt.Errorf("volume mounts need a private mount namespace: run the fake node as root")
		}
		cloneflags |= syscall.CLONE_NEWNS
		argv = append([]string{"/bin/sh", "-c", "mount --make-rprivate / && " + mounts, "fakenode-mounts"}, argv...)
	}
	work := filepath.Join(c.PodDir, "work")
	if c.Spec.WorkingDir != "" {
		if fi, err := os.Stat(c.Spec.WorkingDir); err == nil && fi.IsDir() {
			work = c.Spec.WorkingDir
		}
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(c.LogPath), 0o755); err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(c.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		logFile.Close()
		stdoutR.Close()
		stdoutW.Close()
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env.List()
	cmd.Dir = work
	cmd.Stdout, cmd.Stderr = stdoutW, stderrW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: !isolate, Pdeathsig: syscall.SIGKILL, Cloneflags: cloneflags}
	err = cmd.Start()
	stdoutW.Close()
	stderrW.Close()
	if err != nil {
		logFile.Close()
		stdoutR.Close()
		stderrR.Close()
		return nil, err
	}
	p := &process{cmd: cmd, done: make(chan struct{}), isolated: isolate}
	log := &criLog{w: logFile}
	var copies sync.WaitGroup
	copies.Add(2)
	go func() { defer copies.Done(); log.copy("stdout", stdoutR) }()
	go func() { defer copies.Done(); log.copy("stderr", stderrR) }()
	go func() {
		defer close(p.done)
		_ = cmd.Wait()
		p.code = exitCode(cmd.ProcessState)
		if !isolate {
			// The container ends with its first process, as its PID
			// namespace does: what it left behind is killed.
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		copied := make(chan struct{})
		go func() { copies.Wait(); close(copied) }()
		select {
		case <-copied:
		case <-time.After(2 * time.Second):
		}
		stdoutR.Close()
		stderrR.Close()
		logFile.Close()
	}()
	return p, nil
}

func exitCode(ps *os.ProcessState) int32 {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int32(ws.Signal())
	}
	return int32(ps.ExitCode())
}

type process struct {
	cmd      *exec.Cmd
	done     chan struct{}
	code     int32
	isolated bool
}

func (p *process) Wait() int32 {
	<-p.done
	return p.code
}

// Stop sends SIGTERM to the container's first process (to all its
// processes when not isolated) and SIGKILL after grace, which ends its PID
// namespace.
func (p *process) Stop(grace time.Duration) {
	target := p.cmd.Process.Pid
	if !p.isolated {
		target = -target
	}
	if grace > 0 {
		_ = syscall.Kill(target, syscall.SIGTERM)
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-p.done:
			return
		case <-t.C:
		}
	}
	_ = syscall.Kill(target, syscall.SIGKILL)
}

// criLog writes lines as the kubelet's container log files hold them:
// "<RFC3339Nano time> <stream> <F|P> <text>".
type criLog struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *criLog) copy(stream string, r io.Reader) {
	br := bufio.NewReaderSize(r, 16*1024)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			tag := "P"
			if line[len(line)-1] == '\n' {
				tag, line = "F", line[:len(line)-1]
			}
			l.mu.Lock()
			fmt.Fprintf(l.w, "%s %s %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), stream, tag, line)
			l.mu.Unlock()
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

// volumeMounts is the script that binds the container's emptyDir and
// hostPath volumes at their mountPaths before it runs the command; empty
// when there is none.
func volumeMounts(c *Container) (string, error) {
	volumes := map[string]corev1.Volume{}
	for _, v := range c.Pod.Spec.Volumes {
		volumes[v.Name] = v
	}
	var script strings.Builder
	for _, m := range c.Spec.VolumeMounts {
		v, ok := volumes[m.Name]
		if !ok {
			continue
		}
		var src string
		switch {
		case v.EmptyDir != nil:
			src = filepath.Join(c.PodDir, "volumes", "kubernetes.io~empty-dir", v.Name)
			if err := os.MkdirAll(src, 0o777); err != nil {
				return "", err
			}
		case v.HostPath != nil:
			src = v.HostPath.Path
			switch ptr.Deref(v.HostPath.Type, corev1.HostPathUnset) {
			case corev1.HostPathDirectoryOrCreate:
				if err := os.MkdirAll(src, 0o755); err != nil {
					return "", err
				}
			case corev1.HostPathFileOrCreate:
				f, err := os.OpenFile(src, os.O_CREATE, 0o644)
				if err != nil {
					return "", err
				}
				f.Close()
			}
		default:
			continue
		}
		if m.SubPath != "" {
			src = filepath.Join(src, m.SubPath)
			if err := os.MkdirAll(src, 0o777); err != nil {
				return "", err
			}
		}
		fmt.Fprintf(&script, "mkdir -p %s && mount --bind %s %s && ", quote(m.MountPath), quote(src), quote(m.MountPath))
		if m.ReadOnly {
			fmt.Fprintf(&script, "mount -o remount,bind,ro %s && ", quote(m.MountPath))
		}
	}
	if script.Len() == 0 {
		return "", nil
	}
	script.WriteString(`exec "$@"`)
	return script.String(), nil
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// env is the container's environment: a shell's defaults, then its envFrom
// and env resolved as the kubelet does; the pod's IP fields are the
// node's address, which the pods share.
func (e *Exec) env(ctx context.Context, c *Container) (*podenv.Env, error) {
	pod := c.Pod.DeepCopy()
	pod.Status.PodIP, pod.Status.HostIP = c.IP, c.IP
	pod.Status.PodIPs, pod.Status.HostIPs = []corev1.PodIP{{IP: c.IP}}, []corev1.HostIP{{IP: c.IP}}
	env := &podenv.Env{}
	hostname := pod.Name
	if pod.Spec.Hostname != "" {
		hostname = pod.Spec.Hostname
	}
	env.Set("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	env.Set("HOSTNAME", hostname)
	env.Set("HOME", "/root")
	if err := (podenv.Resolver{Client: e.Client}).Resolve(ctx, pod, c.Spec, env); err != nil {
		return nil, err
	}
	return env, nil
}

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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// Exec runs each container's command and args as a process on the host:
// busybox's applet of that name when busybox is installed (the upstream
// specs use its shell: [[ ]], $RANDOM), else the host's program. The
// process gets the container's environment, a work directory of its pod,
// and, when the container mounts emptyDir or hostPath volumes, a private
// mount namespace (unshare -m, so root only) in which each volume's
// directory is bound at its mountPath; mountPaths missing on the host are
// created there as empty directories. Other volume types are not mounted.
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
	argv = expandAll(argv, env)
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
	if len(mounts) > 0 {
		argv = append([]string{"unshare", "-m", "--propagation", "private", "--", "/bin/sh", "-c", mounts, "fakenode-mounts"}, argv...)
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
	cmd.Env = env.list()
	cmd.Dir = work
	cmd.Stdout, cmd.Stderr = stdoutW, stderrW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	stdoutW.Close()
	stderrW.Close()
	if err != nil {
		logFile.Close()
		stdoutR.Close()
		stderrR.Close()
		return nil, err
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	log := &criLog{w: logFile}
	var copies sync.WaitGroup
	copies.Add(2)
	go func() { defer copies.Done(); log.copy("stdout", stdoutR) }()
	go func() { defer copies.Done(); log.copy("stderr", stderrR) }()
	go func() {
		defer close(p.done)
		_ = cmd.Wait()
		p.code = exitCode(cmd.ProcessState)
		// The container ends with its first process, as a PID
		// namespace does: what it left behind is killed.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
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
	cmd  *exec.Cmd
	done chan struct{}
	code int32
}

func (p *process) Wait() int32 {
	<-p.done
	return p.code
}

// Stop sends SIGTERM to the container's processes and SIGKILL after grace.
func (p *process) Stop(grace time.Duration) {
	pgid := -p.cmd.Process.Pid
	if grace > 0 {
		_ = syscall.Kill(pgid, syscall.SIGTERM)
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-p.done:
			return
		case <-t.C:
		}
	}
	_ = syscall.Kill(pgid, syscall.SIGKILL)
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

// environment is the container's variables in order, the later of the
// same name winning, as the runtime sets them.
type environment struct {
	names []string
	vals  map[string]string
}

func (e *environment) set(name, value string) {
	if _, ok := e.vals[name]; !ok {
		e.names = append(e.names, name)
	}
	e.vals[name] = value
}

func (e *environment) list() []string {
	out := make([]string, 0, len(e.names))
	for _, n := range e.names {
		out = append(out, n+"="+e.vals[n])
	}
	return out
}

// env resolves the container's envFrom and env as the kubelet does:
// values with $(VAR) references to the variables before them, the pod's
// fields, resources, and keys of ConfigMaps and Secrets.
func (e *Exec) env(ctx context.Context, c *Container) (*environment, error) {
	pod := c.Pod
	env := &environment{vals: map[string]string{}}
	hostname := pod.Name
	if pod.Spec.Hostname != "" {
		hostname = pod.Spec.Hostname
	}
	env.set("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	env.set("HOSTNAME", hostname)
	env.set("HOME", "/root")
	for _, from := range c.Spec.EnvFrom {
		var data map[string]string
		optional := false
		switch {
		case from.ConfigMapRef != nil:
			optional = ptr.Deref(from.ConfigMapRef.Optional, false)
			cm, err := e.configMap(ctx, pod.Namespace, from.ConfigMapRef.Name)
			if err == nil {
				data = cm.Data
			} else if !optional {
				return nil, err
			}
		case from.SecretRef != nil:
			optional = ptr.Deref(from.SecretRef.Optional, false)
			s, err := e.secret(ctx, pod.Namespace, from.SecretRef.Name)
			if err == nil {
				data = map[string]string{}
				for k, v := range s.Data {
					data[k] = string(v)
				}
			} else if !optional {
				return nil, err
			}
		}
		for k, v := range data {
			env.set(from.Prefix+k, v)
		}
	}
	for _, v := range c.Spec.Env {
		if v.ValueFrom == nil {
			env.set(v.Name, expand(v.Value, env))
			continue
		}
		value, err := e.valueFrom(ctx, c, v.ValueFrom)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", v.Name, err)
		}
		env.set(v.Name, value)
	}
	return env, nil
}

func (e *Exec) configMap(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
	if e.Client == nil {
		return nil, fmt.Errorf("configmap %q: the node has no client", name)
	}
	return e.Client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
}

func (e *Exec) secret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	if e.Client == nil {
		return nil, fmt.Errorf("secret %q: the node has no client", name)
	}
	return e.Client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
}

func (e *Exec) valueFrom(ctx context.Context, c *Container, from *corev1.EnvVarSource) (string, error) {
	pod := c.Pod
	switch {
	case from.FieldRef != nil:
		return fieldValue(c, from.FieldRef.FieldPath)
	case from.ResourceFieldRef != nil:
		r := from.ResourceFieldRef
		kind, name, _ := strings.Cut(r.Resource, ".")
		list := c.Spec.Resources.Limits
		if kind == "requests" {
			list = c.Spec.Resources.Requests
		}
		q, ok := list[corev1.ResourceName(name)]
		if !ok {
			return "0", nil
		}
		div := r.Divisor
		if div.IsZero() {
			return q.String(), nil
		}
		return fmt.Sprint((q.MilliValue() + div.MilliValue() - 1) / div.MilliValue()), nil
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		cm, err := e.configMap(ctx, pod.Namespace, ref.Name)
		if err != nil {
			if ptr.Deref(ref.Optional, false) {
				return "", nil
			}
			return "", err
		}
		v, ok := cm.Data[ref.Key]
		if !ok && !ptr.Deref(ref.Optional, false) {
			return "", fmt.Errorf("configmap %s has no key %s", ref.Name, ref.Key)
		}
		return v, nil
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		s, err := e.secret(ctx, pod.Namespace, ref.Name)
		if err != nil {
			if ptr.Deref(ref.Optional, false) {
				return "", nil
			}
			return "", err
		}
		v, ok := s.Data[ref.Key]
		if !ok && !ptr.Deref(ref.Optional, false) {
			return "", fmt.Errorf("secret %s has no key %s", ref.Name, ref.Key)
		}
		return string(v), nil
	}
	return "", nil
}

// fieldValue is a downward API field of the pod.
func fieldValue(c *Container, path string) (string, error) {
	pod := c.Pod
	if rest, ok := strings.CutPrefix(path, "metadata.annotations['"); ok {
		return pod.Annotations[strings.TrimSuffix(rest, "']")], nil
	}
	if rest, ok := strings.CutPrefix(path, "metadata.labels['"); ok {
		return pod.Labels[strings.TrimSuffix(rest, "']")], nil
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.podIP", "status.hostIPs", "status.podIPs":
		return c.IP, nil
	}
	return "", fmt.Errorf("unsupported fieldPath %q", path)
}

// expand replaces $(VAR) with the value of a variable defined before it;
// $$ escapes a $, and unknown references stay as written.
func expand(s string, env *environment) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '(':
			if end := strings.IndexByte(s[i+2:], ')'); end >= 0 {
				name := s[i+2 : i+2+end]
				if v, ok := env.vals[name]; ok {
					b.WriteString(v)
				} else {
					b.WriteString(s[i : i+3+end])
				}
				i += 2 + end
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func expandAll(argv []string, env *environment) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = expand(a, env)
	}
	return out
}

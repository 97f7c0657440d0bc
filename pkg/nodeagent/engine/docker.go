package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// Docker is an Engine over the Docker Engine API.
type Docker struct {
	c *client.Client
	// exited caches the inspection of exited containers: the agent never
	// restarts a container, so that state is final.
	mu     sync.Mutex
	exited map[string]Container
}

// NewDocker connects to the engine at host (unix:///var/run/docker.sock
// form; empty: DOCKER_HOST or the default socket). The client negotiates
// the API version with the engine (1.41 for Docker 20.10) on its first
// request, as it always does since moby client v0.1.
func NewDocker(host string) (*Docker, error) {
	opts := []client.Opt{client.FromEnv}
	if host != "" {
		opts = append(opts, client.WithHost(host))
	}
	c, err := client.New(opts...)
	if err != nil {
		return nil, err
	}
	return &Docker{c: c, exited: map[string]Container{}}, nil
}

func notFound(err error) error {
	if cerrdefs.IsNotFound(err) {
		return fmt.Errorf("%w: %v", ErrNotFound, err)
	}
	return err
}

func (d *Docker) Info(ctx context.Context) (Info, error) {
	r, err := d.c.Info(ctx, client.InfoOptions{})
	if err != nil {
		return Info{}, err
	}
	i := r.Info
	return Info{Version: i.ServerVersion, NCPU: i.NCPU, MemTotal: i.MemTotal, KernelVersion: i.KernelVersion,
		OperatingSystem: i.OperatingSystem, OS: i.OSType, Arch: goArch(i.Architecture)}, nil
}

// goArch names the engine's machine architecture (uname -m) as Go does.
func goArch(machine string) string {
	switch machine {
	case "x86_64":
		return "amd64"
	case "aarch64":
		return "arm64"
	case "":
		return runtime.GOARCH
	}
	return machine
}

func (d *Docker) Image(ctx context.Context, ref string) (string, error) {
	r, err := d.c.ImageInspect(ctx, ref)
	if err != nil {
		return "", notFound(err)
	}
	return r.ID, nil
}

func (d *Docker) Pull(ctx context.Context, ref string) error {
	r, err := d.c.ImagePull(ctx, ref, client.ImagePullOptions{})
	if err != nil {
		return err
	}
	defer r.Close()
	return r.Wait(ctx)
}

func (d *Docker) Create(ctx context.Context, s Spec) (string, error) {
	cfg := &container.Config{
		Image: s.Image, Env: s.Env, WorkingDir: s.WorkingDir, Labels: s.Labels, Hostname: s.Hostname, User: s.User,
	}
	if len(s.Entrypoint) > 0 {
		cfg.Entrypoint = s.Entrypoint
	}
	if len(s.Cmd) > 0 {
		cfg.Cmd = s.Cmd
	}
	host := &container.HostConfig{
		NetworkMode: container.NetworkMode(s.Network),
		Privileged:  s.Privileged,
		Resources:   container.Resources{NanoCPUs: s.NanoCPUs, Memory: s.Memory, CPUShares: s.CPUShares},
	}
	for _, m := range s.Mounts {
		if m.CreateSource {
			// A bind in Binds form is the one Docker 20.10 creates a
			// missing source for (Mounts refuses it).
			bind := m.Source + ":" + m.Target
			if m.ReadOnly {
				bind += ":ro"
			}
			host.Binds = append(host.Binds, bind)
			continue
		}
		host.Mounts = append(host.Mounts, mount.Mount{Type: mount.TypeBind, Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly})
	}
	r, err := d.c.ContainerCreate(ctx, client.ContainerCreateOptions{Name: s.Name, Config: cfg, HostConfig: host})
	if err != nil {
		return "", notFound(err)
	}
	return r.ID, nil
}

func (d *Docker) Start(ctx context.Context, id string) error {
	_, err := d.c.ContainerStart(ctx, id, client.ContainerStartOptions{})
	return notFound(err)
}

func (d *Docker) Stop(ctx context.Context, id string, grace time.Duration) error {
	seconds := int(grace.Round(time.Second) / time.Second)
	_, err := d.c.ContainerStop(ctx, id, client.ContainerStopOptions{Timeout: &seconds})
	return notFound(err)
}

func (d *Docker) Remove(ctx context.Context, id string) error {
	_, err := d.c.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	d.mu.Lock()
	delete(d.exited, id)
	d.mu.Unlock()
	return notFound(err)
}

func (d *Docker) list(ctx context.Context, labels map[string]string) ([]container.Summary, error) {
	f := client.Filters{}
	for k, v := range labels {
		f.Add("label", k+"="+v)
	}
	r, err := d.c.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, err
	}
	return r.Items, nil
}

func (d *Docker) ListStates(ctx context.Context, labels map[string]string) ([]Container, error) {
	items, err := d.list(ctx, labels)
	if err != nil {
		return nil, err
	}
	out := make([]Container, 0, len(items))
	for _, s := range items {
		c := Container{ID: s.ID, Labels: s.Labels, State: Exited}
		if len(s.Names) > 0 {
			c.Name = strings.TrimPrefix(s.Names[0], "/")
		}
		switch s.State {
		case container.StateRunning, container.StatePaused, container.StateRestarting:
			c.State = Running
		case container.StateCreated:
			c.State = Created
		}
		out = append(out, c)
	}
	return out, nil
}

func (d *Docker) List(ctx context.Context, labels map[string]string) ([]Container, error) {
	items, err := d.list(ctx, labels)
	if err != nil {
		return nil, err
	}
	out := make([]Container, 0, len(items))
	for _, s := range items {
		c, err := d.Inspect(ctx, s.ID)
		if err != nil {
			if cerrdefs.IsNotFound(err) || isNotFound(err) {
				continue
			}
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func isNotFound(err error) bool {
	return err != nil && strings.Contains(err.Error(), ErrNotFound.Error())
}

func (d *Docker) Inspect(ctx context.Context, id string) (Container, error) {
	d.mu.Lock()
	c, ok := d.exited[id]
	d.mu.Unlock()
	if ok {
		return c, nil
	}
	r, err := d.c.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return Container{}, notFound(err)
	}
	i := r.Container
	c = Container{ID: i.ID, Name: strings.TrimPrefix(i.Name, "/"), ImageID: i.Image, CreatedAt: parseTime(i.Created)}
	if i.Config != nil {
		c.Labels, c.Image = i.Config.Labels, i.Config.Image
	}
	if s := i.State; s != nil {
		c.ExitCode, c.OOMKilled, c.Error = s.ExitCode, s.OOMKilled, s.Error
		c.StartedAt, c.FinishedAt = parseTime(s.StartedAt), parseTime(s.FinishedAt)
		switch {
		case s.Running || s.Paused || s.Restarting:
			c.State = Running
		case s.Status == container.StateCreated && s.Error == "":
			c.State = Created
		default:
			// A container the engine failed to start stays "created" with
			// the error: it ran as much as it ever will.
			c.State = Exited
			if c.FinishedAt.IsZero() {
				c.FinishedAt = c.CreatedAt
			}
		}
	}
	if ns := i.NetworkSettings; ns != nil {
		for _, ep := range ns.Networks {
			if ep != nil && ep.IPAddress.IsValid() {
				c.IP = ep.IPAddress.String()
				break
			}
		}
	}
	if c.State == Exited {
		if !c.OOMKilled && c.ExitCode == 137 && i.HostConfig != nil && i.HostConfig.Memory > 0 {
			oom, err := d.oomEvent(ctx, id, c.StartedAt)
			if err != nil {
				// Not cached: the next inspection asks again.
				return c, nil
			}
			c.OOMKilled = oom
		}
		d.mu.Lock()
		d.exited[id] = c
		d.mu.Unlock()
	}
	return c, nil
}

// oomEvent says whether the engine reported an "oom" event for the
// container since it started. Docker 20.10 loses State.OOMKilled when the
// container's exit reaches it before containerd's OOM event (a container
// whose first process is the one killed, seen here in 2 of 8 runs), but
// still logs the event: for a container killed (137) under a memory
// limit, the event decides. The engine keeps its last 256 events, and the
// agent inspects an exited container within a sync period.
func (d *Docker) oomEvent(ctx context.Context, id string, since time.Time) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r := d.c.Events(ctx, client.EventsListOptions{
		Since:   fmt.Sprint(since.Add(-time.Second).Unix()),
		Until:   fmt.Sprint(time.Now().Add(time.Second).Unix()),
		Filters: make(client.Filters).Add("type", "container").Add("container", id).Add("event", "oom"),
	})
	for {
		select {
		case m := <-r.Messages:
			if m.Action == "oom" && m.Actor.ID == id {
				return true, nil
			}
		case err := <-r.Err:
			if errors.Is(err, io.EOF) {
				return false, nil
			}
			return false, err
		}
	}
}

// parseTime reads the engine's RFC 3339 times; the zero time
// (0001-01-01T00:00:00Z) the engine reports for "never" stays zero.
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Year() <= 1 {
		return time.Time{}
	}
	return t
}

func (d *Docker) Logs(ctx context.Context, id string, follow bool) (io.ReadCloser, error) {
	r, err := d.c.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Timestamps: true, Follow: follow})
	if err != nil {
		return nil, notFound(err)
	}
	return r, nil
}

func (d *Docker) Exec(ctx context.Context, id string, cmd []string, s ExecIO) (int, error) {
	created, err := d.c.ExecCreate(ctx, id, client.ExecCreateOptions{
		Cmd: cmd, TTY: s.TTY, AttachStdin: s.Stdin != nil, AttachStdout: s.Stdout != nil, AttachStderr: s.Stderr != nil,
	})
	if err != nil {
		return 0, notFound(err)
	}
	att, err := d.c.ExecAttach(ctx, created.ID, client.ExecAttachOptions{TTY: s.TTY})
	if err != nil {
		return 0, err
	}
	defer att.Close()
	if s.Resize != nil {
		go d.resizeExec(ctx, created.ID, s.Resize)
	}
	if s.Stdin != nil {
		go func() {
			_, _ = io.Copy(att.Conn, s.Stdin)
			_ = att.CloseWrite()
		}()
	}
	out := make(chan error, 1)
	go func() {
		stdout, stderr := orDiscard(s.Stdout), orDiscard(s.Stderr)
		var err error
		if s.TTY {
			_, err = io.Copy(stdout, att.Reader)
		} else {
			_, err = stdcopy.StdCopy(stdout, stderr, att.Reader)
		}
		out <- err
	}()
	select {
	case err = <-out:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if err != nil {
		return 0, err
	}
	// The output ends as the process does; the engine records its exit
	// code a moment later.
	for i := 0; i < 50; i++ {
		r, err := d.c.ExecInspect(ctx, created.ID, client.ExecInspectOptions{})
		if err != nil {
			return 0, err
		}
		if !r.Running {
			return r.ExitCode, nil
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	return 0, fmt.Errorf("exec %s: still running after its output ended", created.ID)
}

func (d *Docker) resizeExec(ctx context.Context, id string, sizes <-chan TerminalSize) {
	for {
		select {
		case size, ok := <-sizes:
			if !ok {
				return
			}
			_, _ = d.c.ExecResize(ctx, id, client.ExecResizeOptions{Width: size.Width, Height: size.Height})
		case <-ctx.Done():
			return
		}
	}
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

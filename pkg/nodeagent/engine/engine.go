// Package engine is the node agent's view of a container engine: the few
// operations the agent needs (create, start, stop, list by label, inspect,
// images, the machine's resources) behind a small interface the agent owns,
// so that its logic is tested against a fake, and the Docker Engine API
// implementation of it (client.go) over the moby client with API version
// negotiation.
package engine

import (
	"context"
	"errors"
	"io"
	"time"
)

// ErrNotFound is what an Engine returns for a container or image it does
// not have.
var ErrNotFound = errors.New("not found")

// Engine runs containers.
type Engine interface {
	// Info describes the machine and the engine.
	Info(ctx context.Context) (Info, error)
	// Image returns the ID of the local image ref, or ErrNotFound.
	Image(ctx context.Context, ref string) (string, error)
	// Pull pulls ref from its registry.
	Pull(ctx context.Context, ref string) error
	// Create creates a container, not started, and returns its ID.
	Create(ctx context.Context, spec Spec) (string, error)
	Start(ctx context.Context, id string) error
	// Stop sends the container SIGTERM and, if it still runs after grace,
	// SIGKILL; it returns once the container has exited.
	Stop(ctx context.Context, id string, grace time.Duration) error
	// Remove removes a container, running or not, with its anonymous
	// volumes.
	Remove(ctx context.Context, id string) error
	// List returns every container, running or not, carrying all of
	// labels.
	List(ctx context.Context, labels map[string]string) ([]Container, error)
	// ListStates is List in one call, without inspecting each
	// container: ID, Name, Labels and State only (a container the engine
	// failed to start may show Created), what the agent's relist compares
	// from one pass to the next.
	ListStates(ctx context.Context, labels map[string]string) ([]Container, error)
	// Inspect returns one container's state, or ErrNotFound.
	Inspect(ctx context.Context, id string) (Container, error)
	// Logs streams a container's output, stdout and stderr, each line
	// framed by the engine and prefixed with its RFC 3339 time; with
	// follow it goes on until the container stops or ctx ends.
	Logs(ctx context.Context, id string, follow bool) (io.ReadCloser, error)
	// Exec runs cmd in a running container with the streams of s and
	// returns its exit code once it ends; ctx ending stops the wait.
	Exec(ctx context.Context, id string, cmd []string, s ExecIO) (int, error)
}

// ExecIO are an exec's streams; nil ones are not attached. With TTY the
// command has a terminal, its one output is Stdout, and Resize brings
// the terminal's sizes.
type ExecIO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	TTY            bool
	Resize         <-chan TerminalSize
}

// TerminalSize is a terminal's size in characters.
type TerminalSize struct {
	Width, Height uint
}

// Info is what the agent reports of its machine.
type Info struct {
	// Version is the engine's version, e.g. 20.10.24.
	Version         string
	NCPU            int
	MemTotal        int64
	KernelVersion   string
	OperatingSystem string
	// OS and Arch as Go names them: linux, amd64.
	OS, Arch string
}

// Spec is a container to create.
type Spec struct {
	Name  string
	Image string
	// Entrypoint replaces the image's when set; Cmd then is its
	// arguments, else the image's command is replaced by Cmd when set.
	Entrypoint, Cmd []string
	WorkingDir      string
	Env             []string
	Labels          map[string]string
	Hostname        string
	Mounts          []Mount
	// NanoCPUs and Memory are limits (0: none); CPUShares the relative
	// weight from the requests.
	NanoCPUs, Memory, CPUShares int64
	// Network is the engine network the container joins.
	Network string
	// User is uid[:gid] from the security context, empty for the image's.
	User string
	// Privileged runs the container with every capability and the
	// host's devices (securityContext.privileged).
	Privileged bool
}

// Mount binds a host path into the container.
type Mount struct {
	Source, Target string
	ReadOnly       bool
	// CreateSource has the engine make a missing source directory on its
	// host, as container runtimes do for a hostPath volume without a type.
	CreateSource bool
}

// State is a container's state as the agent reads it.
type State string

const (
	Created State = "created"
	Running State = "running"
	Exited  State = "exited"
)

// Container is a container as listed or inspected.
type Container struct {
	ID      string
	Name    string
	Image   string
	ImageID string
	Labels  map[string]string
	State   State
	// ExitCode, OOMKilled, Error and FinishedAt describe an exited
	// container.
	ExitCode              int
	OOMKilled             bool
	Error                 string
	CreatedAt             time.Time
	StartedAt, FinishedAt time.Time
	// IP is the container's address on its network, while it runs.
	IP string
}

package nodeagent

import (
	"context"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/cronplane/cronplane/pkg/podenv"
)

// containerEnv is c's environment as the kubelet makes it: the
// apiserver's service variables, then envFrom, then env.
func (a *Agent) containerEnv(ctx context.Context, pod *corev1.Pod, c *corev1.Container) (*podenv.Env, error) {
	env := &podenv.Env{}
	if h, p := a.opts.APIServerHost, a.opts.APIServerPort; h != "" {
		port := strconv.Itoa(p)
		url := "tcp://" + joinHostPort(h, port)
		prefix := "KUBERNETES_PORT_" + port + "_TCP"
		for _, kv := range [][2]string{
			{"KUBERNETES_SERVICE_HOST", h}, {"KUBERNETES_SERVICE_PORT", port}, {"KUBERNETES_SERVICE_PORT_HTTPS", port},
			{"KUBERNETES_PORT", url}, {prefix, url}, {prefix + "_PROTO", "tcp"}, {prefix + "_PORT", port}, {prefix + "_ADDR", h},
		} {
			env.Set(kv[0], kv[1])
		}
	}
	if err := a.envResolver().Resolve(ctx, pod, c, env); err != nil {
		return nil, err
	}
	return env, nil
}

func (a *Agent) envResolver() podenv.Resolver {
	return podenv.Resolver{Client: a.client, Allocatable: a.allocatable()}
}

func joinHostPort(h, p string) string {
	if strings.Contains(h, ":") {
		return "[" + h + "]:" + p
	}
	return h + ":" + p
}

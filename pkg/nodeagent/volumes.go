package nodeagent

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cronplane/cronplane/pkg/nodeagent/engine"
	"github.com/cronplane/cronplane/pkg/podenv"
)

// maxTerminationMessage is the most of a termination message the kubelet
// reads.
const maxTerminationMessage = 4096

func (a *Agent) podDir(pod *corev1.Pod) string {
	return filepath.Join(a.opts.RootDir, "pods", string(pod.UID))
}

func (a *Agent) volumeDir(pod *corev1.Pod, name string) string {
	return filepath.Join(a.podDir(pod), "volumes", name)
}

// ensureVolumes writes a pod's volumes into its directory once: emptyDir,
// configMap, secret, downwardAPI and projected (service account token,
// configMap, secret, downwardAPI).
func (a *Agent) ensureVolumes(ctx context.Context, pod *corev1.Pod) error {
	a.mu.Lock()
	ready := a.volumesReady[pod.UID]
	a.mu.Unlock()
	if ready {
		return nil
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if err := a.writeVolume(ctx, pod, v); err != nil {
			return fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", v.Name, err)
		}
	}
	a.mu.Lock()
	a.volumesReady[pod.UID] = true
	a.mu.Unlock()
	return nil
}

// file is one file of a volume: its path in the volume, content, mode.
type file struct {
	path string
	data []byte
	mode int32
}

func (a *Agent) writeVolume(ctx context.Context, pod *corev1.Pod, v *corev1.Volume) error {
	dir := a.volumeDir(pod, v.Name)
	var files []file
	var err error
	switch {
	case v.HostPath != nil:
		return nil
	case v.EmptyDir != nil:
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return err
		}
		// Writable by whatever user the containers run as.
		return os.Chmod(dir, 0o777)
	case v.ConfigMap != nil:
		files, err = a.configMapFiles(ctx, pod, &v.ConfigMap.LocalObjectReference, v.ConfigMap.Items, v.ConfigMap.Optional, v.ConfigMap.DefaultMode)
	case v.Secret != nil:
		files, err = a.secretFiles(ctx, pod, v.Secret.SecretName, v.Secret.Items, v.Secret.Optional, v.Secret.DefaultMode)
	case v.DownwardAPI != nil:
		files, err = a.downwardFiles(pod, v.DownwardAPI.Items, v.DownwardAPI.DefaultMode)
	case v.Projected != nil:
		files, err = a.projectedFiles(ctx, pod, v.Projected)
	default:
		return fmt.Errorf("volume type not supported by this node")
	}
	if err != nil {
		return err
	}
	return writeFiles(dir, files)
}

func writeFiles(dir string, files []file) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.Clean("/"+f.path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.data, os.FileMode(f.mode)); err != nil {
			return err
		}
		if err := os.Chmod(p, os.FileMode(f.mode)); err != nil {
			return err
		}
	}
	return nil
}

func mode(item *int32, def *int32) int32 {
	switch {
	case item != nil:
		return *item
	case def != nil:
		return *def
	}
	return 0o644
}

// keyFiles are the files of a ConfigMap's or Secret's data: every key, or
// the items' keys at their paths.
func keyFiles(data map[string][]byte, items []corev1.KeyToPath, defaultMode *int32, optional bool, what string) ([]file, error) {
	var files []file
	if len(items) == 0 {
		for _, k := range sortedKeys(data) {
			files = append(files, file{k, data[k], mode(nil, defaultMode)})
		}
		return files, nil
	}
	for _, it := range items {
		d, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			if what == "secret" {
				return nil, fmt.Errorf("secret references non-existent secret key: %s", it.Key)
			}
			return nil, fmt.Errorf("configmap references non-existent config key: %s", it.Key)
		}
		files = append(files, file{it.Path, d, mode(it.Mode, defaultMode)})
	}
	return files, nil
}

func (a *Agent) configMapFiles(ctx context.Context, pod *corev1.Pod, ref *corev1.LocalObjectReference, items []corev1.KeyToPath, optional *bool, defaultMode *int32) ([]file, error) {
	cm, err := a.client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) && optional != nil && *optional {
			return nil, nil
		}
		return nil, err
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return keyFiles(data, items, defaultMode, optional != nil && *optional, "configmap")
}

func (a *Agent) secretFiles(ctx context.Context, pod *corev1.Pod, name string, items []corev1.KeyToPath, optional *bool, defaultMode *int32) ([]file, error) {
	s, err := a.client.CoreV1().Secrets(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) && optional != nil && *optional {
			return nil, nil
		}
		return nil, err
	}
	return keyFiles(s.Data, items, defaultMode, optional != nil && *optional, "secret")
}

func (a *Agent) downwardFiles(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, defaultMode *int32) ([]file, error) {
	var files []file
	for _, it := range items {
		var v string
		var err error
		switch {
		case it.FieldRef != nil:
			v, err = podenv.FieldValue(pod, it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			c := &corev1.Container{}
			if len(pod.Spec.Containers) > 0 {
				c = &pod.Spec.Containers[0]
			}
			v, err = podenv.ResourceValue(pod, c, it.ResourceFieldRef, a.allocatable())
		}
		if err != nil {
			return nil, err
		}
		files = append(files, file{it.Path, []byte(v), mode(it.Mode, defaultMode)})
	}
	return files, nil
}

func (a *Agent) projectedFiles(ctx context.Context, pod *corev1.Pod, p *corev1.ProjectedVolumeSource) ([]file, error) {
	var files []file
	for _, src := range p.Sources {
		var more []file
		var err error
		switch {
		case src.ServiceAccountToken != nil:
			more, err = a.tokenFile(ctx, pod, src.ServiceAccountToken, p.DefaultMode)
		case src.ConfigMap != nil:
			more, err = a.configMapFiles(ctx, pod, &src.ConfigMap.LocalObjectReference, src.ConfigMap.Items, src.ConfigMap.Optional, p.DefaultMode)
		case src.Secret != nil:
			more, err = a.secretFiles(ctx, pod, src.Secret.Name, src.Secret.Items, src.Secret.Optional, p.DefaultMode)
		case src.DownwardAPI != nil:
			more, err = a.downwardFiles(pod, src.DownwardAPI.Items, p.DefaultMode)
		}
		if err != nil {
			return nil, err
		}
		files = append(files, more...)
	}
	return files, nil
}

// tokenFile requests a token of the pod's service account bound to the
// pod, as the kubelet does for a projected serviceAccountToken.
func (a *Agent) tokenFile(ctx context.Context, pod *corev1.Pod, src *corev1.ServiceAccountTokenProjection, defaultMode *int32) ([]file, error) {
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: src.ExpirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if src.Audience != "" {
		req.Spec.Audiences = []string{src.Audience}
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	tr, err := a.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("failed to fetch token: %w", err)
	}
	return []file{{src.Path, []byte(tr.Status.Token), mode(nil, defaultMode)}}, nil
}

// mounts are the bind mounts of container c's attempt n: its volume
// mounts and its termination message file.
func (a *Agent) mounts(pod *corev1.Pod, c *corev1.Container, n int) ([]engine.Mount, error) {
	var out []engine.Mount
	for _, m := range c.VolumeMounts {
		var v *corev1.Volume
		for i := range pod.Spec.Volumes {
			if pod.Spec.Volumes[i].Name == m.Name {
				v = &pod.Spec.Volumes[i]
			}
		}
		if v == nil {
			return nil, fmt.Errorf("volume %q not found", m.Name)
		}
		src := a.volumeDir(pod, m.Name)
		if v.HostPath != nil {
			src = v.HostPath.Path
		}
		if m.SubPath != "" {
			src = filepath.Join(src, filepath.Clean("/"+m.SubPath))
			if _, err := os.Stat(src); os.IsNotExist(err) && v.HostPath == nil {
				if err := os.MkdirAll(src, 0o777); err != nil {
					return nil, err
				}
			}
		}
		create := v.HostPath != nil && (v.HostPath.Type == nil || *v.HostPath.Type == corev1.HostPathUnset || *v.HostPath.Type == corev1.HostPathDirectoryOrCreate)
		out = append(out, engine.Mount{Source: src, Target: m.MountPath, ReadOnly: m.ReadOnly, CreateSource: create})
	}
	if c.TerminationMessagePath != "" {
		p := a.terminationFile(pod, c.Name, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, nil, 0o666); err != nil {
			return nil, err
		}
		if err := os.Chmod(p, 0o666); err != nil {
			return nil, err
		}
		out = append(out, engine.Mount{Source: p, Target: c.TerminationMessagePath})
	}
	return out, nil
}

func (a *Agent) terminationFile(pod *corev1.Pod, name string, n int) string {
	return filepath.Join(a.podDir(pod), "containers", name, strconv.Itoa(n))
}

// terminationMessage is what attempt n of a container wrote to its
// termination message path.
func (a *Agent) terminationMessage(pod *corev1.Pod, name string, n int) string {
	f, err := os.Open(a.terminationFile(pod, name, n))
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, maxTerminationMessage))
	return strings.TrimRight(string(b), "\x00")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

package podspec

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validatePodSecurityContext checks the pod-level security settings. Kube
// keeps shareProcessNamespace inside the security context internally, and
// words its rule there.
func validatePodSecurityContext(spec *corev1.PodSpec, specPath, path *field.Path, opts Options) field.ErrorList {
	sc := spec.SecurityContext
	if sc == nil {
		sc = &corev1.PodSecurityContext{}
	}
	var errs field.ErrorList
	if sc.FSGroup != nil {
		errs = append(errs, groupID(*sc.FSGroup, path.Child("fsGroup"))...)
	}
	if sc.RunAsUser != nil {
		errs = append(errs, userID(*sc.RunAsUser, path.Child("runAsUser"))...)
	}
	if sc.RunAsGroup != nil {
		errs = append(errs, groupID(*sc.RunAsGroup, path.Child("runAsGroup"))...)
	}
	for i, g := range sc.SupplementalGroups {
		errs = append(errs, groupID(g, path.Child("supplementalGroups").Index(i))...)
	}
	if spec.ShareProcessNamespace != nil && *spec.ShareProcessNamespace && spec.HostPID {
		errs = append(errs, field.Invalid(path.Child("shareProcessNamespace"), *spec.ShareProcessNamespace, "ShareProcessNamespace and HostPID cannot both be enabled"))
	}
	if len(sc.Sysctls) > 0 {
		errs = append(errs, validateSysctls(spec, path.Child("sysctls"), opts)...)
	}
	if p := sc.FSGroupChangePolicy; p != nil && *p != corev1.FSGroupChangeAlways && *p != corev1.FSGroupChangeOnRootMismatch {
		errs = append(errs, field.NotSupported(path.Child("fsGroupChangePolicy"), *p, []corev1.PodFSGroupChangePolicy{corev1.FSGroupChangeAlways, corev1.FSGroupChangeOnRootMismatch}))
	}
	errs = append(errs, validateSeccompProfile(sc.SeccompProfile, path.Child("seccompProfile"))...)
	return append(errs, validateWindowsOptions(sc.WindowsOptions, path.Child("windowsOptions"))...)
}

func userID(id int64, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsValidUserID(id) {
		errs = append(errs, field.Invalid(path, id, msg))
	}
	return errs
}

func groupID(id int64, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsValidGroupID(id) {
		errs = append(errs, field.Invalid(path, id, msg))
	}
	return errs
}

const (
	sysctlSegment   = "[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
	sysctlMaxLength = 253
)

var sysctlName = regexp.MustCompile("^(" + sysctlSegment + `[\./])*` + sysctlSegment + "$")

func validateSysctls(spec *corev1.PodSpec, path *field.Path, opts Options) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, s := range spec.SecurityContext.Sysctls {
		p := path.Index(i).Child("name")
		switch {
		case s.Name == "":
			errs = append(errs, field.Required(p, ""))
		case len(s.Name) > sysctlMaxLength || !sysctlName.MatchString(s.Name):
			errs = append(errs, field.Invalid(p, s.Name, fmt.Sprintf("must have at most %d characters and match regex %s", sysctlMaxLength, sysctlName)))
		case names.Has(s.Name):
			errs = append(errs, field.Duplicate(p, s.Name))
		}
		if !opts.AllowNamespacedSysctlsForHostNetAndHostIPC {
			if err := hostSysctlError(s.Name, spec, p); err != nil {
				errs = append(errs, err)
			}
		}
		names.Insert(s.Name)
	}
	return errs
}

// hostSysctlError refuses a sysctl of a namespace the pod shares with the
// host.
func hostSysctlError(name string, spec *corev1.PodSpec, path *field.Path) *field.Error {
	switch ns := sysctlNamespace(name); {
	case spec.HostNetwork && ns == "net":
		return field.Invalid(path, name, "may not be specified when 'hostNetwork' is true")
	case spec.HostIPC && ns == "ipc":
		return field.Invalid(path, name, "may not be specified when 'hostIPC' is true")
	}
	return nil
}

// sysctlNamespace is the kernel namespace of a sysctl ("net", "ipc"), or
// "" for one not namespaced; a name may use slashes for dots, and a
// trailing "*" to mean a prefix.
func sysctlNamespace(name string) string {
	if i := strings.IndexAny(name, "./"); i >= 0 && name[i] == '/' {
		name = strings.Map(func(r rune) rune {
			switch r {
			case '.':
				return '/'
			case '/':
				return '.'
			}
			return r
		}, name)
	}
	if i := strings.Index(name, "*"); i >= 0 {
		name = name[:i]
	}
	switch name {
	case "kernel.sem", "kernel.shmall", "kernel.shmmax", "kernel.shmmni", "kernel.shm_rmid_forced", "kernel.shm",
		"kernel.msgmax", "kernel.msgmnb", "kernel.msgmni", "kernel.msg":
		return "ipc"
	}
	switch {
	case strings.HasPrefix(name, "net."):
		return "net"
	case strings.HasPrefix(name, "fs.mqueue."):
		return "ipc"
	}
	return ""
}

// validateSecurityContext checks a container's security settings.
func validateSecurityContext(sc *corev1.SecurityContext, path *field.Path, opts Options) field.ErrorList {
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	privileged := sc.Privileged != nil && *sc.Privileged
	if privileged && !opts.AllowPrivileged {
		errs = append(errs, field.Forbidden(path.Child("privileged"), "disallowed by cluster policy"))
	}
	if sc.RunAsUser != nil {
		errs = append(errs, userID(*sc.RunAsUser, path.Child("runAsUser"))...)
	}
	if sc.RunAsGroup != nil {
		errs = append(errs, groupID(*sc.RunAsGroup, path.Child("runAsGroup"))...)
	}
	if m := sc.ProcMount; m != nil && *m != corev1.DefaultProcMount && *m != corev1.UnmaskedProcMount {
		errs = append(errs, field.NotSupported(path.Child("procMount"), *m, []corev1.ProcMountType{corev1.DefaultProcMount, corev1.UnmaskedProcMount}))
	}
	errs = append(errs, validateSeccompProfile(sc.SeccompProfile, path.Child("seccompProfile"))...)
	if e := sc.AllowPrivilegeEscalation; e != nil && !*e {
		if privileged {
			errs = append(errs, field.Invalid(path, internalValue{sc}, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil {
			for _, c := range sc.Capabilities.Add {
				if c == "CAP_SYS_ADMIN" {
					errs = append(errs, field.Invalid(path, internalValue{sc}, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
				}
			}
		}
	}
	return append(errs, validateWindowsOptions(sc.WindowsOptions, path.Child("windowsOptions"))...)
}

func validateSeccompProfile(sp *corev1.SeccompProfile, path *field.Path) field.ErrorList {
	if sp == nil {
		return nil
	}
	var errs field.ErrorList
	switch sp.Type {
	case corev1.SeccompProfileTypeLocalhost, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined:
	case "":
		errs = append(errs, field.Required(path.Child("type"), "type is required when seccompProfile is set"))
	default:
		errs = append(errs, field.NotSupported(path.Child("type"), sp.Type, []corev1.SeccompProfileType{corev1.SeccompProfileTypeLocalhost, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined}))
	}
	switch {
	case sp.Type == corev1.SeccompProfileTypeLocalhost && sp.LocalhostProfile == nil:
		errs = append(errs, field.Required(path.Child("localhostProfile"), "must be set when seccomp type is Localhost"))
	case sp.Type == corev1.SeccompProfileTypeLocalhost:
		errs = append(errs, relativePath(*sp.LocalhostProfile, path.Child("localhostProfile"))...)
	case sp.LocalhostProfile != nil:
		errs = append(errs, field.Invalid(path.Child("localhostProfile"), internalValue{sp}, "can only be set when seccomp type is Localhost"))
	}
	return errs
}

// validateSeccompAnnotation checks a seccomp profile named in the old
// annotations.
func validateSeccompAnnotation(p string, path *field.Path) field.ErrorList {
	switch {
	case p == "runtime/default", p == "docker/default", p == "unconfined":
		return nil
	case strings.HasPrefix(p, "localhost/"):
		return relativePath(strings.TrimPrefix(p, "localhost/"), path)
	}
	return field.ErrorList{field.Invalid(path, p, "must be a valid seccomp profile")}
}

// validateSeccompAnnotationsMatch: where both a seccomp annotation and
// the field are set, they must agree.
func validateSeccompAnnotationsMatch(annotations map[string]string, spec *corev1.PodSpec, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if sc := spec.SecurityContext; sc != nil && sc.SeccompProfile != nil {
		if a, found := annotations[seccompPodAnnotation]; found {
			if err := seccompMismatch(a, sc.SeccompProfile, specPath.Child("securityContext", "seccompProfile")); err != nil {
				errs = append(errs, err)
			}
		}
	}
	visitContainersWithPath(spec, specPath, func(c *corev1.Container, p *field.Path) {
		if c.SecurityContext == nil || c.SecurityContext.SeccompProfile == nil {
			return
		}
		if a, found := annotations[seccompContainerAnnotation+c.Name]; found {
			if err := seccompMismatch(a, c.SecurityContext.SeccompProfile, p.Child("securityContext", "seccompProfile")); err != nil {
				errs = append(errs, err)
			}
		}
	})
	return errs
}

func seccompMismatch(annotation string, sp *corev1.SeccompProfile, path *field.Path) *field.Error {
	const typeMsg = "seccomp type in annotation and field must match"
	switch sp.Type {
	case corev1.SeccompProfileTypeUnconfined:
		if annotation != "unconfined" {
			return field.Forbidden(path.Child("type"), typeMsg)
		}
	case corev1.SeccompProfileTypeRuntimeDefault:
		if annotation != "runtime/default" && annotation != "docker/default" {
			return field.Forbidden(path.Child("type"), typeMsg)
		}
	case corev1.SeccompProfileTypeLocalhost:
		name, found := strings.CutPrefix(annotation, "localhost/")
		if !found {
			return field.Forbidden(path.Child("type"), typeMsg)
		}
		if sp.LocalhostProfile == nil || name != *sp.LocalhostProfile {
			return field.Forbidden(path.Child("localhostProfile"), "seccomp profile in annotation and field must match")
		}
	}
	return nil
}

// visitContainersWithPath calls f with each init, regular and ephemeral
// container of spec and its path.
func visitContainersWithPath(spec *corev1.PodSpec, specPath *field.Path, f func(c *corev1.Container, p *field.Path)) {
	for i := range spec.InitContainers {
		f(&spec.InitContainers[i], specPath.Child("initContainers").Index(i))
	}
	for i := range spec.Containers {
		f(&spec.Containers[i], specPath.Child("containers").Index(i))
	}
	for i := range spec.EphemeralContainers {
		f((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon), specPath.Child("ephemeralContainers").Index(i))
	}
}

const (
	maxGMSACredentialSpecKiB  = 64
	maxRunAsUserNameDomainLen = 256
	maxRunAsUserNameUserLen   = 104
)

var (
	controlCharacters   = regexp.MustCompile(`[[:cntrl:]]+`)
	netBIOSDomain       = regexp.MustCompile(`^[^\\/:\*\?"<>|\.][^\\/:\*\?"<>|]{0,14}$`)
	dnsDomainLabel      = `[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?`
	dnsDomain           = regexp.MustCompile(`^` + dnsDomainLabel + `(?:\.` + dnsDomainLabel + `)*$`)
	badUserNameChars    = regexp.MustCompile(`["/\\:;|=,\+\*\?<>@\[\]]`)
	dotsAndSpacesOnly   = regexp.MustCompile(`^[\. ]+$`)
	windowsUserNameHelp = `runAsUserName's User cannot contain the following characters: "/\:;|=,+*?<>@[]`
)

func validateWindowsOptions(w *corev1.WindowsSecurityContextOptions, path *field.Path) field.ErrorList {
	if w == nil {
		return nil
	}
	var errs field.ErrorList
	if n := w.GMSACredentialSpecName; n != nil {
		for _, msg := range validation.IsDNS1123Subdomain(*n) {
			errs = append(errs, field.Invalid(path.Child("gmsaCredentialSpecName"), *n, msg))
		}
	}
	if s := w.GMSACredentialSpec; s != nil {
		if len(*s) == 0 {
			errs = append(errs, field.Invalid(path.Child("gmsaCredentialSpec"), *s, "gmsaCredentialSpec cannot be an empty string"))
		} else if len(*s) > maxGMSACredentialSpecKiB*1024 {
			errs = append(errs, field.Invalid(path.Child("gmsaCredentialSpec"), *s, fmt.Sprintf("gmsaCredentialSpec size must be under %d KiB", maxGMSACredentialSpecKiB)))
		}
	}
	if u := w.RunAsUserName; u != nil {
		p := path.Child("runAsUserName")
		invalid := func(msg string) { errs = append(errs, field.Invalid(p, *u, msg)) }
		parts := strings.Split(*u, "\\")
		switch {
		case *u == "":
			invalid("runAsUserName cannot be an empty string")
		case controlCharacters.MatchString(*u):
			invalid("runAsUserName cannot contain control characters")
		case len(parts) > 2:
			invalid("runAsUserName cannot contain more than one backslash")
		default:
			domain, user := "", parts[0]
			if len(parts) == 2 {
				domain, user = parts[0], parts[1]
			}
			if len(domain) >= maxRunAsUserNameDomainLen {
				invalid(fmt.Sprintf("runAsUserName's Domain length must be under %d characters", maxRunAsUserNameDomainLen))
			}
			if len(parts) == 2 && !netBIOSDomain.MatchString(domain) && !dnsDomain.MatchString(domain) {
				invalid("runAsUserName's Domain doesn't match the NetBios nor the DNS format")
			}
			if user == "" {
				invalid("runAsUserName's User cannot be empty")
			} else if len(user) > maxRunAsUserNameUserLen {
				invalid(fmt.Sprintf("runAsUserName's User length must not be longer than %d characters", maxRunAsUserNameUserLen))
			}
			if dotsAndSpacesOnly.MatchString(user) {
				invalid("runAsUserName's User cannot contain only periods or spaces")
			}
			if badUserNameChars.MatchString(user) {
				invalid(windowsUserNameHelp)
			}
		}
	}
	return errs
}

// validateHostProcess: a Windows pod's containers are all host-process
// containers or none are; those pods are on the host network, and the
// cluster must allow privileged containers.
func validateHostProcess(spec *corev1.PodSpec, path *field.Path, opts Options) field.ErrorList {
	var errs field.ErrorList
	var pod *bool
	if sc := spec.SecurityContext; sc != nil && sc.WindowsOptions != nil {
		pod = sc.WindowsOptions.HostProcess
	}
	containers, hostProcess := 0, 0
	visitContainersWithPath(spec, path, func(c *corev1.Container, p *field.Path) {
		containers++
		var own *bool
		if c.SecurityContext != nil && c.SecurityContext.WindowsOptions != nil {
			own = c.SecurityContext.WindowsOptions.HostProcess
		}
		if pod != nil && own != nil && *pod != *own {
			errs = append(errs, field.Invalid(p.Child("securityContext", "windowsOptions", "hostProcess"), *own, fmt.Sprintf("pod hostProcess value must be identical if both are specified, was %v", *pod)))
		}
		if (own != nil && *own) || (own == nil && pod != nil && *pod) {
			hostProcess++
		}
	})
	if hostProcess == 0 {
		return errs
	}
	if hostProcess != containers {
		errs = append(errs, field.Invalid(path, "", "If pod contains any hostProcess containers then all containers must be HostProcess containers"))
	}
	if !spec.HostNetwork {
		errs = append(errs, field.Invalid(path.Child("hostNetwork"), false, "hostNetwork must be true if pod contains any hostProcess containers"))
	}
	if !opts.AllowPrivileged {
		errs = append(errs, field.Forbidden(path, "hostProcess containers are disallowed by cluster policy"))
	}
	return errs
}

// validateHostUsers: a pod in its own user namespace may share no other
// namespace with the host (kube words two of them capitalized).
func validateHostUsers(spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	if spec.HostUsers == nil || *spec.HostUsers {
		return nil
	}
	var errs field.ErrorList
	const msg = "when `pod.Spec.HostUsers` is false"
	if spec.HostNetwork {
		errs = append(errs, field.Forbidden(path.Child("hostNetwork"), msg))
	}
	if spec.HostPID {
		errs = append(errs, field.Forbidden(path.Child("HostPID"), msg))
	}
	if spec.HostIPC {
		errs = append(errs, field.Forbidden(path.Child("HostIPC"), msg))
	}
	return errs
}

func validateLinuxOnly(spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	const msg = "windows options cannot be set for a linux pod"
	var errs field.ErrorList
	if sc := spec.SecurityContext; sc != nil && sc.WindowsOptions != nil {
		errs = append(errs, field.Forbidden(path.Child("securityContext", "windowsOptions"), msg))
	}
	visitContainersWithPath(spec, path, func(c *corev1.Container, p *field.Path) {
		if c.SecurityContext != nil && c.SecurityContext.WindowsOptions != nil {
			errs = append(errs, field.Forbidden(p.Child("securityContext", "windowsOptions"), msg))
		}
	})
	return errs
}

func validateWindowsOnly(spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	const msg = "cannot be set for a windows pod"
	var errs field.ErrorList
	forbid := func(set bool, p *field.Path) {
		if set {
			errs = append(errs, field.Forbidden(p, msg))
		}
	}
	sc := spec.SecurityContext
	if sc == nil {
		sc = &corev1.PodSecurityContext{}
	}
	scPath := path.Child("securityContext")
	forbid(sc.SELinuxOptions != nil, scPath.Child("seLinuxOptions"))
	forbid(spec.HostUsers != nil, path.Child("hostUsers"))
	forbid(spec.HostPID, path.Child("hostPID"))
	forbid(spec.HostIPC, path.Child("hostIPC"))
	forbid(sc.SeccompProfile != nil, scPath.Child("seccompProfile"))
	forbid(sc.FSGroup != nil, scPath.Child("fsGroup"))
	forbid(sc.FSGroupChangePolicy != nil, scPath.Child("fsGroupChangePolicy"))
	forbid(len(sc.Sysctls) > 0, scPath.Child("sysctls"))
	forbid(spec.ShareProcessNamespace != nil, path.Child("shareProcessNamespace"))
	forbid(sc.RunAsUser != nil, scPath.Child("runAsUser"))
	forbid(sc.RunAsGroup != nil, scPath.Child("runAsGroup"))
	forbid(sc.SupplementalGroups != nil, scPath.Child("supplementalGroups"))
	visitContainersWithPath(spec, path, func(c *corev1.Container, p *field.Path) {
		csc := c.SecurityContext
		if csc == nil {
			return
		}
		cp := p.Child("securityContext")
		forbid(csc.SELinuxOptions != nil, cp.Child("seLinuxOptions"))
		forbid(csc.SeccompProfile != nil, cp.Child("seccompProfile"))
		forbid(csc.Capabilities != nil, cp.Child("capabilities"))
		forbid(csc.ReadOnlyRootFilesystem != nil, cp.Child("readOnlyRootFilesystem"))
		forbid(csc.Privileged != nil, cp.Child("privileged"))
		forbid(csc.AllowPrivilegeEscalation != nil, cp.Child("allowPrivilegeEscalation"))
		forbid(csc.ProcMount != nil, cp.Child("procMount"))
		forbid(csc.RunAsUser != nil, cp.Child("runAsUser"))
		forbid(csc.RunAsGroup != nil, cp.Child("runAsGroup"))
	})
	return errs
}

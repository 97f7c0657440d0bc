package podspec

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// warningCases are valid pod templates and the warnings kube v1.29 sends
// with a PodTemplate holding them.
var warningCases = []struct {
	name string
	yaml string
	want []string
}{
	{"none", `spec: {containers: [{name: c, image: busybox}]}`, nil},
	{"negative terminationGracePeriodSeconds", `spec: {terminationGracePeriodSeconds: -5, containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1",
	}},
	{"deprecated node labels", `spec: {nodeSelector: {beta.kubernetes.io/os: linux}, affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: beta.kubernetes.io/arch, operator: Exists}]}]}, preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, preference: {matchExpressions: [{key: failure-domain.beta.kubernetes.io/zone, operator: Exists}]}}]}}, topologySpreadConstraints: [{maxSkew: 1, topologyKey: beta.kubernetes.io/instance-type, whenUnsatisfiable: DoNotSchedule}], containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use \"kubernetes.io/os\" instead",
		"template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key: beta.kubernetes.io/arch is deprecated since v1.14; use \"kubernetes.io/arch\" instead",
		"template.spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].key: failure-domain.beta.kubernetes.io/zone is deprecated since v1.17; use \"topology.kubernetes.io/zone\" instead",
		"template.spec.topologySpreadConstraints[0].topologyKey: beta.kubernetes.io/instance-type is deprecated since v1.17; use \"node.kubernetes.io/instance-type\" instead",
		"template.spec.topologySpreadConstraints[0].labelSelector: a null labelSelector results in matching no pod",
	}},
	{"deprecated annotations and volumes", `{metadata: {annotations: {scheduler.alpha.kubernetes.io/critical-pod: "", seccomp.security.alpha.kubernetes.io/pod: runtime/default, container.seccomp.security.alpha.kubernetes.io/c: runtime/default}}, spec: {volumes: [{name: g, gitRepo: {repository: r}}, {name: r, rbd: {monitors: [m], image: i}}, {name: e, ephemeral: {volumeClaimTemplate: {spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1500m}, limits: {storage: 2500m}}}}}}], containers: [{name: c, image: busybox}]}}`, []string{
		"template.metadata.annotations[scheduler.alpha.kubernetes.io/critical-pod]: non-functional in v1.16+; use the \"priorityClassName\" field instead",
		"template.spec.volumes[0].gitRepo: deprecated in v1.11",
		"template.spec.volumes[1].rbd: deprecated in v1.28, non-functional in v1.31+",
		"template.spec.volumes[2].ephemeral.volumeClaimTemplate.spec.resources.requests[storage]: fractional byte value \"1500m\" is invalid, must be an integer",
		"template.spec.volumes[2].ephemeral.volumeClaimTemplate.spec.resources.limits[storage]: fractional byte value \"2500m\" is invalid, must be an integer",
		"template.metadata.annotations[seccomp.security.alpha.kubernetes.io/pod]: non-functional in v1.27+; use the \"seccompProfile\" field instead",
		"template.metadata.annotations[container.seccomp.security.alpha.kubernetes.io/c]: non-functional in v1.27+; use the \"seccompProfile\" field instead",
	}},
	{"duplicates", `spec: {hostAliases: [{ip: 1.1.1.1}, {ip: 1.1.1.1}], imagePullSecrets: [{name: a}, {name: a}, {name: ""}], containers: [{name: c, image: busybox, env: [{name: A, value: x}, {name: A, value: "$(A)y"}, {name: A, value: z}, {name: B}, {name: B, value: "$(B)"}]}]}`, []string{
		"template.spec.hostAliases[1].ip: duplicate ip \"1.1.1.1\"",
		"template.spec.imagePullSecrets[1].name: duplicate name \"a\"",
		"template.spec.imagePullSecrets[2].name: invalid empty name \"\"",
		"template.spec.containers[0].env[2]: hides previous definition of \"A\"",
		"template.spec.containers[0].env[4]: hides previous definition of \"B\"",
	}},
	{"fractional bytes", `spec: {overhead: {memory: 1500m}, containers: [{name: c, image: busybox, resources: {limits: {memory: 2500m, ephemeral-storage: 1500m}, requests: {memory: 500m}}}]}`, []string{
		"template.spec.overhead[memory]: fractional byte value \"1500m\" is invalid, must be an integer",
		"template.spec.containers[0].resources.limits[memory]: fractional byte value \"2500m\" is invalid, must be an integer",
		"template.spec.containers[0].resources.requests[memory]: fractional byte value \"500m\" is invalid, must be an integer",
		"template.spec.containers[0].resources.limits[ephemeral-storage]: fractional byte value \"1500m\" is invalid, must be an integer",
	}},
	{"ports", `spec: {initContainers: [{name: i, image: busybox, ports: [{containerPort: 80}]}], containers: [{name: c, image: busybox, ports: [{containerPort: 80}, {containerPort: 81, hostIP: 1.1.1.1}, {containerPort: 82, hostPort: 82}, {containerPort: 82, hostPort: 82, hostIP: 1.1.1.1}]}]}`, []string{
		"template.spec.containers[0].ports[0]: duplicate port definition with template.spec.initContainers[0].ports[0]",
		"template.spec.containers[0].ports[1]: hostIP set without hostPort: {Name: HostPort:0 ContainerPort:81 Protocol:TCP HostIP:1.1.1.1}",
		"template.spec.containers[0].ports[3]: dangerously ambiguous port definition with template.spec.containers[0].ports[2]",
	}},
	{"null selectors", `spec: {topologySpreadConstraints: [{maxSkew: 1, topologyKey: k, whenUnsatisfiable: DoNotSchedule}], affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: k}]}, podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, podAffinityTerm: {topologyKey: k}}]}}, containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.topologySpreadConstraints[0].labelSelector: a null labelSelector results in matching no pod",
		"template.spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector: a null labelSelector results in matching no pod",
		"template.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.labelSelector: a null labelSelector results in matching no pod",
	}},
}

func TestTemplateWarnings_AnswerAsKube(t *testing.T) {
	ref := referenceServer(t)
	for _, tc := range warningCases {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := parseTemplate(t, tc.yaml)
			sent := tmpl.DeepCopy()
			DefaultTemplate(tmpl)
			if errs := ValidateTemplate(tmpl, field.NewPath("template"), TemplateOptions(nil)); len(errs) > 0 {
				t.Fatalf("invalid: %v", errs)
			}
			got := TemplateWarnings(field.NewPath("template"), tmpl)
			if joinLines(got) != joinLines(tc.want) {
				t.Errorf("warnings:\n%s\nwant:\n%s", joinLines(got), joinLines(tc.want))
			}
			if ref == nil {
				return
			}
			errs, kube := ref.podTemplate(t, sent)
			if len(errs) > 0 {
				t.Fatalf("kube-apiserver refuses it: %v", errs)
			}
			if joinLines(kube) != joinLines(tc.want) {
				t.Errorf("kube-apiserver warns:\n%s\nwant:\n%s", joinLines(kube), joinLines(tc.want))
			}
		})
	}
}

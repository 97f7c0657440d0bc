package podspec

import (
	"regexp"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// templateCases are pod templates (YAML, defaulted as kube defaults them)
// and the field errors kube v1.29 gives for them in a PodTemplate, whose
// template is at "template".
var templateCases = []struct {
	name string
	yaml string
	want []string
}{
	{"valid", `spec: {containers: [{name: c, image: busybox}]}`, nil},
	{"no containers", `spec: {}`, []string{
		"template.spec.containers: Required value",
	}},
	{"container name missing and bad", `spec: {containers: [{image: busybox}, {name: C_1, image: busybox}]}`, []string{
		"template.spec.containers[0].name: Required value",
		"template.spec.containers[1].name: Invalid value: \"C_1\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
	}},
	{"duplicate container names across init and regular", `spec: {initContainers: [{name: c, image: busybox}], containers: [{name: c, image: busybox}, {name: c, image: busybox}]}`, []string{
		"template.spec.containers[1].name: Duplicate value: \"c\"",
		"template.spec.initContainers[0].name: Duplicate value: \"c\"",
	}},
	{"image missing, blank image allowed", `spec: {containers: [{name: c}, {name: d, image: " busybox "}]}`, []string{
		"template.spec.containers[0].image: Required value",
	}},
	{"requests above limits", `spec: {containers: [{name: c, image: busybox, resources: {requests: {cpu: "2"}, limits: {cpu: "1"}}}]}`, []string{
		"template.spec.containers[0].resources.requests: Invalid value: \"2\": must be less than or equal to cpu limit of 1",
	}},
	{"unknown resource names", `spec: {containers: [{name: c, image: busybox, resources: {limits: {gpu: "1"}}}]}`, []string{
		"template.spec.containers[0].resources.limits[gpu]: Invalid value: gpu: must be a standard resource type or fully qualified",
		"template.spec.containers[0].resources.limits[gpu]: Invalid value: gpu: must be a standard resource for containers",
	}},
	{"extended resource fraction and limit", `spec: {containers: [{name: c, image: busybox, resources: {requests: {example.com/dev: 500m}}}]}`, []string{
		"template.spec.containers[0].resources.requests[example.com/dev]: Invalid value: resource.Quantity{i:resource.int64Amount{value:500, scale:-3}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"500m\", Format:\"DecimalSI\"}: must be an integer",
		"template.spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources",
	}},
	{"negative quantity", `spec: {containers: [{name: c, image: busybox, resources: {requests: {memory: "-1"}}}]}`, []string{
		"template.spec.containers[0].resources.requests[memory]: Invalid value: \"-1\": must be greater than or equal to 0",
	}},
	{"hugepages without cpu or memory", `spec: {containers: [{name: c, image: busybox, resources: {limits: {hugepages-2Mi: 3Mi}}}]}`, []string{
		"template.spec.containers[0].resources.limits[hugepages-2Mi]: Invalid value: \"3Mi\": 3Mi is not positive integer multiple of hugepages-2Mi",
		"template.spec.containers[0].resources: Forbidden: HugePages require cpu or memory",
	}},
	{"mount of a missing volume", `spec: {containers: [{name: c, image: busybox, volumeMounts: [{name: data, mountPath: /data}]}]}`, []string{
		"template.spec.containers[0].volumeMounts[0].name: Not found: \"data\"",
	}},
	{"mount rules", `spec: {volumes: [{name: v, emptyDir: {}}], containers: [{name: c, image: busybox, volumeMounts: [{name: v, mountPath: /a, subPath: ../x}, {name: v, mountPath: /a, subPath: a, subPathExpr: b}, {name: v, mountPath: /b, mountPropagation: Bidirectional}, {name: "", mountPath: ""}]}]}`, []string{
		"template.spec.containers[0].volumeMounts.subPath: Invalid value: \"../x\": must not contain '..'",
		"template.spec.containers[0].volumeMounts[1].mountPath: Invalid value: \"/a\": must be unique",
		"template.spec.containers[0].volumeMounts[1].subPathExpr: Invalid value: \"b\": subPathExpr and subPath are mutually exclusive",
		"template.spec.containers[0].volumeMounts.mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers",
		"template.spec.containers[0].volumeMounts[3].name: Required value",
		"template.spec.containers[0].volumeMounts[3].name: Not found: \"\"",
		"template.spec.containers[0].volumeMounts[3].mountPath: Required value",
	}},
	{"volume with two sources", `spec: {volumes: [{name: v, emptyDir: {}, hostPath: {path: /tmp}}], containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type",
	}},
	{"volume names", `spec: {volumes: [{name: V}, {name: v}, {name: v}], containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.volumes[0].name: Invalid value: \"V\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
		"template.spec.volumes[2].name: Duplicate value: \"v\"",
	}},
	{"negative emptyDir sizeLimit", `spec: {volumes: [{name: v, emptyDir: {sizeLimit: "-1"}}], containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.volumes[0].emptyDir.sizeLimit: Forbidden: SizeLimit field must be a valid resource quantity",
	}},
	{"secret and configMap volumes", `spec: {volumes: [{name: a, secret: {defaultMode: 01000, items: [{key: "", path: /abs}]}}, {name: b, configMap: {items: [{key: k, path: ..x, mode: -1}]}}], containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.volumes[0].secret.secretName: Required value",
		"template.spec.volumes[0].secret.defaultMode: Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive",
		"template.spec.volumes[0].secret.items[0].key: Required value",
		"template.spec.volumes[0].secret.items[0].path: Invalid value: \"/abs\": must be a relative path",
		"template.spec.volumes[1].configMap.name: Required value",
		"template.spec.volumes[1].configMap.items[0].path: Invalid value: \"..x\": must not start with '..'",
		"template.spec.volumes[1].configMap.items[0].mode: Invalid value: -1: must be a number between 0 and 0777 (octal), both inclusive",
	}},
	{"hostPath type and path", `spec: {volumes: [{name: a, hostPath: {path: /a/../b, type: Bogus}}, {name: b, hostPath: {path: ""}}], containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.volumes[0].hostPath.path: Invalid value: \"/a/../b\": must not contain '..'",
		"template.spec.volumes[0].hostPath.type: Unsupported value: \"Bogus\": supported values: \"\", \"BlockDevice\", \"CharDevice\", \"Directory\", \"DirectoryOrCreate\", \"File\", \"FileOrCreate\", \"Socket\"",
		"template.spec.volumes[1].hostPath.path: Required value",
	}},
	{"nfs, pvc, csi", `spec: {volumes: [{name: a, nfs: {server: "", path: rel}}, {name: b, persistentVolumeClaim: {claimName: ""}}, {name: d, csi: {driver: ""}}], containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.volumes[0].nfs.server: Required value",
		"template.spec.volumes[0].nfs.path: Invalid value: \"rel\": must be an absolute path",
		"template.spec.volumes[1].persistentVolumeClaim.claimName: Required value",
		"template.spec.volumes[2].csi.driver: Required value",
		"template.spec.volumes[2].csi.driver: Invalid value: \"\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
	}},
	{"projected sources", `spec: {volumes: [{name: a, projected: {sources: [{serviceAccountToken: {path: "", expirationSeconds: 60}}, {downwardAPI: {items: [{path: x, fieldRef: {fieldPath: spec.nodeName}}]}}, {configMap: {name: m, items: [{key: k, path: x}]}, secret: {name: s}}]}}], containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes",
		"template.spec.volumes[0].projected.path: Required value",
		"template.spec.volumes[0].projected.sources[1].downwardAPI.fieldRef.fieldPath: Unsupported value: \"spec.nodeName\": supported values: \"metadata.annotations\", \"metadata.labels\", \"metadata.name\", \"metadata.namespace\", \"metadata.uid\"",
		"template.spec.volumes[0].projected: Invalid value: \"m\": conflicting duplicate paths",
		"template.spec.volumes[0].projected.sources[2]: Forbidden: may not specify more than 1 volume type",
	}},
	{"downwardAPI volume", `spec: {volumes: [{name: a, downwardAPI: {items: [{path: x}, {path: "y", fieldRef: {fieldPath: "metadata.labels['Bad Key']"}}, {path: z, resourceFieldRef: {resource: limits.cpu}}]}}], containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.volumes[0].downwardAPI: Required value: one of fieldRef and resourceFieldRef is required",
		"template.spec.volumes[0].downwardAPI.fieldRef: Invalid value: \"Bad Key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
		"template.spec.volumes[0].downwardAPI.resourceFieldRef.containerName: Required value",
	}},
	{"ephemeral volume", `spec: {volumes: [{name: a, ephemeral: {volumeClaimTemplate: {metadata: {name: x}, spec: {accessModes: [Bogus]}}}}, {name: b, ephemeral: {}}], containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.volumes[0].ephemeral.volumeClaimTemplate.metadata.name: Forbidden: cannot be set",
		"template.spec.volumes[0].ephemeral.volumeClaimTemplate.spec.accessModes: Unsupported value: \"Bogus\": supported values: \"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\"",
		"template.spec.volumes[0].ephemeral.volumeClaimTemplate.spec.resources[storage]: Required value",
		"template.spec.volumes[1].ephemeral.volumeClaimTemplate: Required value",
	}},
	{"every other volume type, empty", `spec: {volumes: [{name: a, gcePersistentDisk: {pdName: "", partition: 300}}, {name: b, awsElasticBlockStore: {volumeID: ""}}, {name: d, gitRepo: {repository: "", directory: /abs}}, {name: e, iscsi: {targetPortal: "", iqn: bogus, lun: 300, chapAuthSession: true, initiatorName: bad}}, {name: f, glusterfs: {endpoints: "", path: ""}}, {name: g, flocker: {datasetName: a/b, datasetUUID: u}}, {name: h, rbd: {monitors: [], image: ""}}, {name: i, cinder: {volumeID: "", secretRef: {}}}, {name: j, cephfs: {monitors: []}}, {name: k, quobyte: {registry: nohostport, volume: ""}}, {name: l, fc: {targetWWNs: [a], wwids: [b]}}, {name: m, flexVolume: {driver: "", options: {kubernetes.io/x: "y"}}}, {name: n, azureFile: {secretName: "", shareName: ""}}, {name: o, vsphereVolume: {volumePath: ""}}, {name: p, photonPersistentDisk: {pdID: ""}}, {name: q, portworxVolume: {volumeID: ""}}, {name: r, azureDisk: {diskName: "", diskURI: "", kind: Managed, cachingMode: Bogus}}, {name: s, storageos: {volumeName: Bad_Name, secretRef: {}}}, {name: t, scaleIO: {gateway: "", system: "", secretRef: {}}}, {name: u, csi: {driver: Bad_Driver, nodePublishSecretRef: {name: Bad_Secret}}}], containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.volumes[0].persistentDisk.pdName: Required value",
		"template.spec.volumes[0].persistentDisk.partition: Invalid value: 300: must be between 1 and 255, inclusive",
		"template.spec.volumes[1].awsElasticBlockStore.volumeID: Required value",
		"template.spec.volumes[2].gitRepo.repository: Required value",
		"template.spec.volumes[2].gitRepo.directory: Invalid value: \"/abs\": must be a relative path",
		"template.spec.volumes[3].iscsi.targetPortal: Required value",
		"template.spec.volumes[3].iscsi.iqn: Invalid value: \"bogus\": must be valid format starting with iqn, eui, or naa",
		"template.spec.volumes[3].iscsi.lun: Invalid value: 300: must be between 0 and 255, inclusive",
		"template.spec.volumes[3].iscsi.secretRef: Required value",
		"template.spec.volumes[3].iscsi.initiatorname: Invalid value: \"bad\": must be valid format starting with iqn, eui, or naa",
		"template.spec.volumes[4].glusterfs.endpoints: Required value",
		"template.spec.volumes[4].glusterfs.path: Required value",
		"template.spec.volumes[5].flocker: Invalid value: \"resource\": datasetName and datasetUUID can not be specified simultaneously",
		"template.spec.volumes[5].flocker.datasetName: Invalid value: \"a/b\": must not contain '/'",
		"template.spec.volumes[6].rbd.monitors: Required value",
		"template.spec.volumes[6].rbd.image: Required value",
		"template.spec.volumes[7].cinder.volumeID: Required value",
		"template.spec.volumes[7].cinder.secretRef.name: Required value",
		"template.spec.volumes[8].cephfs.monitors: Required value",
		"template.spec.volumes[9].quobyte.registry: Invalid value: \"nohostport\": must be a host:port pair or multiple pairs separated by commas",
		"template.spec.volumes[9].quobyte.volume: Required value",
		"template.spec.volumes[10].fc.targetWWNs: Invalid value: []string{\"a\"}: targetWWNs and wwids can not be specified simultaneously",
		"template.spec.volumes[10].fc.lun: Required value: lun is required if targetWWNs is specified",
		"template.spec.volumes[11].flexVolume.driver: Required value",
		"template.spec.volumes[11].flexVolume.options[kubernetes.io/x]: Invalid value: \"kubernetes.io/x\": kubernetes.io and k8s.io namespaces are reserved",
		"template.spec.volumes[12].azureFile.secretName: Required value",
		"template.spec.volumes[12].azureFile.shareName: Required value",
		"template.spec.volumes[13].vsphereVolume.volumePath: Required value",
		"template.spec.volumes[14].photonPersistentDisk.pdID: Required value",
		"template.spec.volumes[15].portworxVolume.volumeID: Required value",
		"template.spec.volumes[16].azureDisk.diskName: Required value",
		"template.spec.volumes[16].azureDisk.diskURI: Required value",
		"template.spec.volumes[16].azureDisk.cachingMode: Unsupported value: \"Bogus\": supported values: \"None\", \"ReadOnly\", \"ReadWrite\"",
		"template.spec.volumes[16].azureDisk.diskURI: Unsupported value: \"\": supported values: \"/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}\"",
		"template.spec.volumes[17].storageos.volumeName: Invalid value: \"Bad_Name\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
		"template.spec.volumes[17].storageos.secretRef.name: Required value",
		"template.spec.volumes[18].scaleIO.gateway: Required value",
		"template.spec.volumes[18].scaleIO.system: Required value",
		"template.spec.volumes[18].scaleIO.volumeName: Required value",
		"template.spec.volumes[19].csi.driver: Invalid value: \"Bad_Driver\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
		"template.spec.volumes[19].csi.name: Invalid value: \"Bad_Secret\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
	}},
	{"second sources under kube's names", `spec: {volumes: [{name: a, gcePersistentDisk: {pdName: x}, cephfs: {monitors: [m]}, downwardAPI: {}, ephemeral: {}}], containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.volumes[0].cephFS: Forbidden: may not specify more than 1 volume type",
		"template.spec.volumes[0].downwarAPI: Forbidden: may not specify more than 1 volume type",
		"template.spec.volumes[0].ephemeral: Forbidden: may not specify more than 1 volume type",
	}},
	{"projected paths and trust bundles", `spec: {volumes: [{name: a, projected: {sources: [{configMap: {name: m, items: [{key: k, path: p}]}}, {secret: {name: s, items: [{key: k, path: p}]}}, {downwardAPI: {items: [{path: p, fieldRef: {fieldPath: metadata.name}}]}}, {clusterTrustBundle: {name: x, path: q}}]}}], containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.volumes[0].projected: Invalid value: \"s\": conflicting duplicate paths",
		"template.spec.volumes[0].projected: Invalid value: \"p\": conflicting duplicate paths",
	}},
	{"claim templates", `spec: {volumes: [{name: a, ephemeral: {volumeClaimTemplate: {spec: {accessModes: [ReadWriteOncePod, ReadWriteOnce], storageClassName: Bad_Class, volumeMode: Bogus, resources: {requests: {storage: "0"}}, dataSource: {kind: Snapshot, name: s}, dataSourceRef: {kind: PersistentVolumeClaim, name: t}}}}}, {name: b, ephemeral: {volumeClaimTemplate: {metadata: {labels: {"bad key!": x}}, spec: {accessModes: [ReadWriteOnce], resources: {}}}}}], containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.volumes[0].ephemeral.volumeClaimTemplate.spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes",
		"template.spec.volumes[0].ephemeral.volumeClaimTemplate.spec.resources[storage]: Invalid value: \"0\": must be greater than zero",
		"template.spec.volumes[0].ephemeral.volumeClaimTemplate.spec.storageClassName: Invalid value: \"Bad_Class\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
		"template.spec.volumes[0].ephemeral.volumeClaimTemplate.spec.volumeMode: Unsupported value: \"Bogus\": supported values: \"Block\", \"Filesystem\"",
		"template.spec.volumes[0].ephemeral.volumeClaimTemplate.spec.dataSource: Invalid value: \"Snapshot\": must be 'PersistentVolumeClaim' when referencing the default apiGroup",
		"template.spec.volumes[0].ephemeral.volumeClaimTemplate.spec: Invalid value: field.Path{name:\"dataSource\", index:\"\", parent:(*field.Path)(0x229cee372750)}: must match dataSourceRef",
		"template.spec.volumes[1].ephemeral.volumeClaimTemplate.metadata.labels: Invalid value: \"bad key!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
		"template.spec.volumes[1].ephemeral.volumeClaimTemplate.spec.resources[storage]: Required value",
	}},
	{"env value sources", `spec: {containers: [{name: c, image: busybox, env: [{name: a, valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: 1Mi}}}, {name: b, valueFrom: {configMapKeyRef: {name: Bad_Name, key: ""}}}, {name: d, valueFrom: {fieldRef: {apiVersion: v2, fieldPath: metadata.name}}}, {name: e, valueFrom: {fieldRef: {fieldPath: "metadata.name['x']"}}}, {name: f, valueFrom: {fieldRef: {fieldPath: "status.hostIPs"}}}, {name: g, valueFrom: {resourceFieldRef: {resource: requests.hugepages-2Mi, divisor: 3m}}}]}]}`, []string{
		"template.spec.containers[0].env[0].valueFrom.resourceFieldRef.divisor: Invalid value: \"limits.cpu\": only divisor's values 1m and 1 are supported with the cpu resource",
		"template.spec.containers[0].env[1].valueFrom.configMapKeyRef.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
		"template.spec.containers[0].env[1].valueFrom.configMapKeyRef.key: Required value",
		"template.spec.containers[0].env[2].valueFrom.fieldRef.fieldPath: Invalid value: \"metadata.name\": error converting fieldPath: unsupported pod version: v2",
		"template.spec.containers[0].env[3].valueFrom.fieldRef.fieldPath: Invalid value: \"metadata.name['x']\": error converting fieldPath: field label does not support subscript: metadata.name['x']",
		"template.spec.containers[0].env[5].valueFrom.resourceFieldRef.divisor: Invalid value: \"requests.hugepages-2Mi\": only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the hugepages resource",
	}},
	{"probe numbers and ports", `spec: {containers: [{name: c, image: busybox, livenessProbe: {grpc: {port: 70000}, timeoutSeconds: -1, periodSeconds: -1, failureThreshold: -1, terminationGracePeriodSeconds: 0}, readinessProbe: {httpGet: {port: bad_port_name_too_long}}}]}`, []string{
		"template.spec.containers[0].livenessProbe.grpc.port: Invalid value: 70000: must be between 1 and 65535, inclusive",
		"template.spec.containers[0].livenessProbe.timeoutSeconds: Invalid value: -1: must be greater than or equal to 0",
		"template.spec.containers[0].livenessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0",
		"template.spec.containers[0].livenessProbe.failureThreshold: Invalid value: -1: must be greater than or equal to 0",
		"template.spec.containers[0].livenessProbe.terminationGracePeriodSeconds: Invalid value: 0: must be greater than 0",
		"template.spec.containers[0].readinessProbe.httpGet.port: Invalid value: \"bad_port_name_too_long\": must be no more than 15 characters",
		"template.spec.containers[0].readinessProbe.httpGet.port: Invalid value: \"bad_port_name_too_long\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
	}},
	{"too many DNS searches", `spec: {dnsConfig: {searches: [a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, a33]}, containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.dnsConfig.searches: Invalid value: []string{\"a1\", \"a2\", \"a3\", \"a4\", \"a5\", \"a6\", \"a7\", \"a8\", \"a9\", \"a10\", \"a11\", \"a12\", \"a13\", \"a14\", \"a15\", \"a16\", \"a17\", \"a18\", \"a19\", \"a20\", \"a21\", \"a22\", \"a23\", \"a24\", \"a25\", \"a26\", \"a27\", \"a28\", \"a29\", \"a30\", \"a31\", \"a32\", \"a33\"}: must not have more than 32 search paths",
	}},
	{"spread policies and repeats", `spec: {topologySpreadConstraints: [{maxSkew: 1, topologyKey: k, whenUnsatisfiable: DoNotSchedule, nodeAffinityPolicy: Bogus, nodeTaintsPolicy: Honor, labelSelector: {}}, {maxSkew: 1, topologyKey: k, whenUnsatisfiable: DoNotSchedule, minDomains: 0, labelSelector: {}}], containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}: Duplicate value: \"{k, DoNotSchedule}\"",
		"template.spec.topologySpreadConstraints[0].nodeAffinityPolicy: Unsupported value: \"Bogus\": supported values: \"Honor\", \"Ignore\"",
		"template.spec.topologySpreadConstraints[1].minDomains: Invalid value: 0: must be greater than zero",
	}},
	{"fields of disabled gates", `spec: {resourceClaims: [{name: "Bad Claim"}], hostUsers: false, hostNetwork: true, affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: k, matchLabelKeys: ["bad key!"]}]}}, containers: [{name: c, image: busybox, resizePolicy: [{resourceName: bogus}], securityContext: {procMount: Bogus}, resources: {claims: [{name: x}]}}]}`, nil},
	{"toleration operators", `spec: {containers: [{name: c, image: busybox}], tolerations: [{key: k, operator: Bogus}, {operator: Equal}, {key: k, operator: Exists, value: v}, {key: k, effect: NoSchedule, tolerationSeconds: 5}, {key: k, effect: Bogus}]}`, []string{
		"template.spec.tolerations[0].operator: Unsupported value: \"Bogus\": supported values: \"Equal\", \"Exists\"",
		"template.spec.tolerations[1].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
		"template.spec.tolerations[2].operator: Invalid value: core.Toleration{Key:\"k\", Operator:\"Exists\", Value:\"v\", Effect:\"\", TolerationSeconds:(*int64)(nil)}: value must be empty when `operator` is 'Exists'",
		"template.spec.tolerations[3].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set",
		"template.spec.tolerations[4].effect: Unsupported value: \"Bogus\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"",
	}},
	{"nodeSelector keys and values", `spec: {containers: [{name: c, image: busybox}], nodeSelector: {"bad key!": x}}`, []string{
		"template.spec.nodeSelector: Invalid value: \"bad key!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
	}},
	{"runAsUser -1", `spec: {securityContext: {runAsUser: -1, fsGroup: -2, supplementalGroups: [-3]}, containers: [{name: c, image: busybox, securityContext: {runAsUser: -1, runAsGroup: -1}}]}`, []string{
		"template.spec.containers[0].securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive",
		"template.spec.containers[0].securityContext.runAsGroup: Invalid value: -1: must be between 0 and 2147483647, inclusive",
		"template.spec.securityContext.fsGroup: Invalid value: -2: must be between 0 and 2147483647, inclusive",
		"template.spec.securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive",
		"template.spec.securityContext.supplementalGroups[0]: Invalid value: -3: must be between 0 and 2147483647, inclusive",
	}},
	{"uppercase hostname and subdomain", `spec: {hostname: Foo, subdomain: a.b, containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.hostname: Invalid value: \"Foo\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
		"template.spec.subdomain: Invalid value: \"a.b\": must not contain dots",
	}},
	{"probe with no handler", `spec: {containers: [{name: c, image: busybox, livenessProbe: {}, readinessProbe: {exec: {command: [x]}, httpGet: {port: 80}, terminationGracePeriodSeconds: 5}, startupProbe: {tcpSocket: {port: 0}, successThreshold: 2, initialDelaySeconds: -1}}]}`, []string{
		"template.spec.containers[0].livenessProbe: Required value: must specify a handler type",
		"template.spec.containers[0].readinessProbe.httpGet: Forbidden: may not specify more than 1 handler type",
		"template.spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must not be set for readinessProbes",
		"template.spec.containers[0].startupProbe.tcpSocket.port: Invalid value: 0: must be between 1 and 65535, inclusive",
		"template.spec.containers[0].startupProbe.initialDelaySeconds: Invalid value: -1: must be greater than or equal to 0",
		"template.spec.containers[0].startupProbe.successThreshold: Invalid value: 2: must be 1",
	}},
	{"lifecycle hooks", `spec: {containers: [{name: c, image: busybox, lifecycle: {postStart: {httpGet: {port: bad_name}}, preStop: {}}}]}`, []string{
		"template.spec.containers[0].lifecycle.postStart.httpGet.port: Invalid value: \"bad_name\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
		"template.spec.containers[0].lifecycle.preStop: Required value: must specify a handler type",
	}},
	{"sleep hook of a disabled gate", `spec: {containers: [{name: c, image: busybox, lifecycle: {preStop: {sleep: {seconds: 5}}}}]}`, []string{
		"template.spec.containers[0].lifecycle.preStop: Required value: must specify a handler type",
	}},
	{"init containers without restartPolicy Always", `spec: {initContainers: [{name: i, image: busybox, livenessProbe: {exec: {command: [x]}}, lifecycle: {preStop: {exec: {command: [x]}}}}], containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.initContainers[0].lifecycle: Forbidden: may not be set for init containers without restartPolicy=Always",
		"template.spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
	}},
	{"sidecar init container", `spec: {initContainers: [{name: i, image: busybox, restartPolicy: Always, readinessProbe: {exec: {command: [x]}}}], containers: [{name: c, image: busybox}]}`, nil},
	{"restartPolicy on containers", `spec: {initContainers: [{name: i, image: busybox, restartPolicy: Never}], containers: [{name: c, image: busybox, restartPolicy: Always}]}`, []string{
		"template.spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers",
		"template.spec.initContainers[0].restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
	}},
	{"ephemeral containers", `spec: {containers: [{name: c, image: busybox}], ephemeralContainers: [{name: e, image: busybox, targetContainerName: x, ports: [{containerPort: 80}]}]}`, []string{
		"template.spec.ephemeralContainers[0].targetContainerName: Not found: \"x\"",
		"template.spec.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container",
		"template.spec.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template",
	}},
	{"ports", `spec: {containers: [{name: c, image: busybox, ports: [{containerPort: 0, name: a}, {containerPort: 70000, hostPort: -1, name: a}, {containerPort: 80, protocol: Bogus, name: Bad_Name}, {containerPort: 81, hostPort: 81}, {containerPort: 82, hostPort: 81}]}]}`, []string{
		"template.spec.containers[0].ports[0].containerPort: Required value",
		"template.spec.containers[0].ports[1].name: Duplicate value: \"a\"",
		"template.spec.containers[0].ports[1].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
		"template.spec.containers[0].ports[1].hostPort: Invalid value: -1: must be between 1 and 65535, inclusive",
		"template.spec.containers[0].ports[2].name: Invalid value: \"Bad_Name\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
		"template.spec.containers[0].ports[2].protocol: Unsupported value: \"Bogus\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
		"template.spec.containers[0].ports[4].hostPort: Duplicate value: \"TCP//81\"",
	}},
	{"env", `spec: {containers: [{name: c, image: busybox, env: [{name: ""}, {name: "1x"}, {name: a, value: v, valueFrom: {fieldRef: {fieldPath: metadata.name}}}, {name: b, valueFrom: {}}, {name: d, valueFrom: {fieldRef: {fieldPath: spec.bogus}}}, {name: e, valueFrom: {resourceFieldRef: {resource: limits.bogus}}}, {name: f, valueFrom: {secretKeyRef: {name: s, key: "bad key"}, configMapKeyRef: {name: m, key: k}}}]}]}`, []string{
		"template.spec.containers[0].env[0].name: Required value",
		"template.spec.containers[0].env[1].name: Invalid value: \"1x\": a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')",
		"template.spec.containers[0].env[2].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty",
		"template.spec.containers[0].env[3].valueFrom: Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
		"template.spec.containers[0].env[4].valueFrom.fieldRef.fieldPath: Invalid value: \"spec.bogus\": error converting fieldPath: field label not supported: spec.bogus",
		"template.spec.containers[0].env[5].valueFrom.resourceFieldRef.resource: Unsupported value: \"limits.bogus\": supported values: \"limits.cpu\", \"limits.ephemeral-storage\", \"limits.memory\", \"requests.cpu\", \"requests.ephemeral-storage\", \"requests.memory\"",
		"template.spec.containers[0].env[6].valueFrom.secretKeyRef.key: Invalid value: \"bad key\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
		"template.spec.containers[0].env[6].valueFrom: Invalid value: \"\": may not have more than one field specified at a time",
	}},
	{"envFrom", `spec: {containers: [{name: c, image: busybox, envFrom: [{prefix: "1"}, {configMapRef: {name: m}, secretRef: {name: s}}]}]}`, []string{
		"template.spec.containers[0].envFrom[0].prefix: Invalid value: \"1\": a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')",
		"template.spec.containers[0].envFrom: Invalid value: \"\": must specify one of: `configMapRef` or `secretRef`",
		"template.spec.containers[0].envFrom: Invalid value: \"\": may not have more than one field specified at a time",
	}},
	{"pull and termination policies", `spec: {containers: [{name: c, image: busybox, imagePullPolicy: Sometimes, terminationMessagePolicy: Bogus}]}`, []string{
		"template.spec.containers[0].terminationMessagePolicy: Unsupported value: \"Bogus\": supported values: \"File\", \"FallbackToLogsOnError\"",
		"template.spec.containers[0].imagePullPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\"",
	}},
	{"restart and dns policies", `spec: {restartPolicy: Sometimes, dnsPolicy: Bogus, containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
		"template.spec.dnsPolicy: Unsupported value: \"Bogus\": supported values: \"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\"",
	}},
	{"dnsPolicy None without config", `spec: {dnsPolicy: None, containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None",
	}},
	{"dnsConfig", `spec: {dnsConfig: {nameservers: [a, 1.1.1.1, 2.2.2.2, 3.3.3.3], searches: [Bad_Domain], options: [{value: x}]}, containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.dnsConfig.nameservers: Invalid value: []string{\"a\", \"1.1.1.1\", \"2.2.2.2\", \"3.3.3.3\"}: must not have more than 3 nameservers",
		"template.spec.dnsConfig.nameservers[0]: Invalid value: \"a\": must be valid IP address",
		"template.spec.dnsConfig.searches[0]: Invalid value: \"Bad_Domain\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
		"template.spec.dnsConfig.options[0]: Required value: must not be empty",
	}},
	{"hostAliases", `spec: {hostAliases: [{ip: bogus, hostnames: [Bad_Host]}], containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.hostAliases.ip: Invalid value: \"bogus\": must be valid IP address",
		"template.spec.hostAliases.hostnames: Invalid value: \"Bad_Host\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
	}},
	{"affinity", `spec: {affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: k, operator: In}, {key: k, operator: Bogus}], matchFields: [{key: bogus, operator: In, values: [a]}]}]}, preferredDuringSchedulingIgnoredDuringExecution: [{weight: 0, preference: {}}]}, podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: ""}]}, podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 101, podAffinityTerm: {topologyKey: k, labelSelector: {matchLabels: {"bad key!": x}}}}]}}, containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
		"template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1].operator: Invalid value: \"Bogus\": not a valid selector operator",
		"template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].key: Invalid value: \"bogus\": not a valid field selector key",
		"template.spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100",
		"template.spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty",
		"template.spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Invalid value: \"\": name part must be non-empty",
		"template.spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
		"template.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 101: must be in the range 1-100",
		"template.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.labelSelector.matchLabels: Invalid value: \"bad key!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
	}},
	{"empty node selector", `spec: {affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: []}}}, containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value: must have at least one node selector term",
	}},
	{"topology spread constraints", `spec: {topologySpreadConstraints: [{maxSkew: 0, topologyKey: "", whenUnsatisfiable: Bogus}, {maxSkew: 1, topologyKey: k, whenUnsatisfiable: ScheduleAnyway, minDomains: 2, labelSelector: {}}, {maxSkew: 1, topologyKey: k, whenUnsatisfiable: ScheduleAnyway, matchLabelKeys: [a]}], containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero",
		"template.spec.topologySpreadConstraints[0].topologyKey: Required value: can not be empty",
		"template.spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: \"Bogus\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\"",
		"template.spec.topologySpreadConstraints[1].{topologyKey, whenUnsatisfiable}: Duplicate value: \"{k, ScheduleAnyway}\"",
		"template.spec.topologySpreadConstraints[1].minDomains: Invalid value: 2: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway",
		"template.spec.topologySpreadConstraints[2].matchLabelKeys: Forbidden: must not be specified when labelSelector is not set",
	}},
	{"priority, preemption, runtime class", `spec: {priorityClassName: Bad_Class, preemptionPolicy: Sometimes, runtimeClassName: Bad_Class, containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.priorityClassName: Invalid value: \"Bad_Class\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
		"template.spec.runtimeClassName: Invalid value: \"Bad_Class\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
		"template.spec.preemptionPolicy: Unsupported value: \"Sometimes\": supported values: \"PreemptLowerPriority\", \"Never\"",
	}},
	{"readiness and scheduling gates", `spec: {readinessGates: [{conditionType: "bad type!"}], schedulingGates: [{name: a}, {name: a}, {name: "b c"}], containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.readinessGates[0].conditionType: Invalid value: \"bad type!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
		"template.spec.schedulingGates[1]: Duplicate value: \"a\"",
		"template.spec.schedulingGates[2]: Invalid value: \"b c\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
	}},
	{"overhead", `spec: {overhead: {cpu: "-1"}, containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.overhead.limits[cpu]: Invalid value: \"-1\": must be greater than or equal to 0",
	}},
	{"os", `spec: {os: {name: plan9}, containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.os: Unsupported value: \"plan9\": supported values: \"linux\", \"windows\"",
	}},
	{"linux pod with windows options", `spec: {os: {name: linux}, securityContext: {windowsOptions: {runAsUserName: x}}, containers: [{name: c, image: busybox, securityContext: {windowsOptions: {}}}]}`, []string{
		"template.spec.securityContext.windowsOptions: Forbidden: windows options cannot be set for a linux pod",
		"template.spec.containers[0].securityContext.windowsOptions: Forbidden: windows options cannot be set for a linux pod",
	}},
	{"windows pod with linux options", `spec: {os: {name: windows}, hostPID: true, securityContext: {runAsUser: 1, seLinuxOptions: {}}, containers: [{name: c, image: busybox, securityContext: {privileged: false, capabilities: {}}}]}`, []string{
		"template.spec.securityContext.seLinuxOptions: Forbidden: cannot be set for a windows pod",
		"template.spec.hostPID: Forbidden: cannot be set for a windows pod",
		"template.spec.securityContext.runAsUser: Forbidden: cannot be set for a windows pod",
		"template.spec.containers[0].securityContext.capabilities: Forbidden: cannot be set for a windows pod",
		"template.spec.containers[0].securityContext.privileged: Forbidden: cannot be set for a windows pod",
	}},
	{"windows options", `spec: {securityContext: {windowsOptions: {gmsaCredentialSpecName: Bad_Name, gmsaCredentialSpec: "", runAsUserName: "a\\b\\c"}}, containers: [{name: c, image: busybox, securityContext: {windowsOptions: {runAsUserName: "dom\\user:x"}}}]}`, []string{
		"template.spec.containers[0].securityContext.windowsOptions.runAsUserName: Invalid value: \"dom\\\\user:x\": runAsUserName's User cannot contain the following characters: \"/\\:;|=,+*?<>@[]",
		"template.spec.securityContext.windowsOptions.gmsaCredentialSpecName: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
		"template.spec.securityContext.windowsOptions.gmsaCredentialSpec: Invalid value: \"\": gmsaCredentialSpec cannot be an empty string",
		"template.spec.securityContext.windowsOptions.runAsUserName: Invalid value: \"a\\\\b\\\\c\": runAsUserName cannot contain more than one backslash",
	}},
	{"host process", `spec: {securityContext: {windowsOptions: {hostProcess: true}}, containers: [{name: c, image: busybox}, {name: d, image: busybox, securityContext: {windowsOptions: {hostProcess: false}}}]}`, []string{
		"template.spec.containers[1].securityContext.windowsOptions.hostProcess: Invalid value: false: pod hostProcess value must be identical if both are specified, was true",
		"template.spec: Invalid value: \"\": If pod contains any hostProcess containers then all containers must be HostProcess containers",
		"template.spec.hostNetwork: Invalid value: false: hostNetwork must be true if pod contains any hostProcess containers",
		"template.spec: Forbidden: hostProcess containers are disallowed by cluster policy",
	}},
	{"privileged and escalation", `spec: {containers: [{name: c, image: busybox, securityContext: {privileged: true}}, {name: d, image: busybox, securityContext: {allowPrivilegeEscalation: false, capabilities: {add: [CAP_SYS_ADMIN]}}}]}`, []string{
		"template.spec.containers[0].securityContext.privileged: Forbidden: disallowed by cluster policy",
		"template.spec.containers[1].securityContext: Invalid value: core.SecurityContext{Capabilities:(*core.Capabilities)(0x229cee0b33e0), Privileged:(*bool)(nil), SELinuxOptions:(*core.SELinuxOptions)(nil), WindowsOptions:(*core.WindowsSecurityContextOptions)(nil), RunAsUser:(*int64)(nil), RunAsGroup:(*int64)(nil), RunAsNonRoot:(*bool)(nil), ReadOnlyRootFilesystem:(*bool)(nil), AllowPrivilegeEscalation:(*bool)(0x229ce97c70cd), ProcMount:(*core.ProcMountType)(nil), SeccompProfile:(*core.SeccompProfile)(nil)}: cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
	}},
	{"seccomp", `spec: {securityContext: {seccompProfile: {type: Localhost}}, containers: [{name: c, image: busybox, securityContext: {seccompProfile: {type: Bogus}}}, {name: d, image: busybox, securityContext: {seccompProfile: {}}}]}`, []string{
		"template.spec.containers[0].securityContext.seccompProfile.type: Unsupported value: \"Bogus\": supported values: \"Localhost\", \"RuntimeDefault\", \"Unconfined\"",
		"template.spec.containers[1].securityContext.seccompProfile.type: Required value: type is required when seccompProfile is set",
		"template.spec.securityContext.seccompProfile.localhostProfile: Required value: must be set when seccomp type is Localhost",
	}},
	{"seccomp annotations", `{metadata: {annotations: {seccomp.security.alpha.kubernetes.io/pod: bogus, container.seccomp.security.alpha.kubernetes.io/c: unconfined}}, spec: {containers: [{name: c, image: busybox, securityContext: {seccompProfile: {type: RuntimeDefault}}}]}}`, []string{
		"template.annotations.seccomp.security.alpha.kubernetes.io/pod: Invalid value: \"bogus\": must be a valid seccomp profile",
		"template.spec.containers[0].securityContext.seccompProfile.type: Forbidden: seccomp type in annotation and field must match",
	}},
	{"apparmor annotation", `{metadata: {annotations: {container.apparmor.security.beta.kubernetes.io/x: bogus}}, spec: {containers: [{name: c, image: busybox}]}}`, []string{
		"template.annotations[container.apparmor.security.beta.kubernetes.io/x]: Invalid value: \"x\": container not found",
		"template.annotations[container.apparmor.security.beta.kubernetes.io/x]: Invalid value: \"bogus\": invalid AppArmor profile name: \"bogus\"",
	}},
	{"deletion cost and tolerations annotations", `{metadata: {annotations: {controller.kubernetes.io/pod-deletion-cost: "+1", scheduler.alpha.kubernetes.io/tolerations: "[{\"operator\": \"Bogus\"}]"}}, spec: {containers: [{name: c, image: busybox}]}}`, []string{
		"template.annotations.scheduler.alpha.kubernetes.io/tolerations[0].operator: Invalid value: \"Bogus\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
		"template.annotations.scheduler.alpha.kubernetes.io/tolerations[0].operator: Unsupported value: \"Bogus\": supported values: \"Equal\", \"Exists\"",
		"template.annotations[controller.kubernetes.io/pod-deletion-cost]: Invalid value: \"+1\": must be a 32bit integer",
	}},
	{"sysctls", `spec: {hostNetwork: true, securityContext: {sysctls: [{name: ""}, {name: "Bad"}, {name: net.core.somaxconn, value: "1"}, {name: kernel.msgmax}, {name: kernel.msgmax}]}, containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.securityContext.sysctls[0].name: Required value",
		"template.spec.securityContext.sysctls[1].name: Invalid value: \"Bad\": must have at most 253 characters and match regex ^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$",
		"template.spec.securityContext.sysctls[2].name: Invalid value: \"net.core.somaxconn\": may not be specified when 'hostNetwork' is true",
		"template.spec.securityContext.sysctls[4].name: Duplicate value: \"kernel.msgmax\"",
	}},
	{"host network ports", `spec: {hostNetwork: true, containers: [{name: c, image: busybox, ports: [{containerPort: 80}, {containerPort: 81, hostPort: 82}]}]}`, []string{
		"template.spec.containers[0].ports[1].hostPort: Invalid value: 82: must match `containerPort` when `hostNetwork` is true",
	}},
	{"share process namespace with hostPID", `spec: {hostPID: true, shareProcessNamespace: true, containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.securityContext.shareProcessNamespace: Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled",
	}},
	{"activeDeadlineSeconds 0", `spec: {activeDeadlineSeconds: 0, containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive",
	}},
	{"negative terminationGracePeriodSeconds", `spec: {terminationGracePeriodSeconds: -5, containers: [{name: c, image: busybox}]}`, nil},
	{"serviceAccountName and nodeName", `spec: {serviceAccountName: Bad_SA, nodeName: Bad_Node, containers: [{name: c, image: busybox}]}`, []string{
		"template.spec.serviceAccountName: Invalid value: \"Bad_SA\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
		"template.spec.nodeName: Invalid value: \"Bad_Node\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
	}},
	{"template label value", `{metadata: {labels: {k: "bad value!"}}, spec: {containers: [{name: c, image: busybox}]}}`, []string{
		"template.labels: Invalid value: \"bad value!\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
	}},
	{"template labels and annotations", `{metadata: {labels: {"bad key!": x}, annotations: {"bad key!": x}}, spec: {containers: [{name: c, image: busybox}]}}`, []string{
		"template.labels: Invalid value: \"bad key!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
		"template.annotations: Invalid value: \"bad key!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
	}},
	{"volume devices", `spec: {volumes: [{name: e, emptyDir: {}}, {name: p, persistentVolumeClaim: {claimName: x}}], containers: [{name: c, image: busybox, volumeDevices: [{name: e, devicePath: /dev/a}, {name: p, devicePath: /dev/../b}, {name: q, devicePath: ""}], volumeMounts: [{name: p, mountPath: /dev/a}]}]}`, []string{
		"template.spec.containers[0].volumeMounts[0].name: Invalid value: \"p\": must not already exist in volumeDevices",
		"template.spec.containers[0].volumeMounts[0].mountPath: Invalid value: \"/dev/a\": must not already exist as a path in volumeDevices",
		"template.spec.containers[0].volumeDevices[0].name: Invalid value: \"e\": can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode",
		"template.spec.containers[0].volumeDevices[0].devicePath: Invalid value: \"/dev/a\": must not already exist as a path in volumeMounts",
		"template.spec.containers[0].volumeDevices[1].devicePath: Invalid value: \"/dev/../b\": can not contain backsteps ('..')",
		"template.spec.containers[0].volumeDevices[1].name: Invalid value: \"p\": must not already exist in volumeMounts",
		"template.spec.containers[0].volumeDevices[2].name: Not found: \"q\"",
		"template.spec.containers[0].volumeDevices[2].devicePath: Required value",
	}},
	{"http headers and schemes", `spec: {containers: [{name: c, image: busybox, livenessProbe: {httpGet: {port: 80, scheme: FTP, httpHeaders: [{name: "bad header", value: x}]}}}]}`, []string{
		"template.spec.containers[0].livenessProbe.httpGet.scheme: Unsupported value: \"FTP\": supported values: \"HTTP\", \"HTTPS\"",
		"template.spec.containers[0].livenessProbe.httpGet.httpHeaders: Invalid value: \"bad header\": a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')",
	}},
}

// addresses are the pointers some of kube's messages print.
var addresses = regexp.MustCompile(`0x[0-9a-f]+`)

// sameErrors compares error lists but for the addresses in them.
func sameErrors(a, b []string) bool {
	return addresses.ReplaceAllString(joinLines(a), "0x") == addresses.ReplaceAllString(joinLines(b), "0x")
}

// fieldErrors renders errors as kube's Status causes render them.
func fieldErrors(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field+": "+e.ErrorBody())
	}
	return out
}

func parseTemplate(t *testing.T, text string) *corev1.PodTemplateSpec {
	t.Helper()
	var tmpl corev1.PodTemplateSpec
	if err := yaml.UnmarshalStrict([]byte(text), &tmpl); err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	return &tmpl
}

func TestValidateTemplate_AnswersAsKube(t *testing.T) {
	ref := referenceServer(t)
	for _, tc := range templateCases {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := parseTemplate(t, tc.yaml)
			sent := tmpl.DeepCopy()
			DefaultTemplate(tmpl)
			DropDisabledFields(&tmpl.Spec, nil)
			got := fieldErrors(ValidateTemplate(tmpl, field.NewPath("template"), TemplateOptions(nil)))
			if !sameErrors(got, tc.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", joinLines(got), joinLines(tc.want))
			}
			if ref == nil {
				return
			}
			kube, _ := ref.podTemplate(t, sent)
			if !sameErrors(kube, tc.want) {
				t.Errorf("kube-apiserver answers:\n%s\nwant:\n%s", joinLines(kube), joinLines(tc.want))
			}
		})
	}
}

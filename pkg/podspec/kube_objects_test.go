package podspec

// Objects defaulted by kube-apiserver v1.29.15 (kubectl create
// --dry-run=server -o yaml), for the defaulting tests.

// kubeTemplateIn is a pod template exercising every default; a
// PodTemplate holding it comes back from kube with kubeTemplateOut.
const kubeTemplateIn = `
spec:
  containers:
  - env:
    - name: A
      valueFrom:
        fieldRef: {fieldPath: metadata.name}
    image: Busybox
    lifecycle:
      postStart:
        exec:
          command: [x]
      preStop:
        httpGet: {port: 80}
    livenessProbe:
      httpGet: {port: 80}
    name: c
    ports:
    - {containerPort: 80}
    readinessProbe:
      grpc: {port: 80}
    resources:
      limits: {memory: 1Gi}
      requests: {cpu: 50m}
    startupProbe:
      periodSeconds: 3
      tcpSocket: {port: 80}
  - {image: 'registry.example.com:5000/team/app@sha256:0000000000000000000000000000000000000000000000000000000000000000', name: d}
  - {image: 'busybox:latest', name: e}
  hostNetwork: true
  initContainers:
  - image: busybox:1.36
    name: i
    resources:
      limits: {cpu: '0.0001'}
  overhead: {cpu: '0.0001'}
  serviceAccount: legacy
  volumes:
  - {name: v0}
  - name: v1
    secret: {secretName: s}
  - configMap: {name: c}
    name: v2
  - downwardAPI:
      items:
      - fieldRef: {fieldPath: metadata.name}
        path: x
    name: v3
  - name: v4
    projected:
      sources:
      - serviceAccountToken: {path: t}
  - ephemeral:
      volumeClaimTemplate:
        spec:
          accessModes: [ReadWriteOnce]
          resources:
            requests: {storage: 1Gi}
    name: v5
  - hostPath: {path: /tmp}
    name: v6
  - iscsi: {iqn: 'iqn.2001-04.com.example:storage', lun: 0, targetPortal: '1.2.3.4:3260'}
    name: v7
  - name: v8
    rbd:
      image: i
      monitors: [m]
  - azureDisk: {diskName: d, diskURI: 'https://a.blob.core.windows.net/c/d.vhd'}
    name: v9
  - name: v10
    scaleIO:
      gateway: g
      secretRef: {name: x}
      system: s
      volumeName: v
`

const kubeTemplateOut = `
metadata: {creationTimestamp: null}
spec:
  containers:
  - env:
    - name: A
      valueFrom:
        fieldRef: {apiVersion: v1, fieldPath: metadata.name}
    image: Busybox
    imagePullPolicy: IfNotPresent
    lifecycle:
      postStart:
        exec:
          command: [x]
      preStop:
        httpGet: {path: /, port: 80, scheme: HTTP}
    livenessProbe:
      failureThreshold: 3
      httpGet: {path: /, port: 80, scheme: HTTP}
      periodSeconds: 10
      successThreshold: 1
      timeoutSeconds: 1
    name: c
    ports:
    - {containerPort: 80, protocol: TCP}
    readinessProbe:
      failureThreshold: 3
      grpc: {port: 80, service: ''}
      periodSeconds: 10
      successThreshold: 1
      timeoutSeconds: 1
    resources:
      limits: {memory: 1Gi}
      requests: {cpu: 50m}
    startupProbe:
      failureThreshold: 3
      periodSeconds: 3
      successThreshold: 1
      tcpSocket: {port: 80}
      timeoutSeconds: 1
    terminationMessagePath: /dev/termination-log
    terminationMessagePolicy: File
  - image: registry.example.com:5000/team/app@sha256:0000000000000000000000000000000000000000000000000000000000000000
    imagePullPolicy: IfNotPresent
    name: d
    resources: {}
    terminationMessagePath: /dev/termination-log
    terminationMessagePolicy: File
  - image: busybox:latest
    imagePullPolicy: Always
    name: e
    resources: {}
    terminationMessagePath: /dev/termination-log
    terminationMessagePolicy: File
  dnsPolicy: ClusterFirst
  hostNetwork: true
  initContainers:
  - image: busybox:1.36
    imagePullPolicy: IfNotPresent
    name: i
    resources:
      limits: {cpu: 1m}
    terminationMessagePath: /dev/termination-log
    terminationMessagePolicy: File
  overhead: {cpu: 1m}
  restartPolicy: Always
  schedulerName: default-scheduler
  securityContext: {}
  serviceAccount: legacy
  serviceAccountName: legacy
  terminationGracePeriodSeconds: 30
  volumes:
  - emptyDir: {}
    name: v0
  - name: v1
    secret: {defaultMode: 420, secretName: s}
  - configMap: {defaultMode: 420, name: c}
    name: v2
  - downwardAPI:
      defaultMode: 420
      items:
      - fieldRef: {apiVersion: v1, fieldPath: metadata.name}
        path: x
    name: v3
  - name: v4
    projected:
      defaultMode: 420
      sources:
      - serviceAccountToken: {expirationSeconds: 3600, path: t}
  - ephemeral:
      volumeClaimTemplate:
        metadata: {creationTimestamp: null}
        spec:
          accessModes: [ReadWriteOnce]
          resources:
            requests: {storage: 1Gi}
          volumeMode: Filesystem
    name: v5
  - hostPath: {path: /tmp, type: ''}
    name: v6
  - iscsi: {iqn: 'iqn.2001-04.com.example:storage', iscsiInterface: default, lun: 0, targetPortal: '1.2.3.4:3260'}
    name: v7
  - name: v8
    rbd:
      image: i
      keyring: /etc/ceph/keyring
      monitors: [m]
      pool: rbd
      user: admin
  - azureDisk: {cachingMode: ReadWrite, diskName: d, diskURI: 'https://a.blob.core.windows.net/c/d.vhd', fsType: ext4, kind: Shared, readOnly: false}
    name: v9
  - name: v10
    scaleIO:
      fsType: xfs
      gateway: g
      secretRef: {name: x}
      storageMode: ThinProvisioned
      system: s
      volumeName: v

`

// kubePodIn is a Pod exercising the defaults only a Pod gets; kube gives
// it kubePodOut's spec (the service account admission plugin's token
// volume, the tolerations and priority other plugins add are left out).
const kubePodIn = `
metadata:
  annotations: {keep: x, pod.beta.kubernetes.io/init-containers: '[]'}
  name: p1
spec:
  containers:
  - image: Busybox
    lifecycle:
      preStop:
        httpGet: {port: 80}
    livenessProbe:
      httpGet: {port: 80}
    name: c
    ports:
    - {containerPort: 80}
    readinessProbe:
      grpc: {port: 80}
    resources:
      limits: {cpu: 100m, memory: 1Gi}
      requests: {cpu: 50m}
  - {image: 'busybox:latest@sha256:0000000000000000000000000000000000000000000000000000000000000000', name: d}
  - {image: 'localhost:5000/x', name: e}
  hostNetwork: true
  initContainers:
  - image: busybox@sha256:0000000000000000000000000000000000000000000000000000000000000000
    name: i
    resources:
      limits: {cpu: '0.0001'}
  serviceAccount: legacy
  terminationGracePeriodSeconds: -5
  volumes:
  - {name: v0}
  - name: v1
    secret: {secretName: s}
  - name: v2
    projected:
      sources:
      - serviceAccountToken: {path: t}
      - downwardAPI:
          items:
          - fieldRef: {fieldPath: metadata.name}
            path: x
  - ephemeral:
      volumeClaimTemplate:
        spec:
          accessModes: [ReadWriteOnce]
          resources:
            requests: {storage: 1.5m}
    name: v3
  - hostPath: {path: /tmp}
    name: v4
`

const kubePodOut = `
metadata:
  annotations: {keep: x}
  name: p1
spec:
  containers:
  - image: Busybox
    imagePullPolicy: IfNotPresent
    lifecycle:
      preStop:
        httpGet: {path: /, port: 80, scheme: HTTP}
    livenessProbe:
      failureThreshold: 3
      httpGet: {path: /, port: 80, scheme: HTTP}
      periodSeconds: 10
      successThreshold: 1
      timeoutSeconds: 1
    name: c
    ports:
    - {containerPort: 80, hostPort: 80, protocol: TCP}
    readinessProbe:
      failureThreshold: 3
      grpc: {port: 80, service: ''}
      periodSeconds: 10
      successThreshold: 1
      timeoutSeconds: 1
    resources:
      limits: {cpu: 100m, memory: 1Gi}
      requests: {cpu: 50m, memory: 1Gi}
    terminationMessagePath: /dev/termination-log
    terminationMessagePolicy: File
  - image: busybox:latest@sha256:0000000000000000000000000000000000000000000000000000000000000000
    imagePullPolicy: Always
    name: d
    resources: {}
    terminationMessagePath: /dev/termination-log
    terminationMessagePolicy: File
  - image: localhost:5000/x
    imagePullPolicy: Always
    name: e
    resources: {}
    terminationMessagePath: /dev/termination-log
    terminationMessagePolicy: File
  dnsPolicy: ClusterFirst
  enableServiceLinks: true
  hostNetwork: true
  initContainers:
  - image: busybox@sha256:0000000000000000000000000000000000000000000000000000000000000000
    imagePullPolicy: IfNotPresent
    name: i
    resources:
      limits: {cpu: 1m}
      requests: {cpu: 1m}
    terminationMessagePath: /dev/termination-log
    terminationMessagePolicy: File
  restartPolicy: Always
  schedulerName: default-scheduler
  securityContext: {}
  serviceAccount: legacy
  serviceAccountName: legacy
  terminationGracePeriodSeconds: 1
  volumes:
  - emptyDir: {}
    name: v0
  - name: v1
    secret: {defaultMode: 420, secretName: s}
  - name: v2
    projected:
      defaultMode: 420
      sources:
      - serviceAccountToken: {expirationSeconds: 3600, path: t}
      - downwardAPI:
          items:
          - fieldRef: {apiVersion: v1, fieldPath: metadata.name}
            path: x
  - ephemeral:
      volumeClaimTemplate:
        metadata: {creationTimestamp: null}
        spec:
          accessModes: [ReadWriteOnce]
          resources:
            requests: {storage: 2m}
          volumeMode: Filesystem
    name: v3
  - hostPath: {path: /tmp, type: ''}
    name: v4
`

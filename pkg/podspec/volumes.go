package podspec

import (
	"fmt"
	"net"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const fileModeMsg = "must be a number between 0 and 0777 (octal), both inclusive"

// validateVolumes checks the volumes and returns those without errors by
// name: a mount of a volume with errors is also refused, as in kube.
func validateVolumes(volumes []corev1.Volume, meta *metav1.ObjectMeta, path *field.Path) (map[string]corev1.VolumeSource, field.ErrorList) {
	var errs field.ErrorList
	names := sets.New[string]()
	// The claims a Pod's ephemeral volumes create are named after it; a
	// volume may not claim one of those.
	created := sets.New[string]()
	if meta != nil && meta.Name != "" {
		for _, v := range volumes {
			if v.Ephemeral != nil {
				created.Insert(meta.Name + "-" + v.Name)
			}
		}
	}
	vols := map[string]corev1.VolumeSource{}
	for i := range volumes {
		v, p := &volumes[i], path.Index(i)
		verrs := validateVolumeSource(&v.VolumeSource, p, v.Name, meta)
		if v.Name == "" {
			verrs = append(verrs, field.Required(p.Child("name"), ""))
		} else {
			verrs = append(verrs, dnsLabel(v.Name, p.Child("name"))...)
		}
		if names.Has(v.Name) {
			verrs = append(verrs, field.Duplicate(p.Child("name"), v.Name))
		}
		if len(verrs) == 0 {
			names.Insert(v.Name)
			vols[v.Name] = v.VolumeSource
		} else {
			errs = append(errs, verrs...)
		}
		if c := v.PersistentVolumeClaim; c != nil && created.Has(c.ClaimName) {
			errs = append(errs, field.Invalid(p.Child("persistentVolumeClaim", "claimName"), c.ClaimName, "must not reference a PVC that gets created for an ephemeral volume"))
		}
	}
	return vols, errs
}

// volumeType is one kind of volume source: whether it is set, the name a
// second source is refused under, and its own rules.
type volumeType struct {
	set   bool
	name  string
	check func() field.ErrorList
}

// validateVolumeSource checks that exactly one source is set and that
// source's rules, in kube's order and words (a few of kube's paths are
// not the field's JSON name: gcePersistentDisk's rules are at
// persistentDisk, cephfs's second source at cephFS, downwardAPI's at
// downwarAPI).
func validateVolumeSource(s *corev1.VolumeSource, p *field.Path, volName string, meta *metav1.ObjectMeta) field.ErrorList {
	var errs field.ErrorList
	n := 0
	if s.EmptyDir != nil {
		n++
		if l := s.EmptyDir.SizeLimit; l != nil && l.Sign() < 0 {
			errs = append(errs, field.Forbidden(p.Child("emptyDir", "sizeLimit"), "SizeLimit field must be a valid resource quantity"))
		}
	}
	types := []volumeType{
		{s.HostPath != nil, "hostPath", func() field.ErrorList { return validateHostPath(s.HostPath, p.Child("hostPath")) }},
		{s.GitRepo != nil, "gitRepo", func() field.ErrorList { return validateGitRepo(s.GitRepo, p.Child("gitRepo")) }},
		{s.GCEPersistentDisk != nil, "gcePersistentDisk", func() field.ErrorList {
			return validateDisk(s.GCEPersistentDisk.PDName, "pdName", s.GCEPersistentDisk.Partition, p.Child("persistentDisk"))
		}},
		{s.AWSElasticBlockStore != nil, "awsElasticBlockStore", func() field.ErrorList {
			return validateDisk(s.AWSElasticBlockStore.VolumeID, "volumeID", s.AWSElasticBlockStore.Partition, p.Child("awsElasticBlockStore"))
		}},
		{s.Secret != nil, "secret", func() field.ErrorList {
			return validateItemsSource(s.Secret.SecretName, "secretName", s.Secret.DefaultMode, s.Secret.Items, p.Child("secret"))
		}},
		{s.NFS != nil, "nfs", func() field.ErrorList { return validateNFS(s.NFS, p.Child("nfs")) }},
		{s.ISCSI != nil, "iscsi", func() field.ErrorList { return validateISCSI(s.ISCSI, p.Child("iscsi")) }},
		{s.Glusterfs != nil, "glusterfs", func() field.ErrorList {
			return requireAll(p.Child("glusterfs"), "endpoints", s.Glusterfs.EndpointsName, "path", s.Glusterfs.Path)
		}},
		{s.Flocker != nil, "flocker", func() field.ErrorList { return validateFlocker(s.Flocker, p.Child("flocker")) }},
		{s.PersistentVolumeClaim != nil, "persistentVolumeClaim", func() field.ErrorList {
			return requireAll(p.Child("persistentVolumeClaim"), "claimName", s.PersistentVolumeClaim.ClaimName)
		}},
		{s.RBD != nil, "rbd", func() field.ErrorList {
			errs := requireList(len(s.RBD.CephMonitors), p.Child("rbd", "monitors"))
			return append(errs, requireAll(p.Child("rbd"), "image", s.RBD.RBDImage)...)
		}},
		{s.Cinder != nil, "cinder", func() field.ErrorList {
			errs := requireAll(p.Child("cinder"), "volumeID", s.Cinder.VolumeID)
			if r := s.Cinder.SecretRef; r != nil {
				errs = append(errs, requireAll(p.Child("cinder", "secretRef"), "name", r.Name)...)
			}
			return errs
		}},
		{s.CephFS != nil, "cephFS", func() field.ErrorList { return requireList(len(s.CephFS.Monitors), p.Child("cephfs", "monitors")) }},
		{s.Quobyte != nil, "quobyte", func() field.ErrorList { return validateQuobyte(s.Quobyte, p.Child("quobyte")) }},
		{s.DownwardAPI != nil, "downwarAPI", func() field.ErrorList { return validateDownwardAPIVolume(s.DownwardAPI, p.Child("downwardAPI")) }},
		{s.FC != nil, "fc", func() field.ErrorList { return validateFC(s.FC, p.Child("fc")) }},
		{s.FlexVolume != nil, "flexVolume", func() field.ErrorList { return validateFlex(s.FlexVolume, p.Child("flexVolume")) }},
		{s.ConfigMap != nil, "configMap", func() field.ErrorList {
			return validateItemsSource(s.ConfigMap.Name, "name", s.ConfigMap.DefaultMode, s.ConfigMap.Items, p.Child("configMap"))
		}},
		{s.AzureFile != nil, "azureFile", func() field.ErrorList {
			return requireAll(p.Child("azureFile"), "secretName", s.AzureFile.SecretName, "shareName", s.AzureFile.ShareName)
		}},
		{s.VsphereVolume != nil, "vsphereVolume", func() field.ErrorList {
			return requireAll(p.Child("vsphereVolume"), "volumePath", s.VsphereVolume.VolumePath)
		}},
		{s.PhotonPersistentDisk != nil, "photonPersistentDisk", func() field.ErrorList {
			return requireAll(p.Child("photonPersistentDisk"), "pdID", s.PhotonPersistentDisk.PdID)
		}},
		{s.PortworxVolume != nil, "portworxVolume", func() field.ErrorList {
			return requireAll(p.Child("portworxVolume"), "volumeID", s.PortworxVolume.VolumeID)
		}},
		{s.AzureDisk != nil, "azureDisk", func() field.ErrorList { return validateAzureDisk(s.AzureDisk, p.Child("azureDisk")) }},
		{s.StorageOS != nil, "storageos", func() field.ErrorList { return validateStorageOS(s.StorageOS, p.Child("storageos")) }},
		{s.Projected != nil, "projected", func() field.ErrorList { return validateProjected(s.Projected, p.Child("projected")) }},
		{s.ScaleIO != nil, "scaleIO", func() field.ErrorList {
			return requireAll(p.Child("scaleIO"), "gateway", s.ScaleIO.Gateway, "system", s.ScaleIO.System, "volumeName", s.ScaleIO.VolumeName)
		}},
		{s.CSI != nil, "csi", func() field.ErrorList { return validateCSI(s.CSI, p.Child("csi")) }},
		{s.Ephemeral != nil, "ephemeral", func() field.ErrorList { return validateEphemeralVolume(s.Ephemeral, p, volName, meta) }},
	}
	for _, t := range types {
		if !t.set {
			continue
		}
		if n > 0 {
			errs = append(errs, field.Forbidden(p.Child(t.name), "may not specify more than 1 volume type"))
		} else {
			n++
			errs = append(errs, t.check()...)
		}
		// Kube bounds this whether or not iscsi is the first source.
		if t.name == "iscsi" && s.ISCSI.InitiatorName != nil && len(volName+":"+s.ISCSI.TargetPortal) > 64 {
			errs = append(errs, field.Invalid(p.Child("name"), volName, "Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified."))
		}
	}
	if n == 0 {
		errs = append(errs, field.Required(p, "must specify a volume type"))
	}
	return errs
}

// requireAll requires each named string field (name, value pairs) of the
// source at path.
func requireAll(path *field.Path, pairs ...string) field.ErrorList {
	var errs field.ErrorList
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			errs = append(errs, field.Required(path.Child(pairs[i]), ""))
		}
	}
	return errs
}

func requireList(n int, path *field.Path) field.ErrorList {
	if n == 0 {
		return field.ErrorList{field.Required(path, "")}
	}
	return nil
}

var hostPathTypes = []corev1.HostPathType{corev1.HostPathUnset, corev1.HostPathBlockDev, corev1.HostPathCharDev,
	corev1.HostPathDirectory, corev1.HostPathDirectoryOrCreate, corev1.HostPathFile, corev1.HostPathFileOrCreate, corev1.HostPathSocket}

func validateHostPath(h *corev1.HostPathVolumeSource, p *field.Path) field.ErrorList {
	if h.Path == "" {
		return field.ErrorList{field.Required(p.Child("path"), "")}
	}
	errs := noBacksteps(h.Path, p.Child("path"))
	if h.Type != nil && !sets.New(hostPathTypes...).Has(*h.Type) {
		errs = append(errs, field.NotSupported(p.Child("type"), *h.Type, hostPathTypes))
	}
	return errs
}

func validateGitRepo(g *corev1.GitRepoVolumeSource, p *field.Path) field.ErrorList {
	errs := requireAll(p, "repository", g.Repository)
	return append(errs, relativePath(g.Directory, p.Child("directory"))...)
}

func validateDisk(id, idName string, partition int32, p *field.Path) field.ErrorList {
	errs := requireAll(p, idName, id)
	if partition < 0 || partition > 255 {
		errs = append(errs, field.Invalid(p.Child("partition"), partition, validation.InclusiveRangeError(1, 255)))
	}
	return errs
}

// validateItemsSource checks a secret or config map volume: its name,
// default mode and items.
func validateItemsSource(name, nameField string, defaultMode *int32, items []corev1.KeyToPath, p *field.Path) field.ErrorList {
	errs := requireAll(p, nameField, name)
	errs = append(errs, validateMode(defaultMode, p.Child("defaultMode"))...)
	for i := range items {
		errs = append(errs, validateKeyToPath(&items[i], p.Child("items").Index(i))...)
	}
	return errs
}

func validateMode(m *int32, p *field.Path) field.ErrorList {
	if m != nil && (*m > 0777 || *m < 0) {
		return field.ErrorList{field.Invalid(p, *m, fileModeMsg)}
	}
	return nil
}

func validateKeyToPath(kp *corev1.KeyToPath, p *field.Path) field.ErrorList {
	errs := requireAll(p, "key", kp.Key, "path", kp.Path)
	errs = append(errs, localPath(kp.Path, p.Child("path"))...)
	return append(errs, validateMode(kp.Mode, p.Child("mode"))...)
}

func validateNFS(nfs *corev1.NFSVolumeSource, p *field.Path) field.ErrorList {
	errs := requireAll(p, "server", nfs.Server, "path", nfs.Path)
	if !path.IsAbs(nfs.Path) {
		errs = append(errs, field.Invalid(p.Child("path"), nfs.Path, "must be an absolute path"))
	}
	return errs
}

var (
	iqnFormat = regexp.MustCompile(`iqn\.\d{4}-\d{2}\.([[:alnum:]-.]+)(:[^,;*&$|\s]+)$`)
	euiFormat = regexp.MustCompile(`^eui.[[:alnum:]]{16}$`)
	naaFormat = regexp.MustCompile(`^naa.[[:alnum:]]{32}$`)
)

// iscsiNameFormatError words an iSCSI qualified name that is not one.
func iscsiNameFormatError(name string) string {
	switch {
	case !strings.HasPrefix(name, "iqn") && !strings.HasPrefix(name, "eui") && !strings.HasPrefix(name, "naa"):
		return "must be valid format starting with iqn, eui, or naa"
	case strings.HasPrefix(name, "iqn") && !iqnFormat.MatchString(name),
		strings.HasPrefix(name, "eui") && !euiFormat.MatchString(name),
		strings.HasPrefix(name, "naa") && !naaFormat.MatchString(name):
		return "must be valid format"
	}
	return ""
}

func validateISCSI(s *corev1.ISCSIVolumeSource, p *field.Path) field.ErrorList {
	errs := requireAll(p, "targetPortal", s.TargetPortal)
	if s.IQN == "" {
		errs = append(errs, field.Required(p.Child("iqn"), ""))
	} else if msg := iscsiNameFormatError(s.IQN); msg != "" {
		errs = append(errs, field.Invalid(p.Child("iqn"), s.IQN, msg))
	}
	if s.Lun < 0 || s.Lun > 255 {
		errs = append(errs, field.Invalid(p.Child("lun"), s.Lun, validation.InclusiveRangeError(0, 255)))
	}
	if (s.DiscoveryCHAPAuth || s.SessionCHAPAuth) && s.SecretRef == nil {
		errs = append(errs, field.Required(p.Child("secretRef"), ""))
	}
	if s.InitiatorName != nil {
		name := *s.InitiatorName
		if !strings.HasPrefix(name, "iqn") && !strings.HasPrefix(name, "eui") && !strings.HasPrefix(name, "naa") {
			errs = append(errs, field.Invalid(p.Child("initiatorname"), name, "must be valid format starting with iqn, eui, or naa"))
		}
		if msg := iscsiNameFormatError(name); msg == "must be valid format" {
			errs = append(errs, field.Invalid(p.Child("initiatorname"), name, msg))
		}
	}
	return errs
}

func validateFlocker(f *corev1.FlockerVolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if f.DatasetName == "" && f.DatasetUUID == "" {
		errs = append(errs, field.Required(p, "one of datasetName and datasetUUID is required"))
	}
	if f.DatasetName != "" && f.DatasetUUID != "" {
		errs = append(errs, field.Invalid(p, "resource", "datasetName and datasetUUID can not be specified simultaneously"))
	}
	if strings.Contains(f.DatasetName, "/") {
		errs = append(errs, field.Invalid(p.Child("datasetName"), f.DatasetName, "must not contain '/'"))
	}
	return errs
}

func validateQuobyte(q *corev1.QuobyteVolumeSource, p *field.Path) field.ErrorList {
	const registryMsg = "must be a host:port pair or multiple pairs separated by commas"
	var errs field.ErrorList
	switch {
	case q.Registry == "":
		errs = append(errs, field.Required(p.Child("registry"), registryMsg))
	case len(q.Tenant) >= 65:
		errs = append(errs, field.Required(p.Child("tenant"), "must be a UUID and may not exceed a length of 64 characters"))
	default:
		for _, pair := range strings.Split(q.Registry, ",") {
			if _, _, err := net.SplitHostPort(pair); err != nil {
				errs = append(errs, field.Invalid(p.Child("registry"), q.Registry, registryMsg))
			}
		}
	}
	return append(errs, requireAll(p, "volume", q.Volume)...)
}

func validateFC(fc *corev1.FCVolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(fc.TargetWWNs) < 1 && len(fc.WWIDs) < 1 {
		errs = append(errs, field.Required(p.Child("targetWWNs"), "must specify either targetWWNs or wwids, but not both"))
	}
	if len(fc.TargetWWNs) != 0 && len(fc.WWIDs) != 0 {
		errs = append(errs, field.Invalid(p.Child("targetWWNs"), fc.TargetWWNs, "targetWWNs and wwids can not be specified simultaneously"))
	}
	if len(fc.TargetWWNs) != 0 {
		if fc.Lun == nil {
			errs = append(errs, field.Required(p.Child("lun"), "lun is required if targetWWNs is specified"))
		} else if *fc.Lun < 0 || *fc.Lun > 255 {
			errs = append(errs, field.Invalid(p.Child("lun"), *fc.Lun, validation.InclusiveRangeError(0, 255)))
		}
	}
	return errs
}

func validateFlex(f *corev1.FlexVolumeSource, p *field.Path) field.ErrorList {
	errs := requireAll(p, "driver", f.Driver)
	for _, k := range sortedKeys(f.Options) {
		ns, _, _ := strings.Cut(k, "/")
		normalized := "." + strings.ToLower(ns)
		if strings.HasSuffix(normalized, ".kubernetes.io") || strings.HasSuffix(normalized, ".k8s.io") {
			errs = append(errs, field.Invalid(p.Child("options").Key(k), k, "kubernetes.io and k8s.io namespaces are reserved"))
		}
	}
	return errs
}

func validateAzureDisk(a *corev1.AzureDiskVolumeSource, p *field.Path) field.ErrorList {
	errs := requireAll(p, "diskName", a.DiskName, "diskURI", a.DataDiskURI)
	if m := a.CachingMode; m != nil && *m != corev1.AzureDataDiskCachingNone && *m != corev1.AzureDataDiskCachingReadOnly && *m != corev1.AzureDataDiskCachingReadWrite {
		errs = append(errs, field.NotSupported(p.Child("cachingMode"), *m, []corev1.AzureDataDiskCachingMode{corev1.AzureDataDiskCachingNone, corev1.AzureDataDiskCachingReadOnly, corev1.AzureDataDiskCachingReadWrite}))
	}
	if k := a.Kind; k != nil && *k != corev1.AzureDedicatedBlobDisk && *k != corev1.AzureManagedDisk && *k != corev1.AzureSharedBlobDisk {
		errs = append(errs, field.NotSupported(p.Child("kind"), *k, []corev1.AzureDataDiskKind{corev1.AzureDedicatedBlobDisk, corev1.AzureManagedDisk, corev1.AzureSharedBlobDisk}))
	}
	if k := a.Kind; k != nil && *k == corev1.AzureManagedDisk && !strings.HasPrefix(a.DataDiskURI, "/subscriptions/") {
		errs = append(errs, field.NotSupported(p.Child("diskURI"), a.DataDiskURI, []string{"/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}"}))
	}
	if k := a.Kind; k != nil && *k != corev1.AzureManagedDisk && !strings.HasPrefix(a.DataDiskURI, "https://") {
		errs = append(errs, field.NotSupported(p.Child("diskURI"), a.DataDiskURI, []string{"https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd"}))
	}
	return errs
}

func validateStorageOS(s *corev1.StorageOSVolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.VolumeName == "" {
		errs = append(errs, field.Required(p.Child("volumeName"), ""))
	} else {
		errs = append(errs, dnsLabel(s.VolumeName, p.Child("volumeName"))...)
	}
	if s.VolumeNamespace != "" {
		errs = append(errs, dnsLabel(s.VolumeNamespace, p.Child("volumeNamespace"))...)
	}
	if r := s.SecretRef; r != nil {
		errs = append(errs, requireAll(p.Child("secretRef"), "name", r.Name)...)
	}
	return errs
}

func validateCSI(c *corev1.CSIVolumeSource, p *field.Path) field.ErrorList {
	errs := validateCSIDriverName(c.Driver, p.Child("driver"))
	if r := c.NodePublishSecretRef; r != nil {
		if r.Name == "" {
			errs = append(errs, field.Required(p.Child("nodePublishSecretRef", "name"), ""))
		} else {
			// Kube words a bad secret name at csi.name.
			for _, msg := range apivalidation.NameIsDNSSubdomain(r.Name, false) {
				errs = append(errs, field.Invalid(p.Child("name"), r.Name, msg))
			}
		}
	}
	return errs
}

func validateCSIDriverName(name string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(p, ""))
	}
	if len(name) > 63 {
		errs = append(errs, field.TooLong(p, name, 63))
	}
	for _, msg := range validation.IsDNS1123Subdomain(strings.ToLower(name)) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

func validateDownwardAPIVolume(d *corev1.DownwardAPIVolumeSource, p *field.Path) field.ErrorList {
	errs := validateMode(d.DefaultMode, p.Child("defaultMode"))
	for i := range d.Items {
		// Kube words the items' errors at the source, not the item.
		errs = append(errs, validateDownwardAPIFile(&d.Items[i], p)...)
	}
	return errs
}

func validateDownwardAPIFile(f *corev1.DownwardAPIVolumeFile, p *field.Path) field.ErrorList {
	errs := requireAll(p, "path", f.Path)
	errs = append(errs, localPath(f.Path, p.Child("path"))...)
	switch {
	case f.FieldRef != nil:
		errs = append(errs, validateFieldRef(f.FieldRef, volumeFieldPaths, p.Child("fieldRef"))...)
		if f.ResourceFieldRef != nil {
			errs = append(errs, field.Invalid(p, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
		}
	case f.ResourceFieldRef != nil:
		errs = append(errs, validateResourceFieldRef(f.ResourceFieldRef, p.Child("resourceFieldRef"), true)...)
	default:
		errs = append(errs, field.Required(p, "one of fieldRef and resourceFieldRef is required"))
	}
	return append(errs, validateMode(f.Mode, p.Child("mode"))...)
}

func validateProjected(pr *corev1.ProjectedVolumeSource, p *field.Path) field.ErrorList {
	errs := validateMode(pr.DefaultMode, p.Child("defaultMode"))
	paths := sets.New[string]()
	// A path two sources both write is worded at the projection, with the
	// second source's name (or the path, for downward API files).
	claim := func(path string, value string) {
		if paths.Has(path) {
			errs = append(errs, field.Invalid(p, value, "conflicting duplicate paths"))
		}
		paths.Insert(path)
	}
	for i, s := range pr.Sources {
		sp := p.Child("sources").Index(i)
		n := 0
		if s.Secret != nil {
			n++
			errs = append(errs, requireAll(sp.Child("secret"), "name", s.Secret.Name)...)
			for j := range s.Secret.Items {
				kp := &s.Secret.Items[j]
				errs = append(errs, validateKeyToPath(kp, sp.Child("secret", "items").Index(j))...)
				if kp.Path != "" {
					claim(kp.Path, s.Secret.Name)
				}
			}
		}
		if s.ConfigMap != nil {
			n++
			errs = append(errs, requireAll(sp.Child("configMap"), "name", s.ConfigMap.Name)...)
			for j := range s.ConfigMap.Items {
				kp := &s.ConfigMap.Items[j]
				errs = append(errs, validateKeyToPath(kp, sp.Child("configMap", "items").Index(j))...)
				if kp.Path != "" {
					claim(kp.Path, s.ConfigMap.Name)
				}
			}
		}
		if s.DownwardAPI != nil {
			n++
			for j := range s.DownwardAPI.Items {
				f := &s.DownwardAPI.Items[j]
				errs = append(errs, validateDownwardAPIFile(f, sp.Child("downwardAPI"))...)
				if f.Path != "" {
					claim(f.Path, f.Path)
				}
			}
		}
		if t := s.ServiceAccountToken; t != nil {
			n++
			tp := sp.Child("serviceAccountToken")
			var exp int64
			if t.ExpirationSeconds != nil {
				exp = *t.ExpirationSeconds
			}
			if exp < 10*60 {
				errs = append(errs, field.Invalid(tp.Child("expirationSeconds"), exp, "may not specify a duration less than 10 minutes"))
			}
			if exp > 1<<32 {
				errs = append(errs, field.Invalid(tp.Child("expirationSeconds"), exp, "may not specify a duration larger than 2^32 seconds"))
			}
			if t.Path == "" {
				// Kube words it at the projection.
				errs = append(errs, field.Required(p.Child("path"), ""))
			}
		}
		if n > 1 {
			errs = append(errs, field.Forbidden(sp, "may not specify more than 1 volume type"))
		}
	}
	return errs
}

// validateEphemeralVolume checks an ephemeral volume's claim template and,
// for a Pod, the name of the claim it makes.
func validateEphemeralVolume(e *corev1.EphemeralVolumeSource, p *field.Path, volName string, meta *metav1.ObjectMeta) field.ErrorList {
	ep := p.Child("ephemeral")
	var errs field.ErrorList
	if t := e.VolumeClaimTemplate; t == nil {
		errs = append(errs, field.Required(ep.Child("volumeClaimTemplate"), ""))
	} else {
		tp := ep.Child("volumeClaimTemplate")
		errs = append(errs, apivalidation.ValidateAnnotations(t.Annotations, tp.Child("metadata", "annotations"))...)
		errs = append(errs, metav1validation.ValidateLabels(t.Labels, tp.Child("metadata", "labels"))...)
		errs = append(errs, onlyFields(t.ObjectMeta, map[string]bool{"Annotations": true, "Labels": true}, "cannot be set", tp.Child("metadata"))...)
		errs = append(errs, validateClaimSpec(&t.Spec, tp.Child("spec"))...)
	}
	if meta != nil && meta.Name != "" && volName != "" {
		claim := meta.Name + "-" + volName
		for _, msg := range apivalidation.NameIsDNSSubdomain(claim, false) {
			errs = append(errs, field.Invalid(p.Child("name"), volName, fmt.Sprintf("PVC name %q: %v", claim, msg)))
		}
	}
	return errs
}

var accessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOnce, corev1.ReadWriteOncePod}

// validateClaimSpec checks the spec of an ephemeral volume's claim, as
// kube checks a PersistentVolumeClaim's (VolumeAttributesClass off).
func validateClaimSpec(spec *corev1.PersistentVolumeClaimSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(spec.AccessModes) == 0 {
		errs = append(errs, field.Required(p.Child("accessModes"), "at least 1 access mode is required"))
	}
	if spec.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, p.Child("selector"))...)
	}
	rwop, other := false, false
	for _, m := range spec.AccessModes {
		known := sets.New(accessModes...).Has(m)
		if !known {
			errs = append(errs, field.NotSupported(p.Child("accessModes"), m, accessModes))
		}
		if m == corev1.ReadWriteOncePod {
			rwop = true
		} else if known {
			other = true
		}
	}
	if rwop && other {
		errs = append(errs, field.Forbidden(p.Child("accessModes"), "may not use ReadWriteOncePod with other access modes"))
	}
	storagePath := p.Child("resources").Key(string(corev1.ResourceStorage))
	if storage, ok := spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		errs = append(errs, field.Required(storagePath, ""))
	} else if storage.Cmp(resource.Quantity{}) <= 0 {
		errs = append(errs, field.Invalid(storagePath, storage.String(), "must be greater than zero"))
	}
	if c := spec.StorageClassName; c != nil && *c != "" {
		errs = append(errs, subdomainName(*c, p.Child("storageClassName"))...)
	}
	if m := spec.VolumeMode; m != nil && *m != corev1.PersistentVolumeBlock && *m != corev1.PersistentVolumeFilesystem {
		errs = append(errs, field.NotSupported(p.Child("volumeMode"), *m, []corev1.PersistentVolumeMode{corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem}))
	}
	if d := spec.DataSource; d != nil {
		errs = append(errs, validateDataSource(d.Name, d.Kind, d.APIGroup, nil, p.Child("dataSource"))...)
	}
	if d := spec.DataSourceRef; d != nil {
		errs = append(errs, validateDataSource(d.Name, d.Kind, d.APIGroup, d.Namespace, p.Child("dataSourceRef"))...)
	}
	if r := spec.DataSourceRef; r != nil && r.Namespace != nil && *r.Namespace != "" {
		if spec.DataSource != nil {
			errs = append(errs, field.Invalid(p, p.Child("dataSource"), "may not be specified when dataSourceRef.namespace is specified"))
		}
	} else if d := spec.DataSource; d != nil && r != nil {
		if !reflect.DeepEqual(d.APIGroup, r.APIGroup) || d.Kind != r.Kind || d.Name != r.Name {
			errs = append(errs, field.Invalid(p, p.Child("dataSource"), "must match dataSourceRef"))
		}
	}
	return errs
}

func validateDataSource(name, kind string, apiGroup, namespace *string, p *field.Path) field.ErrorList {
	errs := requireAll(p, "name", name, "kind", kind)
	group := ""
	if apiGroup != nil {
		group = *apiGroup
	}
	if group == "" && kind != "PersistentVolumeClaim" {
		errs = append(errs, field.Invalid(p, kind, "must be 'PersistentVolumeClaim' when referencing the default apiGroup"))
	}
	if group != "" {
		errs = append(errs, dnsSubdomain(group, p.Child("apiGroup"))...)
	}
	if namespace != nil && *namespace != "" {
		for _, msg := range apivalidation.ValidateNamespaceName(*namespace, false) {
			errs = append(errs, field.Invalid(p.Child("namespace"), *namespace, msg))
		}
	}
	return errs
}

// relativePath: a path inside the volume, with no ".." step.
func relativePath(target string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path.IsAbs(target) {
		errs = append(errs, field.Invalid(p, target, "must be a relative path"))
	}
	return append(errs, noBacksteps(target, p)...)
}

// localPath is a relativePath that does not start with "..", even as a
// file name's prefix.
func localPath(target string, p *field.Path) field.ErrorList {
	errs := relativePath(target, p)
	if strings.HasPrefix(target, "..") && !strings.HasPrefix(target, "../") {
		errs = append(errs, field.Invalid(p, target, "must not start with '..'"))
	}
	return errs
}

func hasBacksteps(target string) bool {
	for _, part := range strings.Split(filepath.ToSlash(target), "/") {
		if part == ".." {
			return true
		}
	}
	return false
}

func noBacksteps(target string, p *field.Path) field.ErrorList {
	if hasBacksteps(target) {
		return field.ErrorList{field.Invalid(p, target, "must not contain '..'")}
	}
	return nil
}

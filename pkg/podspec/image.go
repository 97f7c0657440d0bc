package podspec

import (
	"regexp"
	"strings"
)

// The grammar of container image references (the distribution project's
// reference format), as kubelet and kube-apiserver parse them.
var (
	imageReference = regexp.MustCompile(`^((?:` + imageDomain + `/)?` + imagePath + `)(?::(` + imageTag + `))?(?:@(` + imageDigest + `))?$`)
	imageHexID     = regexp.MustCompile(`^[a-f0-9]{64}$`)
)

const (
	imageDomainComponent = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
	imageDomain          = `(?:` + imageDomainComponent + `(?:\.` + imageDomainComponent + `)*|\[(?:[a-fA-F0-9:]+)\])(?::[0-9]+)?`
	imagePathComponent   = `[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*`
	imagePath            = imagePathComponent + `(?:/` + imagePathComponent + `)*`
	imageTag             = `[\w][\w.-]{0,127}`
	imageDigest          = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[[:xdigit:]]{32,}`
	maxImageNameLength   = 255
)

// digestHexLength is the length of the hex part of the digests an image
// reference may carry, by algorithm.
var digestHexLength = map[string]int{"sha256": 64, "sha384": 96, "sha512": 128}

// imageTagAndDigest returns an image reference's tag and digest as kube
// reads them to default the pull policy: a reference with neither has the
// tag "latest"; one that does not parse (an upper-case repository, a bad
// digest) has neither, and ok is false.
func imageTagAndDigest(image string) (tag, digest string, ok bool) {
	if imageHexID.MatchString(image) {
		return "", "", false
	}
	// Docker Hub's short names are normalized under docker.io/library,
	// which counts against the length and the lower-case rule only of the
	// repository part.
	full := image
	domain, rest, found := strings.Cut(image, "/")
	if !found || (!strings.ContainsAny(domain, ".:") && domain != "localhost" && strings.ToLower(domain) == domain) {
		domain, rest = "docker.io", image
		if !strings.Contains(rest, "/") {
			rest = "library/" + rest
		}
		full = domain + "/" + rest
	}
	remote, _, _ := strings.Cut(rest, ":")
	if strings.ToLower(remote) != remote {
		return "", "", false
	}
	m := imageReference.FindStringSubmatch(full)
	if m == nil || len(m[1]) > maxImageNameLength {
		return "", "", false
	}
	tag, digest = m[2], m[3]
	if digest != "" {
		algorithm, hex, _ := strings.Cut(digest, ":")
		if n, known := digestHexLength[algorithm]; !known || len(hex) != n || strings.ToLower(hex) != hex {
			return "", "", false
		}
	}
	if tag == "" && digest == "" {
		tag = "latest"
	}
	return tag, digest, true
}

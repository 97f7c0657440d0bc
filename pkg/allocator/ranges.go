package allocator

import (
	"math/big"
	"net"
	"strconv"
)

// maxMembers bounds a range's size, so that a large IPv6 network stays a
// range one can walk.
const maxMembers = 1 << 20

// IPs is the range of the addresses of cidr but its network and
// broadcast addresses.
func IPs(cidr *net.IPNet, prefix string, owner Owner) *Range {
	ones, bits := cidr.Mask.Size()
	size := maxMembers
	if host := bits - ones; host < 21 {
		size = 1<<host - 2
		if size < 0 {
			size = 0
		}
	}
	base := new(big.Int).SetBytes(cidr.IP.Mask(cidr.Mask))
	ipLen := len(cidr.IP.Mask(cidr.Mask))
	name := func(off int) string {
		n := new(big.Int).Add(base, big.NewInt(int64(off)+1))
		b := n.FillBytes(make([]byte, ipLen))
		return net.IP(b).String()
	}
	offset := func(member string) (int, bool) {
		ip := net.ParseIP(member)
		if ip == nil || !cidr.Contains(ip) {
			return 0, false
		}
		if v4 := ip.To4(); v4 != nil && ipLen == net.IPv4len {
			ip = v4
		}
		off := new(big.Int).Sub(new(big.Int).SetBytes(ip), base).Int64() - 1
		return int(off), off >= 0 && off < int64(size)
	}
	return &Range{Prefix: prefix, Size: size, Name: name, Offset: offset, Static: staticBand(size, 16, 256), Owner: owner}
}

// Ports is the range of the ports base to base+size-1.
func Ports(base, size int, prefix string, owner Owner) *Range {
	name := func(off int) string { return strconv.Itoa(base + off) }
	offset := func(member string) (int, bool) {
		p, err := strconv.Atoi(member)
		return p - base, err == nil && p >= base && p < base+size
	}
	return &Range{Prefix: prefix, Size: size, Name: name, Offset: offset, Static: staticBand(size, 32, 128), Owner: owner}
}

// staticBand is the low band kube keeps of a range: a share of it, at
// least 16 members and at most max.
func staticBand(size, share, max int) int {
	b := size / share
	if b < 16 {
		b = 16
	}
	if b > max {
		b = max
	}
	if b > size {
		b = size
	}
	return b
}

package kubernetesservice

import (
	"net"
	"testing"
)

// The advertised address is --advertise-address, else the bind address,
// else (bound to every interface) a host address as kube's: never the
// unspecified one, which Endpoints cannot list.
func TestAdvertised_DefaultsAsKube(t *testing.T) {
	for _, tc := range []struct {
		name, advertise, bind string
		want                  string
	}{
		{"the flag wins", "192.0.2.7", "127.0.0.1", "192.0.2.7"},
		{"the bind address", "", "127.0.0.1", "127.0.0.1"},
		{"a specific bind address", "", "198.51.100.3", "198.51.100.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ip, err := Options{AdvertiseAddress: tc.advertise}.Advertised(tc.bind)
			if err != nil || ip.String() != tc.want {
				t.Fatalf("Advertised = %v, %v; want %s", ip, err, tc.want)
			}
		})
	}
	ip, err := Options{}.Advertised("0.0.0.0")
	if err != nil || ip.To4() == nil || ip.IsUnspecified() {
		t.Fatalf("bound to every interface: %v, %v; want a host IPv4 address", ip, err)
	}
	if want := hostIP(); !ip.Equal(want) {
		t.Fatalf("bound to every interface: %v, want the host's %v", ip, want)
	}
	if _, err := (Options{AdvertiseAddress: "nope"}).Advertised("0.0.0.0"); err == nil {
		t.Fatal("an advertise address that is no IP was taken")
	}
	if err := (Options{ServiceClusterIPRange: "10.0.0.0/31", ServiceNodePortRange: "2-1", AdvertiseAddress: "x"}).Validate(); err == nil {
		t.Fatal("bad ranges and address validated")
	}
	if err := DefaultOptions().Validate(); err != nil {
		t.Fatal(err)
	}
}

// globalIPv4 skips loopback interfaces.
func TestGlobalIPv4_SkipsLoopback(t *testing.T) {
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Skip("no lo interface")
	}
	if ip := globalIPv4(*lo); ip != nil {
		t.Fatalf("lo gave %v", ip)
	}
}

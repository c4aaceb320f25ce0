package main

import (
	"fmt"
	"net/netip"
	"testing"
)

func TestPoolNumbersUsableAddressesAcrossNetworks(t *testing.T) {
	pool := Pool{netip.MustParsePrefix("10.0.0.0/30"), netip.MustParsePrefix("10.1.0.0/31"), netip.MustParsePrefix("2001:db8::/127")}
	if pool.Len() != 6 {
		t.Fatalf("len %d", pool.Len())
	}
	want := []string{"10.0.0.1", "10.0.0.2", "10.1.0.0", "10.1.0.1", "2001:db8::", "2001:db8::1"}
	for i, address := range want {
		if got, ok := pool.Get(uint64(i)); !ok || got.String() != address {
			t.Errorf("Get(%d) = %v", i, got)
		}
	}
	if _, ok := pool.Get(6); ok {
		t.Error("Get(6) past the end")
	}
	for address, contained := range map[string]bool{"10.0.0.2": true, "10.0.0.3": false, "10.0.0.0": false, "192.0.2.1": false, "2001:db8::1": true} {
		if pool.Contains(netip.MustParseAddr(address)) != contained {
			t.Errorf("Contains(%s) is not %v", address, contained)
		}
	}
}

func TestStartIsStableAndInRange(t *testing.T) {
	if Start("uid-1", 254) != Start("uid-1", 254) {
		t.Error("unstable")
	}
	for i := range 100 {
		if Start(fmt.Sprintf("uid-%d", i), 10) >= 10 {
			t.Error("out of range")
		}
	}
	if Start("anything", 0) != 0 {
		t.Error("empty pool")
	}
	// FNV-1a of "a", as the Rust fake computes it.
	if Start("a", 1<<63) != 0xaf63dc4c8601ec8c%(1<<63) {
		t.Errorf("%x", Start("a", 1<<63))
	}
}

func TestLargeIPv6NetworksAreNumberedUpToTheirCap(t *testing.T) {
	pool := Pool{netip.MustParsePrefix("2001:db8::/64")}
	if pool.Len() != maxPerNetwork {
		t.Fatalf("%d", pool.Len())
	}
	last, _ := pool.Get(maxPerNetwork - 1)
	if last.String() != "2001:db8::ffff:ffff" || !pool.Contains(last) || pool.Contains(netip.MustParseAddr("2001:db8::1:0:0")) {
		t.Errorf("%v", last)
	}
}

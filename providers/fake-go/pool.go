package main

import (
	"encoding/binary"
	"net/netip"
)

// Pool numbers the usable addresses of its networks, one after the other.
type Pool []netip.Prefix

// maxPerNetwork is how many addresses are numbered per network at most.
const maxPerNetwork = 1 << 32

// span is the first usable offset of network and how many there are: IPv4
// networks of 30 bits or fewer exclude their network and broadcast
// addresses.
func span(network netip.Prefix) (first, count uint64) {
	bits := network.Addr().BitLen() - network.Bits()
	if network.Addr().Is4() {
		size := uint64(1) << bits
		if size > 2 {
			return 1, size - 2
		}
		return 0, size
	}
	if bits >= 32 {
		return 0, maxPerNetwork
	}
	return 0, uint64(1) << bits
}

// Len is how many addresses the pool numbers.
func (p Pool) Len() uint64 {
	var total uint64
	for _, network := range p {
		_, count := span(network)
		total += count
	}
	return total
}

// Get is the address numbered index; false past the end.
func (p Pool) Get(index uint64) (netip.Addr, bool) {
	for _, network := range p {
		first, count := span(network)
		if index < count {
			return add(network.Addr(), first+index), true
		}
		index -= count
	}
	return netip.Addr{}, false
}

// Contains says whether address is one of the pool's usable addresses.
func (p Pool) Contains(address netip.Addr) bool {
	for _, network := range p {
		if !network.Contains(address) {
			continue
		}
		first, count := span(network)
		offset, fits := difference(address, network.Addr())
		if fits && offset >= first && offset < first+count {
			return true
		}
	}
	return false
}

// add is address plus offset, within its family.
func add(address netip.Addr, offset uint64) netip.Addr {
	bytes := address.As16()
	low := binary.BigEndian.Uint64(bytes[8:])
	sum := low + offset
	if sum < low {
		binary.BigEndian.PutUint64(bytes[:8], binary.BigEndian.Uint64(bytes[:8])+1)
	}
	binary.BigEndian.PutUint64(bytes[8:], sum)
	added := netip.AddrFrom16(bytes)
	if address.Is4() {
		return added.Unmap()
	}
	return added
}

// difference is address minus base, when it fits in 64 bits.
func difference(address, base netip.Addr) (uint64, bool) {
	a, b := address.As16(), base.As16()
	high := binary.BigEndian.Uint64(a[:8]) - binary.BigEndian.Uint64(b[:8])
	lowA, lowB := binary.BigEndian.Uint64(a[8:]), binary.BigEndian.Uint64(b[8:])
	if lowA < lowB {
		high--
	}
	return lowA - lowB, high == 0
}

// Start is where key starts probing a pool of length addresses: spreading
// Services over the pool makes a free address likely at the first try.
func Start(key string, length uint64) uint64 {
	// FNV-1a, stable across builds and platforms.
	hash := uint64(0xcbf29ce484222325)
	for i := 0; i < len(key); i++ {
		hash = (hash ^ uint64(key[i])) * 0x100000001b3
	}
	return hash % max(length, 1)
}

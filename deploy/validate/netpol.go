package validate

import (
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// Forbidden are addresses the daemons' egress must never reach: cloud
// metadata services (AWS, GCP, Azure, OpenStack on 169.254.169.254; AWS
// over IPv6; Alibaba), typical addresses of the Kubernetes API server's
// service (10.96.0.1 kubeadm, 172.20.0.1 EKS, 10.0.0.1 AKS and GKE) and
// of nodes, loopback and link-local ones.
var Forbidden = []string{
	"169.254.169.254", "fd00:ec2::254", "100.100.100.200",
	"10.96.0.1", "172.20.0.1", "10.0.0.1", "192.168.1.10", "10.128.0.2",
	"127.0.0.1", "::1", "fe80::1", "::ffff:169.254.169.254",
}

// EgressAllows reports whether policies (those selecting the pod) let it
// reach addr on TCP port. A policy without Egress in its types does not
// restrict egress; with no policy restricting it, everything is allowed.
// Peers given by pod or namespace selectors are pods, never the addresses
// tested here, so only ipBlock peers (and rules with no peer at all, which
// allow every destination) can allow them.
func EgressAllows(policies []networkingv1.NetworkPolicy, addr netip.Addr, port int32) bool {
	restricted := false
	for _, p := range policies {
		if !slices.Contains(p.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
			continue
		}
		restricted = true
		for _, r := range p.Spec.Egress {
			if !portAllowed(r.Ports, port) {
				continue
			}
			if len(r.To) == 0 {
				return true
			}
			for _, peer := range r.To {
				if peer.IPBlock != nil && blockContains(peer.IPBlock, addr) {
					return true
				}
			}
		}
	}
	return !restricted
}

// portAllowed reports whether a rule's ports admit TCP port (no ports: all).
func portAllowed(ports []networkingv1.NetworkPolicyPort, port int32) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		proto := corev1.ProtocolTCP
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		if proto != corev1.ProtocolTCP {
			continue
		}
		if p.Port == nil {
			return true
		}
		lo := int32(p.Port.IntValue())
		hi := lo
		if p.EndPort != nil {
			hi = *p.EndPort
		}
		if lo <= port && port <= hi {
			return true
		}
	}
	return false
}

// blockContains reports whether addr is in the block's CIDR and in none of
// its exceptions. An IPv4-mapped IPv6 address is the IPv4 address on the
// wire.
func blockContains(b *networkingv1.IPBlock, addr netip.Addr) bool {
	addr = addr.Unmap()
	in := func(cidr string) bool {
		p, err := netip.ParsePrefix(cidr)
		return err == nil && p.Contains(addr)
	}
	if !in(b.CIDR) {
		return false
	}
	for _, e := range b.Except {
		if in(e) {
			return false
		}
	}
	return true
}

// CheckEgress checks that the policies selecting pods with labels refuse
// every Forbidden address on the ports agents use, and that their CIDRs
// parse.
func CheckEgress(policies []networkingv1.NetworkPolicy, labels map[string]string) []error {
	var sel []networkingv1.NetworkPolicy
	var errs []error
	for _, p := range policies {
		if selects(p.Spec.PodSelector.MatchLabels, labels) {
			sel = append(sel, p)
		}
		for _, r := range p.Spec.Egress {
			for _, peer := range r.To {
				if b := peer.IPBlock; b != nil {
					for _, c := range append([]string{b.CIDR}, b.Except...) {
						if _, err := netip.ParsePrefix(c); err != nil {
							errs = append(errs, fmt.Errorf("NetworkPolicy %s: %v", p.Name, err))
						}
					}
				}
			}
		}
	}
	if len(sel) == 0 {
		return append(errs, fmt.Errorf("no NetworkPolicy selects the pods %v", labels))
	}
	for _, a := range Forbidden {
		addr := netip.MustParseAddr(a)
		for _, port := range []int32{80, 443, 6443} {
			if EgressAllows(sel, addr, port) {
				errs = append(errs, fmt.Errorf("egress to %s port %d is allowed", a, port))
				break
			}
		}
	}
	return errs
}

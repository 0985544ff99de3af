// SPDX-License-Identifier: GPL-2.0
/*
 * Which packets the flexplane qdisc manages, and what it needs to know of
 * them (fpq_classify()): managed or bypassed; the flow id, the destination
 * endpoint, DSCP and ECN capability; the segments a GSO packet becomes
 * (fpq_layout(), also used at release).
 *
 * Never managed: packets that are not IP, ND / MLD, the protocol's own
 * datagrams, packets to addresses that are not endpoints, and the bypass
 * ports.
 */
#include <linux/icmpv6.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <net/dsfield.h>
#include <net/inet_ecn.h>
#include <net/ip.h>
#include <net/ipv6.h>

#include "fpq.h"

/* ---- classification ---- */

static bool fpq_port_bypassed(const struct fpq_params *p, struct sk_buff *skb,
			      int thoff, u8 proto)
{
	__be16 _ports[2], *ports;
	int i;

	if (!p->nbypass || thoff < 0 ||
	    (proto != IPPROTO_TCP && proto != IPPROTO_UDP))
		return false;
	ports = skb_header_pointer(skb, thoff, sizeof(_ports), _ports);
	if (!ports)
		return false;
	for (i = 0; i < p->nbypass; i++) {
		__be16 port = htons(p->bypass_ports[i]);

		if (ports[0] == port || ports[1] == port)
			return true;
	}
	return false;
}

static int fpq_classify_v4(const struct fpq_sched_data *q, struct sk_buff *skb,
			   struct fpq_pkt *pi, int *thoff, u8 *proto)
{
	const struct iphdr *iph;
	u32 d;

	if (!pskb_network_may_pull(skb, sizeof(*iph)))
		return FPQ_BYPASS_CTRL;
	iph = ip_hdr(skb);
	pi->dscp = ipv4_get_dsfield(iph) >> 2;
	pi->ect = INET_ECN_is_capable(ipv4_get_dsfield(iph));
	*proto = iph->protocol;
	if (!(iph->frag_off & htons(IP_OFFSET)))
		*thoff = skb_network_offset(skb) + iph->ihl * 4;
	if (iph->daddr == q->p.emu_addr && *proto == IPPROTO_UDP)
		return FPQ_BYPASS_OWN;	/* another qdisc's channel, or ours */
	d = ntohl(iph->daddr) - ntohl(q->p.ep_base);
	if (!q->p.ep_base || d >= q->p.ep_count)
		return FPQ_BYPASS_NODST;
	pi->dst = d;
	return FPQ_MANAGED;
}

/* Neighbour discovery and multicast listener messages keep the link alive:
 * never held.
 */
static bool fpq_icmpv6_ctrl(struct sk_buff *skb, int off)
{
	u8 _type, *type = skb_header_pointer(skb, off, 1, &_type);

	return type && ((*type >= ICMPV6_MGM_QUERY &&
			 *type <= NDISC_REDIRECT) ||
			*type == ICMPV6_MLD2_REPORT);
}

static int fpq_classify_v6(const struct fpq_sched_data *q, struct sk_buff *skb,
			   struct fpq_pkt *pi, int *thoff, u8 *proto)
{
	const struct ipv6hdr *ip6h;
	__be16 frag_off = 0;
	u8 nexthdr;
	int off;
	u32 d;

	if (!pskb_network_may_pull(skb, sizeof(*ip6h)))
		return FPQ_BYPASS_CTRL;
	ip6h = ipv6_hdr(skb);
	pi->dscp = ipv6_get_dsfield(ip6h) >> 2;
	pi->ect = INET_ECN_is_capable(ipv6_get_dsfield(ip6h));
	nexthdr = ip6h->nexthdr;
	off = ipv6_skip_exthdr(skb, skb_network_offset(skb) + sizeof(*ip6h),
			       &nexthdr, &frag_off);
	if (off < 0)
		return FPQ_BYPASS_CTRL;
	if (nexthdr == IPPROTO_ICMPV6 && fpq_icmpv6_ctrl(skb, off))
		return FPQ_BYPASS_CTRL;
	*proto = nexthdr;
	if (!(frag_off & htons(IP6_OFFSET)))
		*thoff = off;
	ip6h = ipv6_hdr(skb);
	if (!ipv6_prefix_equal(&ip6h->daddr, &q->p.ep_base6, 96) ||
	    ipv6_addr_any(&q->p.ep_base6))
		return FPQ_BYPASS_NODST;
	d = ntohl(ip6h->daddr.s6_addr32[3]) - ntohl(q->p.ep_base6.s6_addr32[3]);
	if (d >= q->p.ep_count)
		return FPQ_BYPASS_NODST;
	pi->dst = d;
	return FPQ_MANAGED;
}

/* L3 bytes of each segment the packet becomes: nsegs - 1 of seg bytes, then
 * one of last bytes. Only TCP and UDP GSO are understood.
 */
int fpq_layout(struct sk_buff *skb, struct fpq_pkt *pi)
{
	const struct skb_shared_info *shinfo = skb_shinfo(skb);
	u32 l3 = skb->len - skb_network_offset(skb);
	u32 thlen, payload;

	if (!skb_is_gso(skb)) {
		pi->nsegs = 1;
		pi->hdr = 0;
		pi->seg = l3;
		pi->last = l3;
		return 0;
	}
	if (skb->encapsulation || !shinfo->gso_size)
		return -EOPNOTSUPP;
	if (shinfo->gso_type & (SKB_GSO_TCPV4 | SKB_GSO_TCPV6))
		thlen = tcp_hdrlen(skb);
	else if (shinfo->gso_type & SKB_GSO_UDP_L4)
		thlen = sizeof(struct udphdr);
	else
		return -EOPNOTSUPP;
	pi->hdr = skb_transport_offset(skb) - skb_network_offset(skb) + thlen;
	if (l3 <= pi->hdr)
		return -EOPNOTSUPP;
	payload = l3 - pi->hdr;
	pi->nsegs = DIV_ROUND_UP(payload, shinfo->gso_size);
	pi->seg = pi->hdr + shinfo->gso_size;
	pi->last = pi->hdr + payload - (pi->nsegs - 1) * shinfo->gso_size;
	return 0;
}

int fpq_classify(const struct fpq_sched_data *q, struct sk_buff *skb,
		 struct fpq_pkt *pi)
{
	const struct socket *sock = READ_ONCE(q->sock);
	int thoff = -1, ret;
	u8 proto = 0;

	memset(pi, 0, sizeof(*pi));
	if (sock && skb->sk == sock->sk)
		return FPQ_BYPASS_OWN;
	switch (skb_protocol(skb, true)) {
	case htons(ETH_P_IP):
		ret = fpq_classify_v4(q, skb, pi, &thoff, &proto);
		break;
	case htons(ETH_P_IPV6):
		ret = fpq_classify_v6(q, skb, pi, &thoff, &proto);
		break;
	default:
		return FPQ_BYPASS_CTRL;
	}
	if (ret != FPQ_MANAGED)
		return ret;
	if (fpq_port_bypassed(&q->p, skb, thoff, proto))
		return FPQ_BYPASS_PORT;
	pi->hash = skb_get_hash_perturb(skb, &q->perturb);
	if (fpq_layout(skb, pi))
		return FPQ_SPLIT;
	return FPQ_MANAGED;
}

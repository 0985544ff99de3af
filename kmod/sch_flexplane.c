// SPDX-License-Identifier: GPL-2.0
/*
 * Flexplane: an emulated network decides.
 *
 * Principles:
 * Every packet this host sends to another endpoint of the experiment is
 * held here until the flexplane emulator, which models the whole network
 * (switches, queues, a researcher's scheme) in real time, has decided its
 * fate. For every *abstract packet* (apkt bytes of a flow, as the emulator
 * states in its WELCOME) a small request goes to the emulator over UDP;
 * the emulator answers each with exactly one verdict, once the abstract
 * packet has left the emulated network: release, release with ECN CE, or
 * drop. The wire protocol (docs/protocol.md) is the plain C core in proto/,
 * shared unchanged with the emulator.
 *
 * Packets are classified on flows (a keyed hash of the 5-tuple) into flow
 * queues; within a queue packets leave in order, each once all its verdicts
 * are in. GSO packets are accounted as the segments they become, so TSO can
 * stay on; one whose segments get different verdicts is segmented in
 * software on release. Requests are batched into datagrams by a work item;
 * verdicts arrive on the socket's encapsulation hook in softirq context.
 *
 * Never held: packets that are not IP, ND/MLD, the protocol's own
 * datagrams, packets to addresses that are not endpoints, and a list of
 * bypass ports. If the emulator is unreachable (verdicts owed, none for
 * hold_us), held and new packets are sent unmanaged or dropped (fallback
 * open / closed) until a session is open again.
 *
 * See docs/kmod.md (use, options, statistics) and docs/design.md.
 */

#include <linux/module.h>
#include <linux/types.h>
#include <linux/kernel.h>
#include <linux/errno.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/netdevice.h>
#include <net/netlink.h>
#include <net/pkt_sched.h>
#if __has_include("net/gso.h")		/* 6.5: skb_gso_segment() moved */
#include <net/gso.h>
#endif
#include <net/inet_sock.h>
#include <net/ipv6.h>
#include <net/sock.h>

#include "fpq.h"

bool fpq_cycle_stats;
module_param_named(cycle_stats, fpq_cycle_stats, bool, 0644);
MODULE_PARM_DESC(cycle_stats, "count CPU cycles spent in enqueue, dequeue, receive and transmit (xstats)");

/* ---- options ---- */

static const struct nla_policy fpq_policy[TCA_FLEXPLANE_MAX + 1] = {
	[TCA_FLEXPLANE_EMU_ADDR]	= { .type = NLA_U32 },
	[TCA_FLEXPLANE_EMU_PORT]	= { .type = NLA_U16 },
	[TCA_FLEXPLANE_SRC_ADDR]	= { .type = NLA_U32 },
	[TCA_FLEXPLANE_EP_BASE]		= { .type = NLA_U32 },
	[TCA_FLEXPLANE_EP_BASE6]	= NLA_POLICY_EXACT_LEN(sizeof(struct in6_addr)),
	[TCA_FLEXPLANE_EP_COUNT]	= { .type = NLA_U32 },
	[TCA_FLEXPLANE_LIMIT]		= { .type = NLA_U32 },
	[TCA_FLEXPLANE_FLOWS]		= { .type = NLA_U32 },
	[TCA_FLEXPLANE_WINDOW]		= { .type = NLA_U32 },
	[TCA_FLEXPLANE_APKT]		= { .type = NLA_U32 },
	[TCA_FLEXPLANE_HOLD_US]		= { .type = NLA_U32 },
	[TCA_FLEXPLANE_FALLBACK]	= { .type = NLA_U8 },
	[TCA_FLEXPLANE_PRIO]		= { .type = NLA_U8 },
	[TCA_FLEXPLANE_REQ_WORDS]	= { .type = NLA_BINARY, .len = FLEXPLANE_MAX_WORDS },
	[TCA_FLEXPLANE_VERDICT_WORDS]	= { .type = NLA_BINARY, .len = FLEXPLANE_MAX_WORDS },
	[TCA_FLEXPLANE_BYPASS_PORTS]	= { .type = NLA_BINARY,
					    .len = FLEXPLANE_MAX_BYPASS_PORTS * sizeof(u16) },
	[TCA_FLEXPLANE_RTO_US]		= { .type = NLA_U32 },
	[TCA_FLEXPLANE_SCHEME]		= { .type = NLA_NUL_STRING, .len = FP_SCHEME_NAME_MAX },
	[TCA_FLEXPLANE_ADOPT]		= { .type = NLA_U8 },
};

static void fpq_params_default(struct fpq_params *p)
{
	memset(p, 0, sizeof(*p));
	p->emu_port = FP_DEFAULT_PORT;
	p->flows_cnt = 1024;
	p->window = 16384;
	p->apkt = 1500;
	p->hold_us = 500 * USEC_PER_MSEC;
	p->rto_us = 2000;
	p->fallback = FLEXPLANE_FALLBACK_CLOSED;
	p->prio = FLEXPLANE_PRIO_NONE;
	p->adopt = 1;
}

/* NL_SET_ERR_MSG_ATTR() for messages chosen at run time (static strings). */
static void fpq_err(struct netlink_ext_ack *extack, const struct nlattr *attr,
		    const char *msg)
{
	if (extack) {
		extack->_msg = msg;
		extack->bad_attr = attr;
	}
}

/* Reads a u32 attribute into *val if present and within [lo, hi]. */
static int fpq_get_u32(struct nlattr **tb, int type, u32 lo, u32 hi, u32 *val,
		       const char *msg, struct netlink_ext_ack *extack)
{
	u32 v;

	if (!tb[type])
		return 0;
	v = nla_get_u32(tb[type]);
	if (v < lo || v > hi) {
		fpq_err(extack, tb[type], msg);
		return -EINVAL;
	}
	*val = v;
	return 0;
}

static int fpq_get_words(struct nlattr *attr, u8 *words, u8 *n, u8 max_value,
			 const char *msg, struct netlink_ext_ack *extack)
{
	int i, len;

	if (!attr)
		return 0;
	len = nla_len(attr);
	for (i = 0; i < len; i++) {
		if (((u8 *)nla_data(attr))[i] >= max_value) {
			fpq_err(extack, attr, msg);
			return -EINVAL;
		}
	}
	memcpy(words, nla_data(attr), len);
	*n = len;
	return 0;
}

/* Options a running qdisc keeps: its socket, tables and session depend on
 * them. The endpoint addresses and count too: held packets and requests in
 * flight carry endpoint ids of the old mapping, and the emulator's topology
 * is fixed for its run, so a new mapping needs a new qdisc (and session).
 */
static int fpq_check_fixed(const struct fpq_params *old, const struct fpq_params *p,
			   struct nlattr **tb, struct netlink_ext_ack *extack)
{
#define FPQ_FIXED(type, name) \
	{ type, "flexplane: " name " cannot be changed (delete and add the qdisc)" }
	static const struct {
		int type;
		const char *msg;
	} fixed[] = {
		FPQ_FIXED(TCA_FLEXPLANE_EMU_ADDR, "emulator address"),
		FPQ_FIXED(TCA_FLEXPLANE_EMU_PORT, "emulator port"),
		FPQ_FIXED(TCA_FLEXPLANE_SRC_ADDR, "src"),
		FPQ_FIXED(TCA_FLEXPLANE_EP_BASE, "endpoints"),
		FPQ_FIXED(TCA_FLEXPLANE_EP_BASE6, "endpoints6"),
		FPQ_FIXED(TCA_FLEXPLANE_EP_COUNT, "count"),
		FPQ_FIXED(TCA_FLEXPLANE_FLOWS, "flows"),
		FPQ_FIXED(TCA_FLEXPLANE_WINDOW, "window"),
		FPQ_FIXED(TCA_FLEXPLANE_RTO_US, "rto"),
		FPQ_FIXED(TCA_FLEXPLANE_REQ_WORDS, "request words"),
		FPQ_FIXED(TCA_FLEXPLANE_VERDICT_WORDS, "verdict words"),
		FPQ_FIXED(TCA_FLEXPLANE_SCHEME, "scheme"),
	};
#undef FPQ_FIXED
	bool same[ARRAY_SIZE(fixed)] = {
		old->emu_addr == p->emu_addr,
		old->emu_port == p->emu_port,
		old->src_addr == p->src_addr,
		old->ep_base == p->ep_base,
		ipv6_addr_equal(&old->ep_base6, &p->ep_base6),
		old->ep_count == p->ep_count,
		old->flows_cnt == p->flows_cnt,
		old->window == p->window,
		old->rto_us == p->rto_us,
		old->nreq_words == p->nreq_words &&
			!memcmp(old->req_words, p->req_words, p->nreq_words),
		old->nverdict_words == p->nverdict_words &&
			!memcmp(old->verdict_words, p->verdict_words, p->nverdict_words),
		!strcmp(old->scheme, p->scheme),
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(fixed); i++) {
		if (tb[fixed[i].type] && !same[i]) {
			fpq_err(extack, tb[fixed[i].type], fixed[i].msg);
			return -EINVAL;
		}
	}
	return 0;
}

/* The one validation path: builds the parameters @opt asks for on top of
 * @p (the defaults on init, the current ones on change) and checks every
 * value; nothing is applied unless all are valid.
 */
static int fpq_parse(struct Qdisc *sch, struct nlattr *opt, bool init,
		     struct fpq_params *p, u32 *limit, struct netlink_ext_ack *extack)
{
	struct fpq_sched_data *q = qdisc_priv(sch);
	struct nlattr *tb[TCA_FLEXPLANE_MAX + 1];
	bool prio_on;
	int i, err;

	err = nla_parse_nested_deprecated(tb, TCA_FLEXPLANE_MAX, opt, fpq_policy, extack);
	if (err < 0)
		return err;

	if (tb[TCA_FLEXPLANE_EMU_ADDR])
		p->emu_addr = nla_get_in_addr(tb[TCA_FLEXPLANE_EMU_ADDR]);
	if (tb[TCA_FLEXPLANE_EMU_PORT])
		p->emu_port = nla_get_u16(tb[TCA_FLEXPLANE_EMU_PORT]);
	if (tb[TCA_FLEXPLANE_SRC_ADDR])
		p->src_addr = nla_get_in_addr(tb[TCA_FLEXPLANE_SRC_ADDR]);
	if (tb[TCA_FLEXPLANE_EP_BASE])
		p->ep_base = nla_get_in_addr(tb[TCA_FLEXPLANE_EP_BASE]);
	if (tb[TCA_FLEXPLANE_EP_BASE6])
		p->ep_base6 = nla_get_in6_addr(tb[TCA_FLEXPLANE_EP_BASE6]);
	if (tb[TCA_FLEXPLANE_SCHEME]) {
		const char *s = nla_data(tb[TCA_FLEXPLANE_SCHEME]);

		if (fp_scheme_name_len(s) < 0) {
			NL_SET_ERR_MSG_ATTR(extack, tb[TCA_FLEXPLANE_SCHEME],
					    "flexplane: scheme must be printable ASCII");
			return -EINVAL;
		}
		strscpy(p->scheme, s, sizeof(p->scheme));
	}

	err = fpq_get_u32(tb, TCA_FLEXPLANE_EP_COUNT, 1, U16_MAX, &p->ep_count,
			  "flexplane: count must be 1..65535", extack) ?:
	      fpq_get_u32(tb, TCA_FLEXPLANE_LIMIT, 1, 1000000, limit,
			  "flexplane: limit must be 1..1000000 packets", extack) ?:
	      fpq_get_u32(tb, TCA_FLEXPLANE_FLOWS, 1, 65536, &p->flows_cnt,
			  "flexplane: flows must be 1..65536", extack) ?:
	      fpq_get_u32(tb, TCA_FLEXPLANE_WINDOW, 2, 32768, &p->window,
			  "flexplane: window must be a power of two, 2..32768", extack) ?:
	      fpq_get_u32(tb, TCA_FLEXPLANE_APKT, 512, U16_MAX, &p->apkt,
			  "flexplane: apkt must be 512..65535 bytes", extack) ?:
	      fpq_get_u32(tb, TCA_FLEXPLANE_HOLD_US, USEC_PER_MSEC, 60 * USEC_PER_SEC,
			  &p->hold_us, "flexplane: hold must be 1ms..60s", extack) ?:
	      fpq_get_u32(tb, TCA_FLEXPLANE_RTO_US, 100, USEC_PER_SEC, &p->rto_us,
			  "flexplane: rto must be 100us..1s", extack);
	if (err)
		return err;
	if (!is_power_of_2(p->window)) {
		NL_SET_ERR_MSG_ATTR(extack, tb[TCA_FLEXPLANE_WINDOW],
				    "flexplane: window must be a power of two, 2..32768");
		return -EINVAL;
	}
	if (tb[TCA_FLEXPLANE_FALLBACK]) {
		p->fallback = nla_get_u8(tb[TCA_FLEXPLANE_FALLBACK]);
		if (p->fallback > FLEXPLANE_FALLBACK_CLOSED) {
			NL_SET_ERR_MSG_ATTR(extack, tb[TCA_FLEXPLANE_FALLBACK],
					    "flexplane: fallback must be open or closed");
			return -EINVAL;
		}
	}
	if (tb[TCA_FLEXPLANE_PRIO]) {
		p->prio = nla_get_u8(tb[TCA_FLEXPLANE_PRIO]);
		if (p->prio > FLEXPLANE_PRIO_SKB) {
			NL_SET_ERR_MSG_ATTR(extack, tb[TCA_FLEXPLANE_PRIO],
					    "flexplane: prio must be none, remaining or skb");
			return -EINVAL;
		}
		prio_on = p->prio != FLEXPLANE_PRIO_NONE;
		if (!init && prio_on != !!(q->features & FP_FEAT_PRIO)) {
			NL_SET_ERR_MSG_ATTR(extack, tb[TCA_FLEXPLANE_PRIO],
					    "flexplane: prio cannot be switched on or off on a running session (delete and add the qdisc)");
			return -EINVAL;
		}
	}
	if (tb[TCA_FLEXPLANE_ADOPT])
		p->adopt = !!nla_get_u8(tb[TCA_FLEXPLANE_ADOPT]);
	err = fpq_get_words(tb[TCA_FLEXPLANE_REQ_WORDS], p->req_words, &p->nreq_words,
			    __FLEXPLANE_WORD_MAX, "flexplane: unknown request word", extack) ?:
	      fpq_get_words(tb[TCA_FLEXPLANE_VERDICT_WORDS], p->verdict_words,
			    &p->nverdict_words, __FLEXPLANE_APPLY_MAX,
			    "flexplane: unknown verdict word", extack);
	if (err)
		return err;
	if (tb[TCA_FLEXPLANE_BYPASS_PORTS]) {
		struct nlattr *a = tb[TCA_FLEXPLANE_BYPASS_PORTS];
		const u16 *ports = nla_data(a);

		if (nla_len(a) % sizeof(u16)) {
			NL_SET_ERR_MSG_ATTR(extack, a, "flexplane: bypass ports must be 16-bit");
			return -EINVAL;
		}
		p->nbypass = nla_len(a) / sizeof(u16);
		for (i = 0; i < p->nbypass; i++) {
			if (!ports[i]) {
				NL_SET_ERR_MSG_ATTR(extack, a,
						    "flexplane: bypass port 0 is invalid");
				return -EINVAL;
			}
			p->bypass_ports[i] = ports[i];
		}
	}

	if (init) {
		if (!p->emu_addr || ipv4_is_multicast(p->emu_addr) ||
		    ipv4_is_lbcast(p->emu_addr)) {
			NL_SET_ERR_MSG_MOD(extack,
					   "emulator IPv4 address missing or invalid (option: emulator ADDR)");
			return -EINVAL;
		}
		if (!p->emu_port) {
			NL_SET_ERR_MSG_MOD(extack, "emulator port must not be 0");
			return -EINVAL;
		}
	} else {
		err = fpq_check_fixed(&q->p, p, tb, extack);
		if (err)
			return err;
	}
	if (!p->ep_count || (!p->ep_base && ipv6_addr_any(&p->ep_base6))) {
		NL_SET_ERR_MSG_MOD(extack,
				   "endpoints missing (options: endpoints ADDR [endpoints6 ADDR6] count N)");
		return -EINVAL;
	}
	return 0;
}

static int fpq_change(struct Qdisc *sch, struct nlattr *opt,
		      struct netlink_ext_ack *extack)
{
	struct fpq_sched_data *q = qdisc_priv(sch);
	struct fpq_params p = q->p;
	u32 limit = sch->limit;
	int err;

	if (!opt) {
		NL_SET_ERR_MSG_MOD(extack, "options missing");
		return -EINVAL;
	}
	err = fpq_parse(sch, opt, false, &p, &limit, extack);
	if (err)
		return err;
	sch_tree_lock(sch);
	spin_lock(&q->lock);
	q->p = p;
	sch->limit = limit;	/* applies to new packets: held ones stay */
	spin_unlock(&q->lock);
	sch_tree_unlock(sch);
	return 0;
}

/* ---- enqueue / dequeue ---- */

enum { FPQ_SEGMENT_FIRST = -1 };

static int fpq_enqueue_one(struct fpq_sched_data *q, struct sk_buff *skb,
			   int cls, const struct fpq_pkt *pi, u64 t0,
			   struct sk_buff **to_free)
{
	struct Qdisc *sch = q->sch;
	u64 now = ktime_get_ns();
	int err;

	spin_lock(&q->lock);
	if (unlikely(q->stopping))
		goto drop;
	if (unlikely(sch->q.qlen >= sch->limit)) {
		q->stats.overlimit++;
		goto drop;
	}
	switch (cls) {
	case FPQ_MANAGED:
		if (q->mode != FPQ_MODE_HOLD) {
			if (q->p.fallback == FLEXPLANE_FALLBACK_CLOSED) {
				q->stats.fallback_dropped += fpq_nsegs(skb);
				goto drop;
			}
			fpq_admit_unmanaged(q, skb, pi);
			break;
		}
		err = fpq_admit(q, skb, pi, now);
		if (err == -E2BIG && skb_is_gso(skb)) {
			spin_unlock(&q->lock);
			return FPQ_SEGMENT_FIRST;
		}
		if (err) {
			if (err == -E2BIG)
				q->stats.overlimit++;
			goto drop;
		}
		fpq_channel_kick(q, now);
		break;
	case FPQ_SPLIT:
		spin_unlock(&q->lock);
		return FPQ_SEGMENT_FIRST;
	case FPQ_BYPASS_OWN:
		q->stats.bypass_own++;
		__qdisc_enqueue_tail(skb, &q->bypass);
		break;
	case FPQ_BYPASS_NODST:
		q->stats.bypass_nodst++;
		__qdisc_enqueue_tail(skb, &q->bypass);
		break;
	case FPQ_BYPASS_PORT:
		q->stats.bypass_port++;
		__qdisc_enqueue_tail(skb, &q->bypass);
		break;
	default:
		q->stats.bypass_ctrl++;
		__qdisc_enqueue_tail(skb, &q->bypass);
		break;
	}
	if (fpq_cycle_stats) {
		q->stats.cycles_enqueue += get_cycles() - t0;
		q->stats.calls_enqueue++;
	}
	spin_unlock(&q->lock);
	sch->q.qlen++;
	qdisc_qstats_backlog_inc(sch, skb);
	return NET_XMIT_SUCCESS;

drop:
	spin_unlock(&q->lock);
	return qdisc_drop(skb, sch, to_free);
}

/* A GSO packet this qdisc cannot account as it is (it would span more than
 * FPQ_MAX_CHUNKS abstract packets, or its GSO type is not TCP or UDP):
 * segment it in software and enqueue the segments, as sch_tbf does.
 */
static int fpq_enqueue_segments(struct fpq_sched_data *q, struct sk_buff *skb,
				struct sk_buff **to_free)
{
	struct Qdisc *sch = q->sch;
	unsigned int len = 0, prev_len = qdisc_pkt_len(skb);
	struct sk_buff *segs, *nskb;
	struct fpq_pkt pi;
	int nb = 0, cls;

	segs = skb_gso_segment(skb, netif_skb_features(skb) & ~NETIF_F_GSO_MASK);
	if (IS_ERR_OR_NULL(segs))
		return qdisc_drop(skb, sch, to_free);
	spin_lock(&q->lock);
	q->stats.gso_split++;
	spin_unlock(&q->lock);
	skb_list_walk_safe(segs, segs, nskb) {
		unsigned int seg_len = segs->len;

		skb_mark_not_on_list(segs);
		qdisc_skb_cb(segs)->pkt_len = seg_len;
		cls = fpq_classify(q, segs, &pi);
		if (cls == FPQ_SPLIT)
			cls = FPQ_BYPASS_CTRL;	/* cannot happen: segments are not GSO */
		if (fpq_enqueue_one(q, segs, cls, &pi, fpq_cycles(), to_free) ==
		    NET_XMIT_SUCCESS) {
			nb++;
			len += seg_len;
		}
	}
	/* The caller accounted one packet of prev_len bytes. */
	if (nb > 1)
		qdisc_tree_reduce_backlog(sch, 1 - nb, prev_len - len);
	consume_skb(skb);
	return nb > 0 ? NET_XMIT_SUCCESS : NET_XMIT_DROP;
}

static int fpq_enqueue(struct sk_buff *skb, struct Qdisc *sch,
		       struct sk_buff **to_free)
{
	struct fpq_sched_data *q = qdisc_priv(sch);
	u64 t0 = fpq_cycles();
	struct fpq_pkt pi;
	int ret;

	ret = fpq_enqueue_one(q, skb, fpq_classify(q, skb, &pi), &pi, t0, to_free);
	if (ret == FPQ_SEGMENT_FIRST)
		ret = fpq_enqueue_segments(q, skb, to_free);
	return ret;
}

static struct sk_buff *fpq_dequeue(struct Qdisc *sch)
{
	struct fpq_sched_data *q = qdisc_priv(sch);
	struct sk_buff *skb, *dropped = NULL;
	u64 t0 = fpq_cycles();
	struct fpq_flow *flow;
	int tree_pkts = 0, tree_bytes = 0;
	u64 now = 0;

	spin_lock(&q->lock);
	if (unlikely(q->stopping)) {
		spin_unlock(&q->lock);
		return NULL;
	}
	skb = __qdisc_dequeue_head(&q->bypass);
	while (!skb && (flow = list_first_entry_or_null(&q->ready, struct fpq_flow, ready))) {
		struct sk_buff *head = fpq_flow_pop(q, flow);
		bool managed = !fpq_cb(head)->fallback;
		u64 ready_ns = flow->ready_ns;

		if (!now)
			now = ktime_get_ns();
		/* Its next packet, if it may leave too, waits for us from now. */
		flow->ready_ns = now;
		skb = fpq_release(q, flow, head);
		if (IS_ERR(skb)) {		/* replaced by its segments */
			flow->ready_ns = ready_ns;
			skb = NULL;
		} else if (skb && managed) {
			fpq_stage_add(q, FLEXPLANE_STAGE_RELEASE, now - ready_ns);
		} else if (!skb) {		/* dropped on its verdict */
			sch->q.qlen--;
			qdisc_qstats_backlog_dec(sch, head);
			qdisc_qstats_drop(sch);
			q->tree_pkts++;
			q->tree_bytes += qdisc_pkt_len(head);
			head->next = dropped;
			dropped = head;
		}
	}
	if (skb) {
		sch->q.qlen--;
		qdisc_qstats_backlog_dec(sch, skb);
		qdisc_bstats_update(sch, skb);
	}
	/* Parents learn of drops and segmentation here. We cannot call
	 * qdisc_tree_reduce_backlog() if our qlen is 0, or HTB crashes:
	 * defer it to a later round (as sch_fq_codel does).
	 */
	if (q->tree_pkts && sch->q.qlen) {
		tree_pkts = q->tree_pkts;
		tree_bytes = q->tree_bytes;
		q->tree_pkts = 0;
		q->tree_bytes = 0;
	}
	if (fpq_cycle_stats) {
		q->stats.cycles_dequeue += get_cycles() - t0;
		q->stats.calls_dequeue++;
	}
	spin_unlock(&q->lock);

	if (tree_pkts)
		qdisc_tree_reduce_backlog(sch, tree_pkts, tree_bytes);
	kfree_skb_list_reason(dropped, SKB_DROP_REASON_QDISC_DROP);
	return skb;
}

static void fpq_reset(struct Qdisc *sch)
{
	struct fpq_sched_data *q = qdisc_priv(sch);

	spin_lock_bh(&q->lock);
	if (q->flows) {
		if (q->slots) {
			q->stats.aborted += fp_ep_pending(&q->conn);
			fp_ep_abort_pending(&q->conn, ktime_get_ns(), NULL, NULL);
			fpq_channel_kick(q, ktime_get_ns());
		}
		fpq_purge(q);
	}
	q->tree_pkts = 0;
	q->tree_bytes = 0;
	spin_unlock_bh(&q->lock);
}

/* ---- setup ---- */

static void fpq_destroy(struct Qdisc *sch)
{
	struct fpq_sched_data *q = qdisc_priv(sch);

	fpq_channel_stop(q);
	kvfree(q->flows);
	q->flows = NULL;
}

static int fpq_init(struct Qdisc *sch, struct nlattr *opt,
		    struct netlink_ext_ack *extack)
{
	struct fpq_sched_data *q = qdisc_priv(sch);
	u32 i, limit = 10240;
	int err;

	spin_lock_init(&q->lock);
	q->sch = sch;
	INIT_LIST_HEAD(&q->ready);
	get_random_bytes(&q->perturb, sizeof(q->perturb));
	fpq_params_default(&q->p);
	if (!opt) {
		NL_SET_ERR_MSG_MOD(extack,
				   "options missing: tc qdisc add dev DEV root flexplane emulator ADDR endpoints ADDR count N (needs q_flexplane.so in tc's library path)");
		return -EINVAL;
	}
	err = fpq_parse(sch, opt, true, &q->p, &limit, extack);
	if (err)
		return err;
	sch->limit = limit;

	q->flows = kvcalloc(q->p.flows_cnt, sizeof(*q->flows), GFP_KERNEL);
	if (!q->flows)
		return -ENOMEM;
	for (i = 0; i < q->p.flows_cnt; i++)
		INIT_LIST_HEAD(&q->flows[i].ready);

	/* Packets wait for verdicts here: never let the stack skip us. */
	sch->flags &= ~TCQ_F_CAN_BYPASS;
	return fpq_channel_start(q, extack);
}

/* ---- dumps ---- */

static int fpq_dump(struct Qdisc *sch, struct sk_buff *skb)
{
	struct fpq_sched_data *q = qdisc_priv(sch);
	struct fpq_params p;
	u16 ports[FLEXPLANE_MAX_BYPASS_PORTS];
	struct nlattr *opts;
	int i;

	spin_lock_bh(&q->lock);
	p = q->p;
	spin_unlock_bh(&q->lock);
	for (i = 0; i < p.nbypass; i++)
		ports[i] = p.bypass_ports[i];

	opts = nla_nest_start_noflag(skb, TCA_OPTIONS);
	if (!opts)
		goto nla_put_failure;
	if (nla_put_in_addr(skb, TCA_FLEXPLANE_EMU_ADDR, p.emu_addr) ||
	    nla_put_u16(skb, TCA_FLEXPLANE_EMU_PORT, p.emu_port) ||
	    (p.src_addr && nla_put_in_addr(skb, TCA_FLEXPLANE_SRC_ADDR, p.src_addr)) ||
	    (p.ep_base && nla_put_in_addr(skb, TCA_FLEXPLANE_EP_BASE, p.ep_base)) ||
	    (!ipv6_addr_any(&p.ep_base6) &&
	     nla_put_in6_addr(skb, TCA_FLEXPLANE_EP_BASE6, &p.ep_base6)) ||
	    nla_put_u32(skb, TCA_FLEXPLANE_EP_COUNT, p.ep_count) ||
	    nla_put_u32(skb, TCA_FLEXPLANE_LIMIT, sch->limit) ||
	    nla_put_u32(skb, TCA_FLEXPLANE_FLOWS, p.flows_cnt) ||
	    nla_put_u32(skb, TCA_FLEXPLANE_WINDOW, p.window) ||
	    nla_put_u32(skb, TCA_FLEXPLANE_APKT, p.apkt) ||
	    nla_put_u32(skb, TCA_FLEXPLANE_HOLD_US, p.hold_us) ||
	    nla_put_u32(skb, TCA_FLEXPLANE_RTO_US, p.rto_us) ||
	    nla_put_u8(skb, TCA_FLEXPLANE_FALLBACK, p.fallback) ||
	    nla_put_u8(skb, TCA_FLEXPLANE_PRIO, p.prio) ||
	    nla_put_u8(skb, TCA_FLEXPLANE_ADOPT, p.adopt) ||
	    (p.nreq_words &&
	     nla_put(skb, TCA_FLEXPLANE_REQ_WORDS, p.nreq_words, p.req_words)) ||
	    (p.nverdict_words &&
	     nla_put(skb, TCA_FLEXPLANE_VERDICT_WORDS, p.nverdict_words, p.verdict_words)) ||
	    (p.nbypass &&
	     nla_put(skb, TCA_FLEXPLANE_BYPASS_PORTS, p.nbypass * sizeof(u16), ports)) ||
	    (p.scheme[0] && nla_put_string(skb, TCA_FLEXPLANE_SCHEME, p.scheme)))
		goto nla_put_failure;
	return nla_nest_end(skb, opts);

nla_put_failure:
	return -1;
}

static int fpq_dump_stats(struct Qdisc *sch, struct gnet_dump *d)
{
	struct fpq_sched_data *q = qdisc_priv(sch);
	const struct fp_ep_conn *c = &q->conn;
	struct tc_flexplane_xstats *xs;
	struct fp_ep_stats ps;
	int err;

	/* Too large for the stack with its stage histograms; the dump may
	 * hold the qdisc's root lock.
	 */
	xs = kzalloc(sizeof(*xs), GFP_ATOMIC);
	if (!xs)
		return -ENOMEM;
	xs->version = FLEXPLANE_XSTATS_VERSION;
	spin_lock_bh(&q->lock);
	xs->state = fpq_state(q);
	xs->req_custom_len = q->req_custom_len;
	xs->verdict_custom_len = q->verdict_custom_len;
	xs->features = q->features;
	xs->session = c->session;
	xs->endpoint_id = c->endpoint_id;
	xs->apkt_bytes = q->apkt;
	xs->last_reject = q->last_reject;
	xs->window = c->state == FP_EP_ESTABLISHED ? c->win : 0;
	xs->flows_active = q->flows_active;
	xs->held = sch->q.qlen;
	xs->pending = q->slots ? fp_ep_pending(c) : 0;
	xs->c = q->stats;
	memcpy(xs->stages, q->stages, sizeof(xs->stages));
	fpq_channel_stats(q, &ps);
	spin_unlock_bh(&q->lock);
	if (q->sock)
		xs->local_port = ntohs(inet_sk(q->sock->sk)->inet_sport);

	xs->c.rx_bad = ps.rx_bad;
	xs->c.rx_stale = ps.rx_stale;
	xs->c.verdict_dups = ps.verdict_dups;
	xs->c.verdict_gaps = ps.verdict_gaps;
	xs->c.verdict_mismatch = ps.verdict_mismatch;
	xs->c.mark_non_ect = ps.mark_non_ect;
	xs->c.hellos = ps.hellos_sent;
	xs->c.sessions = ps.sessions;
	xs->c.resets = ps.resets;
	xs->c.rejects = ps.rejects;
	xs->c.retransmits = ps.requests_resent;
	xs->c.timeouts = ps.timeouts;
	xs->c.naks = ps.naks;
	xs->c.probes = ps.probes;
	xs->c.acks = ps.acks_sent;
	err = gnet_stats_copy_app(d, xs, sizeof(*xs));
	kfree(xs);
	return err;
}

static struct Qdisc_ops fpq_qdisc_ops __read_mostly = {
	.id		=	"flexplane",
	.priv_size	=	sizeof(struct fpq_sched_data),
	.enqueue	=	fpq_enqueue,
	.dequeue	=	fpq_dequeue,
	.peek		=	qdisc_peek_dequeued,
	.init		=	fpq_init,
	.reset		=	fpq_reset,
	.destroy	=	fpq_destroy,
	.change		=	fpq_change,
	.dump		=	fpq_dump,
	.dump_stats	=	fpq_dump_stats,
	.owner		=	THIS_MODULE,
};

static int __init fpq_module_init(void)
{
	return register_qdisc(&fpq_qdisc_ops);
}

static void __exit fpq_module_exit(void)
{
	unregister_qdisc(&fpq_qdisc_ops);
}

module_init(fpq_module_init)
module_exit(fpq_module_exit)
MODULE_ALIAS("sch_flexplane");
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Flexplane: packets wait for the verdict of an emulated network");

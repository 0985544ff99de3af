// SPDX-License-Identifier: GPL-2.0
/*
 * The endpoint API of a flexplane scheme, one packet at a time (which
 * packets are managed, and how: fpq_classify.c).
 *
 * fpq_admit()		cut the packet into abstract packets and request
 *			each one (prepare_request fills the scheme fields)
 * fpq_on_verdict()	fold a verdict into the packets it covers
 *			(prepare_to_send applies its custom data)
 * fpq_release()	at dequeue: send, CE-mark, drop, or segment a GSO
 *			packet whose segments got different verdicts
 *
 * Abstract packets. A flow queue's bytes (L3, per segment) are cut into
 * abstract packets of at most apkt bytes. A segment that fits in the room
 * left in the queue's last abstract packet joins it, provided that abstract
 * packet has no verdict yet and belongs to the same flow, destination, DSCP
 * and ECN capability; otherwise it starts ceil(len / apkt) new ones. So
 * full-sized TCP segments map one to one when apkt is the MTU, and small
 * packets (pure ACKs, short messages) share one abstract packet instead of
 * each taking a whole timeslot of the emulated network. A packet leaves
 * once every abstract packet it occupies has its verdict.
 */
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/netdevice.h>
#include <linux/tcp.h>
#if __has_include("linux/unaligned.h")	/* 6.12: moved from asm/ */
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif
#if __has_include("net/gso.h")		/* 6.5: skb_gso_segment() moved */
#include <net/gso.h>
#endif
#include <net/dsfield.h>
#include <net/inet_ecn.h>
#include <net/ip.h>
#include <net/ipv6.h>

#include "fpq.h"

/* ---- flow queues ---- */

static void fpq_flow_push(struct fpq_sched_data *q, struct fpq_flow *flow,
			  struct sk_buff *skb)
{
	skb->next = NULL;
	if (!flow->head) {
		flow->head = skb;
		q->flows_active++;
	} else {
		flow->tail->next = skb;
	}
	flow->tail = skb;
}

void fpq_flow_ready(struct fpq_sched_data *q, struct fpq_flow *flow)
{
	if (list_empty(&flow->ready))
		list_add_tail(&flow->ready, &q->ready);
}

/* Take the head of a ready flow; the flow goes to the back of q->ready if
 * its next packet can leave too (round robin among ready flows).
 */
struct sk_buff *fpq_flow_pop(struct fpq_sched_data *q, struct fpq_flow *flow)
{
	struct sk_buff *skb = flow->head;

	flow->head = skb->next;
	skb_mark_not_on_list(skb);
	if (!flow->head) {
		flow->tail = NULL;
		q->flows_active--;
		list_del_init(&flow->ready);
	} else if (fpq_cb(flow->head)->ready) {
		list_move_tail(&flow->ready, &q->ready);
	} else {
		list_del_init(&flow->ready);
	}
	return skb;
}

/* Under RTNL (qdisc reset). */
void fpq_purge(struct fpq_sched_data *q)
{
	u32 i;

	for (i = 0; i < q->p.flows_cnt; i++) {
		struct fpq_flow *flow = &q->flows[i];

		rtnl_kfree_skbs(flow->head, flow->tail);
		flow->head = NULL;
		flow->tail = NULL;
		flow->open_room = 0;
		flow->unverdicted = 0;
		INIT_LIST_HEAD(&flow->ready);
	}
	__qdisc_reset_queue(&q->bypass);
	INIT_LIST_HEAD(&q->ready);
	q->flows_active = 0;
}

/* ---- cutting into abstract packets ---- */

struct fpq_pack {
	int	cur;	/* current abstract packet, relative to the skb's first; -1: none */
	u32	room;	/* bytes left in it */
	u32	apkt;
};

/* Place a segment of len bytes: in the current abstract packet if it fits,
 * else in ceil(len / apkt) new ones. Returns the index of the first one it
 * occupies, *n how many.
 */
static int fpq_pack_seg(struct fpq_pack *ps, u32 len, u32 *n)
{
	if (ps->cur >= 0 && len <= ps->room) {
		ps->room -= len;
		*n = 1;
		return ps->cur;
	}
	*n = DIV_ROUND_UP(len, ps->apkt);
	ps->cur += *n;
	ps->room = *n * ps->apkt - len;
	return ps->cur - *n + 1;
}

static u32 fpq_word(const struct sk_buff *skb, const struct fpq_flow *flow,
		    const struct fp_request *req, u8 src)
{
	switch (src) {
	case FLEXPLANE_WORD_LEN:
		return req->size_bytes;
	case FLEXPLANE_WORD_REMAINING:
		return flow->unverdicted;
	case FLEXPLANE_WORD_MARK:
		return skb->mark;
	case FLEXPLANE_WORD_SKBPRIO:
		return skb->priority;
	case FLEXPLANE_WORD_HASH:
		return req->flow;
	}
	return 0;
}

/* prepare_request: the scheme's fields of one abstract packet's request.
 * DSCP and ECN capability are already in req; this adds the priority
 * (pFabric-style rank: the flow queue's backlog including this abstract
 * packet, or skb->priority) and the request custom words the session
 * negotiated.
 */
static void fpq_prepare_request(const struct fpq_sched_data *q,
				const struct sk_buff *skb,
				const struct fpq_flow *flow,
				struct fp_request *req)
{
	unsigned int w;

	switch (q->p.prio) {
	case FLEXPLANE_PRIO_REMAINING:
		req->priority = flow->unverdicted;
		break;
	case FLEXPLANE_PRIO_SKB:
		req->priority = skb->priority;
		break;
	}
	for (w = 0; w < q->p.nreq_words && 4 * w + 4 <= q->req_custom_len; w++)
		put_unaligned_be32(fpq_word(skb, flow, req, q->p.req_words[w]),
				   req->custom + 4 * w);
}

static u64 fpq_cookie(u32 bucket, u32 id)
{
	return (u64)bucket << 32 | id;
}

/* Hold a managed packet: request its new abstract packets. Returns 0, or
 * -E2BIG (spans too many abstract packets: segment it first), or -ENOBUFS
 * (the window of requests without verdict is full: drop it).
 */
int fpq_admit(struct fpq_sched_data *q, struct sk_buff *skb,
	      const struct fpq_pkt *pi, u64 now)
{
	u32 bucket = reciprocal_scale(pi->hash, q->p.flows_cnt);
	struct fpq_flow *flow = &q->flows[bucket];
	struct fpq_pack ps = { .cur = -1, .apkt = q->apkt };
	u8 tos = pi->dscp << 2 | pi->ect;
	u16 sizes[FPQ_MAX_CHUNKS];
	struct fpq_skb_cb *cb;
	u32 i, id0, nchunks, first_new, coalesced = 0;
	bool joined;

	joined = flow->open_room && flow->open_hash == pi->hash &&
		 flow->open_dst == pi->dst && flow->open_tos == tos &&
		 (pi->nsegs > 1 ? pi->seg : pi->last) <= flow->open_room;
	if (joined) {
		ps.cur = 0;
		ps.room = flow->open_room;
	}
	for (i = 0; i < pi->nsegs; i++) {
		u32 len = i + 1 < pi->nsegs ? pi->seg : pi->last;
		int before = ps.cur, at;
		u32 n, k;

		at = fpq_pack_seg(&ps, len, &n);
		if (ps.cur >= FPQ_MAX_CHUNKS)
			return -E2BIG;
		if (ps.cur == before) {
			if (joined && at == 0)
				coalesced++;
			else
				sizes[at] += len;
			continue;
		}
		for (k = 0; k < n; k++)
			sizes[at + k] = min(len - k * ps.apkt, ps.apkt);
	}
	nchunks = ps.cur + 1;
	first_new = joined ? 1 : 0;
	if (q->conn.next - q->conn.low + (nchunks - first_new) > q->nslots) {
		q->stats.window_full++;
		return -ENOBUFS;
	}

	if (!fp_ep_pending(&q->conn))
		q->progress_ns = now;
	id0 = joined ? flow->open_id : flow->next_id;
	for (i = first_new; i < nchunks; i++) {
		struct fp_request req = {
			.flow = pi->hash,
			.id = id0 + i,
			.dst = pi->dst,
			.size_bytes = sizes[i],
			.flags = pi->ect ? FP_REQ_ECT : 0,
			.dscp = pi->dscp,
		};

		struct fpq_stamp *st = &q->stamps[q->conn.next & q->conn.mask];

		flow->unverdicted++;
		fpq_prepare_request(q, skb, flow, &req);
		WARN_ON_ONCE(fp_ep_submit(&q->conn, &req, fpq_cookie(bucket, req.id), now));
		st->submit_ns = now;
		st->sent_ns = 0;
	}

	cb = fpq_cb(skb);
	cb->first = id0;
	cb->nchunks = nchunks;
	cb->pending = nchunks;
	cb->ready = 0;
	cb->fallback = 0;
	cb->room0 = joined ? flow->open_room : 0;
	cb->apkt = ps.apkt;
	cb->drops = 0;
	cb->marks = 0;

	flow->next_id = id0 + nchunks;
	flow->open_room = ps.room;
	if (ps.room) {
		flow->open_id = id0 + nchunks - 1;
		flow->open_hash = pi->hash;
		flow->open_dst = pi->dst;
		flow->open_tos = tos;
	}
	/* The wait for the verdict is time in the emulated network, not in a
	 * local queue: release the socket's send budget now, as netem does,
	 * or TCP small queues would cap the emulated queue at ~1 ms per flow.
	 */
	skb_orphan_partial(skb);
	fpq_flow_push(q, flow, skb);

	q->stats.pkts_managed++;
	q->stats.segs_managed += fpq_nsegs(skb);
	q->stats.gso_pkts += skb_is_gso(skb);
	q->stats.requests += nchunks - first_new;
	q->stats.coalesced += coalesced;
	return 0;
}

/* Fallback (open): a packet of a managed flow that is sent without asking;
 * it queues behind the flow's held packets so the flow is not reordered.
 */
void fpq_admit_unmanaged(struct fpq_sched_data *q, struct sk_buff *skb,
			 const struct fpq_pkt *pi)
{
	struct fpq_flow *flow = &q->flows[reciprocal_scale(pi->hash, q->p.flows_cnt)];
	struct fpq_skb_cb *cb = fpq_cb(skb);

	memset(cb, 0, sizeof(*cb));
	cb->ready = 1;
	cb->fallback = 2;
	fpq_flow_push(q, flow, skb);
	if (flow->head == skb)
		fpq_flow_ready(q, flow);
	q->stats.fallback_unmanaged += fpq_nsegs(skb);
}

/* ---- verdicts ---- */

static void fpq_set_dscp(struct sk_buff *skb, u8 dscp)
{
	switch (skb_protocol(skb, true)) {
	case htons(ETH_P_IP):
		if (!skb_ensure_writable(skb, skb_network_offset(skb) + sizeof(struct iphdr)))
			ipv4_change_dsfield(ip_hdr(skb), INET_ECN_MASK, dscp << 2);
		break;
	case htons(ETH_P_IPV6):
		if (!skb_ensure_writable(skb, skb_network_offset(skb) + sizeof(struct ipv6hdr)))
			ipv6_change_dsfield(ipv6_hdr(skb), INET_ECN_MASK, dscp << 2);
		break;
	}
}

/* prepare_to_send: fold the verdict of abstract packet i of this skb into
 * it. The action is applied at release, once all of the skb's verdicts are
 * in (a GSO packet may get different ones for different segments); the
 * verdict's custom words are applied now.
 */
static void fpq_prepare_to_send(struct fpq_sched_data *q, struct sk_buff *skb,
				struct fpq_skb_cb *cb, u32 i,
				const struct fp_verdict *v)
{
	unsigned int w;

	if (v->action == FP_ACT_DROP)
		cb->drops |= BIT(i);
	else if (v->action == FP_ACT_MARK)
		cb->marks |= BIT(i);
	for (w = 0; w < q->p.nverdict_words && 4 * w + 4 <= q->verdict_custom_len; w++) {
		u32 val = get_unaligned_be32(v->custom + 4 * w);

		switch (q->p.verdict_words[w]) {
		case FLEXPLANE_APPLY_MARK:
			skb->mark = val;
			break;
		case FLEXPLANE_APPLY_SKBPRIO:
			skb->priority = val;
			break;
		case FLEXPLANE_APPLY_DSCP:
			fpq_set_dscp(skb, val & 63);
			break;
		default:
			continue;
		}
		q->stats.verdict_custom++;
	}
}

/* The request in this slot got its verdict at q->rx_now: how long it
 * waited to be sent, and for its verdict once sent.
 */
static void fpq_stage_verdict(struct fpq_sched_data *q, const struct fp_request *req)
{
	const struct fp_ep_slot *slot = container_of(req, struct fp_ep_slot, req);
	struct fpq_stamp *st = &q->stamps[slot - q->slots];

	if (!st->sent_ns)
		return;
	if (st->submit_ns)	/* 0: forgotten on a session restart */
		fpq_stage_add(q, FLEXPLANE_STAGE_BATCH, st->sent_ns - st->submit_ns);
	fpq_stage_add(q, FLEXPLANE_STAGE_TRIP, q->rx_now - st->sent_ns);
	st->sent_ns = 0;
}

/* Called by fp_ep_rx() once per verdict, in order, under q->lock. */
void fpq_on_verdict(void *ctx, const struct fp_verdict *v,
		    const struct fp_request *req, u64 user)
{
	struct fpq_sched_data *q = ctx;
	u32 bucket = user >> 32, id = (u32)user;
	struct fpq_flow *flow;
	struct sk_buff *skb;

	if (WARN_ON_ONCE(bucket >= q->p.flows_cnt))
		return;
	fpq_stage_verdict(q, req);
	flow = &q->flows[bucket];
	q->stats.verdicts++;
	if (v->action == FP_ACT_DROP)
		q->stats.verdict_drop++;
	else if (v->action == FP_ACT_MARK)
		q->stats.verdict_mark++;
	else
		q->stats.verdict_release++;
	if (flow->unverdicted)
		flow->unverdicted--;
	if (flow->open_room && flow->open_id == id)
		flow->open_room = 0;

	/* Held packets of a queue are in abstract-packet order. */
	for (skb = flow->head; skb; skb = skb->next) {
		struct fpq_skb_cb *cb = fpq_cb(skb);
		u32 i = id - cb->first;

		if (cb->ready)
			continue;
		if ((s32)i < 0)
			break;
		if (i >= cb->nchunks)
			continue;
		fpq_prepare_to_send(q, skb, cb, i, v);
		if (!--cb->pending) {
			cb->ready = 1;
			if (skb == flow->head) {
				fpq_flow_ready(q, flow);
				flow->ready_ns = q->rx_now;
			}
		}
	}
}

/* Fallback: every held packet is decided without the emulator: sent as it
 * is (open) or dropped (closed).
 */
void fpq_resolve_all(struct fpq_sched_data *q, bool drop)
{
	u32 i;

	for (i = 0; i < q->p.flows_cnt; i++) {
		struct fpq_flow *flow = &q->flows[i];
		struct sk_buff *skb;

		flow->open_room = 0;
		flow->unverdicted = 0;
		for (skb = flow->head; skb; skb = skb->next) {
			struct fpq_skb_cb *cb = fpq_cb(skb);

			if (cb->ready)
				continue;
			cb->ready = 1;
			cb->pending = 0;
			cb->fallback = 1;
			cb->marks = 0;
			cb->drops = drop ? ~0u : 0;
		}
		if (flow->head)
			fpq_flow_ready(q, flow);
	}
}

/* ---- release ---- */

static void fpq_mark(struct fpq_sched_data *q, struct sk_buff *skb)
{
	if (INET_ECN_set_ce(skb))
		q->stats.marked += fpq_nsegs(skb);
	else
		q->stats.mark_failed += fpq_nsegs(skb);
}

/* Verdicts of the next segment: bit 0 drop, bit 1 mark. */
static u8 fpq_seg_fate(struct fpq_pack *ps, const struct fpq_skb_cb *cb, u32 len)
{
	u32 n, bits;
	int at = fpq_pack_seg(ps, len, &n);

	if (at + n > FPQ_MAX_CHUNKS)	/* cannot happen: checked at admit */
		return 1;
	bits = GENMASK(at + n - 1, at);
	return (cb->drops & bits ? 1 : 0) | (cb->marks & bits ? 2 : 0);
}

static void fpq_pack_init(struct fpq_pack *ps, const struct fpq_skb_cb *cb)
{
	ps->cur = cb->room0 ? 0 : -1;
	ps->room = cb->room0;
	ps->apkt = cb->apkt;
}

/* The fate shared by all segments of a GSO packet, or 4 if they differ. */
static u8 fpq_common_fate(struct sk_buff *skb, const struct fpq_skb_cb *cb)
{
	struct fpq_pkt pi;
	struct fpq_pack ps;
	u8 fate = 0;
	u32 i;

	if (fpq_layout(skb, &pi))
		return 4;
	fpq_pack_init(&ps, cb);
	for (i = 0; i < pi.nsegs; i++) {
		u8 f = fpq_seg_fate(&ps, cb, i + 1 < pi.nsegs ? pi.seg : pi.last);

		if (f & 1)
			f = 1;
		if (i && f != fate)
			return 4;
		fate = f;
	}
	return fate;
}

/* Segment a GSO packet whose segments got different verdicts; the segments
 * that survive go back to the head of its flow queue, ready to leave.
 */
static void fpq_segment(struct fpq_sched_data *q, struct fpq_flow *flow,
			struct sk_buff *skb)
{
	struct Qdisc *sch = q->sch;
	const struct fpq_skb_cb *cb = fpq_cb(skb);
	struct sk_buff *segs, *seg, *next, *head = NULL, *last = NULL;
	u32 prev_len = qdisc_pkt_len(skb), len = 0;
	struct fpq_pack ps;
	int nb = 0;

	fpq_pack_init(&ps, cb);
	segs = skb_gso_segment(skb, netif_skb_features(skb) & ~NETIF_F_GSO_MASK);
	if (IS_ERR_OR_NULL(segs)) {
		q->stats.dropped += fpq_nsegs(skb);
		qdisc_qstats_drop(sch);
		sch->q.qlen--;
		qdisc_qstats_backlog_dec(sch, skb);
		q->tree_pkts++;
		q->tree_bytes += prev_len;
		kfree_skb_reason(skb, SKB_DROP_REASON_QDISC_DROP);
		return;
	}
	q->stats.sw_segmented++;
	skb_list_walk_safe(segs, seg, next) {
		u8 fate = fpq_seg_fate(&ps, cb, seg->len - skb_network_offset(seg));
		struct fpq_skb_cb *scb;

		skb_mark_not_on_list(seg);
		if (fate & 1) {
			q->stats.dropped++;
			qdisc_qstats_drop(sch);
			kfree_skb_reason(seg, SKB_DROP_REASON_QDISC_DROP);
			continue;
		}
		if (fate & 2)
			fpq_mark(q, seg);
		scb = fpq_cb(seg);
		memset(scb, 0, sizeof(*scb));
		scb->ready = 1;
		qdisc_skb_cb(seg)->pkt_len = seg->len;
		if (last)
			last->next = seg;
		else
			head = seg;
		last = seg;
		nb++;
		len += seg->len;
	}
	if (head) {
		if (!flow->head) {
			flow->tail = last;
			q->flows_active++;
		}
		last->next = flow->head;
		flow->head = head;
		if (list_empty(&flow->ready))
			list_add(&flow->ready, &q->ready);
	}
	/* One packet of prev_len bytes became nb of len bytes in total. */
	sch->q.qlen += nb - 1;
	sch->qstats.backlog += len;
	sch->qstats.backlog -= prev_len;
	q->tree_pkts += 1 - nb;
	q->tree_bytes += prev_len - len;
	consume_skb(skb);
}

/* A packet whose verdicts are all in leaves the qdisc. Returns it if it is
 * to be sent, NULL if it is to be dropped (the caller accounts and frees
 * it), or ERR_PTR(-EAGAIN) if its segments replaced it at the head of its
 * flow queue.
 */
struct sk_buff *fpq_release(struct fpq_sched_data *q, struct fpq_flow *flow,
			    struct sk_buff *skb)
{
	const struct fpq_skb_cb *cb = fpq_cb(skb);
	u32 segs = fpq_nsegs(skb);
	u8 fate;

	if (cb->fallback) {
		if (cb->drops) {
			q->stats.fallback_dropped += segs;
			return NULL;
		}
		if (cb->fallback == 1)
			q->stats.fallback_released += segs;
		return skb;
	}
	if (!(cb->drops | cb->marks)) {
		q->stats.released += segs;
		return skb;
	}
	fate = skb_is_gso(skb) ? fpq_common_fate(skb, cb) : (cb->drops ? 1 : 2);
	switch (fate) {
	case 0:
		break;
	case 1:
		q->stats.dropped += segs;
		return NULL;
	case 2:
		fpq_mark(q, skb);
		break;
	default:
		fpq_segment(q, flow, skb);
		return ERR_PTR(-EAGAIN);
	}
	q->stats.released += segs;
	return skb;
}

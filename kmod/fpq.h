/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The flexplane qdisc's shared state: parameters, flow queues,
 * statistics, and the channel to the emulator.
 *
 * sch_flexplane.c	qdisc operations: enqueue, dequeue, options, dumps
 * fpq_classify.c	which packets are managed, and their flow, destination
 *			and segment layout
 * fpq_packet.c		the endpoint API: cut a packet into abstract packets
 *			(prepare_request), apply verdicts (prepare_to_send)
 *			and release it
 * fpq_channel.c	the kernel UDP socket, timer and work item that run
 *			the wire protocol (proto/fp_endpoint_conn) and the
 *			fallback when the emulator is unreachable
 */
#ifndef _FPQ_H
#define _FPQ_H

#include <linux/hrtimer.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/siphash.h>
#include <linux/skbuff.h>
#include <linux/timex.h>
#include <linux/workqueue.h>
#include <net/sch_generic.h>

#include "fp_endpoint_conn.h"
#include "uapi/flexplane.h"

#define FPQ_MAX_CHUNKS	32	/* abstract packets one skb may span */
#define FPQ_TX_BURST	8	/* datagrams built per lock hold */
#define FPQ_DGRAM_MAX	FP_DEFAULT_MAX_DGRAM
#define FPQ_MAX_ADOPT	4	/* sessions re-opened with the emulator's values */

/* Configuration: written by change() under the qdisc root lock and q->lock;
 * read by enqueue/dequeue under the root lock and by the channel under
 * q->lock. Fields marked "init" never change after init().
 */
struct fpq_params {
	__be32		emu_addr;	/* init */
	u16		emu_port;	/* init */
	__be32		src_addr;	/* init */
	__be32		ep_base;	/* init */
	struct in6_addr	ep_base6;	/* init */
	u32		ep_count;	/* init */
	u32		flows_cnt;	/* init */
	u32		window;		/* init */
	u32		apkt;		/* until the emulator states its own */
	u32		hold_us;
	u32		rto_us;		/* init */
	u8		fallback;	/* FLEXPLANE_FALLBACK_* */
	u8		prio;		/* FLEXPLANE_PRIO_* */
	u8		adopt;
	u8		nreq_words;	/* init */
	u8		req_words[FLEXPLANE_MAX_WORDS];
	u8		nverdict_words;	/* init */
	u8		verdict_words[FLEXPLANE_MAX_WORDS];
	u8		nbypass;
	u16		bypass_ports[FLEXPLANE_MAX_BYPASS_PORTS];
	char		scheme[FP_SCHEME_NAME_MAX + 1];	/* init */
};

/* One flow queue. Packets leave it in order; the head leaves once every
 * verdict it waits for has arrived.
 */
struct fpq_flow {
	struct sk_buff	*head;
	struct sk_buff	*tail;
	struct list_head ready;		/* on q->ready while the head can leave */
	u32		next_id;	/* id of the next new abstract packet */
	u32		unverdicted;	/* abstract packets without verdict */
	/* The last abstract packet, while it has no verdict yet, accepts
	 * further segments of the same flow that fit in its room.
	 */
	u32		open_id;
	u32		open_hash;
	u16		open_room;	/* 0: no abstract packet open */
	u16		open_dst;
	u8		open_tos;
	u64		ready_ns;	/* its head may leave since (stage RELEASE) */
};

/* Per-skb state while held, in qdisc_skb_cb()->data. An skb spans the
 * abstract packets first .. first + nchunks - 1 of its flow queue.
 */
struct fpq_skb_cb {
	u32	first;
	u8	nchunks;
	u8	pending;	/* verdicts still missing */
	u8	ready;		/* may leave */
	u8	fallback;	/* resolved by the fallback, not by verdicts */
	u16	room0;		/* room of the open abstract packet it joined, 0: none */
	u16	apkt;		/* bytes per abstract packet when it was cut */
	u32	drops;		/* bit i: abstract packet first + i got DROP */
	u32	marks;		/* bit i: ... got MARK */
};

/* Segments a packet becomes on the wire: what the counters count. */
static inline u32 fpq_nsegs(const struct sk_buff *skb)
{
	return skb_is_gso(skb) ? max_t(u32, skb_shinfo(skb)->gso_segs, 1) : 1;
}

static inline struct fpq_skb_cb *fpq_cb(const struct sk_buff *skb)
{
	qdisc_cb_private_validate(skb, sizeof(struct fpq_skb_cb));
	return (struct fpq_skb_cb *)qdisc_skb_cb(skb)->data;
}

/* What enqueue learnt about a packet (fpq_classify). */
struct fpq_pkt {
	u8	ect;
	u8	dscp;
	u16	dst;		/* endpoint id */
	u32	hash;		/* flow id */
	u32	nsegs;		/* segments on the wire */
	u32	hdr;		/* per-segment L3+L4 header bytes (GSO) */
	u32	seg;		/* L3 bytes of a full segment */
	u32	last;		/* L3 bytes of the last segment */
};

enum {
	FPQ_MANAGED,
	FPQ_BYPASS_CTRL,
	FPQ_BYPASS_OWN,
	FPQ_BYPASS_NODST,
	FPQ_BYPASS_PORT,
	FPQ_SPLIT,	/* managed, but must be segmented first */
};

/* Behaviour of the qdisc towards new packets. */
enum {
	FPQ_MODE_HOLD,		/* submit and hold (session open or opening) */
	FPQ_MODE_FALLBACK,	/* emulator unreachable */
	FPQ_MODE_REJECTED,	/* emulator refused the session */
};

struct fpq_sched_data {
	struct Qdisc		*sch;
	struct fpq_params	p;
	/* q->lock protects everything below. It nests inside the qdisc root
	 * lock (enqueue, dequeue, change) and is taken alone, with bottom
	 * halves off, by the socket's receive hook, the work item, reset and
	 * the dumps.
	 */
	spinlock_t		lock;
	bool			stopping;	/* destroy() began */
	struct fpq_flow		*flows;
	struct list_head	ready;		/* flows whose head can leave */
	struct qdisc_skb_head	bypass;		/* unmanaged packets, sent first */
	siphash_key_t		perturb;	/* flow hash key */
	u32			flows_active;

	/* The channel to the emulator. */
	u8			mode;		/* FPQ_MODE_* */
	u8			adoptions;
	u8			req_custom_len;	/* current session's sizes */
	u8			verdict_custom_len;
	u8			features;
	u16			apkt;		/* bytes per abstract packet in use */
	struct fp_ep_conn	conn;
	struct fp_ep_slot	*slots;
	u32			nslots;
	struct fp_ep_stats	conn_base;	/* stats of connections replaced */
	u64			rejects_seen;
	u16			last_reject;	/* code of the last REJECT, 0: none */
	u64			progress_ns;	/* last verdict, or verdicts became owed */
	struct socket		*sock;
	struct sockaddr_in	emu;
	struct work_struct	tx_work;
	struct hrtimer		timer;
	u64			timer_at;
	u8			*txbuf;		/* FPQ_TX_BURST datagrams */

	/* Backlog changes to report to parents (see fpq_dequeue). */
	int			tree_pkts;
	int			tree_bytes;

	struct tc_flexplane_counters stats;

	/* Stage durations (docs/kmod.md, "Stages"): per request slot, when it
	 * was submitted and first sent (0: not yet); rx_now is the receive
	 * hook's clock while fp_ep_rx() hands out verdicts.
	 */
	struct fpq_stamp {
		u64	submit_ns;
		u64	sent_ns;
	}			*stamps;
	u64			rx_now;
	u64			resets_seen;	/* conn.stats.resets the stamps match */
	struct tc_flexplane_stage stages[__FLEXPLANE_STAGE_MAX];
};

/* The histogram bucket of a duration (layout: uapi/flexplane.h). */
static inline u32 fpq_stage_bucket(u64 ns)
{
	u32 e;

	if (ns < 2)
		return ns;
	e = fls64(ns) - 1;
	return min_t(u32, 2 * e + ((ns >> (e - 1)) & 1), FLEXPLANE_STAGE_BUCKETS - 1);
}

/* Under q->lock. */
static inline void fpq_stage_add(struct fpq_sched_data *q, unsigned int stage, u64 ns)
{
	struct tc_flexplane_stage *s = &q->stages[stage];

	s->count++;
	s->sum_ns += ns;
	s->max_ns = max(s->max_ns, ns);
	s->hist[fpq_stage_bucket(ns)]++;
}

extern bool fpq_cycle_stats;

static inline u64 fpq_cycles(void)
{
	return fpq_cycle_stats ? get_cycles() : 0;
}

/* fpq_classify.c */
int fpq_classify(const struct fpq_sched_data *q, struct sk_buff *skb,
		 struct fpq_pkt *pi);
int fpq_layout(struct sk_buff *skb, struct fpq_pkt *pi);

/* fpq_packet.c */
int fpq_admit(struct fpq_sched_data *q, struct sk_buff *skb,
	      const struct fpq_pkt *pi, u64 now);
void fpq_admit_unmanaged(struct fpq_sched_data *q, struct sk_buff *skb,
			 const struct fpq_pkt *pi);
void fpq_on_verdict(void *ctx, const struct fp_verdict *v,
		    const struct fp_request *req, u64 user);
void fpq_resolve_all(struct fpq_sched_data *q, bool drop);
struct sk_buff *fpq_release(struct fpq_sched_data *q, struct fpq_flow *flow,
			    struct sk_buff *skb);
struct sk_buff *fpq_flow_pop(struct fpq_sched_data *q, struct fpq_flow *flow);
void fpq_flow_ready(struct fpq_sched_data *q, struct fpq_flow *flow);
void fpq_purge(struct fpq_sched_data *q);

/* fpq_channel.c */
int fpq_channel_start(struct fpq_sched_data *q, struct netlink_ext_ack *extack);
void fpq_channel_stop(struct fpq_sched_data *q);
void fpq_channel_kick(struct fpq_sched_data *q, u64 now);
void fpq_channel_stats(const struct fpq_sched_data *q, struct fp_ep_stats *s);
u8 fpq_state(const struct fpq_sched_data *q);

#endif /* _FPQ_H */

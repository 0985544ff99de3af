/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * flexplane qdisc: netlink options and statistics shared by the kernel
 * module (sch_flexplane) and the tc plugin (q_flexplane.so).
 *
 * Options travel nested in TCA_OPTIONS; statistics are the qdisc's
 * TCA_STATS_APP ("xstats"), printed by `tc -s qdisc show`.
 * See docs/kmod.md for the meaning of every option and counter.
 */
#ifndef _UAPI_FLEXPLANE_H
#define _UAPI_FLEXPLANE_H

#include <linux/types.h>

/* Options marked "init only" are fixed once the qdisc exists: a change with
 * another value is refused with an extack message naming the option (delete
 * and add the qdisc instead). The others apply to a running qdisc.
 */
enum {
	TCA_FLEXPLANE_UNSPEC,
	TCA_FLEXPLANE_EMU_ADDR,		/* be32, emulator IPv4 address (init only) */
	TCA_FLEXPLANE_EMU_PORT,		/* u16, emulator UDP port (init only) */
	TCA_FLEXPLANE_SRC_ADDR,		/* be32, source of requests; 0 = routing (init only) */
	TCA_FLEXPLANE_EP_BASE,		/* be32, IPv4 address of endpoint 0 (init only) */
	TCA_FLEXPLANE_EP_BASE6,		/* in6_addr, IPv6 address of endpoint 0 (init only) */
	TCA_FLEXPLANE_EP_COUNT,		/* u32, endpoints: base .. base + count - 1 (init only) */
	TCA_FLEXPLANE_LIMIT,		/* u32, packets held, all flows together */
	TCA_FLEXPLANE_FLOWS,		/* u32, flow queues (init only) */
	TCA_FLEXPLANE_WINDOW,		/* u32, abstract packets without a verdict (init only) */
	TCA_FLEXPLANE_APKT,		/* u32, bytes per abstract packet until WELCOME says */
	TCA_FLEXPLANE_HOLD_US,		/* u32, verdicts owed and none for this long: fallback */
	TCA_FLEXPLANE_FALLBACK,		/* u8, FLEXPLANE_FALLBACK_* */
	TCA_FLEXPLANE_PRIO,		/* u8, FLEXPLANE_PRIO_*: priority stamped into requests */
	TCA_FLEXPLANE_REQ_WORDS,	/* u8[], FLEXPLANE_WORD_* per request word (init only) */
	TCA_FLEXPLANE_VERDICT_WORDS,	/* u8[], FLEXPLANE_APPLY_* per verdict word (init only) */
	TCA_FLEXPLANE_BYPASS_PORTS,	/* u16[], TCP/UDP ports never managed */
	TCA_FLEXPLANE_RTO_US,		/* u32, protocol retransmission timeout (init only) */
	TCA_FLEXPLANE_SCHEME,		/* string, scheme name stated in HELLO (init only) */
	TCA_FLEXPLANE_ADOPT,		/* u8, adopt the emulator's custom sizes and features */
	TCA_FLEXPLANE_PAD,
	__TCA_FLEXPLANE_MAX
};

#define TCA_FLEXPLANE_MAX (__TCA_FLEXPLANE_MAX - 1)

#define FLEXPLANE_MAX_WORDS		4	/* 16 bytes: the wire's custom-data limit */
#define FLEXPLANE_MAX_BYPASS_PORTS	8

/* What happens to packets while the emulator is unreachable or refuses us.
 * The qdisc's default is CLOSED (docs/kmod.md): a study never runs on
 * unmanaged traffic without noticing.
 */
enum {
	FLEXPLANE_FALLBACK_OPEN,	/* send them unmanaged */
	FLEXPLANE_FALLBACK_CLOSED,	/* drop them (default) */
};

/* Priority stamped into each request (needs the session feature PRIO). */
enum {
	FLEXPLANE_PRIO_NONE,		/* 0 */
	FLEXPLANE_PRIO_REMAINING,	/* abstract packets its flow queue holds, this one too */
	FLEXPLANE_PRIO_SKB,		/* skb->priority (SO_PRIORITY, tc skbedit) */
};

/* Source of one 32-bit word of request custom data (prepare_request). */
enum {
	FLEXPLANE_WORD_ZERO,
	FLEXPLANE_WORD_LEN,		/* bytes of the abstract packet */
	FLEXPLANE_WORD_REMAINING,	/* as FLEXPLANE_PRIO_REMAINING */
	FLEXPLANE_WORD_MARK,		/* skb->mark */
	FLEXPLANE_WORD_SKBPRIO,		/* skb->priority */
	FLEXPLANE_WORD_HASH,		/* the flow id */
	__FLEXPLANE_WORD_MAX
};

/* Use of one 32-bit word of verdict custom data (prepare_to_send). */
enum {
	FLEXPLANE_APPLY_NONE,
	FLEXPLANE_APPLY_MARK,		/* skb->mark = word */
	FLEXPLANE_APPLY_SKBPRIO,	/* skb->priority = word */
	FLEXPLANE_APPLY_DSCP,		/* IP DSCP = word & 63 (checksum updated) */
	__FLEXPLANE_APPLY_MAX
};

enum {
	FLEXPLANE_STATE_CONNECTING = 1,	/* HELLO sent, packets held */
	FLEXPLANE_STATE_MANAGED,	/* session open: every packet waits for its verdict */
	FLEXPLANE_STATE_FALLBACK,	/* emulator unreachable: FLEXPLANE_FALLBACK_* */
	FLEXPLANE_STATE_REJECTED,	/* emulator refused the session: FLEXPLANE_FALLBACK_* */
};

/* Event counters; a packet is an skb as the stack hands it to the qdisc
 * (a GSO packet counts once), a segment is what it becomes on the wire, an
 * abstract packet is what the emulator emulates (docs/kmod.md).
 */
struct tc_flexplane_counters {
	__u64	pkts_managed;		/* packets that went through the emulator */
	__u64	segs_managed;		/* their segments */
	__u64	gso_pkts;		/* managed GSO packets */
	__u64	gso_split;		/* GSO packets segmented on enqueue (too many apkts) */
	__u64	coalesced;		/* segments that joined an already requested apkt */
	__u64	requests;		/* abstract packets requested */
	__u64	verdicts;		/* verdicts received and applied */
	__u64	verdict_release;
	__u64	verdict_mark;
	__u64	verdict_drop;
	__u64	released;		/* managed packets sent */
	__u64	marked;			/* of those, CE set */
	__u64	dropped;		/* managed packets dropped on a DROP verdict */
	__u64	mark_failed;		/* MARK for a packet not ECN capable: sent unmarked */
	__u64	sw_segmented;		/* GSO packets segmented on release (mixed verdicts) */
	__u64	verdict_custom;		/* verdict custom words applied */
	__u64	aborted;		/* requests given back on fallback or teardown */
	__u64	bypass_ctrl;		/* not IP, or ND / MLD / ARP: never managed */
	__u64	bypass_own;		/* the protocol's own datagrams */
	__u64	bypass_nodst;		/* destination is not an endpoint */
	__u64	bypass_port;		/* a bypass port */
	__u64	fallback_events;	/* entered fallback (emulator unreachable or refused) */
	__u64	fallback_released;	/* held packets sent unmanaged on fallback (open) */
	__u64	fallback_dropped;	/* packets dropped on fallback (closed) */
	__u64	fallback_unmanaged;	/* packets sent unmanaged during fallback (open) */
	__u64	resyncs;		/* management resumed after a fallback */
	__u64	adopted;		/* sessions re-opened with the emulator's sizes, features */
	__u64	overlimit;		/* dropped: limit packets held */
	__u64	window_full;		/* dropped: window abstract packets without verdict */
	__u64	tx_dgrams;
	__u64	tx_errors;		/* datagrams the socket refused (retransmitted later) */
	__u64	rx_dgrams;
	__u64	rx_forged;		/* not from the emulator's address and port: ignored */
	__u64	rx_bad;			/* undecodable */
	__u64	rx_stale;		/* other session or state: ignored */
	__u64	verdict_dups;		/* replayed verdicts: ignored */
	__u64	verdict_gaps;
	__u64	verdict_mismatch;	/* verdict naming no pending request: ignored */
	__u64	mark_non_ect;		/* MARK verdicts for requests without ECT */
	__u64	hellos;
	__u64	sessions;
	__u64	resets;
	__u64	rejects;
	__u64	retransmits;		/* request entries sent again */
	__u64	timeouts;
	__u64	naks;
	__u64	probes;
	__u64	acks;
	__u64	cycles_enqueue;		/* with module parameter cycle_stats=1 */
	__u64	cycles_dequeue;
	__u64	cycles_rx;
	__u64	cycles_tx;
	__u64	calls_enqueue;
	__u64	calls_dequeue;
	__u64	calls_rx;
	__u64	calls_tx;
};

/* Where a managed packet's hold goes (docs/kmod.md, "Stages"), per stage a
 * histogram of durations in nanoseconds, two buckets per power of two:
 * bucket b < 2 holds b ns, bucket b >= 2 holds [(2 + b % 2) << (b / 2 - 1),
 * (3 + b % 2) << (b / 2 - 1)); the last, from 3.2 s, also holds everything
 * longer. (Small enough that the statistics, which a dump carries twice,
 * fit in the first netlink dump buffer.)
 */
enum {
	FLEXPLANE_STAGE_BATCH,		/* request submitted -> first sent in a datagram */
	FLEXPLANE_STAGE_TRIP,		/* first sent -> its verdict received */
	FLEXPLANE_STAGE_RELEASE,	/* packet may leave -> dequeued by the device */
	__FLEXPLANE_STAGE_MAX
};

#define FLEXPLANE_STAGE_BUCKETS	64

struct tc_flexplane_stage {
	__u64	count;
	__u64	sum_ns;
	__u64	max_ns;
	__u32	hist[FLEXPLANE_STAGE_BUCKETS];
};

#define FLEXPLANE_XSTATS_VERSION 2

struct tc_flexplane_xstats {
	__u32	version;		/* FLEXPLANE_XSTATS_VERSION */
	__u8	state;			/* FLEXPLANE_STATE_* */
	__u8	req_custom_len;		/* negotiated */
	__u8	verdict_custom_len;
	__u8	features;
	__u32	session;
	__u16	endpoint_id;
	__u16	apkt_bytes;		/* in use */
	__u16	local_port;		/* the protocol socket's UDP port */
	__u16	last_reject;		/* code of the last REJECT, 0 = none */
	__u32	window;			/* negotiated */
	__u32	flows_active;		/* flow queues holding packets */
	__u32	held;			/* packets held */
	__u32	pending;		/* abstract packets without a verdict */
	__u32	pad;
	struct tc_flexplane_counters c;
	struct tc_flexplane_stage stages[__FLEXPLANE_STAGE_MAX];
};

#endif /* _UAPI_FLEXPLANE_H */

/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * fp_endpoint_conn.h - endpoint side of the flexplane wire protocol: one
 * connection from an endpoint to the emulator.
 *
 * What it does: numbers requests (rseq, per session, consecutive), batches
 * them into REQUESTS datagrams, retransmits unacknowledged ones (go-back-N
 * from the emulator's cumulative ack, on timeout or NAK), accepts VERDICTS in
 * vseq order and delivers each request's verdict exactly once, acknowledges
 * verdicts (piggybacked or delayed pure ack), probes a silent emulator, and
 * (re)opens the session with HELLO — after a RESET it renumbers the requests
 * that have no verdict yet and sends them again in the new session.
 *
 * What it doesn't do: sockets, clocks, locks, memory allocation. The caller
 * owns the slot array (a power of two entries), passes "now" in nanoseconds
 * to every call, sends whatever fp_ep_poll() produces, feeds received
 * datagrams to fp_ep_rx(), and arms one timer at fp_ep_next_deadline().
 *
 *   fp_ep_conn_init(&c, &cfg, slots, 4096, now);
 *   ...
 *   fp_ep_submit(&c, &req, cookie, now);                 // per abstract packet
 *   fp_ep_rx(&c, dgram, len, now, on_verdict, ctx);     // per received datagram
 *   while ((n = fp_ep_poll(&c, now, buf, sizeof(buf))) > 0)
 *           send(buf, n);
 *   arm_timer(fp_ep_next_deadline(&c));
 *
 * Not thread-safe: serialise calls per connection.
 */
#ifndef FP_ENDPOINT_CONN_H
#define FP_ENDPOINT_CONN_H

#include "fp_gbn.h"

#ifdef __cplusplus
extern "C" {
#endif

enum fp_ep_state {
	FP_EP_CONNECTING = 1,  /* sending HELLO, waiting for WELCOME */
	FP_EP_ESTABLISHED = 2, /* session open */
	FP_EP_REJECTED = 3,    /* emulator said REJECT; HELLO retried slowly */
};

enum fp_ep_slot_state {
	FP_SLOT_FREE = 0,
	FP_SLOT_PENDING = 1, /* submitted, no verdict yet */
	FP_SLOT_DONE = 2,    /* verdict delivered, slot not yet recycled */
};

struct fp_ep_slot {
	struct fp_request req;
	uint64_t user;       /* caller's cookie, handed back with the verdict */
	uint8_t state;       /* enum fp_ep_slot_state */
};

struct fp_ep_config {
	uint32_t instance;          /* random, nonzero, new on every endpoint start
				     * (get_random_u32()): tells incarnations apart */
	uint32_t initial_rseq;      /* first request sequence number (any value) */
	uint16_t window;            /* max un-verdicted requests in flight (<= nslots) */
	uint8_t req_custom_len;     /* from the scheme registry */
	uint8_t verdict_custom_len; /* from the scheme registry */
	uint8_t features;           /* FP_FEAT_* from the scheme registry */
	char scheme[FP_SCHEME_NAME_MAX + 1]; /* "" = let the emulator decide */
	uint16_t max_dgram;         /* datagram budget, bytes */
	uint16_t max_batch;         /* max requests per datagram (0 = as many as fit) */
	uint64_t rto_ns;            /* initial retransmission timeout */
	uint64_t rto_max_ns;        /* backoff cap */
	uint64_t ack_delay_ns;      /* delayed-ack for verdicts */
	uint64_t batch_delay_ns;    /* max time a new request waits for batch-mates */
	uint64_t hello_rto_ns;      /* HELLO retransmission, doubling ... */
	uint64_t hello_rto_max_ns;  /* ... up to this */
	uint64_t probe_ns;          /* probe a silent emulator while verdicts are owed */
	uint64_t reject_retry_ns;   /* HELLO retry period after a REJECT */
};

struct fp_ep_stats {
	uint64_t tx_dgrams, rx_dgrams;
	uint64_t rx_bad;            /* undecodable datagrams (any decode error) */
	uint64_t rx_stale;          /* well-formed, wrong session / state / ids */
	uint64_t hellos_sent;
	uint64_t sessions;          /* WELCOMEs accepted */
	uint64_t resets;            /* sessions dropped on RESET (or local abort) */
	uint64_t rejects;           /* REJECTs received */
	uint64_t requests_submitted;
	uint64_t requests_sent;     /* request entries sent, first transmissions */
	uint64_t requests_resent;   /* request entries sent again */
	uint64_t timeouts;          /* retransmission timer expiries */
	uint64_t naks;              /* fast retransmits on NAK */
	uint64_t probes;
	uint64_t acks_sent;         /* pure acks (empty REQUESTS) */
	uint64_t verdicts;          /* delivered to the caller */
	uint64_t verdict_dups;      /* verdict entries already seen */
	uint64_t verdict_gaps;      /* batches with a gap (entries dropped) */
	uint64_t verdict_mismatch;  /* verdicts naming no pending request */
	uint64_t mark_non_ect;      /* MARK verdicts for non-ECT requests */
};

struct fp_ep_conn {
	struct fp_ep_config cfg;
	struct fp_ep_slot *slots;
	uint32_t mask;              /* nslots - 1 */
	uint8_t state;              /* enum fp_ep_state */
	uint8_t name_len;
	uint8_t nak_pending;        /* next ack tells the emulator about a verdict gap */

	uint32_t attempt;
	uint32_t session;           /* 0 while not established */
	uint16_t endpoint_id;       /* from WELCOME */
	uint16_t apkt_bytes;        /* from WELCOME */
	uint32_t win;               /* negotiated window */
	uint32_t pending;           /* slots in state PENDING */

	/* Request sequence space (serial arithmetic):
	 *   low <= tx.una <= tx.snd <= tx.max <= next  (while established)
	 * [low, next): slots in use; [low, tx.una): acked by the emulator;
	 * [tx.una, tx.max): sent, not yet acked; [tx.snd, ...): to (re)send.
	 * (docs/protocol.md: tx.una = r_acked, tx.snd = snd_next, tx.max = snd_max) */
	uint32_t low, next;
	struct fp_gbn tx;           /* request sender */
	uint32_t v_expected;        /* next verdict sequence number */

	uint64_t hello_due, hello_rto;
	uint64_t ack_due;
	uint64_t last_rx;           /* last valid datagram of this session */
	uint64_t last_probe;

	struct fp_reject last_reject; /* valid once stats.rejects > 0 */
	struct fp_ep_stats stats;
};

/* Called once per verdict, in verdict order, from fp_ep_rx(). It may call
 * fp_ep_submit() on the same connection, nothing else. */
typedef void (*fp_ep_verdict_fn)(void *ctx, const struct fp_verdict *v,
				 const struct fp_request *req, uint64_t user);
/* Called for each request given back by fp_ep_abort_pending(). */
typedef void (*fp_ep_abort_fn)(void *ctx, const struct fp_request *req, uint64_t user);

void fp_ep_config_default(struct fp_ep_config *cfg);

/* slots: caller storage, nslots a power of two (>= 2, <= 2^30). The
 * connection starts CONNECTING; the first fp_ep_poll() sends a HELLO. */
int fp_ep_conn_init(struct fp_ep_conn *c, const struct fp_ep_config *cfg,
		    struct fp_ep_slot *slots, uint32_t nslots, uint64_t now_ns);

/* Queue one request. Returns 0, -FP_ENOSPC (all slots busy: retry after
 * verdicts), -FP_EINVAL (flags / dscp out of range) or -FP_EREJECTED (the
 * emulator refused the session; see c->last_reject). Requests may be
 * submitted while CONNECTING: they go out once the session is open. */
int fp_ep_submit(struct fp_ep_conn *c, const struct fp_request *req, uint64_t user,
		 uint64_t now_ns);

/* Process one received datagram. Returns 0 when it was used, or a negative
 * error telling why it was ignored (decode error, -FP_ESTALE, -FP_ETYPE);
 * ignoring is always safe. */
int fp_ep_rx(struct fp_ep_conn *c, const uint8_t *buf, size_t len, uint64_t now_ns,
	     fp_ep_verdict_fn fn, void *ctx);

/* Produce the next datagram to send into buf: returns its length, 0 when
 * nothing is due, or a negative error (buffer too small). Call until 0. */
int fp_ep_poll(struct fp_ep_conn *c, uint64_t now_ns, uint8_t *buf, size_t cap);

/* Absolute time at which fp_ep_poll() must be called again (FP_TIME_NEVER if
 * nothing is scheduled). After fp_ep_poll() returned 0 this is > now. */
uint64_t fp_ep_next_deadline(const struct fp_ep_conn *c);

/* Give back every request that has no verdict (teardown, or falling back to
 * bypass after a REJECT). If a session is open it is dropped and a new one
 * started, so sequence numbers stay consistent. */
void fp_ep_abort_pending(struct fp_ep_conn *c, uint64_t now_ns, fp_ep_abort_fn fn, void *ctx);

/* Requests submitted and still without a verdict. */
static inline uint32_t fp_ep_pending(const struct fp_ep_conn *c)
{
	return c->pending;
}

#ifdef __cplusplus
}
#endif

#endif /* FP_ENDPOINT_CONN_H */

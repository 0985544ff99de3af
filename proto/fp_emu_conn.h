/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * fp_emu_conn.h - emulator side of the flexplane wire protocol: the state
 * the emulator keeps for one endpoint (one per topology endpoint; the caller
 * maps a datagram's source address to its connection through the topology).
 *
 * What it does: answers HELLO with WELCOME (new session epoch) or REJECT
 * (custom-data size / feature / scheme / version mismatch); accepts
 * REQUESTS in rseq order exactly once (replays are recognised by rseq and
 * only re-acknowledged), hands each new request to the engine with a token;
 * takes the engine's verdicts, numbers them (vseq), batches them into
 * VERDICTS with the cumulative request ack, and retransmits until the
 * endpoint acknowledges (go-back-N on timeout or NAK); answers requests of an
 * unknown session with RESET so an endpoint resynchronises after an emulator
 * restart.
 *
 * Flow control: at most `ring capacity` requests are outstanding per
 * endpoint (accepted and not yet verdict-acked), so fp_emu_push_verdict()
 * never runs out of ring space; requests beyond that are not acknowledged
 * and the endpoint sends them again later.
 *
 *   fp_emu_conn_init(&c, &cfg, ring, 4096, now);
 *   fp_emu_rx(&c, dgram, len, now, on_request, ctx);   // on_request gets a token
 *   fp_emu_push_verdict(&c, &token, &verdict, now);     // when the engine decides
 *   while ((n = fp_emu_poll(&c, now, buf, sizeof(buf))) > 0)
 *           send_to(endpoint_addr, buf, n);
 *
 * Not thread-safe: serialise calls per connection.
 */
#ifndef FP_EMU_CONN_H
#define FP_EMU_CONN_H

#include "fp_gbn.h"

#ifdef __cplusplus
extern "C" {
#endif

enum fp_emu_state {
	FP_EMU_IDLE = 0,        /* no session */
	FP_EMU_ESTABLISHED = 1,
};

/* Identifies an accepted request; give it back with its verdict. A verdict
 * whose token names an older session is discarded (-FP_ESTALE). */
struct fp_emu_token {
	uint32_t session;
	uint32_t rseq;
};

struct fp_emu_config {
	uint16_t endpoint_id;       /* the endpoint's index in the topology */
	uint16_t apkt_bytes;        /* abstract packet size, told to the endpoint */
	uint8_t req_custom_len;     /* from the scheme registry */
	uint8_t verdict_custom_len; /* from the scheme registry */
	uint8_t features;           /* FP_FEAT_* from the scheme registry */
	char scheme[FP_SCHEME_NAME_MAX + 1]; /* "" = don't check the endpoint's name */
	uint32_t epoch_seed;        /* first session epoch; make it differ on every
				     * emulator start (clock / random) */
	uint32_t initial_vseq;      /* first verdict sequence number of a session */
	uint16_t max_dgram;         /* datagram budget, bytes */
	uint16_t max_batch;         /* max verdicts per datagram (0 = as many as fit) */
	uint64_t rto_ns;            /* initial retransmission timeout */
	uint64_t rto_max_ns;        /* backoff cap */
	uint64_t ack_delay_ns;      /* delayed-ack for requests */
	uint64_t batch_delay_ns;    /* max time a verdict waits for batch-mates */
	uint64_t reset_interval_ns; /* at most one RESET per interval */
};

struct fp_emu_stats {
	uint64_t tx_dgrams, rx_dgrams;
	uint64_t rx_bad;            /* undecodable / unexpected datagrams */
	uint64_t rx_stale;          /* requests of an unknown session, stale HELLOs */
	uint64_t sessions;          /* sessions opened */
	uint64_t welcomes_sent;
	uint64_t rejects_sent;
	uint64_t resets_sent;
	uint64_t requests;          /* accepted and handed to the engine */
	uint64_t request_dups;      /* replayed request entries (ignored, re-acked) */
	uint64_t request_gaps;      /* batches with a gap (entries dropped) */
	uint64_t request_full;      /* entries refused: window full */
	uint64_t request_refused;   /* entries refused by the request callback */
	uint64_t verdicts;          /* pushed by the engine */
	uint64_t verdicts_stale;    /* pushed with a token of an old session */
	uint64_t verdicts_sent;     /* verdict entries sent, first transmissions */
	uint64_t verdicts_resent;
	uint64_t timeouts;
	uint64_t naks;
	uint64_t acks_sent;         /* pure acks (empty VERDICTS) */
};

struct fp_emu_conn {
	struct fp_emu_config cfg;
	struct fp_verdict *ring;
	uint32_t mask;              /* ring capacity - 1 */
	uint32_t window;            /* max outstanding requests (= ring capacity) */
	uint8_t state;              /* enum fp_emu_state */
	uint8_t name_len;
	uint8_t welcome_pending, reject_pending, reset_pending;
	uint8_t nak_pending;        /* next ack tells the endpoint about a request gap */
	uint8_t have_hello;         /* hello_instance / hello_attempt valid */

	uint32_t session;
	uint32_t next_epoch;
	uint32_t hello_instance, hello_attempt; /* last HELLO answered */
	struct fp_welcome welcome;  /* for duplicate HELLOs */
	struct fp_reject reject;
	uint8_t reject_version;     /* header version of the pending REJECT */
	uint32_t reset_bad;

	uint32_t rnext;             /* next rseq expected = cumulative ack */
	uint32_t inflight;          /* accepted requests whose verdict is not acked */
	/* Verdict sequence space: tx.una <= tx.snd <= tx.max <= v_next;
	 * [tx.una, v_next) are in the ring. */
	struct fp_gbn tx;           /* verdict sender */
	uint32_t v_next;            /* vseq the next pushed verdict gets */

	uint64_t ack_due;
	uint64_t last_reset_tx;
	uint64_t last_rx;

	struct fp_emu_stats stats;
};

/* Called for each new request, in rseq order, from fp_emu_rx(). Return 0 to
 * accept it (the connection then owes the endpoint exactly one verdict for
 * the token, which may be pushed from inside the callback), nonzero to
 * refuse it for now (not acknowledged: the endpoint will send it again; the
 * callback must not have pushed a verdict for it). */
typedef int (*fp_emu_request_fn)(void *ctx, const struct fp_emu_token *tok,
				 const struct fp_request *req);

void fp_emu_config_default(struct fp_emu_config *cfg);

/* ring: caller storage for verdicts, ring_cap a power of two (>= 2, <= 2^30).
 * It is also the per-endpoint window advertised to the endpoint (at most
 * 65535). */
int fp_emu_conn_init(struct fp_emu_conn *c, const struct fp_emu_config *cfg,
		     struct fp_verdict *ring, uint32_t ring_cap, uint64_t now_ns);

/* Process one datagram from this endpoint's address. Returns 0 when used, or
 * a negative error telling why it was ignored. */
int fp_emu_rx(struct fp_emu_conn *c, const uint8_t *buf, size_t len, uint64_t now_ns,
	      fp_emu_request_fn fn, void *ctx);

/* Hand in the verdict for an accepted request (v->rseq is taken from the
 * token). Returns 0, -FP_ESTALE (the session is gone: drop the verdict),
 * -FP_EINVAL (bad action, or a token that was never accepted). */
int fp_emu_push_verdict(struct fp_emu_conn *c, const struct fp_emu_token *tok,
			const struct fp_verdict *v, uint64_t now_ns);

/* Next datagram to send to the endpoint: length, 0 when nothing is due, or a
 * negative error. Call until 0. */
int fp_emu_poll(struct fp_emu_conn *c, uint64_t now_ns, uint8_t *buf, size_t cap);

/* When fp_emu_poll() must be called next (FP_TIME_NEVER: nothing scheduled).
 * After fp_emu_poll() returned 0 this is > now. */
uint64_t fp_emu_next_deadline(const struct fp_emu_conn *c);

/* Forget the session (e.g. the engine was reset) and tell the endpoint with a
 * RESET, so it re-opens a session and re-sends its un-verdicted requests. */
void fp_emu_drop_session(struct fp_emu_conn *c, uint64_t now_ns);

/* A stateless REJECT for a HELLO from an address that is not in the
 * topology (there is no connection to ask). Returns the length or < 0. */
int fp_emu_reject_unknown(const uint8_t *hello, size_t len, uint8_t *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* FP_EMU_CONN_H */

/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * fp_gbn.h - the go-back-N sender both connection sides share: the endpoint
 * sends requests (numbered by rseq), the emulator sends verdicts (numbered by
 * vseq), and both batch, retransmit and time them out the same way
 * (docs/protocol.md 5.2, 5.3 and "Emulator rules").
 *
 * The sender knows only sequence numbers: the caller keeps the items (slots,
 * ring), says how many are queued, encodes the batch, and tells the sender
 * what it sent. Items are numbered with 32-bit serial numbers:
 *
 *   una <= snd <= max <= (one past the last queued item, kept by the caller)
 *
 * [una, max) are sent and not yet acknowledged, [snd, ...) go out next.
 * docs/protocol.md names the endpoint's r_acked, snd_next, snd_max.
 */
#ifndef FP_GBN_H
#define FP_GBN_H

#include "fp_wire.h"

#ifdef __cplusplus
extern "C" {
#endif

struct fp_gbn {
	uint32_t una;               /* oldest item not yet acknowledged */
	uint32_t snd;               /* next item to (re)send */
	uint32_t max;               /* one past the highest item sent */
	uint16_t entry_len;         /* item size on the wire */
	uint16_t batch_max;         /* max items per datagram */
	uint8_t nak_done;           /* fast retransmit done for this ack value */
	uint64_t rto_due;           /* retransmission timer (FP_TIME_NEVER: off) */
	uint64_t rto_cur;           /* current timeout, doubled on each expiry */
	uint64_t batch_due;         /* new items stop waiting for batch-mates */
};

/* Batch size from the datagram budget and the configured cap (0 = as many as
 * fit); the sequence state as after fp_gbn_reset(seq, rto_ns). Returns 0, or
 * -FP_EINVAL when not one item fits. */
int fp_gbn_init(struct fp_gbn *g, uint16_t entry_len, size_t max_dgram, uint16_t max_batch,
		uint32_t seq, uint64_t rto_ns);

/* Start over at seq with nothing sent: timer off, timeout back to rto_ns,
 * no batch due (the caller re-arms batch_due if items stay queued). */
void fp_gbn_reset(struct fp_gbn *g, uint32_t seq, uint64_t rto_ns);

/* Every sent item is acknowledged. */
static inline bool fp_gbn_all_acked(const struct fp_gbn *g)
{
	return g->una == g->max;
}

/* A new item was queued: it may wait up to delay_ns for batch-mates. */
void fp_gbn_queued(struct fp_gbn *g, uint64_t now_ns, uint64_t delay_ns);

/* Retransmission timer. When it has expired with items outstanding: go back
 * to una, double the timeout (up to rto_max_ns), re-arm, and return true
 * (count a timeout). With nothing outstanding an expired timer is disarmed. */
bool fp_gbn_timer(struct fp_gbn *g, uint64_t now_ns, uint64_t rto_max_ns);

/* How many of the n items from snd on (n: the caller's count of what may be
 * sent) to send now into a datagram of cap bytes: 0 when they wait (nothing
 * to send, or new items waiting for batch-mates), -FP_ENOSPC when not one
 * fits. Retransmissions and full batches never wait. */
int fp_gbn_batch(const struct fp_gbn *g, uint32_t n, size_t cap, uint64_t now_ns);

/* A datagram carrying count items from snd on went out (count 0: a pure
 * ack): advance snd and max, arm the timer. end is one past the last queued
 * item: items left queued make the next batch due at once. Returns how many
 * of the count items were retransmissions. */
uint32_t fp_gbn_sent(struct fp_gbn *g, uint32_t count, uint32_t end, uint64_t now_ns);

/* Cumulative ack: every item before ack arrived. Accepted when
 * una < ack <= max; then the timeout goes back to rto_ns and the timer
 * restarts (or stops when all is acked). Returns how many items it newly
 * acknowledged (0: stale or out of range). */
uint32_t fp_gbn_ack(struct fp_gbn *g, uint32_t ack, uint64_t now_ns, uint64_t rto_ns);

/* NAK with ack == una and items outstanding: fast retransmit (go back to
 * una), at most once per ack value. Returns true when it went back. */
bool fp_gbn_nak(struct fp_gbn *g, uint32_t ack);

/* The sender's part of the next deadline, with n as for fp_gbn_batch(): 0
 * when something must go out at once, else the earlier of the timer and (if
 * items wait) the batch deadline. */
uint64_t fp_gbn_deadline(const struct fp_gbn *g, uint32_t n);

#ifdef __cplusplus
}
#endif

#endif /* FP_GBN_H */

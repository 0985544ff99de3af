// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * fp_gbn.c - go-back-N sender: sequence state, batching, retransmission
 * timer. See fp_gbn.h.
 */
#include "fp_gbn.h"

int fp_gbn_init(struct fp_gbn *g, uint16_t entry_len, size_t max_dgram, uint16_t max_batch,
		uint32_t seq, uint64_t rto_ns)
{
	g->entry_len = entry_len;
	g->batch_max = fp_batch_max_entries(max_dgram, entry_len);
	if (max_batch && max_batch < g->batch_max)
		g->batch_max = max_batch;
	if (g->batch_max == 0)
		return -FP_EINVAL;
	fp_gbn_reset(g, seq, rto_ns);
	return 0;
}

void fp_gbn_reset(struct fp_gbn *g, uint32_t seq, uint64_t rto_ns)
{
	g->una = g->snd = g->max = seq;
	g->nak_done = 0;
	g->rto_due = FP_TIME_NEVER;
	g->rto_cur = rto_ns;
	g->batch_due = FP_TIME_NEVER;
}

void fp_gbn_queued(struct fp_gbn *g, uint64_t now_ns, uint64_t delay_ns)
{
	if (g->batch_due == FP_TIME_NEVER)
		g->batch_due = fp_time_add(now_ns, delay_ns);
}

bool fp_gbn_timer(struct fp_gbn *g, uint64_t now_ns, uint64_t rto_max_ns)
{
	if (g->rto_due > now_ns)
		return false;
	if (fp_gbn_all_acked(g)) {
		g->rto_due = FP_TIME_NEVER;
		return false;
	}
	g->snd = g->una;
	g->rto_cur = fp_min_u64(g->rto_cur * 2, rto_max_ns);
	g->rto_due = fp_time_add(now_ns, g->rto_cur);
	return true;
}

/* New items (nothing to resend) short of a full batch wait for batch-mates. */
static bool gbn_waits(const struct fp_gbn *g, uint32_t n)
{
	return g->snd == g->max && n < g->batch_max;
}

int fp_gbn_batch(const struct fp_gbn *g, uint32_t n, size_t cap, uint64_t now_ns)
{
	uint32_t max;

	if (n == 0 || (gbn_waits(g, n) && g->batch_due > now_ns))
		return 0;
	max = fp_batch_max_entries(cap, g->entry_len);
	if (max > g->batch_max)
		max = g->batch_max;
	if (max == 0)
		return -FP_ENOSPC;
	return (int)(n < max ? n : max);
}

uint32_t fp_gbn_sent(struct fp_gbn *g, uint32_t count, uint32_t end, uint64_t now_ns)
{
	uint32_t resent;

	if (count == 0)
		return 0;
	/* [snd, max) went out before (snd <= max always holds). */
	resent = fp_seq_lt(g->snd, g->max) ? g->max - g->snd : 0;
	if (resent > count)
		resent = count;
	g->snd += count;
	if (fp_seq_lt(g->max, g->snd))
		g->max = g->snd;
	if (g->rto_due == FP_TIME_NEVER)
		g->rto_due = fp_time_add(now_ns, g->rto_cur);
	g->batch_due = end != g->snd ? now_ns : FP_TIME_NEVER;
	return resent;
}

uint32_t fp_gbn_ack(struct fp_gbn *g, uint32_t ack, uint64_t now_ns, uint64_t rto_ns)
{
	uint32_t n;

	if (!fp_seq_lt(g->una, ack) || !fp_seq_le(ack, g->max))
		return 0;
	n = ack - g->una;
	g->una = ack;
	if (fp_seq_lt(g->snd, ack))
		g->snd = ack;
	g->rto_cur = rto_ns;
	g->nak_done = 0;
	g->rto_due = fp_gbn_all_acked(g) ? FP_TIME_NEVER : fp_time_add(now_ns, g->rto_cur);
	return n;
}

bool fp_gbn_nak(struct fp_gbn *g, uint32_t ack)
{
	if (g->nak_done || ack != g->una || fp_gbn_all_acked(g))
		return false;
	g->snd = g->una;
	g->nak_done = 1;
	return true;
}

uint64_t fp_gbn_deadline(const struct fp_gbn *g, uint32_t n)
{
	if (n == 0)
		return g->rto_due;
	if (!gbn_waits(g, n))
		return 0;
	return fp_min_u64(g->rto_due, g->batch_due);
}

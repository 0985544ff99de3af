// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * fp_emu_conn.c - emulator-side per-endpoint reliability and sessions.
 * See fp_emu_conn.h and docs/protocol.md ("Emulator rules").
 */
#include "fp_emu_conn.h"

#define NS_PER_US 1000ull
#define NS_PER_MS 1000000ull

void fp_emu_config_default(struct fp_emu_config *cfg)
{
	fp_memset(cfg, 0, sizeof(*cfg));
	cfg->epoch_seed = 1;
	cfg->max_dgram = FP_DEFAULT_MAX_DGRAM;
	cfg->rto_ns = 500 * NS_PER_US;
	cfg->rto_max_ns = 50 * NS_PER_MS;
	cfg->ack_delay_ns = 20 * NS_PER_US;
	cfg->batch_delay_ns = 0;
	cfg->reset_interval_ns = 100 * NS_PER_US;
}

int fp_emu_conn_init(struct fp_emu_conn *c, const struct fp_emu_config *cfg,
		     struct fp_verdict *ring, uint32_t ring_cap, uint64_t now_ns)
{
	int rc;

	if (!c || !cfg || !ring || ring_cap < 2 || ring_cap > (1u << 30) ||
	    (ring_cap & (ring_cap - 1)) != 0)
		return -FP_EINVAL;
	if (cfg->req_custom_len > FP_MAX_CUSTOM || cfg->verdict_custom_len > FP_MAX_CUSTOM ||
	    (cfg->features & ~FP_FEAT_ALL) || cfg->max_dgram < FP_MIN_DGRAM ||
	    cfg->rto_ns == 0)
		return -FP_EINVAL;
	fp_memset(c, 0, sizeof(*c));
	c->cfg = *cfg;
	c->cfg.scheme[FP_SCHEME_NAME_MAX] = '\0';
	rc = fp_scheme_name_len(c->cfg.scheme);
	if (rc < 0)
		return rc;
	c->name_len = (uint8_t)rc;
	if (c->cfg.rto_max_ns < c->cfg.rto_ns)
		c->cfg.rto_max_ns = c->cfg.rto_ns;
	c->ring = ring;
	c->mask = ring_cap - 1;
	c->window = ring_cap > 0xffffu ? 0xffffu : ring_cap;
	if (fp_gbn_init(&c->tx, fp_verdict_entry_len(c->cfg.verdict_custom_len),
			c->cfg.max_dgram, c->cfg.max_batch, 0, c->cfg.rto_ns))
		return -FP_EINVAL;
	c->state = FP_EMU_IDLE;
	c->next_epoch = cfg->epoch_seed;
	c->ack_due = FP_TIME_NEVER;
	c->last_reset_tx = FP_TIME_NEVER;
	c->last_rx = now_ns;
	return 0;
}

static void emu_queue_reject(struct fp_emu_conn *c, uint32_t instance, uint32_t attempt,
			     uint16_t code, uint8_t hdr_version)
{
	fp_memset(&c->reject, 0, sizeof(c->reject));
	c->reject.instance = instance;
	c->reject.attempt = attempt;
	c->reject.code = code;
	c->reject.version = FP_VERSION;
	c->reject.req_custom_len = c->cfg.req_custom_len;
	c->reject.verdict_custom_len = c->cfg.verdict_custom_len;
	c->reject.features = c->cfg.features;
	c->reject.name_len = c->name_len;
	fp_memcpy(c->reject.scheme, c->cfg.scheme, c->name_len);
	c->reject_version = hdr_version;
	c->reject_pending = 1;
}

static void emu_maybe_reset(struct fp_emu_conn *c, uint32_t bad_session, uint64_t now_ns)
{
	if (c->last_reset_tx != FP_TIME_NEVER &&
	    now_ns < fp_time_add(c->last_reset_tx, c->cfg.reset_interval_ns))
		return; /* rate limit */
	c->reset_pending = 1;
	c->reset_bad = bad_session;
}

static void emu_open_session(struct fp_emu_conn *c, const struct fp_hello *m, uint64_t now_ns)
{
	uint32_t epoch = c->next_epoch++;

	if (epoch == 0)
		epoch = c->next_epoch++;
	c->state = FP_EMU_ESTABLISHED;
	c->session = epoch;
	c->rnext = m->first_rseq;
	c->inflight = 0;
	fp_gbn_reset(&c->tx, c->cfg.initial_vseq, c->cfg.rto_ns);
	c->v_next = c->cfg.initial_vseq;
	c->ack_due = FP_TIME_NEVER;
	c->nak_pending = 0;
	c->reset_pending = 0;
	c->last_rx = now_ns;

	fp_memset(&c->welcome, 0, sizeof(c->welcome));
	c->welcome.session = epoch;
	c->welcome.instance = m->instance;
	c->welcome.attempt = m->attempt;
	c->welcome.first_rseq = m->first_rseq;
	c->welcome.first_vseq = c->cfg.initial_vseq;
	c->welcome.endpoint_id = c->cfg.endpoint_id;
	c->welcome.window = (uint16_t)c->window;
	c->welcome.req_custom_len = c->cfg.req_custom_len;
	c->welcome.verdict_custom_len = c->cfg.verdict_custom_len;
	c->welcome.features = c->cfg.features;
	c->welcome.apkt_bytes = c->cfg.apkt_bytes;
	c->welcome_pending = 1;
	c->stats.sessions++;
}

static int emu_on_hello(struct fp_emu_conn *c, const uint8_t *buf, size_t len, uint64_t now_ns)
{
	struct fp_hello m;
	uint32_t inst, att;
	uint16_t code = 0;
	int rc = fp_decode_hello(buf, len, &m);

	if (rc < 0) {
		c->stats.rx_bad++;
		if (fp_peek_hello_ids(buf, len, &inst, &att) == 0)
			emu_queue_reject(c, inst, att, FP_REJ_BAD_HELLO, FP_VERSION);
		return rc;
	}
	if (c->have_hello && m.instance == c->hello_instance) {
		if (fp_seq_lt(m.attempt, c->hello_attempt)) {
			c->stats.rx_stale++; /* delayed HELLO of an older attempt */
			return -FP_ESTALE;
		}
		if (m.attempt == c->hello_attempt && c->state == FP_EMU_ESTABLISHED &&
		    c->welcome.instance == m.instance && c->welcome.attempt == m.attempt &&
		    m.first_rseq == c->welcome.first_rseq) {
			if (c->rnext == c->welcome.first_rseq) {
				/* Retransmitted HELLO (our WELCOME was lost):
				 * same answer, same session. */
				c->welcome_pending = 1;
				return 0;
			}
			/* The endpoint has sent requests in this session, so
			 * it has its WELCOME: a late duplicate. */
			c->stats.rx_stale++;
			return -FP_ESTALE;
		}
		/* Same ids but another first_rseq: another incarnation of the
		 * endpoint (it should have drawn a new instance): new session. */
	}
	if (m.req_custom_len != c->cfg.req_custom_len ||
	    m.verdict_custom_len != c->cfg.verdict_custom_len)
		code = FP_REJ_CUSTOM_SIZE;
	else if (m.features != c->cfg.features)
		code = FP_REJ_FEATURES;
	else if (m.name_len && c->name_len &&
		 (m.name_len != c->name_len || fp_memcmp(m.scheme, c->cfg.scheme, m.name_len)))
		code = FP_REJ_SCHEME;
	c->have_hello = 1;
	c->hello_instance = m.instance;
	c->hello_attempt = m.attempt;
	if (code) {
		/* The current session (if any) is left alone. */
		emu_queue_reject(c, m.instance, m.attempt, code, FP_VERSION);
		return 0;
	}
	emu_open_session(c, &m, now_ns);
	return 0;
}

static void emu_on_vack(struct fp_emu_conn *c, uint32_t ack, bool nak, uint64_t now_ns)
{
	uint32_t n = fp_gbn_ack(&c->tx, ack, now_ns, c->cfg.rto_ns);

	/* Saturate: only an engine pushing two verdicts for one token could
	 * make n exceed inflight. */
	c->inflight = n > c->inflight ? 0 : c->inflight - n;
	if (nak && fp_gbn_nak(&c->tx, ack))
		c->stats.naks++;
}

static int emu_on_requests(struct fp_emu_conn *c, const uint8_t *buf, size_t len,
			   uint64_t now_ns, fp_emu_request_fn fn, void *ctx)
{
	struct fp_batch b;
	struct fp_request req;
	struct fp_emu_token tok;
	bool immediate = false, fresh = false;
	uint16_t i;
	int rc = fp_decode_requests(buf, len, &b);

	if (rc < 0) {
		c->stats.rx_bad++;
		return rc;
	}
	if (c->state != FP_EMU_ESTABLISHED || b.hdr.session != c->session) {
		c->stats.rx_stale++;
		emu_maybe_reset(c, b.hdr.session, now_ns);
		return -FP_ESTALE;
	}
	if (b.custom_len != c->cfg.req_custom_len ||
	    ((b.hdr.flags & FP_F_PRIO) != 0) != ((c->cfg.features & FP_FEAT_PRIO) != 0)) {
		c->stats.rx_bad++;
		return -FP_EFIELD;
	}
	c->last_rx = now_ns;
	emu_on_vack(c, b.ack, (b.hdr.flags & FP_F_NAK) != 0, now_ns);
	for (i = 0; i < b.count; i++) {
		uint32_t rseq = b.base + i;

		if (fp_seq_lt(rseq, c->rnext)) {
			c->stats.request_dups++;
			immediate = true;
			continue;
		}
		if (rseq != c->rnext) {
			c->stats.request_gaps++;
			immediate = true;
			c->nak_pending = 1;
			break;
		}
		if (c->inflight >= c->window) {
			c->stats.request_full++;
			break;
		}
		fp_batch_request(&b, i, &req);
		tok.session = c->session;
		tok.rseq = rseq;
		c->rnext++;
		c->inflight++;
		if (fn && fn(ctx, &tok, &req) != 0) {
			c->rnext--;
			c->inflight--;
			c->stats.request_refused++;
			break;
		}
		c->stats.requests++;
		fresh = true;
	}
	if (b.hdr.flags & FP_F_ACK_REQ)
		immediate = true;
	if (immediate)
		c->ack_due = now_ns;
	else if (fresh && c->ack_due == FP_TIME_NEVER)
		c->ack_due = fp_time_add(now_ns, c->cfg.ack_delay_ns);
	return 0;
}

int fp_emu_rx(struct fp_emu_conn *c, const uint8_t *buf, size_t len, uint64_t now_ns,
	      fp_emu_request_fn fn, void *ctx)
{
	struct fp_hdr h;
	uint32_t inst, att;
	int rc = fp_decode_hdr(buf, len, &h);

	c->stats.rx_dgrams++;
	if (rc == -FP_EVERSION && h.type == FP_MSG_HELLO &&
	    fp_peek_hello_ids(buf, len, &inst, &att) == 0) {
		c->stats.rx_bad++;
		emu_queue_reject(c, inst, att, FP_REJ_VERSION, h.version);
		return rc;
	}
	if (rc < 0) {
		c->stats.rx_bad++;
		return rc;
	}
	switch (h.type) {
	case FP_MSG_REQUESTS:
		return emu_on_requests(c, buf, len, now_ns, fn, ctx);
	case FP_MSG_HELLO:
		return emu_on_hello(c, buf, len, now_ns);
	default:
		c->stats.rx_bad++;
		return -FP_ETYPE;
	}
}

int fp_emu_push_verdict(struct fp_emu_conn *c, const struct fp_emu_token *tok,
			const struct fp_verdict *v, uint64_t now_ns)
{
	struct fp_verdict *slot;

	if (c->state != FP_EMU_ESTABLISHED || tok->session != c->session) {
		c->stats.verdicts_stale++;
		return -FP_ESTALE;
	}
	if (!fp_action_valid(v->action) || !fp_seq_lt(tok->rseq, c->rnext))
		return -FP_EINVAL;
	if (c->v_next - c->tx.una > c->mask)
		return -FP_ENOSPC; /* cannot happen: inflight <= window <= ring */
	slot = &c->ring[c->v_next & c->mask];
	*slot = *v;
	slot->rseq = tok->rseq;
	fp_memset(slot->custom + c->cfg.verdict_custom_len, 0,
		  FP_MAX_CUSTOM - c->cfg.verdict_custom_len);
	c->v_next++;
	c->stats.verdicts++;
	fp_gbn_queued(&c->tx, now_ns, c->cfg.batch_delay_ns);
	return 0;
}

static int emu_send_batch(struct fp_emu_conn *c, uint64_t now_ns, uint8_t *buf, size_t cap,
			  uint32_t count)
{
	struct fp_batch_writer w;
	uint32_t k, resent;
	uint8_t flags = c->nak_pending ? FP_F_NAK : 0;
	int rc = fp_batch_begin(&w, buf, cap, FP_MSG_VERDICTS, c->session, flags,
				c->cfg.verdict_custom_len, c->rnext, c->tx.snd);

	if (rc < 0)
		return rc;
	for (k = 0; k < count; k++) {
		rc = fp_batch_add_verdict(&w, &c->ring[(c->tx.snd + k) & c->mask]);
		if (rc < 0)
			return rc;
	}
	resent = fp_gbn_sent(&c->tx, count, c->v_next, now_ns);
	c->stats.verdicts_resent += resent;
	c->stats.verdicts_sent += count - resent;
	c->ack_due = FP_TIME_NEVER;
	c->nak_pending = 0;
	c->stats.tx_dgrams++;
	return fp_batch_finish(&w);
}

int fp_emu_poll(struct fp_emu_conn *c, uint64_t now_ns, uint8_t *buf, size_t cap)
{
	int rc;

	if (cap > c->cfg.max_dgram)
		cap = c->cfg.max_dgram;
	if (c->reject_pending) {
		rc = fp_encode_reject_version(buf, cap, &c->reject, c->reject_version);
		if (rc >= 0) {
			c->reject_pending = 0;
			c->stats.rejects_sent++;
			c->stats.tx_dgrams++;
		}
		return rc;
	}
	if (c->welcome_pending) {
		rc = fp_encode_welcome(buf, cap, &c->welcome);
		if (rc >= 0) {
			c->welcome_pending = 0;
			c->stats.welcomes_sent++;
			c->stats.tx_dgrams++;
		}
		return rc;
	}
	if (c->reset_pending) {
		struct fp_reset r;

		r.session = c->state == FP_EMU_ESTABLISHED ? c->session : 0;
		r.bad_session = c->reset_bad;
		rc = fp_encode_reset(buf, cap, &r);
		if (rc >= 0) {
			c->reset_pending = 0;
			c->last_reset_tx = now_ns;
			c->stats.resets_sent++;
			c->stats.tx_dgrams++;
		}
		return rc;
	}
	if (c->state != FP_EMU_ESTABLISHED)
		return 0;
	if (fp_gbn_timer(&c->tx, now_ns, c->cfg.rto_max_ns))
		c->stats.timeouts++;
	rc = fp_gbn_batch(&c->tx, c->v_next - c->tx.snd, cap, now_ns);
	if (rc > 0)
		return emu_send_batch(c, now_ns, buf, cap, (uint32_t)rc);
	if (rc < 0)
		return rc;
	if (c->ack_due <= now_ns) {
		c->stats.acks_sent++;
		return emu_send_batch(c, now_ns, buf, cap, 0);
	}
	return 0;
}

uint64_t fp_emu_next_deadline(const struct fp_emu_conn *c)
{
	if (c->reject_pending || c->welcome_pending || c->reset_pending)
		return 0;
	if (c->state != FP_EMU_ESTABLISHED)
		return FP_TIME_NEVER;
	return fp_min_u64(fp_gbn_deadline(&c->tx, c->v_next - c->tx.snd), c->ack_due);
}

void fp_emu_drop_session(struct fp_emu_conn *c, uint64_t now_ns)
{
	(void)now_ns;
	if (c->state != FP_EMU_ESTABLISHED)
		return;
	c->reset_pending = 1;
	c->reset_bad = c->session;
	c->state = FP_EMU_IDLE;
	c->session = 0;
	c->welcome_pending = 0;
	c->inflight = 0;
	fp_gbn_reset(&c->tx, c->v_next, c->cfg.rto_ns);
	c->ack_due = FP_TIME_NEVER;
}

int fp_emu_reject_unknown(const uint8_t *hello, size_t len, uint8_t *buf, size_t cap)
{
	struct fp_reject r;
	uint32_t inst, att;
	int rc = fp_peek_hello_ids(hello, len, &inst, &att);

	if (rc < 0)
		return rc;
	fp_memset(&r, 0, sizeof(r));
	r.instance = inst;
	r.attempt = att;
	r.code = FP_REJ_UNKNOWN_ENDPOINT;
	r.version = FP_VERSION;
	return fp_encode_reject_version(buf, cap, &r, hello[2]);
}

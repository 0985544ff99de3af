// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * fp_endpoint_conn.c - endpoint-side reliability and session state machine.
 * See fp_endpoint_conn.h and docs/protocol.md ("Endpoint rules").
 */
#include "fp_endpoint_conn.h"

#define NS_PER_US 1000ull
#define NS_PER_MS 1000000ull

void fp_ep_config_default(struct fp_ep_config *cfg)
{
	fp_memset(cfg, 0, sizeof(*cfg));
	cfg->instance = 0; /* the caller MUST set a random, nonzero value */
	cfg->initial_rseq = 0;
	cfg->window = 1024;
	cfg->max_dgram = FP_DEFAULT_MAX_DGRAM;
	cfg->max_batch = 0;
	cfg->rto_ns = 500 * NS_PER_US;
	cfg->rto_max_ns = 50 * NS_PER_MS;
	cfg->ack_delay_ns = 20 * NS_PER_US;
	cfg->batch_delay_ns = 0;
	cfg->hello_rto_ns = 50 * NS_PER_MS;
	cfg->hello_rto_max_ns = 1000 * NS_PER_MS;
	cfg->probe_ns = 10 * NS_PER_MS;
	cfg->reject_retry_ns = 1000 * NS_PER_MS;
}

int fp_ep_conn_init(struct fp_ep_conn *c, const struct fp_ep_config *cfg,
		    struct fp_ep_slot *slots, uint32_t nslots, uint64_t now_ns)
{
	uint32_t i;
	int rc;

	if (!c || !cfg || !slots || nslots < 2 || nslots > (1u << 30) ||
	    (nslots & (nslots - 1)) != 0)
		return -FP_EINVAL;
	if (cfg->instance == 0 || cfg->window == 0 || cfg->req_custom_len > FP_MAX_CUSTOM ||
	    cfg->verdict_custom_len > FP_MAX_CUSTOM || (cfg->features & ~FP_FEAT_ALL) ||
	    cfg->max_dgram < FP_MIN_DGRAM || cfg->rto_ns == 0 || cfg->hello_rto_ns == 0 ||
	    cfg->probe_ns == 0 || cfg->reject_retry_ns == 0)
		return -FP_EINVAL;
	fp_memset(c, 0, sizeof(*c));
	c->cfg = *cfg;
	c->cfg.scheme[FP_SCHEME_NAME_MAX] = '\0';
	rc = fp_scheme_name_len(c->cfg.scheme);
	if (rc < 0)
		return rc;
	c->name_len = (uint8_t)rc;
	if (c->cfg.window > nslots)
		c->cfg.window = (uint16_t)nslots;
	if (c->cfg.rto_max_ns < c->cfg.rto_ns)
		c->cfg.rto_max_ns = c->cfg.rto_ns;
	if (c->cfg.hello_rto_max_ns < c->cfg.hello_rto_ns)
		c->cfg.hello_rto_max_ns = c->cfg.hello_rto_ns;
	c->slots = slots;
	c->mask = nslots - 1;
	for (i = 0; i < nslots; i++)
		slots[i].state = FP_SLOT_FREE;
	if (fp_gbn_init(&c->tx, fp_request_entry_len(c->cfg.req_custom_len,
						      (c->cfg.features & FP_FEAT_PRIO) != 0),
			c->cfg.max_dgram, c->cfg.max_batch, cfg->initial_rseq, c->cfg.rto_ns))
		return -FP_EINVAL;

	c->state = FP_EP_CONNECTING;
	c->attempt = 1;
	c->low = c->next = cfg->initial_rseq;
	c->hello_due = now_ns;
	c->hello_rto = c->cfg.hello_rto_ns;
	c->ack_due = FP_TIME_NEVER;
	c->last_rx = now_ns;
	c->last_probe = now_ns;
	return 0;
}

/* Requests that may be sent now: [tx.snd, min(next, low + win)). */
static uint32_t ep_sendable(const struct fp_ep_conn *c)
{
	uint32_t end = c->next;
	uint32_t lim = c->low + c->win;

	if (c->state != FP_EP_ESTABLISHED)
		return 0;
	if (fp_seq_lt(lim, end))
		end = lim;
	return fp_seq_lt(c->tx.snd, end) ? end - c->tx.snd : 0;
}

/* When to probe a silent emulator (FP_TIME_NEVER: no probe): only while
 * requests wait for verdicts and every sent one is acked. */
static uint64_t ep_probe_due(const struct fp_ep_conn *c)
{
	if (c->pending == 0 || !fp_gbn_all_acked(&c->tx))
		return FP_TIME_NEVER;
	return fp_time_add(c->last_rx > c->last_probe ? c->last_rx : c->last_probe,
			   c->cfg.probe_ns);
}

int fp_ep_submit(struct fp_ep_conn *c, const struct fp_request *req, uint64_t user,
		 uint64_t now_ns)
{
	struct fp_ep_slot *s;

	if (c->state == FP_EP_REJECTED)
		return -FP_EREJECTED;
	if (!fp_request_valid(req))
		return -FP_EINVAL;
	if (c->next - c->low > c->mask)
		return -FP_ENOSPC;
	s = &c->slots[c->next & c->mask];
	s->req = *req;
	if (!(c->cfg.features & FP_FEAT_PRIO))
		s->req.priority = 0;
	fp_memset(s->req.custom + c->cfg.req_custom_len, 0,
		  FP_MAX_CUSTOM - c->cfg.req_custom_len);
	s->user = user;
	s->state = FP_SLOT_PENDING;
	c->next++;
	c->pending++;
	c->stats.requests_submitted++;
	fp_gbn_queued(&c->tx, now_ns, c->cfg.batch_delay_ns);
	return 0;
}

/* Drop the session and start a new one: renumber the requests without a
 * verdict so they are contiguous from low, and go back to HELLO. */
static void ep_restart_session(struct fp_ep_conn *c, uint64_t now_ns)
{
	uint32_t i, j = c->low;

	for (i = c->low; i != c->next; i++) {
		struct fp_ep_slot *s = &c->slots[i & c->mask];

		if (s->state == FP_SLOT_PENDING) {
			if (i != j) {
				c->slots[j & c->mask] = *s;
				s->state = FP_SLOT_FREE;
			}
			j++;
		} else {
			s->state = FP_SLOT_FREE;
		}
	}
	c->next = j;
	c->state = FP_EP_CONNECTING;
	c->session = 0;
	c->attempt++;
	fp_gbn_reset(&c->tx, c->low, c->cfg.rto_ns);
	c->hello_due = now_ns;
	c->hello_rto = c->cfg.hello_rto_ns;
	c->ack_due = FP_TIME_NEVER;
	c->nak_pending = 0;
	c->stats.resets++;
}

/* Cumulative ack of requests (and NAK: resend from the ack). */
static void ep_on_ack(struct fp_ep_conn *c, uint32_t ack, bool nak, uint64_t now_ns)
{
	fp_gbn_ack(&c->tx, ack, now_ns, c->cfg.rto_ns);
	if (nak && fp_gbn_nak(&c->tx, ack))
		c->stats.naks++;
}

static void ep_deliver(struct fp_ep_conn *c, const struct fp_verdict *v, uint64_t now_ns,
		       fp_ep_verdict_fn fn, void *ctx)
{
	uint32_t r = v->rseq;
	struct fp_ep_slot *s;

	/* Only a request that was sent can have a verdict: r in [low, tx.max). */
	if (r - c->low >= c->tx.max - c->low) {
		c->stats.verdict_mismatch++;
		return;
	}
	s = &c->slots[r & c->mask];
	if (s->state != FP_SLOT_PENDING || s->req.flow != v->flow || s->req.id != v->id) {
		c->stats.verdict_mismatch++;
		return;
	}
	/* A verdict for r proves the emulator accepted every request up to r. */
	fp_gbn_ack(&c->tx, r + 1, now_ns, c->cfg.rto_ns);
	if (v->action == FP_ACT_MARK && !(s->req.flags & FP_REQ_ECT))
		c->stats.mark_non_ect++;
	s->state = FP_SLOT_DONE;
	c->pending--;
	c->stats.verdicts++;
	if (fn)
		fn(ctx, v, &s->req, s->user);
}

static int ep_on_verdicts(struct fp_ep_conn *c, const uint8_t *buf, size_t len,
			  uint64_t now_ns, fp_ep_verdict_fn fn, void *ctx)
{
	struct fp_batch b;
	struct fp_verdict v;
	bool immediate = false, fresh = false;
	uint16_t i;
	int rc = fp_decode_verdicts(buf, len, &b);

	if (rc < 0) {
		c->stats.rx_bad++;
		return rc;
	}
	if (c->state != FP_EP_ESTABLISHED || b.hdr.session != c->session) {
		c->stats.rx_stale++;
		return -FP_ESTALE;
	}
	if (b.custom_len != c->cfg.verdict_custom_len) {
		c->stats.rx_bad++;
		return -FP_EFIELD;
	}
	c->last_rx = now_ns;
	ep_on_ack(c, b.ack, (b.hdr.flags & FP_F_NAK) != 0, now_ns);
	for (i = 0; i < b.count; i++) {
		uint32_t vseq = b.base + i;

		if (fp_seq_lt(vseq, c->v_expected)) {
			c->stats.verdict_dups++;
			immediate = true;
			continue;
		}
		if (vseq != c->v_expected) {
			c->stats.verdict_gaps++;
			immediate = true;
			c->nak_pending = 1;
			break;
		}
		fp_batch_verdict(&b, i, &v);
		c->v_expected++;
		fresh = true;
		ep_deliver(c, &v, now_ns, fn, ctx);
	}
	while (c->low != c->next && c->slots[c->low & c->mask].state == FP_SLOT_DONE) {
		c->slots[c->low & c->mask].state = FP_SLOT_FREE;
		c->low++;
	}
	if (b.hdr.flags & FP_F_ACK_REQ)
		immediate = true;
	if (immediate)
		c->ack_due = now_ns;
	else if (fresh && c->ack_due == FP_TIME_NEVER)
		c->ack_due = fp_time_add(now_ns, c->cfg.ack_delay_ns);
	return 0;
}

/* The session was refused (c->last_reject says why): HELLO again later. */
static void ep_rejected(struct fp_ep_conn *c, uint64_t now_ns)
{
	c->state = FP_EP_REJECTED;
	c->stats.rejects++;
	c->hello_due = fp_time_add(now_ns, c->cfg.reject_retry_ns);
}

static int ep_on_welcome(struct fp_ep_conn *c, const uint8_t *buf, size_t len,
			 uint64_t now_ns)
{
	struct fp_welcome w;
	uint16_t code = 0;
	int rc = fp_decode_welcome(buf, len, &w);

	if (rc < 0) {
		c->stats.rx_bad++;
		return rc;
	}
	if (c->state == FP_EP_ESTABLISHED || w.instance != c->cfg.instance ||
	    w.attempt != c->attempt || w.first_rseq != c->low) {
		c->stats.rx_stale++;
		return -FP_ESTALE;
	}
	if (w.req_custom_len != c->cfg.req_custom_len ||
	    w.verdict_custom_len != c->cfg.verdict_custom_len)
		code = FP_REJ_CUSTOM_SIZE;
	else if (w.features != c->cfg.features)
		code = FP_REJ_FEATURES;
	if (code) {
		/* The emulator should have refused; refuse locally, never mis-frame. */
		fp_memset(&c->last_reject, 0, sizeof(c->last_reject));
		c->last_reject.instance = w.instance;
		c->last_reject.attempt = w.attempt;
		c->last_reject.code = code;
		c->last_reject.version = FP_VERSION;
		c->last_reject.req_custom_len = w.req_custom_len;
		c->last_reject.verdict_custom_len = w.verdict_custom_len;
		c->last_reject.features = w.features;
		ep_rejected(c, now_ns);
		return -FP_EREJECTED;
	}
	c->state = FP_EP_ESTABLISHED;
	c->session = w.session;
	c->endpoint_id = w.endpoint_id;
	c->apkt_bytes = w.apkt_bytes;
	c->win = c->cfg.window < w.window ? c->cfg.window : w.window;
	fp_gbn_reset(&c->tx, c->low, c->cfg.rto_ns);
	if (c->next != c->low)
		c->tx.batch_due = now_ns; /* requests queued while connecting */
	c->v_expected = w.first_vseq;
	c->ack_due = FP_TIME_NEVER;
	c->hello_due = FP_TIME_NEVER;
	c->nak_pending = 0;
	c->last_rx = now_ns;
	c->last_probe = now_ns;
	c->stats.sessions++;
	return 0;
}

static int ep_on_reject(struct fp_ep_conn *c, const uint8_t *buf, size_t len,
			uint64_t now_ns)
{
	struct fp_reject r;
	int rc = fp_decode_reject(buf, len, &r);

	if (rc < 0) {
		c->stats.rx_bad++;
		return rc;
	}
	if (c->state == FP_EP_ESTABLISHED || r.instance != c->cfg.instance ||
	    r.attempt != c->attempt) {
		c->stats.rx_stale++;
		return -FP_ESTALE;
	}
	c->last_reject = r;
	ep_rejected(c, now_ns);
	return 0;
}

static int ep_on_reset(struct fp_ep_conn *c, const uint8_t *buf, size_t len,
		       uint64_t now_ns)
{
	struct fp_reset r;
	int rc = fp_decode_reset(buf, len, &r);

	if (rc < 0) {
		c->stats.rx_bad++;
		return rc;
	}
	if (c->state != FP_EP_ESTABLISHED || r.bad_session != c->session) {
		c->stats.rx_stale++;
		return -FP_ESTALE;
	}
	ep_restart_session(c, now_ns);
	return 0;
}

int fp_ep_rx(struct fp_ep_conn *c, const uint8_t *buf, size_t len, uint64_t now_ns,
	     fp_ep_verdict_fn fn, void *ctx)
{
	struct fp_hdr h;
	int rc = fp_decode_hdr(buf, len, &h);

	c->stats.rx_dgrams++;
	if (rc < 0) {
		c->stats.rx_bad++;
		return rc;
	}
	switch (h.type) {
	case FP_MSG_VERDICTS:
		return ep_on_verdicts(c, buf, len, now_ns, fn, ctx);
	case FP_MSG_WELCOME:
		return ep_on_welcome(c, buf, len, now_ns);
	case FP_MSG_REJECT:
		return ep_on_reject(c, buf, len, now_ns);
	case FP_MSG_RESET:
		return ep_on_reset(c, buf, len, now_ns);
	default:
		c->stats.rx_bad++;
		return -FP_ETYPE;
	}
}

static int ep_send_hello(struct fp_ep_conn *c, uint64_t now_ns, uint8_t *buf, size_t cap)
{
	struct fp_hello m;
	int n;

	if (c->state == FP_EP_REJECTED)
		c->attempt++; /* every retry after a REJECT is a new attempt */
	fp_memset(&m, 0, sizeof(m));
	m.instance = c->cfg.instance;
	m.attempt = c->attempt;
	m.first_rseq = c->low;
	m.window = c->cfg.window;
	m.req_custom_len = c->cfg.req_custom_len;
	m.verdict_custom_len = c->cfg.verdict_custom_len;
	m.features = c->cfg.features;
	m.name_len = c->name_len;
	fp_memcpy(m.scheme, c->cfg.scheme, c->name_len);
	n = fp_encode_hello(buf, cap, &m);
	if (n < 0)
		return n;
	if (c->state == FP_EP_CONNECTING) {
		c->hello_due = fp_time_add(now_ns, c->hello_rto);
		c->hello_rto = fp_min_u64(c->hello_rto * 2, c->cfg.hello_rto_max_ns);
	} else {
		c->hello_due = fp_time_add(now_ns, c->cfg.reject_retry_ns);
	}
	c->stats.hellos_sent++;
	c->stats.tx_dgrams++;
	return n;
}

static int ep_send_batch(struct fp_ep_conn *c, uint64_t now_ns, uint8_t *buf, size_t cap,
			 uint32_t count, uint8_t flags)
{
	struct fp_batch_writer w;
	uint32_t k, resent;
	int rc;

	if (c->cfg.features & FP_FEAT_PRIO)
		flags |= FP_F_PRIO;
	if (c->nak_pending)
		flags |= FP_F_NAK;
	rc = fp_batch_begin(&w, buf, cap, FP_MSG_REQUESTS, c->session, flags,
			    c->cfg.req_custom_len, c->v_expected, c->tx.snd);
	if (rc < 0)
		return rc;
	for (k = 0; k < count; k++) {
		rc = fp_batch_add_request(&w, &c->slots[(c->tx.snd + k) & c->mask].req);
		if (rc < 0)
			return rc;
	}
	resent = fp_gbn_sent(&c->tx, count, c->next, now_ns);
	c->stats.requests_resent += resent;
	c->stats.requests_sent += count - resent;
	c->ack_due = FP_TIME_NEVER;
	c->nak_pending = 0;
	c->stats.tx_dgrams++;
	return fp_batch_finish(&w);
}

int fp_ep_poll(struct fp_ep_conn *c, uint64_t now_ns, uint8_t *buf, size_t cap)
{
	int rc;

	if (cap > c->cfg.max_dgram)
		cap = c->cfg.max_dgram;
	if (c->state != FP_EP_ESTABLISHED) {
		if (c->hello_due <= now_ns)
			return ep_send_hello(c, now_ns, buf, cap);
		return 0;
	}
	if (fp_gbn_timer(&c->tx, now_ns, c->cfg.rto_max_ns))
		c->stats.timeouts++;
	rc = fp_gbn_batch(&c->tx, ep_sendable(c), cap, now_ns);
	if (rc > 0)
		return ep_send_batch(c, now_ns, buf, cap, (uint32_t)rc, 0);
	if (rc < 0)
		return rc;
	if (c->ack_due <= now_ns) {
		c->stats.acks_sent++;
		return ep_send_batch(c, now_ns, buf, cap, 0, 0);
	}
	if (ep_probe_due(c) <= now_ns) {
		c->last_probe = now_ns;
		c->stats.probes++;
		return ep_send_batch(c, now_ns, buf, cap, 0, FP_F_ACK_REQ);
	}
	return 0;
}

uint64_t fp_ep_next_deadline(const struct fp_ep_conn *c)
{
	if (c->state != FP_EP_ESTABLISHED)
		return c->hello_due;
	return fp_min_u64(fp_min_u64(fp_gbn_deadline(&c->tx, ep_sendable(c)), c->ack_due),
			  ep_probe_due(c));
}

void fp_ep_abort_pending(struct fp_ep_conn *c, uint64_t now_ns, fp_ep_abort_fn fn, void *ctx)
{
	uint32_t i;
	bool had_session = c->state == FP_EP_ESTABLISHED;

	for (i = c->low; i != c->next; i++) {
		struct fp_ep_slot *s = &c->slots[i & c->mask];

		if (s->state == FP_SLOT_PENDING && fn)
			fn(ctx, &s->req, s->user);
		s->state = FP_SLOT_FREE;
	}
	c->low = c->next;
	c->pending = 0;
	if (had_session)
		ep_restart_session(c, now_ns);
	else
		fp_gbn_reset(&c->tx, c->low, c->cfg.rto_ns);
}

// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * fp_wire.c - encode / decode of flexplane wire protocol messages.
 * See fp_wire.h and docs/protocol.md. Every read is preceded by a length
 * check; decoders accept only the canonical encoding.
 */
#include "fp_wire.h"

const char *fp_strerror(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case FP_OK: return "ok";
	case FP_ETRUNC: return "truncated message";
	case FP_EMAGIC: return "bad magic";
	case FP_EVERSION: return "unsupported protocol version";
	case FP_ETYPE: return "unknown or unexpected message type";
	case FP_ELEN: return "inconsistent length";
	case FP_EFIELD: return "invalid field value";
	case FP_ENOSPC: return "no space";
	case FP_EINVAL: return "invalid argument";
	case FP_ESTALE: return "stale session";
	case FP_EREJECTED: return "session rejected by the emulator";
	case FP_ESTATE: return "invalid in current state";
	default: return "unknown error";
	}
}

const char *fp_msg_type_name(unsigned type)
{
	switch (type) {
	case FP_MSG_HELLO: return "HELLO";
	case FP_MSG_WELCOME: return "WELCOME";
	case FP_MSG_REJECT: return "REJECT";
	case FP_MSG_RESET: return "RESET";
	case FP_MSG_REQUESTS: return "REQUESTS";
	case FP_MSG_VERDICTS: return "VERDICTS";
	default: return "?";
	}
}

const char *fp_reject_name(unsigned code)
{
	switch (code) {
	case FP_REJ_VERSION: return "protocol version mismatch";
	case FP_REJ_CUSTOM_SIZE: return "custom-data size mismatch";
	case FP_REJ_FEATURES: return "feature mismatch";
	case FP_REJ_SCHEME: return "scheme name mismatch";
	case FP_REJ_UNKNOWN_ENDPOINT: return "endpoint address not in topology";
	case FP_REJ_BAD_HELLO: return "malformed HELLO";
	default: return "unknown reason";
	}
}

const char *fp_action_name(unsigned action)
{
	switch (action) {
	case FP_ACT_RELEASE: return "release";
	case FP_ACT_MARK: return "mark";
	case FP_ACT_DROP: return "drop";
	default: return "?";
	}
}

bool fp_action_valid(uint8_t action)
{
	return action >= FP_ACT_RELEASE && action <= FP_ACT_DROP;
}

bool fp_request_valid(const struct fp_request *r)
{
	return (r->flags & ~FP_REQ_FLAGS_ALL) == 0 && r->dscp <= 63;
}

static void put_hdr_v(uint8_t *p, uint8_t version, uint8_t type, uint32_t session,
		      uint16_t length, uint8_t flags)
{
	fp_put_be16(p + 0, FP_MAGIC);
	fp_put_u8(p + 2, version);
	fp_put_u8(p + 3, type);
	fp_put_be32(p + 4, session);
	fp_put_be16(p + 8, length);
	fp_put_u8(p + 10, flags);
	fp_put_u8(p + 11, 0);
}

static void put_hdr(uint8_t *p, uint8_t type, uint32_t session, uint16_t length,
		    uint8_t flags)
{
	put_hdr_v(p, FP_VERSION, type, session, length, flags);
}

int fp_decode_hdr(const uint8_t *buf, size_t len, struct fp_hdr *h)
{
	if (!buf || len < FP_HDR_LEN)
		return -FP_ETRUNC;
	if (fp_get_be16(buf) != FP_MAGIC)
		return -FP_EMAGIC;
	h->version = fp_get_u8(buf + 2);
	h->type = fp_get_u8(buf + 3);
	h->session = fp_get_be32(buf + 4);
	h->length = fp_get_be16(buf + 8);
	h->flags = fp_get_u8(buf + 10);
	if (h->version != FP_VERSION)
		return -FP_EVERSION;
	if (h->type < FP_MSG_HELLO || h->type > FP_MSG_VERDICTS)
		return -FP_ETYPE;
	if (h->length > len)
		return -FP_ETRUNC;
	if (h->length < FP_HDR_LEN || h->length != len)
		return -FP_ELEN;
	if (fp_get_u8(buf + 11) != 0)
		return -FP_EFIELD;
	return h->type;
}

/* Header of a fixed-size message of the given type. */
static int decode_fixed(const uint8_t *buf, size_t len, uint8_t type, size_t want,
			struct fp_hdr *h)
{
	int rc = fp_decode_hdr(buf, len, h);

	if (rc < 0)
		return rc;
	if (h->type != type)
		return -FP_ETYPE;
	if (len < want)
		return -FP_ETRUNC;
	if (len != want)
		return -FP_ELEN;
	if (h->flags != 0)
		return -FP_EFIELD;
	return 0;
}

/* Scheme name: name_len bytes of printable ASCII, zero padding after. */
static void put_name(uint8_t *p, const char *name, uint8_t name_len)
{
	fp_memset(p, 0, FP_SCHEME_NAME_MAX);
	fp_memcpy(p, name, name_len);
}

static int get_name(const uint8_t *p, uint8_t name_len, char *out)
{
	unsigned i;

	if (name_len > FP_SCHEME_NAME_MAX)
		return -FP_EFIELD;
	for (i = 0; i < FP_SCHEME_NAME_MAX; i++) {
		uint8_t c = p[i];

		if (i < name_len ? (c < 0x20 || c > 0x7e) : c != 0)
			return -FP_EFIELD;
	}
	fp_memcpy(out, p, name_len);
	out[name_len] = '\0';
	return 0;
}

static bool name_ok(const char *name, uint8_t name_len)
{
	unsigned i;

	if (name_len > FP_SCHEME_NAME_MAX)
		return false;
	for (i = 0; i < name_len; i++)
		if ((uint8_t)name[i] < 0x20 || (uint8_t)name[i] > 0x7e)
			return false;
	return true;
}

int fp_scheme_name_len(const char *name)
{
	uint8_t n = 0;

	while (n < FP_SCHEME_NAME_MAX && name[n] != '\0')
		n++;
	return name_ok(name, n) ? n : -FP_EINVAL;
}

static bool sizes_ok(uint8_t req_custom_len, uint8_t verdict_custom_len, uint8_t features)
{
	return req_custom_len <= FP_MAX_CUSTOM && verdict_custom_len <= FP_MAX_CUSTOM &&
	       (features & ~FP_FEAT_ALL) == 0;
}

/* ---- HELLO ---- */

int fp_encode_hello(uint8_t *buf, size_t cap, const struct fp_hello *m)
{
	if (!sizes_ok(m->req_custom_len, m->verdict_custom_len, m->features) ||
	    m->window == 0 || !name_ok(m->scheme, m->name_len))
		return -FP_EINVAL;
	if (cap < FP_HELLO_LEN)
		return -FP_ENOSPC;
	put_hdr(buf, FP_MSG_HELLO, 0, FP_HELLO_LEN, 0);
	fp_put_be32(buf + 12, m->instance);
	fp_put_be32(buf + 16, m->attempt);
	fp_put_be32(buf + 20, m->first_rseq);
	fp_put_be16(buf + 24, m->window);
	fp_put_u8(buf + 26, m->req_custom_len);
	fp_put_u8(buf + 27, m->verdict_custom_len);
	fp_put_u8(buf + 28, m->features);
	fp_put_u8(buf + 29, m->name_len);
	fp_put_be16(buf + 30, 0);
	put_name(buf + 32, m->scheme, m->name_len);
	return FP_HELLO_LEN;
}

int fp_decode_hello(const uint8_t *buf, size_t len, struct fp_hello *m)
{
	struct fp_hdr h;
	int rc = decode_fixed(buf, len, FP_MSG_HELLO, FP_HELLO_LEN, &h);

	if (rc < 0)
		return rc;
	if (h.session != 0 || fp_get_be16(buf + 30) != 0)
		return -FP_EFIELD;
	m->instance = fp_get_be32(buf + 12);
	m->attempt = fp_get_be32(buf + 16);
	m->first_rseq = fp_get_be32(buf + 20);
	m->window = fp_get_be16(buf + 24);
	m->req_custom_len = fp_get_u8(buf + 26);
	m->verdict_custom_len = fp_get_u8(buf + 27);
	m->features = fp_get_u8(buf + 28);
	m->name_len = fp_get_u8(buf + 29);
	if (m->window == 0 || !sizes_ok(m->req_custom_len, m->verdict_custom_len, m->features))
		return -FP_EFIELD;
	return get_name(buf + 32, m->name_len, m->scheme);
}

int fp_peek_hello_ids(const uint8_t *buf, size_t len, uint32_t *instance, uint32_t *attempt)
{
	if (!buf || len < FP_HELLO_FROZEN_LEN)
		return -FP_ETRUNC;
	if (fp_get_be16(buf) != FP_MAGIC)
		return -FP_EMAGIC;
	if (fp_get_u8(buf + 3) != FP_MSG_HELLO)
		return -FP_ETYPE;
	*instance = fp_get_be32(buf + 12);
	*attempt = fp_get_be32(buf + 16);
	return 0;
}

/* ---- WELCOME ---- */

int fp_encode_welcome(uint8_t *buf, size_t cap, const struct fp_welcome *m)
{
	if (m->session == 0 || m->window == 0 ||
	    !sizes_ok(m->req_custom_len, m->verdict_custom_len, m->features))
		return -FP_EINVAL;
	if (cap < FP_WELCOME_LEN)
		return -FP_ENOSPC;
	put_hdr(buf, FP_MSG_WELCOME, m->session, FP_WELCOME_LEN, 0);
	fp_put_be32(buf + 12, m->instance);
	fp_put_be32(buf + 16, m->attempt);
	fp_put_be32(buf + 20, m->first_rseq);
	fp_put_be32(buf + 24, m->first_vseq);
	fp_put_be16(buf + 28, m->endpoint_id);
	fp_put_be16(buf + 30, m->window);
	fp_put_u8(buf + 32, m->req_custom_len);
	fp_put_u8(buf + 33, m->verdict_custom_len);
	fp_put_u8(buf + 34, m->features);
	fp_put_u8(buf + 35, 0);
	fp_put_be16(buf + 36, m->apkt_bytes);
	fp_put_be16(buf + 38, 0);
	return FP_WELCOME_LEN;
}

int fp_decode_welcome(const uint8_t *buf, size_t len, struct fp_welcome *m)
{
	struct fp_hdr h;
	int rc = decode_fixed(buf, len, FP_MSG_WELCOME, FP_WELCOME_LEN, &h);

	if (rc < 0)
		return rc;
	if (h.session == 0 || fp_get_u8(buf + 35) != 0 || fp_get_be16(buf + 38) != 0)
		return -FP_EFIELD;
	m->session = h.session;
	m->instance = fp_get_be32(buf + 12);
	m->attempt = fp_get_be32(buf + 16);
	m->first_rseq = fp_get_be32(buf + 20);
	m->first_vseq = fp_get_be32(buf + 24);
	m->endpoint_id = fp_get_be16(buf + 28);
	m->window = fp_get_be16(buf + 30);
	m->req_custom_len = fp_get_u8(buf + 32);
	m->verdict_custom_len = fp_get_u8(buf + 33);
	m->features = fp_get_u8(buf + 34);
	m->apkt_bytes = fp_get_be16(buf + 36);
	if (m->window == 0 || !sizes_ok(m->req_custom_len, m->verdict_custom_len, m->features))
		return -FP_EFIELD;
	return 0;
}

/* ---- REJECT ---- */

int fp_encode_reject(uint8_t *buf, size_t cap, const struct fp_reject *m)
{
	return fp_encode_reject_version(buf, cap, m, FP_VERSION);
}

int fp_encode_reject_version(uint8_t *buf, size_t cap, const struct fp_reject *m,
			     uint8_t hdr_version)
{
	if (m->code == 0 || !name_ok(m->scheme, m->name_len))
		return -FP_EINVAL;
	if (cap < FP_REJECT_LEN)
		return -FP_ENOSPC;
	put_hdr_v(buf, hdr_version, FP_MSG_REJECT, 0, FP_REJECT_LEN, 0);
	fp_put_be32(buf + 12, m->instance);
	fp_put_be32(buf + 16, m->attempt);
	fp_put_be16(buf + 20, m->code);
	fp_put_u8(buf + 22, m->version);
	fp_put_u8(buf + 23, m->req_custom_len);
	fp_put_u8(buf + 24, m->verdict_custom_len);
	fp_put_u8(buf + 25, m->features);
	fp_put_u8(buf + 26, m->name_len);
	fp_put_u8(buf + 27, 0);
	put_name(buf + 28, m->scheme, m->name_len);
	return FP_REJECT_LEN;
}

int fp_decode_reject(const uint8_t *buf, size_t len, struct fp_reject *m)
{
	struct fp_hdr h;
	int rc = decode_fixed(buf, len, FP_MSG_REJECT, FP_REJECT_LEN, &h);

	if (rc < 0)
		return rc;
	if (h.session != 0 || fp_get_u8(buf + 27) != 0)
		return -FP_EFIELD;
	m->instance = fp_get_be32(buf + 12);
	m->attempt = fp_get_be32(buf + 16);
	m->code = fp_get_be16(buf + 20);
	m->version = fp_get_u8(buf + 22);
	m->req_custom_len = fp_get_u8(buf + 23);
	m->verdict_custom_len = fp_get_u8(buf + 24);
	m->features = fp_get_u8(buf + 25);
	m->name_len = fp_get_u8(buf + 26);
	if (m->code == 0)
		return -FP_EFIELD;
	return get_name(buf + 28, m->name_len, m->scheme);
}

/* ---- RESET ---- */

int fp_encode_reset(uint8_t *buf, size_t cap, const struct fp_reset *m)
{
	if (cap < FP_RESET_LEN)
		return -FP_ENOSPC;
	put_hdr(buf, FP_MSG_RESET, m->session, FP_RESET_LEN, 0);
	fp_put_be32(buf + 12, m->bad_session);
	return FP_RESET_LEN;
}

int fp_decode_reset(const uint8_t *buf, size_t len, struct fp_reset *m)
{
	struct fp_hdr h;
	int rc = decode_fixed(buf, len, FP_MSG_RESET, FP_RESET_LEN, &h);

	if (rc < 0)
		return rc;
	m->session = h.session;
	m->bad_session = fp_get_be32(buf + 12);
	return 0;
}

/* ---- batches ---- */

int fp_batch_begin(struct fp_batch_writer *w, uint8_t *buf, size_t cap, uint8_t type,
		   uint32_t session, uint8_t flags, uint8_t custom_len, uint32_t ack,
		   uint32_t base)
{
	if (custom_len > FP_MAX_CUSTOM || session == 0)
		return -FP_EINVAL;
	if (type == FP_MSG_REQUESTS) {
		if (flags & ~FP_F_REQUESTS_ALL)
			return -FP_EINVAL;
		w->entry_len = fp_request_entry_len(custom_len, (flags & FP_F_PRIO) != 0);
	} else if (type == FP_MSG_VERDICTS) {
		if (flags & ~FP_F_VERDICTS_ALL)
			return -FP_EINVAL;
		w->entry_len = fp_verdict_entry_len(custom_len);
	} else {
		return -FP_EINVAL;
	}
	if (cap > 0xffffu)
		cap = 0xffffu; /* the length field is 16 bits */
	if (cap < FP_BATCH_HDR_LEN)
		return -FP_ENOSPC;
	w->buf = buf;
	w->cap = cap;
	w->len = FP_BATCH_HDR_LEN;
	w->count = 0;
	w->type = type;
	w->flags = flags;
	w->custom_len = custom_len;
	put_hdr(buf, type, session, 0, flags);
	fp_put_u8(buf + 12, custom_len);
	fp_put_u8(buf + 13, 0);
	fp_put_be16(buf + 14, 0);
	fp_put_be32(buf + 16, ack);
	fp_put_be32(buf + 20, base);
	return 0;
}

int fp_batch_add_request(struct fp_batch_writer *w, const struct fp_request *r)
{
	uint8_t *p;

	if (w->type != FP_MSG_REQUESTS || !fp_request_valid(r))
		return -FP_EINVAL;
	if (w->cap - w->len < w->entry_len || w->count == 0xffffu)
		return -FP_ENOSPC;
	p = w->buf + w->len;
	fp_put_be32(p + 0, r->flow);
	fp_put_be32(p + 4, r->id);
	fp_put_be16(p + 8, r->dst);
	fp_put_be16(p + 10, r->size_bytes);
	fp_put_u8(p + 12, r->flags);
	fp_put_u8(p + 13, r->dscp);
	p += FP_REQ_FIXED_LEN;
	if (w->flags & FP_F_PRIO) {
		fp_put_be32(p, r->priority);
		p += FP_REQ_PRIO_LEN;
	}
	fp_memcpy(p, r->custom, w->custom_len);
	w->len += w->entry_len;
	w->count++;
	return 0;
}

int fp_batch_add_verdict(struct fp_batch_writer *w, const struct fp_verdict *v)
{
	uint8_t *p;

	if (w->type != FP_MSG_VERDICTS || !fp_action_valid(v->action))
		return -FP_EINVAL;
	if (w->cap - w->len < w->entry_len || w->count == 0xffffu)
		return -FP_ENOSPC;
	p = w->buf + w->len;
	fp_put_be32(p + 0, v->rseq);
	fp_put_be32(p + 4, v->flow);
	fp_put_be32(p + 8, v->id);
	fp_put_u8(p + 12, v->action);
	fp_memcpy(p + FP_VERDICT_FIXED_LEN, v->custom, w->custom_len);
	w->len += w->entry_len;
	w->count++;
	return 0;
}

int fp_batch_finish(struct fp_batch_writer *w)
{
	fp_put_be16(w->buf + 8, (uint16_t)w->len);
	fp_put_be16(w->buf + 14, w->count);
	return (int)w->len;
}

static int decode_batch(const uint8_t *buf, size_t len, uint8_t type, struct fp_batch *b)
{
	int rc = fp_decode_hdr(buf, len, &b->hdr);
	size_t body;

	if (rc < 0)
		return rc;
	if (b->hdr.type != type)
		return -FP_ETYPE;
	if (len < FP_BATCH_HDR_LEN)
		return -FP_ETRUNC;
	if (b->hdr.session == 0 || fp_get_u8(buf + 13) != 0)
		return -FP_EFIELD;
	b->custom_len = fp_get_u8(buf + 12);
	b->count = fp_get_be16(buf + 14);
	b->ack = fp_get_be32(buf + 16);
	b->base = fp_get_be32(buf + 20);
	if (b->custom_len > FP_MAX_CUSTOM)
		return -FP_EFIELD;
	if (type == FP_MSG_REQUESTS) {
		if (b->hdr.flags & ~FP_F_REQUESTS_ALL)
			return -FP_EFIELD;
		b->entry_len = fp_request_entry_len(b->custom_len, (b->hdr.flags & FP_F_PRIO) != 0);
	} else {
		if (b->hdr.flags & ~FP_F_VERDICTS_ALL)
			return -FP_EFIELD;
		b->entry_len = fp_verdict_entry_len(b->custom_len);
	}
	body = len - FP_BATCH_HDR_LEN;
	/* count * entry_len cannot overflow size_t: both are 16-bit. */
	if ((size_t)b->count * b->entry_len > body)
		return -FP_ETRUNC;
	if ((size_t)b->count * b->entry_len != body)
		return -FP_ELEN;
	b->entries = buf + FP_BATCH_HDR_LEN;
	return 0;
}

int fp_decode_requests(const uint8_t *buf, size_t len, struct fp_batch *b)
{
	int rc = decode_batch(buf, len, FP_MSG_REQUESTS, b);
	uint16_t i;

	if (rc < 0)
		return rc;
	for (i = 0; i < b->count; i++) {
		const uint8_t *p = b->entries + (size_t)i * b->entry_len;

		if ((p[12] & ~FP_REQ_FLAGS_ALL) != 0 || p[13] > 63)
			return -FP_EFIELD;
	}
	return 0;
}

int fp_decode_verdicts(const uint8_t *buf, size_t len, struct fp_batch *b)
{
	int rc = decode_batch(buf, len, FP_MSG_VERDICTS, b);
	uint16_t i;

	if (rc < 0)
		return rc;
	for (i = 0; i < b->count; i++) {
		const uint8_t *p = b->entries + (size_t)i * b->entry_len;

		if (!fp_action_valid(p[12]))
			return -FP_EFIELD;
	}
	return 0;
}

void fp_batch_request(const struct fp_batch *b, uint16_t i, struct fp_request *r)
{
	const uint8_t *p = b->entries + (size_t)i * b->entry_len;

	r->flow = fp_get_be32(p + 0);
	r->id = fp_get_be32(p + 4);
	r->dst = fp_get_be16(p + 8);
	r->size_bytes = fp_get_be16(p + 10);
	r->flags = fp_get_u8(p + 12);
	r->dscp = fp_get_u8(p + 13);
	p += FP_REQ_FIXED_LEN;
	if (b->hdr.flags & FP_F_PRIO) {
		r->priority = fp_get_be32(p);
		p += FP_REQ_PRIO_LEN;
	} else {
		r->priority = 0;
	}
	fp_memset(r->custom, 0, sizeof(r->custom));
	fp_memcpy(r->custom, p, b->custom_len);
}

void fp_batch_verdict(const struct fp_batch *b, uint16_t i, struct fp_verdict *v)
{
	const uint8_t *p = b->entries + (size_t)i * b->entry_len;

	v->rseq = fp_get_be32(p + 0);
	v->flow = fp_get_be32(p + 4);
	v->id = fp_get_be32(p + 8);
	v->action = fp_get_u8(p + 12);
	fp_memset(v->custom, 0, sizeof(v->custom));
	fp_memcpy(v->custom, p + FP_VERDICT_FIXED_LEN, b->custom_len);
}

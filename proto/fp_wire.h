/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * fp_wire.h - flexplane wire protocol, version 1: message layouts, encoders
 * and decoders. The normative description is docs/protocol.md; the constants
 * and layouts here must match it byte for byte.
 *
 * Every message is one UDP datagram, big-endian, starting with the 12-byte
 * common header:
 *
 *   0  u16 magic    0x4650 ("FP")
 *   2  u8  version  1
 *   3  u8  type     enum fp_msg_type
 *   4  u32 session  session epoch (chosen by the emulator; 0 = none)
 *   8  u16 length   total message length in bytes, header included
 *   10 u8  flags    FP_F_* (meaning depends on type; unknown bits rejected)
 *   11 u8  reserved 0
 *
 * Decoders never read outside [buf, buf + len), validate every field, and
 * return a negative enum fp_err on any problem. A message that decodes
 * successfully re-encodes to exactly the same bytes (the decoders accept only
 * the canonical encoding), which the fuzz targets check.
 *
 * Error convention: functions return >= 0 on success (a length or 0) and
 * -FP_E* on failure.
 */
#ifndef FP_WIRE_H
#define FP_WIRE_H

#include "fp_platform.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FP_MAGIC 0x4650u          /* "FP" */
#define FP_VERSION 1u
#define FP_DEFAULT_PORT 9977u     /* emulator's UDP port unless configured */

#define FP_HDR_LEN 12u
#define FP_HELLO_LEN 64u
#define FP_HELLO_FROZEN_LEN 20u   /* header + instance + attempt: same in every version */
#define FP_WELCOME_LEN 40u
#define FP_REJECT_LEN 60u
#define FP_RESET_LEN 16u
#define FP_BATCH_HDR_LEN 24u

#define FP_REQ_FIXED_LEN 14u      /* flow, id, dst, size, flags, dscp */
#define FP_REQ_PRIO_LEN 4u        /* optional priority (FP_F_PRIO) */
#define FP_VERDICT_FIXED_LEN 13u  /* rseq, flow, id, action */

#define FP_MAX_CUSTOM 16u         /* max scheme custom bytes per request / verdict */
#define FP_SCHEME_NAME_MAX 32u
#define FP_DEFAULT_MAX_DGRAM 1472u /* 1500-byte MTU - IPv4 (20) - UDP (8) */
/* Smallest datagram budget a peer may configure: a HELLO, or a batch holding
 * one largest-possible request. */
#define FP_MIN_DGRAM 64u
#define FP_MAX_DGRAM 65507u

enum fp_msg_type {
	FP_MSG_HELLO = 1,    /* endpoint -> emulator: open a session */
	FP_MSG_WELCOME = 2,  /* emulator -> endpoint: session accepted */
	FP_MSG_REJECT = 3,   /* emulator -> endpoint: session refused, with reason */
	FP_MSG_RESET = 4,    /* emulator -> endpoint: your session is unknown */
	FP_MSG_REQUESTS = 5, /* endpoint -> emulator: batch of requests + verdict ack */
	FP_MSG_VERDICTS = 6, /* emulator -> endpoint: batch of verdicts + request ack */
};

/* Header flags. */
#define FP_F_ACK_REQ 0x01u /* batches: acknowledge this message immediately */
#define FP_F_PRIO 0x02u    /* REQUESTS: every entry carries a 4-byte priority */
#define FP_F_NAK 0x04u     /* batches: I dropped out-of-order entries: resend from my ack */
#define FP_F_REQUESTS_ALL (FP_F_ACK_REQ | FP_F_PRIO | FP_F_NAK)
#define FP_F_VERDICTS_ALL (FP_F_ACK_REQ | FP_F_NAK)

/* Session features (HELLO / WELCOME / REJECT). */
#define FP_FEAT_PRIO 0x01u /* requests carry the endpoint-stamped priority */
#define FP_FEAT_ALL FP_FEAT_PRIO

/* Request entry flags. */
#define FP_REQ_ECT 0x01u   /* ECN-capable transport: may be marked instead of dropped */
#define FP_REQ_FLAGS_ALL FP_REQ_ECT

enum fp_action {
	FP_ACT_RELEASE = 1,  /* send the packet(s) unchanged */
	FP_ACT_MARK = 2,     /* send with ECN CE set (only ever for ECT requests) */
	FP_ACT_DROP = 3,     /* drop */
};

enum fp_reject_code {
	FP_REJ_VERSION = 1,          /* protocol version not supported */
	FP_REJ_CUSTOM_SIZE = 2,      /* request / verdict custom-data sizes differ */
	FP_REJ_FEATURES = 3,         /* feature bits (e.g. priority) differ */
	FP_REJ_SCHEME = 4,           /* scheme names differ */
	FP_REJ_UNKNOWN_ENDPOINT = 5, /* source address not in the topology */
	FP_REJ_BAD_HELLO = 6,        /* HELLO malformed */
};

enum fp_err {
	FP_OK = 0,
	FP_ETRUNC = 1,    /* message shorter than its header / length field says */
	FP_EMAGIC = 2,    /* not a flexplane message */
	FP_EVERSION = 3,  /* unsupported protocol version */
	FP_ETYPE = 4,     /* unknown or unexpected message type */
	FP_ELEN = 5,      /* length field / entry count inconsistent with the datagram */
	FP_EFIELD = 6,    /* a field has an invalid value (reserved bits, action, ...) */
	FP_ENOSPC = 7,    /* output buffer or window full */
	FP_EINVAL = 8,    /* bad argument from the caller */
	FP_ESTALE = 9,    /* message or token from another session: ignored */
	FP_EREJECTED = 10, /* session refused by the emulator */
	FP_ESTATE = 11,   /* not valid in the current state */
};

const char *fp_strerror(int err);         /* accepts err or -err */
const char *fp_msg_type_name(unsigned type);
const char *fp_reject_name(unsigned code);
const char *fp_action_name(unsigned action);

struct fp_hdr {
	uint8_t version;
	uint8_t type;
	uint8_t flags;
	uint32_t session;
	uint16_t length;
};

struct fp_hello {
	uint32_t instance;       /* random per endpoint boot */
	uint32_t attempt;        /* incremented on every new session attempt */
	uint32_t first_rseq;     /* rseq of the first request the endpoint will send */
	uint16_t window;         /* max un-verdicted requests the endpoint keeps (>= 1) */
	uint8_t req_custom_len;  /* bytes of scheme custom data per request */
	uint8_t verdict_custom_len;
	uint8_t features;        /* FP_FEAT_* */
	uint8_t name_len;        /* 0 = don't check the scheme name */
	char scheme[FP_SCHEME_NAME_MAX + 1]; /* NUL-terminated */
};

struct fp_welcome {
	uint32_t session;        /* new session epoch, != 0 (also in the header) */
	uint32_t instance;       /* echoed from HELLO */
	uint32_t attempt;        /* echoed from HELLO */
	uint32_t first_rseq;     /* echoed: next request sequence number expected */
	uint32_t first_vseq;     /* sequence number of the first verdict */
	uint16_t endpoint_id;    /* this endpoint's index in the topology */
	uint16_t window;         /* max requests the emulator holds for this endpoint (>= 1) */
	uint8_t req_custom_len;
	uint8_t verdict_custom_len;
	uint8_t features;
	uint16_t apkt_bytes;     /* abstract packet size in bytes (0 = unspecified) */
};

struct fp_reject {
	uint32_t instance;       /* echoed from HELLO */
	uint32_t attempt;
	uint16_t code;           /* enum fp_reject_code (unknown codes are allowed, != 0) */
	uint8_t version;         /* the emulator's protocol version */
	uint8_t req_custom_len;  /* the emulator's expectations */
	uint8_t verdict_custom_len;
	uint8_t features;
	uint8_t name_len;
	char scheme[FP_SCHEME_NAME_MAX + 1];
};

struct fp_reset {
	uint32_t session;        /* the emulator's current session for the endpoint, or 0 */
	uint32_t bad_session;    /* the session the offending message carried */
};

/* One abstract-packet request (host representation). */
struct fp_request {
	uint32_t flow;           /* flow id */
	uint32_t id;             /* packet index within the flow: (flow, id) is unique */
	uint16_t dst;            /* destination endpoint id */
	uint16_t size_bytes;     /* bytes this abstract packet stands for */
	uint8_t flags;           /* FP_REQ_* */
	uint8_t dscp;            /* 0..63 */
	uint32_t priority;       /* on the wire only when FP_FEAT_PRIO was negotiated */
	uint8_t custom[FP_MAX_CUSTOM];
};

/* One verdict (host representation). */
struct fp_verdict {
	uint32_t rseq;           /* request sequence number it answers */
	uint32_t flow;
	uint32_t id;
	uint8_t action;          /* enum fp_action */
	uint8_t custom[FP_MAX_CUSTOM];
};

/* A decoded (and fully validated) batch; entries are read with
 * fp_batch_request() / fp_batch_verdict(). */
struct fp_batch {
	struct fp_hdr hdr;
	uint8_t custom_len;
	uint16_t count;
	uint32_t ack;            /* REQUESTS: next vseq expected; VERDICTS: next rseq expected */
	uint32_t base;           /* sequence number of entry 0 */
	uint16_t entry_len;
	const uint8_t *entries;
};

/* Incremental batch encoder. */
struct fp_batch_writer {
	uint8_t *buf;
	size_t cap;
	size_t len;
	uint16_t count;
	uint16_t entry_len;
	uint8_t type;
	uint8_t flags;
	uint8_t custom_len;
};

static inline uint16_t fp_request_entry_len(uint8_t custom_len, bool prio)
{
	return (uint16_t)(FP_REQ_FIXED_LEN + (prio ? FP_REQ_PRIO_LEN : 0) + custom_len);
}

static inline uint16_t fp_verdict_entry_len(uint8_t custom_len)
{
	return (uint16_t)(FP_VERDICT_FIXED_LEN + custom_len);
}

/* How many entries of entry_len fit in a datagram of max_dgram bytes. */
static inline uint16_t fp_batch_max_entries(size_t max_dgram, uint16_t entry_len)
{
	size_t n;

	if (max_dgram <= FP_BATCH_HDR_LEN || entry_len == 0)
		return 0;
	n = (max_dgram - FP_BATCH_HDR_LEN) / entry_len;
	return (uint16_t)(n > 0xffffu ? 0xffffu : n);
}

/* Common header: validates magic, version, type, length and reserved byte.
 * On -FP_EVERSION, *h is still filled (so the caller can answer a HELLO of
 * another version with a REJECT). Returns the message type on success. */
int fp_decode_hdr(const uint8_t *buf, size_t len, struct fp_hdr *h);

int fp_encode_hello(uint8_t *buf, size_t cap, const struct fp_hello *m);
int fp_decode_hello(const uint8_t *buf, size_t len, struct fp_hello *m);
int fp_encode_welcome(uint8_t *buf, size_t cap, const struct fp_welcome *m);
int fp_decode_welcome(const uint8_t *buf, size_t len, struct fp_welcome *m);
int fp_encode_reject(uint8_t *buf, size_t cap, const struct fp_reject *m);
int fp_decode_reject(const uint8_t *buf, size_t len, struct fp_reject *m);
/* REJECT with a chosen header version: the HELLO prefix and the REJECT layout
 * are frozen across versions, so an emulator answers a HELLO of a version it
 * does not speak with a REJECT (code FP_REJ_VERSION) in the HELLO's version. */
int fp_encode_reject_version(uint8_t *buf, size_t cap, const struct fp_reject *m,
			     uint8_t hdr_version);
int fp_encode_reset(uint8_t *buf, size_t cap, const struct fp_reset *m);
int fp_decode_reset(const uint8_t *buf, size_t len, struct fp_reset *m);

/* Reads instance and attempt from the frozen prefix of a HELLO of any
 * version (magic and type must match; the version is not checked). */
int fp_peek_hello_ids(const uint8_t *buf, size_t len, uint32_t *instance, uint32_t *attempt);

/* Batches. type is FP_MSG_REQUESTS or FP_MSG_VERDICTS; flags may contain
 * FP_F_ACK_REQ / FP_F_NAK (and FP_F_PRIO for requests). */
int fp_batch_begin(struct fp_batch_writer *w, uint8_t *buf, size_t cap, uint8_t type,
		   uint32_t session, uint8_t flags, uint8_t custom_len, uint32_t ack,
		   uint32_t base);
int fp_batch_add_request(struct fp_batch_writer *w, const struct fp_request *r);
int fp_batch_add_verdict(struct fp_batch_writer *w, const struct fp_verdict *v);
int fp_batch_finish(struct fp_batch_writer *w); /* returns the message length */

int fp_decode_requests(const uint8_t *buf, size_t len, struct fp_batch *b);
int fp_decode_verdicts(const uint8_t *buf, size_t len, struct fp_batch *b);
/* i < b->count; the batch must come from a successful decode. */
void fp_batch_request(const struct fp_batch *b, uint16_t i, struct fp_request *r);
void fp_batch_verdict(const struct fp_batch *b, uint16_t i, struct fp_verdict *v);

/* Request / verdict validity (as the decoders check them). */
bool fp_request_valid(const struct fp_request *r);
bool fp_action_valid(uint8_t action);

/* Length of a configured scheme name (NUL-terminated, at most
 * FP_SCHEME_NAME_MAX characters are looked at), or -FP_EINVAL when it is not
 * printable ASCII as the wire requires. */
int fp_scheme_name_len(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* FP_WIRE_H */

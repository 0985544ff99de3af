/* Shared helpers for the protocol fuzz targets (libFuzzer). */
#ifndef FP_FUZZ_COMMON_H
#define FP_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp_emu_conn.h"
#include "fp_endpoint_conn.h"
#include "fp_wire.h"

#define FUZZ_ASSERT(x)                                                              \
	do {                                                                        \
		if (!(x)) {                                                         \
			fprintf(stderr, "fuzz invariant failed: %s (%s:%d)\n", #x, \
				__FILE__, __LINE__);                                \
			abort();                                                    \
		}                                                                   \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A successful decode must re-encode to the very same bytes (the decoders
 * accept only canonical encodings). */
static inline void fuzz_check_same(const uint8_t *a, int n, const uint8_t *b, size_t size)
{
	FUZZ_ASSERT(n >= 0);
	FUZZ_ASSERT((size_t)n == size);
	FUZZ_ASSERT(memcmp(a, b, size) == 0);
}

/* Re-encode a decoded batch (entries read one by one). */
static inline void fuzz_reencode_batch(const struct fp_batch *b, const uint8_t *data, size_t size)
{
	static uint8_t out[65536];
	struct fp_batch_writer w;
	uint16_t i;

	FUZZ_ASSERT(fp_batch_begin(&w, out, sizeof(out), b->hdr.type, b->hdr.session,
				   b->hdr.flags, b->custom_len, b->ack, b->base) == 0);
	for (i = 0; i < b->count; i++) {
		if (b->hdr.type == FP_MSG_REQUESTS) {
			struct fp_request r;

			fp_batch_request(b, i, &r);
			FUZZ_ASSERT(fp_request_valid(&r));
			FUZZ_ASSERT(fp_batch_add_request(&w, &r) == 0);
		} else {
			struct fp_verdict v;

			fp_batch_verdict(b, i, &v);
			FUZZ_ASSERT(fp_action_valid(v.action));
			FUZZ_ASSERT(fp_batch_add_verdict(&w, &v) == 0);
		}
	}
	fuzz_check_same(out, fp_batch_finish(&w), data, size);
}

/* Byte reader over the fuzz input; returns 0 once exhausted. */
struct fuzz_in {
	const uint8_t *p;
	size_t n;
};

static inline uint8_t fin_u8(struct fuzz_in *in)
{
	uint8_t v;

	if (in->n == 0)
		return 0;
	v = in->p[0];
	in->p++;
	in->n--;
	return v;
}

static inline uint16_t fin_u16(struct fuzz_in *in)
{
	uint16_t hi = fin_u8(in);

	return (uint16_t)((hi << 8) | fin_u8(in));
}

static inline uint32_t fin_u32(struct fuzz_in *in)
{
	uint32_t hi = fin_u16(in);

	return (hi << 16) | fin_u16(in);
}

/* A raw datagram: a length byte, then that many bytes of the input (fewer
 * when it runs out). */
static inline const uint8_t *fin_dgram(struct fuzz_in *in, size_t *len)
{
	const uint8_t *p;
	size_t n = fin_u8(in);

	if (n > in->n)
		n = in->n;
	p = in->p;
	in->p += n;
	in->n -= n;
	*len = n;
	return p;
}

/* Time passes: t * 20 us, or t == 0xff jumps to the connection's deadline. */
static inline uint64_t fuzz_later(uint64_t now, uint8_t t, uint64_t deadline)
{
	if (t == 0xff && deadline != FP_TIME_NEVER)
		return deadline;
	return now + (uint64_t)t * 20000u;
}

#endif

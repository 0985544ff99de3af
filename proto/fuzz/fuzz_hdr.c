/* libFuzzer target: the common header decoder and the frozen-prefix HELLO
 * peek (used to answer HELLOs of other versions). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fp_hdr h;
	uint32_t inst, att;
	uint8_t out[FP_REJECT_LEN];
	int rc = fp_decode_hdr(data, size, &h);

	if (rc >= 0) {
		FUZZ_ASSERT(rc == h.type);
		FUZZ_ASSERT(h.length == size);
		FUZZ_ASSERT(h.version == FP_VERSION);
	}
	if (fp_peek_hello_ids(data, size, &inst, &att) == 0) {
		FUZZ_ASSERT(size >= FP_HELLO_FROZEN_LEN);
		FUZZ_ASSERT(fp_emu_reject_unknown(data, size, out, sizeof(out)) == (int)FP_REJECT_LEN);
	}
	return 0;
}

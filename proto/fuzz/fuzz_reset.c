/* libFuzzer target: fp_decode_reset() never reads out of bounds, and what it
 * accepts re-encodes to the same bytes. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fp_reset m;
	uint8_t out[FP_RESET_LEN];

	if (fp_decode_reset(data, size, &m) == 0)
		fuzz_check_same(out, fp_encode_reset(out, sizeof(out), &m), data, size);
	return 0;
}

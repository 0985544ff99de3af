/* libFuzzer target: fp_decode_welcome() never reads out of bounds, and what it
 * accepts re-encodes to the same bytes. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fp_welcome m;
	uint8_t out[FP_WELCOME_LEN];

	if (fp_decode_welcome(data, size, &m) == 0)
		fuzz_check_same(out, fp_encode_welcome(out, sizeof(out), &m), data, size);
	return 0;
}

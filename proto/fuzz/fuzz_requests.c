/* libFuzzer target: fp_decode_requests() validates the whole batch without reading
 * out of bounds; every entry of an accepted batch is readable and the batch
 * re-encodes to the same bytes. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fp_batch b;

	if (fp_decode_requests(data, size, &b) == 0)
		fuzz_reencode_batch(&b, data, size);
	return 0;
}

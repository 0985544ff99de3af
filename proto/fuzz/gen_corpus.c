/* Writes seed corpora for the protocol fuzz targets: valid messages of every
 * type (so the fuzzers start past the magic / version / length checks) and a
 * few op sequences for the state-machine targets.
 * Usage: gen_corpus <dir>  ->  <dir>/<target>/seed-N */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fp_wire.h"

static const char *root;

static void put(const char *target, int idx, const uint8_t *p, int n)
{
	char path[512];
	FILE *f;

	if (n < 0) {
		fprintf(stderr, "gen_corpus: encode failed for %s\n", target);
		return;
	}
	snprintf(path, sizeof(path), "%s/%s", root, target);
	if (mkdir(path, 0755) != 0 && errno != EEXIST) {
		perror(path);
		return;
	}
	snprintf(path, sizeof(path), "%s/%s/seed-%d", root, target, idx);
	f = fopen(path, "wb");
	if (!f) {
		perror(path);
		return;
	}
	fwrite(p, 1, (size_t)n, f);
	fclose(f);
}

static int batch(uint8_t *buf, size_t cap, uint8_t type, uint8_t flags, uint8_t clen, int count)
{
	struct fp_batch_writer w;
	int i;

	if (fp_batch_begin(&w, buf, cap, type, 0x1000, flags, clen, 5, 0xfffffffe) != 0)
		return -1;
	for (i = 0; i < count; i++) {
		if (type == FP_MSG_REQUESTS) {
			struct fp_request r;

			memset(&r, 0, sizeof(r));
			r.flow = 1000u + (uint32_t)i;
			r.id = (uint32_t)i;
			r.dst = 1;
			r.size_bytes = 1500;
			r.flags = (uint8_t)(i & 1);
			r.dscp = (uint8_t)i;
			r.priority = (uint32_t)i;
			memset(r.custom, 0xab, sizeof(r.custom));
			fp_batch_add_request(&w, &r);
		} else {
			struct fp_verdict v;

			memset(&v, 0, sizeof(v));
			v.rseq = (uint32_t)i;
			v.flow = 1000u + (uint32_t)i;
			v.id = (uint32_t)i;
			v.action = (uint8_t)(1 + i % 3);
			memset(v.custom, 0xcd, sizeof(v.custom));
			fp_batch_add_verdict(&w, &v);
		}
	}
	return fp_batch_finish(&w);
}

int main(int argc, char **argv)
{
	uint8_t buf[FP_DEFAULT_MAX_DGRAM];
	struct fp_hello h;
	struct fp_welcome w;
	struct fp_reject j;
	struct fp_reset r = {0x2000, 0x1000};
	int i, n;

	if (argc != 2) {
		fprintf(stderr, "usage: %s <dir>\n", argv[0]);
		return 2;
	}
	root = argv[1];
	if (mkdir(root, 0755) != 0 && errno != EEXIST) {
		perror(root);
		return 1;
	}

	memset(&h, 0, sizeof(h));
	h.instance = 0x11223344;
	h.attempt = 1;
	h.window = 1024;
	h.req_custom_len = 4;
	h.verdict_custom_len = 2;
	h.name_len = 5;
	memcpy(h.scheme, "dctcp", 6);
	n = fp_encode_hello(buf, sizeof(buf), &h);
	put("hello", 0, buf, n);
	put("hdr", 0, buf, n);
	put("ep_conn", 0, buf, n);
	put("emu_conn", 0, buf, n);

	memset(&w, 0, sizeof(w));
	w.session = 0x1000;
	w.instance = 0x11223344;
	w.attempt = 1;
	w.endpoint_id = 7;
	w.window = 256;
	w.req_custom_len = 4;
	w.verdict_custom_len = 2;
	w.apkt_bytes = 1500;
	n = fp_encode_welcome(buf, sizeof(buf), &w);
	put("welcome", 0, buf, n);
	put("hdr", 1, buf, n);

	memset(&j, 0, sizeof(j));
	j.instance = 0x11223344;
	j.attempt = 1;
	j.code = FP_REJ_CUSTOM_SIZE;
	j.version = 1;
	j.req_custom_len = 8;
	j.name_len = 3;
	memcpy(j.scheme, "red", 4);
	n = fp_encode_reject(buf, sizeof(buf), &j);
	put("reject", 0, buf, n);
	put("hdr", 2, buf, n);

	n = fp_encode_reset(buf, sizeof(buf), &r);
	put("reset", 0, buf, n);
	put("hdr", 3, buf, n);

	for (i = 0; i < 4; i++) {
		static const uint8_t clens[4] = {0, 2, 4, 16};
		static const int counts[4] = {0, 1, 3, 20};

		n = batch(buf, sizeof(buf), FP_MSG_REQUESTS, i & 1 ? FP_F_PRIO : 0, clens[i], counts[i]);
		put("requests", i, buf, n);
		n = batch(buf, sizeof(buf), FP_MSG_VERDICTS, i & 1 ? FP_F_NAK : 0, clens[i], counts[i]);
		put("verdicts", i, buf, n);
	}

	/* State machines: op sequences (see fuzz_ep_conn.c / fuzz_emu_conn.c). */
	{
		static const uint8_t ep_ops[] = {
			5, 1, 1, 0,  5, 2, 0, 3,  6, 0,       /* submit x2, poll */
			3, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 20, /* WELCOME */
			6, 0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1, /* verdicts */
			7, 0xff, 6, 5, 4, 0};
		static const uint8_t emu_ops[] = {
			1, 0, 1, 10,  5, 0,                  /* HELLO, poll */
			2, 0, 3, 0, 0, 0, 1, 2, 3,           /* REQUESTS */
			4, 1, 0,  4, 2, 0,  5, 1,  7,  5, 0xff};

		put("ep_conn", 1, ep_ops, (int)sizeof(ep_ops));
		put("emu_conn", 1, emu_ops, (int)sizeof(emu_ops));
	}
	return 0;
}

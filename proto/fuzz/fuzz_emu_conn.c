/* libFuzzer target: the emulator-side state machine (fp_emu_rx and friends)
 * fed with a fuzz-driven mix of raw datagrams, well-formed but hostile
 * endpoint messages (HELLOs of several instances / attempts / sizes, REQUESTS
 * with the right or wrong session, shifted sequence numbers and acks),
 * engine verdicts (good and bogus tokens), timer expiries and session drops.
 * Invariants checked after every step:
 *   - tx.una <= tx.snd <= tx.max <= v_next, ring never over-full,
 *     inflight never above the window
 *   - within a session requests are handed to the engine once each, in
 *     consecutive rseq order (replays are never re-delivered)
 *   - everything fp_emu_poll() emits decodes cleanly, VERDICTS in the
 *     current session
 *   - after a poll returns 0 the next deadline lies in the future
 */
#include "fuzz_common.h"

#define RING 8
#define MAX_TOKENS 64

static struct fp_verdict ring[RING];
static struct fp_emu_conn emu;
static struct fp_emu_token tokens[MAX_TOKENS];
static unsigned ntokens;
static uint32_t last_session, next_rseq;
static int have_last, bogus_pushed;
static uint64_t now;

static int on_request(void *ctx, const struct fp_emu_token *tok, const struct fp_request *req)
{
	(void)ctx;
	FUZZ_ASSERT(fp_request_valid(req));
	FUZZ_ASSERT(tok->session == emu.session);
	if (have_last && tok->session == last_session)
		FUZZ_ASSERT(tok->rseq == next_rseq);
	have_last = 1;
	last_session = tok->session;
	if (req->flow == 0xdead) {
		next_rseq = tok->rseq; /* refused: offered again later */
		return 1;
	}
	next_rseq = tok->rseq + 1;
	if (ntokens < MAX_TOKENS)
		tokens[ntokens++] = *tok;
	return 0;
}

static void check_invariants(void)
{
	FUZZ_ASSERT(fp_seq_le(emu.tx.una, emu.tx.snd));
	FUZZ_ASSERT(fp_seq_le(emu.tx.snd, emu.tx.max));
	FUZZ_ASSERT(fp_seq_le(emu.tx.max, emu.v_next));
	FUZZ_ASSERT(emu.v_next - emu.tx.una <= RING);
	FUZZ_ASSERT(emu.inflight <= emu.window);
	if (emu.state != FP_EMU_ESTABLISHED)
		FUZZ_ASSERT(emu.session == 0 || emu.stats.sessions == 0);
}

static void poll_all(void)
{
	uint8_t buf[FP_DEFAULT_MAX_DGRAM];
	int n, guard = 0;

	while ((n = fp_emu_poll(&emu, now, buf, sizeof(buf))) > 0) {
		struct fp_hdr h;
		int t = fp_decode_hdr(buf, (size_t)n, &h);

		FUZZ_ASSERT(guard++ < 64);
		if (t == -FP_EVERSION) { /* REJECT in the HELLO's version */
			FUZZ_ASSERT(h.type == FP_MSG_REJECT);
			continue;
		}
		FUZZ_ASSERT(t == FP_MSG_WELCOME || t == FP_MSG_REJECT || t == FP_MSG_RESET ||
			    t == FP_MSG_VERDICTS);
		if (t == FP_MSG_WELCOME) {
			struct fp_welcome m;

			FUZZ_ASSERT(fp_decode_welcome(buf, (size_t)n, &m) == 0);
		} else if (t == FP_MSG_REJECT) {
			struct fp_reject m;

			FUZZ_ASSERT(fp_decode_reject(buf, (size_t)n, &m) == 0);
		} else if (t == FP_MSG_RESET) {
			struct fp_reset m;

			FUZZ_ASSERT(fp_decode_reset(buf, (size_t)n, &m) == 0);
		} else {
			struct fp_batch b;

			FUZZ_ASSERT(fp_decode_verdicts(buf, (size_t)n, &b) == 0);
			FUZZ_ASSERT(b.hdr.session == emu.session);
			FUZZ_ASSERT(b.ack == emu.rnext);
		}
	}
	FUZZ_ASSERT(n == 0);
	FUZZ_ASSERT(fp_emu_next_deadline(&emu) > now);
}

static void send_hello(struct fuzz_in *in)
{
	uint8_t buf[FP_HELLO_LEN];
	struct fp_hello m;
	uint8_t sel = fin_u8(in);
	int n;

	memset(&m, 0, sizeof(m));
	m.instance = sel & 3;
	m.attempt = fin_u8(in) % 8;
	m.first_rseq = (sel & 4) ? fin_u32(in) : 0xfffffff8u;
	m.window = (uint16_t)(1 + fin_u8(in));
	m.req_custom_len = (sel & 8) ? (uint8_t)(fin_u8(in) % 17) : emu.cfg.req_custom_len;
	m.verdict_custom_len = (sel & 16) ? (uint8_t)(fin_u8(in) % 17) : emu.cfg.verdict_custom_len;
	m.features = (sel & 32) ? (fin_u8(in) & 1) : emu.cfg.features;
	if (sel & 64) {
		m.name_len = 3;
		memcpy(m.scheme, (sel & 128) ? "red" : "drr", 3);
	}
	n = fp_encode_hello(buf, sizeof(buf), &m);
	FUZZ_ASSERT(n == (int)FP_HELLO_LEN);
	if (fin_u8(in) == 0x77)
		buf[2] = 2; /* another protocol version */
	fp_emu_rx(&emu, buf, (size_t)n, now, on_request, NULL);
}

static void send_requests(struct fuzz_in *in)
{
	uint8_t buf[1024];
	struct fp_batch_writer w;
	uint8_t sel = fin_u8(in);
	uint8_t count = fin_u8(in) % 12, k;
	uint32_t session = (sel & 1) ? (fin_u32(in) | 1) : (emu.session ? emu.session : 1);
	uint8_t clen = (sel & 2) ? (uint8_t)(fin_u8(in) % 17) : emu.cfg.req_custom_len;
	uint32_t base = emu.rnext + (uint32_t)((int8_t)fin_u8(in) % 16);
	uint32_t ack = emu.tx.una + (uint32_t)((int8_t)fin_u8(in) % 16);
	uint8_t flags = fin_u8(in) & FP_F_REQUESTS_ALL;

	if (fp_batch_begin(&w, buf, sizeof(buf), FP_MSG_REQUESTS, session, flags, clen, ack,
			   base) != 0)
		return;
	for (k = 0; k < count; k++) {
		struct fp_request r;
		uint8_t how = fin_u8(in);

		memset(&r, 0, sizeof(r));
		r.flow = (how & 0x80) ? 0xdead : how;
		r.id = base + k;
		r.dst = how;
		r.flags = how & 1;
		r.dscp = how & 63;
		r.priority = how;
		if (fp_batch_add_request(&w, &r) != 0)
			break;
	}
	fp_emu_rx(&emu, buf, (size_t)fp_batch_finish(&w), now, on_request, NULL);
}

static void push_verdict(struct fuzz_in *in)
{
	uint8_t sel = fin_u8(in);
	struct fp_verdict v;
	struct fp_emu_token tok;
	int rc, bogus = (sel & 0x80) || ntokens == 0;

	memset(&v, 0, sizeof(v));
	v.action = (uint8_t)(sel % 5); /* 0 and 4 are invalid */
	if (bogus) {
		tok.session = fin_u32(in);
		tok.rseq = fin_u32(in);
	} else {
		unsigned i = fin_u8(in) % ntokens;

		tok = tokens[i];
		tokens[i] = tokens[--ntokens];
	}
	rc = fp_emu_push_verdict(&emu, &tok, &v, now);
	FUZZ_ASSERT(rc == 0 || rc == -FP_ESTALE || rc == -FP_EINVAL || rc == -FP_ENOSPC);
	if (rc == 0 && bogus)
		bogus_pushed = 1;
	/* With one verdict per accepted token the ring cannot overflow: only
	 * extra (bogus) verdicts can meet a full ring. */
	if (rc == -FP_ENOSPC)
		FUZZ_ASSERT(bogus || bogus_pushed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = {data, size};
	struct fp_emu_config cfg;
	int steps = 0;

	fp_emu_config_default(&cfg);
	cfg.endpoint_id = 3;
	cfg.req_custom_len = 2;
	cfg.verdict_custom_len = 1;
	cfg.max_batch = 3;
	cfg.initial_vseq = 0xfffffffau;
	memcpy(cfg.scheme, "drr", 4);
	ntokens = 0;
	have_last = 0;
	bogus_pushed = 0;
	now = 1000;
	FUZZ_ASSERT(fp_emu_conn_init(&emu, &cfg, ring, RING, now) == 0);

	while (in.n > 0 && steps++ < 2000) {
		uint8_t op = fin_u8(&in);

		switch (op % 8) {
		case 0: { /* raw datagram */
			size_t len;
			const uint8_t *p = fin_dgram(&in, &len);

			fp_emu_rx(&emu, p, len, now, on_request, NULL);
			break;
		}
		case 1:
			send_hello(&in);
			break;
		case 2:
		case 3:
			send_requests(&in);
			break;
		case 4:
			push_verdict(&in);
			break;
		case 5:
		case 6: /* time passes; poll */
			now = fuzz_later(now, fin_u8(&in), fp_emu_next_deadline(&emu));
			poll_all();
			break;
		case 7:
			if (op == 7)
				fp_emu_drop_session(&emu, now);
			else
				poll_all();
			break;
		}
		check_invariants();
	}
	return 0;
}

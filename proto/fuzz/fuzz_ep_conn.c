/* libFuzzer target: the endpoint state machine (fp_ep_rx and friends) fed
 * with a fuzz-driven mix of raw datagrams, well-formed but hostile emulator
 * messages (right session, wrong sequence numbers / ids / sizes), submits,
 * timer expiries and aborts. Invariants checked after every step:
 *   - sequence pointers ordered: low <= tx.una <= tx.snd <= tx.max <= next
 *   - slot accounting consistent, pending count exact
 *   - no request ever gets a second verdict, and a verdict always names the
 *     request it was delivered for
 *   - everything fp_ep_poll() emits decodes cleanly, in the current session
 *   - after a poll returns 0 the next deadline lies in the future
 */
#include "fuzz_common.h"

#define NSLOTS 16
#define MAX_SUBMIT 4096

static struct fp_ep_slot slots[NSLOTS];
static struct fp_ep_conn ep;
static uint8_t verdicts[MAX_SUBMIT];
static struct fp_request submitted[MAX_SUBMIT];
static uint32_t nsubmit;
static uint64_t now;

static void on_verdict(void *ctx, const struct fp_verdict *v, const struct fp_request *req,
		       uint64_t user)
{
	(void)ctx;
	FUZZ_ASSERT(user < nsubmit);
	FUZZ_ASSERT(verdicts[user] == 0);
	verdicts[user] = 1;
	FUZZ_ASSERT(req->flow == submitted[user].flow && req->id == submitted[user].id);
	FUZZ_ASSERT(v->flow == req->flow && v->id == req->id);
	FUZZ_ASSERT(fp_action_valid(v->action));
}

static void on_abort(void *ctx, const struct fp_request *req, uint64_t user)
{
	(void)ctx;
	(void)req;
	FUZZ_ASSERT(user < nsubmit);
	FUZZ_ASSERT(verdicts[user] == 0);
	verdicts[user] = 2;
}

static void check_invariants(void)
{
	uint32_t i, pending = 0;

	FUZZ_ASSERT(ep.next - ep.low <= NSLOTS);
	for (i = ep.low; i != ep.next; i++)
		pending += slots[i & (NSLOTS - 1)].state == FP_SLOT_PENDING;
	FUZZ_ASSERT(pending == ep.pending);
	if (ep.low != ep.next)
		FUZZ_ASSERT(slots[ep.low & (NSLOTS - 1)].state == FP_SLOT_PENDING);
	FUZZ_ASSERT(fp_seq_le(ep.low, ep.tx.una));
	FUZZ_ASSERT(fp_seq_le(ep.tx.una, ep.tx.snd));
	FUZZ_ASSERT(fp_seq_le(ep.tx.snd, ep.tx.max));
	FUZZ_ASSERT(fp_seq_le(ep.tx.max, ep.next));
	FUZZ_ASSERT(ep.next - ep.tx.una <= NSLOTS);
	if (ep.state != FP_EP_ESTABLISHED)
		FUZZ_ASSERT(ep.tx.una == ep.low && ep.tx.max == ep.low);
	else
		FUZZ_ASSERT(ep.tx.max - ep.low <= ep.win);
}

static void poll_all(void)
{
	uint8_t buf[FP_DEFAULT_MAX_DGRAM];
	int n, guard = 0;

	while ((n = fp_ep_poll(&ep, now, buf, sizeof(buf))) > 0) {
		struct fp_hdr h;
		int t = fp_decode_hdr(buf, (size_t)n, &h);

		FUZZ_ASSERT(guard++ < 64);
		FUZZ_ASSERT(t == FP_MSG_HELLO || t == FP_MSG_REQUESTS);
		if (t == FP_MSG_HELLO) {
			struct fp_hello m;

			FUZZ_ASSERT(fp_decode_hello(buf, (size_t)n, &m) == 0);
			FUZZ_ASSERT(m.first_rseq == ep.low);
		} else {
			struct fp_batch b;

			FUZZ_ASSERT(fp_decode_requests(buf, (size_t)n, &b) == 0);
			FUZZ_ASSERT(b.hdr.session == ep.session && ep.session != 0);
			FUZZ_ASSERT(b.custom_len == ep.cfg.req_custom_len);
		}
	}
	FUZZ_ASSERT(n == 0);
	FUZZ_ASSERT(fp_ep_next_deadline(&ep) > now);
}

static void send_batch(struct fuzz_in *in)
{
	uint8_t buf[1024];
	struct fp_batch_writer w;
	uint8_t sel = fin_u8(in);
	uint8_t count = fin_u8(in) % 8, k;
	uint32_t session = (sel & 1) ? fin_u32(in) : ep.session;
	uint8_t clen = (sel & 2) ? (uint8_t)(fin_u8(in) % (FP_MAX_CUSTOM + 1))
				 : ep.cfg.verdict_custom_len;
	uint32_t base = ep.v_expected + (uint32_t)((int8_t)fin_u8(in) % 16);
	uint32_t ack = ep.tx.una + (uint32_t)(int8_t)fin_u8(in);
	uint8_t flags = fin_u8(in) & FP_F_VERDICTS_ALL;

	if (session == 0)
		session = 1;
	if (fp_batch_begin(&w, buf, sizeof(buf), FP_MSG_VERDICTS, session, flags, clen, ack,
			   base) != 0)
		return;
	for (k = 0; k < count; k++) {
		struct fp_verdict v;
		uint8_t how = fin_u8(in);

		memset(&v, 0, sizeof(v));
		v.rseq = ep.low + (uint32_t)(fin_u8(in) % 24);
		if (how & 1) {
			v.flow = fin_u32(in);
			v.id = fin_u32(in);
		} else {
			const struct fp_ep_slot *s = &slots[v.rseq & (NSLOTS - 1)];

			v.flow = s->req.flow;
			v.id = s->req.id;
		}
		v.action = (uint8_t)(1 + (how >> 1) % 3);
		v.custom[0] = how;
		if (fp_batch_add_verdict(&w, &v) != 0)
			break;
	}
	fp_ep_rx(&ep, buf, (size_t)fp_batch_finish(&w), now, on_verdict, NULL);
}

static void send_control(struct fuzz_in *in, uint8_t type)
{
	uint8_t buf[FP_REJECT_LEN];
	uint8_t sel = fin_u8(in);
	int n = -1;

	if (type == FP_MSG_WELCOME) {
		struct fp_welcome m;

		memset(&m, 0, sizeof(m));
		m.session = fin_u32(in) | 1;
		m.instance = (sel & 1) ? fin_u32(in) : ep.cfg.instance;
		m.attempt = (sel & 2) ? fin_u32(in) : ep.attempt;
		m.first_rseq = (sel & 4) ? fin_u32(in) : ep.low;
		m.first_vseq = fin_u32(in);
		m.window = (uint16_t)(1 + fin_u8(in) % 40);
		m.req_custom_len = (sel & 8) ? (uint8_t)(fin_u8(in) % 17) : ep.cfg.req_custom_len;
		m.verdict_custom_len = (sel & 16) ? (uint8_t)(fin_u8(in) % 17)
						  : ep.cfg.verdict_custom_len;
		m.features = (sel & 32) ? (fin_u8(in) & 1) : ep.cfg.features;
		n = fp_encode_welcome(buf, sizeof(buf), &m);
	} else if (type == FP_MSG_REJECT) {
		struct fp_reject m;

		memset(&m, 0, sizeof(m));
		m.instance = (sel & 1) ? fin_u32(in) : ep.cfg.instance;
		m.attempt = (sel & 2) ? fin_u32(in) : ep.attempt;
		m.code = (uint16_t)(1 + fin_u8(in));
		n = fp_encode_reject(buf, sizeof(buf), &m);
	} else {
		struct fp_reset m;

		m.session = fin_u32(in);
		m.bad_session = (sel & 1) ? fin_u32(in) : ep.session;
		n = fp_encode_reset(buf, sizeof(buf), &m);
	}
	if (n > 0)
		fp_ep_rx(&ep, buf, (size_t)n, now, on_verdict, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = {data, size};
	struct fp_ep_config cfg;
	int steps = 0;

	fp_ep_config_default(&cfg);
	cfg.instance = 0x1234;
	cfg.req_custom_len = 3;
	cfg.verdict_custom_len = 2;
	cfg.window = 12;
	cfg.max_batch = 5;
	cfg.initial_rseq = 0xfffffff0u;
	nsubmit = 0;
	now = 1000;
	memset(verdicts, 0, sizeof(verdicts));
	FUZZ_ASSERT(fp_ep_conn_init(&ep, &cfg, slots, NSLOTS, now) == 0);

	while (in.n > 0 && steps++ < 2000) {
		uint8_t op = fin_u8(&in);

		switch (op % 9) {
		case 0: { /* raw datagram */
			size_t len;
			const uint8_t *p = fin_dgram(&in, &len);

			fp_ep_rx(&ep, p, len, now, on_verdict, NULL);
			break;
		}
		case 1:
		case 2:
			send_batch(&in);
			break;
		case 3:
			send_control(&in, FP_MSG_WELCOME);
			break;
		case 4:
			send_control(&in, (op & 0x80) ? FP_MSG_REJECT : FP_MSG_RESET);
			break;
		case 5: { /* submit */
			struct fp_request r;
			int rc;

			memset(&r, 0, sizeof(r));
			r.flow = fin_u8(&in);
			r.id = nsubmit;
			r.flags = fin_u8(&in) & 3; /* sometimes invalid */
			r.dscp = fin_u8(&in) & 0x7f;
			if (nsubmit >= MAX_SUBMIT)
				break;
			rc = fp_ep_submit(&ep, &r, nsubmit, now);
			if (rc == 0)
				submitted[nsubmit++] = r;
			else
				FUZZ_ASSERT(rc == -FP_ENOSPC || rc == -FP_EINVAL || rc == -FP_EREJECTED);
			break;
		}
		case 6:
		case 7: /* time passes; poll */
			now = fuzz_later(now, fin_u8(&in), fp_ep_next_deadline(&ep));
			poll_all();
			break;
		case 8:
			if (op == 8)
				fp_ep_abort_pending(&ep, now, on_abort, NULL);
			else
				poll_all();
			break;
		}
		check_invariants();
	}
	return 0;
}

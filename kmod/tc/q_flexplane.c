// SPDX-License-Identifier: GPL-2.0
/*
 * q_flexplane.so - tc plugin for the flexplane qdisc (kmod/sch_flexplane.c).
 *
 * tc loads q_<kind>.so from $TC_LIB_DIR (Debian: /usr/lib/x86_64-linux-gnu/tc)
 * and looks up "<kind>_qdisc_util". Debian ships no iproute2 development
 * headers, so the small part of tc's plugin ABI used here is declared below;
 * it matches iproute2 6.1 (tc/tc_util.h, include/utils.h, include/json_print.h),
 * and tc exports these helpers from its executable (nm -D /sbin/tc).
 *
 *   tc qdisc add dev eth0 root flexplane emulator 10.77.0.2 endpoints 10.77.0.10 count 3
 *   tc -s qdisc show dev eth0        (add -j for JSON)
 */
#include <arpa/inet.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uapi/flexplane.h"

/* ---- tc's plugin ABI (iproute2 6.1) ---- */

struct qdisc_util {
	struct qdisc_util *next;
	const char *id;
	int (*parse_qopt)(struct qdisc_util *qu, int argc, char **argv,
			  struct nlmsghdr *n, const char *dev);
	int (*print_qopt)(struct qdisc_util *qu, FILE *f, struct rtattr *opt);
	int (*print_xstats)(struct qdisc_util *qu, FILE *f, struct rtattr *xstats);
	int (*parse_copt)(struct qdisc_util *qu, int argc, char **argv,
			  struct nlmsghdr *n, const char *dev);
	int (*print_copt)(struct qdisc_util *qu, FILE *f, struct rtattr *opt);
	int (*has_block)(struct qdisc_util *qu, struct rtattr *opt, __u32 block_idx, bool *p_has);
};

enum output_type { PRINT_FP = 1, PRINT_JSON = 2, PRINT_ANY = 4 };
enum color_attr { COLOR_NONE = 6 };

int addattr_l(struct nlmsghdr *n, int maxlen, int type, const void *data, int alen);
struct rtattr *addattr_nest(struct nlmsghdr *n, int maxlen, int type);
int addattr_nest_end(struct nlmsghdr *n, struct rtattr *nest);
int parse_rtattr(struct rtattr *tb[], int max, struct rtattr *rta, int len);
int get_unsigned(unsigned int *val, const char *arg, int base);
int get_time(unsigned int *time, const char *str);	/* microseconds */
int print_color_string(enum output_type t, enum color_attr c, const char *key,
		       const char *fmt, const char *value);
int print_color_uint(enum output_type t, enum color_attr c, const char *key,
		     const char *fmt, unsigned int value);
int print_color_u64(enum output_type t, enum color_attr c, const char *key,
		    const char *fmt, unsigned long long value);
void print_nl(void);
void open_json_array(enum output_type type, const char *delim);
void close_json_array(enum output_type type, const char *delim);
void open_json_object(const char *str);
void close_json_object(void);

#define MAXLEN 1024	/* tc's request buffer is larger; this is what we use */

/* ---- names ---- */

static const char *const fallback_names[] = { "open", "closed" };
static const char *const prio_names[] = { "none", "remaining", "skb" };
static const char *const word_names[] = { "zero", "len", "remaining", "mark", "skbprio", "hash" };
static const char *const apply_names[] = { "none", "mark", "skbprio", "dscp" };
static const char *const state_names[] = { "?", "connecting", "managed", "fallback", "rejected" };

#define NAME(tab, i) ((unsigned int)(i) < sizeof(tab) / sizeof(tab[0]) ? tab[i] : "?")

static int lookup(const char *const *tab, int n, const char *s)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(tab[i], s))
			return i;
	return -1;
}

static void explain(void)
{
	fprintf(stderr,
		"Usage: ... flexplane emulator ADDR[:PORT] endpoints ADDR [endpoints6 ADDR6] count N\n"
		"                [ src ADDR ] [ limit PACKETS ] [ flows N ] [ window N ] [ apkt BYTES ]\n"
		"                [ hold TIME ] [ fallback open|closed ] [ prio none|remaining|skb ]\n"
		"                [ req_words W[,W...] ] [ verdict_words A[,A...] ] [ bypass PORT[,PORT...] ]\n"
		"                [ rto TIME ] [ scheme NAME ] [ adopt | noadopt ]\n"
		"  endpoints: endpoint i of the emulator's topology is ADDR + i (and ADDR6 + i)\n"
		"  W: zero len remaining mark skbprio hash      A: none mark skbprio dscp\n"
		"  defaults: port 9977, limit 10240, flows 1024, window 16384, apkt 1500,\n"
		"            hold 500ms, fallback closed, prio none, rto 2ms, adopt\n"
		"  tc qdisc change: limit apkt hold fallback prio bypass adopt only\n"
		"            (the others, count and endpoints included: delete and add)\n");
}

static int bad(const char *what, const char *arg)
{
	fprintf(stderr, "flexplane: invalid %s \"%s\"\n", what, arg);
	explain();
	return -1;
}

/* "a,b,c" -> table indexes. */
static int parse_list(const char *arg, const char *const *tab, int ntab, __u8 *out, int max)
{
	char buf[128], *save = NULL, *tok;
	int n = 0;

	if (strlen(arg) >= sizeof(buf))
		return -1;
	strcpy(buf, arg);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int v = lookup(tab, ntab, tok);

		if (v < 0 || n == max)
			return -1;
		out[n++] = v;
	}
	return n;
}

static int flexplane_parse_opt(struct qdisc_util *qu, int argc, char **argv,
			       struct nlmsghdr *n, const char *dev)
{
	struct rtattr *tail;

	(void)qu;
	(void)dev;
	tail = addattr_nest(n, MAXLEN, TCA_OPTIONS);
	while (argc > 0) {
		const char *opt = *argv;
		const char *arg = argc > 1 ? argv[1] : NULL;
		unsigned int v;
		int consumed = 2;

		if (!strcmp(opt, "adopt") || !strcmp(opt, "noadopt")) {
			__u8 a = !strcmp(opt, "adopt");

			addattr_l(n, MAXLEN, TCA_FLEXPLANE_ADOPT, &a, 1);
			consumed = 1;
		} else if (!strcmp(opt, "help")) {
			explain();
			return -1;
		} else if (!arg) {
			fprintf(stderr, "flexplane: \"%s\" needs a value\n", opt);
			explain();
			return -1;
		} else if (!strcmp(opt, "emulator")) {
			char host[64], *colon;
			struct in_addr a;
			__u16 port;

			if (strlen(arg) >= sizeof(host))
				return bad("emulator address", arg);
			strcpy(host, arg);
			colon = strchr(host, ':');
			if (colon) {
				*colon = '\0';
				if (get_unsigned(&v, colon + 1, 10) || !v || v > 65535)
					return bad("emulator port", colon + 1);
				port = v;
				addattr_l(n, MAXLEN, TCA_FLEXPLANE_EMU_PORT, &port, 2);
			}
			if (inet_pton(AF_INET, host, &a) != 1)
				return bad("emulator IPv4 address", host);
			addattr_l(n, MAXLEN, TCA_FLEXPLANE_EMU_ADDR, &a, 4);
		} else if (!strcmp(opt, "src") || !strcmp(opt, "endpoints")) {
			struct in_addr a;

			if (inet_pton(AF_INET, arg, &a) != 1)
				return bad("IPv4 address", arg);
			addattr_l(n, MAXLEN, !strcmp(opt, "src") ? TCA_FLEXPLANE_SRC_ADDR :
				  TCA_FLEXPLANE_EP_BASE, &a, 4);
		} else if (!strcmp(opt, "endpoints6")) {
			struct in6_addr a;

			if (inet_pton(AF_INET6, arg, &a) != 1)
				return bad("IPv6 address", arg);
			addattr_l(n, MAXLEN, TCA_FLEXPLANE_EP_BASE6, &a, sizeof(a));
		} else if (!strcmp(opt, "count") || !strcmp(opt, "limit") ||
			   !strcmp(opt, "flows") || !strcmp(opt, "window") ||
			   !strcmp(opt, "apkt")) {
			int type = !strcmp(opt, "count") ? TCA_FLEXPLANE_EP_COUNT :
				   !strcmp(opt, "limit") ? TCA_FLEXPLANE_LIMIT :
				   !strcmp(opt, "flows") ? TCA_FLEXPLANE_FLOWS :
				   !strcmp(opt, "window") ? TCA_FLEXPLANE_WINDOW :
				   TCA_FLEXPLANE_APKT;

			if (get_unsigned(&v, arg, 0))
				return bad(opt, arg);
			addattr_l(n, MAXLEN, type, &v, 4);
		} else if (!strcmp(opt, "hold") || !strcmp(opt, "rto")) {
			if (get_time(&v, arg))
				return bad(opt, arg);
			addattr_l(n, MAXLEN, !strcmp(opt, "hold") ? TCA_FLEXPLANE_HOLD_US :
				  TCA_FLEXPLANE_RTO_US, &v, 4);
		} else if (!strcmp(opt, "fallback") || !strcmp(opt, "prio")) {
			bool fb = !strcmp(opt, "fallback");
			int i = fb ? lookup(fallback_names, 2, arg) : lookup(prio_names, 3, arg);
			__u8 b = i;

			if (i < 0)
				return bad(opt, arg);
			addattr_l(n, MAXLEN, fb ? TCA_FLEXPLANE_FALLBACK : TCA_FLEXPLANE_PRIO, &b, 1);
		} else if (!strcmp(opt, "req_words") || !strcmp(opt, "verdict_words")) {
			bool req = !strcmp(opt, "req_words");
			__u8 w[FLEXPLANE_MAX_WORDS];
			int k = req ? parse_list(arg, word_names, __FLEXPLANE_WORD_MAX, w, FLEXPLANE_MAX_WORDS) :
				      parse_list(arg, apply_names, __FLEXPLANE_APPLY_MAX, w, FLEXPLANE_MAX_WORDS);

			if (k < 0)
				return bad(opt, arg);
			addattr_l(n, MAXLEN, req ? TCA_FLEXPLANE_REQ_WORDS : TCA_FLEXPLANE_VERDICT_WORDS, w, k);
		} else if (!strcmp(opt, "bypass")) {
			char buf[128], *save = NULL, *tok;
			__u16 ports[FLEXPLANE_MAX_BYPASS_PORTS];
			int k = 0;

			if (strlen(arg) >= sizeof(buf))
				return bad("bypass ports", arg);
			strcpy(buf, arg);
			for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				if (k == FLEXPLANE_MAX_BYPASS_PORTS || get_unsigned(&v, tok, 10) || v > 65535)
					return bad("bypass ports (at most 8)", arg);
				ports[k++] = v;
			}
			addattr_l(n, MAXLEN, TCA_FLEXPLANE_BYPASS_PORTS, ports, k * sizeof(ports[0]));
		} else if (!strcmp(opt, "scheme")) {
			addattr_l(n, MAXLEN, TCA_FLEXPLANE_SCHEME, arg, strlen(arg) + 1);
		} else {
			fprintf(stderr, "flexplane: unknown option \"%s\"\n", opt);
			explain();
			return -1;
		}
		argc -= consumed;
		argv += consumed;
	}
	addattr_nest_end(n, tail);
	return 0;
}

/* ---- printing ---- */

static void print_str(const char *key, const char *fmt, const char *v)
{
	print_color_string(PRINT_ANY, COLOR_NONE, key, fmt, v);
}

static void print_u(const char *key, const char *fmt, unsigned int v)
{
	print_color_uint(PRINT_ANY, COLOR_NONE, key, fmt, v);
}

/* Text for the plain output only (JSON gets typed values). */
static void print_fp(const char *s)
{
	print_color_string(PRINT_FP, COLOR_NONE, NULL, "%s", s);
}

static void print_time(const char *key, const char *name, unsigned int us)
{
	char buf[64], out[96];

	if (us % 1000000 == 0)
		snprintf(buf, sizeof(buf), "%us", us / 1000000);
	else if (us % 1000 == 0)
		snprintf(buf, sizeof(buf), "%ums", us / 1000);
	else
		snprintf(buf, sizeof(buf), "%uus", us);
	print_color_uint(PRINT_JSON, COLOR_NONE, key, NULL, us);
	snprintf(out, sizeof(out), "%s %s ", name, buf);
	print_fp(out);
}

static void print_list(const char *key, const char *name, struct rtattr *a,
		       const char *const *tab, unsigned int ntab)
{
	const __u8 *w = RTA_DATA(a);
	unsigned int i, n = RTA_PAYLOAD(a);
	char out[128];
	int len;

	open_json_array(PRINT_JSON, key);
	for (i = 0; i < n; i++)
		print_color_string(PRINT_JSON, COLOR_NONE, NULL, NULL, w[i] < ntab ? tab[w[i]] : "?");
	close_json_array(PRINT_JSON, NULL);
	len = snprintf(out, sizeof(out), "%s ", name);
	for (i = 0; i < n && len < (int)sizeof(out); i++)
		len += snprintf(out + len, sizeof(out) - len, "%s%s", i ? "," : "",
				w[i] < ntab ? tab[w[i]] : "?");
	if (len < (int)sizeof(out) - 1)
		strcat(out, " ");
	print_fp(out);
}

static int flexplane_print_opt(struct qdisc_util *qu, FILE *f, struct rtattr *opt)
{
	struct rtattr *tb[TCA_FLEXPLANE_MAX + 1];
	char addr[INET6_ADDRSTRLEN];

	(void)qu;
	(void)f;
	if (!opt)
		return 0;
	parse_rtattr(tb, TCA_FLEXPLANE_MAX, RTA_DATA(opt), RTA_PAYLOAD(opt));

	if (tb[TCA_FLEXPLANE_EMU_ADDR]) {
		inet_ntop(AF_INET, RTA_DATA(tb[TCA_FLEXPLANE_EMU_ADDR]), addr, sizeof(addr));
		print_str("emulator", "emulator %s", addr);
	}
	if (tb[TCA_FLEXPLANE_EMU_PORT])
		print_u("port", ":%u ", *(__u16 *)RTA_DATA(tb[TCA_FLEXPLANE_EMU_PORT]));
	if (tb[TCA_FLEXPLANE_SRC_ADDR]) {
		inet_ntop(AF_INET, RTA_DATA(tb[TCA_FLEXPLANE_SRC_ADDR]), addr, sizeof(addr));
		print_str("src", "src %s ", addr);
	}
	if (tb[TCA_FLEXPLANE_EP_BASE]) {
		inet_ntop(AF_INET, RTA_DATA(tb[TCA_FLEXPLANE_EP_BASE]), addr, sizeof(addr));
		print_str("endpoints", "endpoints %s ", addr);
	}
	if (tb[TCA_FLEXPLANE_EP_BASE6]) {
		inet_ntop(AF_INET6, RTA_DATA(tb[TCA_FLEXPLANE_EP_BASE6]), addr, sizeof(addr));
		print_str("endpoints6", "endpoints6 %s ", addr);
	}
	if (tb[TCA_FLEXPLANE_EP_COUNT])
		print_u("count", "count %u ", *(__u32 *)RTA_DATA(tb[TCA_FLEXPLANE_EP_COUNT]));
	if (tb[TCA_FLEXPLANE_LIMIT])
		print_u("limit", "limit %up ", *(__u32 *)RTA_DATA(tb[TCA_FLEXPLANE_LIMIT]));
	if (tb[TCA_FLEXPLANE_FLOWS])
		print_u("flows", "flows %u ", *(__u32 *)RTA_DATA(tb[TCA_FLEXPLANE_FLOWS]));
	if (tb[TCA_FLEXPLANE_WINDOW])
		print_u("window", "window %u ", *(__u32 *)RTA_DATA(tb[TCA_FLEXPLANE_WINDOW]));
	if (tb[TCA_FLEXPLANE_APKT])
		print_u("apkt", "apkt %u ", *(__u32 *)RTA_DATA(tb[TCA_FLEXPLANE_APKT]));
	if (tb[TCA_FLEXPLANE_HOLD_US])
		print_time("hold_us", "hold", *(__u32 *)RTA_DATA(tb[TCA_FLEXPLANE_HOLD_US]));
	if (tb[TCA_FLEXPLANE_FALLBACK])
		print_str("fallback", "fallback %s ",
			  NAME(fallback_names, *(__u8 *)RTA_DATA(tb[TCA_FLEXPLANE_FALLBACK])));
	if (tb[TCA_FLEXPLANE_PRIO])
		print_str("prio", "prio %s ", NAME(prio_names, *(__u8 *)RTA_DATA(tb[TCA_FLEXPLANE_PRIO])));
	if (tb[TCA_FLEXPLANE_REQ_WORDS])
		print_list("req_words", "req_words", tb[TCA_FLEXPLANE_REQ_WORDS], word_names,
			   __FLEXPLANE_WORD_MAX);
	if (tb[TCA_FLEXPLANE_VERDICT_WORDS])
		print_list("verdict_words", "verdict_words", tb[TCA_FLEXPLANE_VERDICT_WORDS],
			   apply_names, __FLEXPLANE_APPLY_MAX);
	if (tb[TCA_FLEXPLANE_BYPASS_PORTS]) {
		const __u16 *p = RTA_DATA(tb[TCA_FLEXPLANE_BYPASS_PORTS]);
		unsigned int i, n = RTA_PAYLOAD(tb[TCA_FLEXPLANE_BYPASS_PORTS]) / 2;

		char out[128];
		int len = snprintf(out, sizeof(out), "bypass ");

		open_json_array(PRINT_JSON, "bypass");
		for (i = 0; i < n; i++)
			print_color_uint(PRINT_JSON, COLOR_NONE, NULL, NULL, p[i]);
		close_json_array(PRINT_JSON, NULL);
		for (i = 0; i < n && len < (int)sizeof(out); i++)
			len += snprintf(out + len, sizeof(out) - len, "%s%u", i ? "," : "", p[i]);
		if (len < (int)sizeof(out) - 1)
			strcat(out, " ");
		print_fp(out);
	}
	if (tb[TCA_FLEXPLANE_RTO_US])
		print_time("rto_us", "rto", *(__u32 *)RTA_DATA(tb[TCA_FLEXPLANE_RTO_US]));
	if (tb[TCA_FLEXPLANE_SCHEME])
		print_str("scheme", "scheme %s ", RTA_DATA(tb[TCA_FLEXPLANE_SCHEME]));
	if (tb[TCA_FLEXPLANE_ADOPT])
		print_str("adopt", "%s", *(__u8 *)RTA_DATA(tb[TCA_FLEXPLANE_ADOPT]) ? "adopt" : "noadopt");
	return 0;
}

#define C(name) { #name, offsetof(struct tc_flexplane_counters, name) }
static const struct {
	const char *name;
	size_t off;
} counters[] = {
	C(pkts_managed), C(segs_managed), C(gso_pkts), C(gso_split), C(coalesced),
	C(requests), C(verdicts), C(verdict_release), C(verdict_mark), C(verdict_drop),
	C(released), C(marked), C(dropped), C(mark_failed), C(sw_segmented), C(verdict_custom),
	C(aborted), C(bypass_ctrl), C(bypass_own), C(bypass_nodst), C(bypass_port),
	C(fallback_events), C(fallback_released), C(fallback_dropped), C(fallback_unmanaged),
	C(resyncs), C(adopted), C(overlimit), C(window_full),
	C(tx_dgrams), C(tx_errors), C(rx_dgrams), C(rx_forged), C(rx_bad), C(rx_stale),
	C(verdict_dups), C(verdict_gaps), C(verdict_mismatch), C(mark_non_ect),
	C(hellos), C(sessions), C(resets), C(rejects), C(retransmits), C(timeouts),
	C(naks), C(probes), C(acks),
	C(cycles_enqueue), C(cycles_dequeue), C(cycles_rx), C(cycles_tx),
	C(calls_enqueue), C(calls_dequeue), C(calls_rx), C(calls_tx),
};

/* ---- stages (uapi/flexplane.h: the histogram's layout) ---- */

static const char *const stage_names[] = { "batch", "trip", "release" };

static double bucket_low(unsigned int b)
{
	return b < 2 ? b : (double)((2ull + b % 2) << (b / 2 - 1));
}

static double bucket_high(unsigned int b)
{
	return b < 2 ? b + 1 : (double)((3ull + b % 2) << (b / 2 - 1));
}

/* The q-quantile: the middle of the bucket it falls in (within 20 % of
 * any value in it), no more than the largest value seen.
 */
static double stage_quantile(const struct tc_flexplane_stage *s, double q)
{
	unsigned long long seen = 0, want = (unsigned long long)(q * s->count + 0.5);
	unsigned int b;

	if (!s->count)
		return 0;
	if (!want)
		want = 1;
	for (b = 0; b < FLEXPLANE_STAGE_BUCKETS; b++) {
		seen += s->hist[b];
		if (seen >= want) {
			double mid = (bucket_low(b) + bucket_high(b)) / 2;

			return mid < s->max_ns ? mid : s->max_ns;
		}
	}
	return s->max_ns;
}

static void print_us(const char *key, const char *name, double ns)
{
	char fmt[64];

	print_color_u64(PRINT_JSON, COLOR_NONE, key, NULL, (unsigned long long)(ns + 0.5));
	snprintf(fmt, sizeof(fmt), " %s %.1fus", name, ns / 1000);
	print_fp(fmt);
}

/* One line per stage; JSON adds the histogram's non-empty buckets as
 * [low_ns, count] pairs, so a script can take differences between dumps.
 */
static void print_stages(const struct tc_flexplane_xstats *st)
{
	unsigned int i, b;

	open_json_object("stages");
	for (i = 0; i < __FLEXPLANE_STAGE_MAX; i++) {
		const struct tc_flexplane_stage *s = &st->stages[i];
		char fmt[64];

		print_nl();
		open_json_object(stage_names[i]);
		snprintf(fmt, sizeof(fmt), " stage %s count %%llu", stage_names[i]);
		print_color_u64(PRINT_ANY, COLOR_NONE, "count", fmt, s->count);
		print_us("mean_ns", "mean", s->count ? (double)s->sum_ns / s->count : 0);
		print_us("p50_ns", "p50", stage_quantile(s, 0.5));
		print_us("p99_ns", "p99", stage_quantile(s, 0.99));
		print_us("max_ns", "max", s->max_ns);
		print_color_u64(PRINT_JSON, COLOR_NONE, "sum_ns", NULL, s->sum_ns);
		open_json_array(PRINT_JSON, "hist");
		for (b = 0; b < FLEXPLANE_STAGE_BUCKETS; b++) {
			if (!s->hist[b])
				continue;
			open_json_array(PRINT_JSON, NULL);
			print_color_u64(PRINT_JSON, COLOR_NONE, NULL, NULL, (unsigned long long)bucket_low(b));
			print_color_uint(PRINT_JSON, COLOR_NONE, NULL, NULL, s->hist[b]);
			close_json_array(PRINT_JSON, NULL);
		}
		close_json_array(PRINT_JSON, NULL);
		close_json_object();
	}
	close_json_object();
}

static int flexplane_print_xstats(struct qdisc_util *qu, FILE *f, struct rtattr *xstats)
{
	struct tc_flexplane_xstats st;
	unsigned int i;

	(void)qu;
	(void)f;
	if (!xstats)
		return 0;
	memset(&st, 0, sizeof(st));
	memcpy(&st, RTA_DATA(xstats), RTA_PAYLOAD(xstats) < sizeof(st) ? RTA_PAYLOAD(xstats) : sizeof(st));
	if (st.version != FLEXPLANE_XSTATS_VERSION) {
		fprintf(stderr, "flexplane: statistics version %u, this tc plugin reads %u\n",
			st.version, FLEXPLANE_XSTATS_VERSION);
		return -1;
	}
	print_str("state", " state %s", NAME(state_names, st.state));
	print_u("session", " session %#x", st.session);
	print_u("endpoint_id", " endpoint %u", st.endpoint_id);
	print_u("apkt_bytes", " apkt %u", st.apkt_bytes);
	print_u("req_custom_len", " custom %u", st.req_custom_len);
	print_u("verdict_custom_len", "/%u", st.verdict_custom_len);
	print_u("features", " features %#x", st.features);
	print_u("window", " window %u", st.window);
	print_u("local_port", " port %u", st.local_port);
	print_u("last_reject", " last_reject %u", st.last_reject);
	print_nl();
	print_u("held", " held %u", st.held);
	print_u("pending", " pending %u", st.pending);
	print_u("flows_active", " flows %u", st.flows_active);
	for (i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
		char fmt[64];

		if (i % 6 == 0)
			print_nl();
		snprintf(fmt, sizeof(fmt), " %s %%llu", counters[i].name);
		print_color_u64(PRINT_ANY, COLOR_NONE, counters[i].name, fmt,
				*(__u64 *)((char *)&st.c + counters[i].off));
	}
	print_stages(&st);
	return 0;
}

struct qdisc_util flexplane_qdisc_util = {
	.id		= "flexplane",
	.parse_qopt	= flexplane_parse_opt,
	.print_qopt	= flexplane_print_opt,
	.print_xstats	= flexplane_print_xstats,
};

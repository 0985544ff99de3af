// SPDX-License-Identifier: GPL-2.0
/*
 * The flexplane qdisc's channel to the emulator.
 *
 * One kernel UDP socket per qdisc, in the device's network namespace and
 * bound to the device, runs the wire protocol of docs/protocol.md through
 * the shared state machine (proto/fp_endpoint_conn), under q->lock:
 *
 *  - datagrams arrive in fpq_encap_rcv(), in softirq context (the socket is
 *    set up as a UDP encapsulation socket); those not from the emulator's
 *    address and port are counted and dropped, the rest go to fp_ep_rx(),
 *    whose verdicts make held packets ready, and the device is scheduled;
 *  - datagrams leave from fpq_tx_work(), in process context: fp_ep_poll()
 *    builds them under q->lock, and they are sent once the lock is dropped
 *    (they pass through this very qdisc, as bypassed packets);
 *  - one hrtimer, expiring in softirq context, queues the work at the
 *    protocol's next deadline (fp_ep_next_deadline()) or when the fallback
 *    is due.
 *
 * Fallback: while verdicts are owed and none arrives for hold_us, the
 * emulator is deemed unreachable. Requests without verdict are given back
 * (fp_ep_abort_pending(), which also re-opens the session with a HELLO);
 * held packets are sent unmanaged (fallback open) or dropped (closed), and so
 * are new ones until a session is open again. A REJECT is handled the same
 * way, unless it only asks for other custom-data sizes or features: those
 * are adopted and the session re-opened, requests kept.
 */
#include <linux/inetdevice.h>
#include <linux/ip.h>
#include <linux/net.h>
#include <linux/udp.h>
#include <net/udp_tunnel.h>

#include "fpq.h"

#define NS_PER_US	1000ull
#define NS_PER_MS	1000000ull

static void fpq_schedule_tx(struct fpq_sched_data *q)
{
	queue_work(system_highpri_wq, &q->tx_work);
}

/* Open a connection with the current sizes; requests start at first_rseq. */
static int fpq_conn_open(struct fpq_sched_data *q, u64 now, u32 first_rseq)
{
	struct fp_ep_config cfg;

	fp_ep_config_default(&cfg);
	cfg.instance = get_random_u32() | 1;
	cfg.initial_rseq = first_rseq;
	cfg.window = min_t(u32, q->nslots, U16_MAX);
	cfg.req_custom_len = q->req_custom_len;
	cfg.verdict_custom_len = q->verdict_custom_len;
	cfg.features = q->features;
	strscpy(cfg.scheme, q->p.scheme, sizeof(cfg.scheme));
	cfg.max_dgram = FPQ_DGRAM_MAX;
	cfg.rto_ns = q->p.rto_us * NS_PER_US;
	cfg.rto_max_ns = max_t(u64, cfg.rto_ns, 100 * NS_PER_MS);
	cfg.hello_rto_ns = 50 * NS_PER_MS;
	cfg.hello_rto_max_ns = 500 * NS_PER_MS;
	cfg.probe_ns = 10 * NS_PER_MS;
	q->resets_seen = 0;
	return fp_ep_conn_init(&q->conn, &cfg, q->slots, q->nslots, now);
}

static void fpq_stats_add(struct fp_ep_stats *acc, const struct fp_ep_stats *s)
{
	const u64 *src = (const u64 *)s;
	u64 *dst = (u64 *)acc;
	unsigned int i;

	BUILD_BUG_ON(sizeof(*s) % sizeof(u64));
	for (i = 0; i < sizeof(*s) / sizeof(u64); i++)
		dst[i] += src[i];
}

void fpq_channel_stats(const struct fpq_sched_data *q, struct fp_ep_stats *s)
{
	*s = q->conn_base;
	fpq_stats_add(s, &q->conn.stats);
}

/* The emulator asked for other custom-data sizes or features: re-open the
 * session with its values. The requests without verdict keep their order
 * and their slots: they are compacted to the front of the window and handed
 * to the new connection, which numbers them from the same rseq.
 */
static int fpq_conn_adopt(struct fpq_sched_data *q, const struct fp_reject *r,
			  u64 now)
{
	struct fp_ep_conn *c = &q->conn;
	u32 low = c->low, i, j = low, n;
	int err;

	for (i = low; i != c->next; i++) {
		struct fp_ep_slot *s = &q->slots[i & c->mask];

		if (s->state != FP_SLOT_PENDING)
			continue;
		if (i != j) {
			q->slots[j & c->mask] = *s;
			q->stamps[j & c->mask] = q->stamps[i & c->mask];
		}
		j++;
	}
	n = j - low;
	fpq_stats_add(&q->conn_base, &c->stats);
	q->req_custom_len = r->req_custom_len;
	q->verdict_custom_len = r->verdict_custom_len;
	q->features = r->features;
	err = fpq_conn_open(q, now, low);
	if (err)
		return err;
	for (i = 0; i < n; i++) {
		struct fp_ep_slot *s = &q->slots[(low + i) & c->mask];
		struct fp_request req = s->req;

		err = fp_ep_submit(c, &req, s->user, now);
		if (err)
			return err;
	}
	return 0;
}

u8 fpq_state(const struct fpq_sched_data *q)
{
	switch (q->mode) {
	case FPQ_MODE_FALLBACK:
		return FLEXPLANE_STATE_FALLBACK;
	case FPQ_MODE_REJECTED:
		return FLEXPLANE_STATE_REJECTED;
	}
	return q->conn.state == FP_EP_ESTABLISHED ? FLEXPLANE_STATE_MANAGED :
						    FLEXPLANE_STATE_CONNECTING;
}

static void fpq_fallback(struct fpq_sched_data *q, u8 mode, u64 now)
{
	u32 pending = fp_ep_pending(&q->conn);

	q->mode = mode;
	q->stats.fallback_events++;
	q->stats.aborted += pending;
	fp_ep_abort_pending(&q->conn, now, NULL, NULL);
	fpq_resolve_all(q, q->p.fallback == FLEXPLANE_FALLBACK_CLOSED);
	net_warn_ratelimited("%s: flexplane: %s; %u requests without verdict, packets now %s\n",
			     qdisc_dev(q->sch)->name,
			     mode == FPQ_MODE_REJECTED ? "session refused" :
			     "emulator unreachable",
			     pending,
			     q->p.fallback == FLEXPLANE_FALLBACK_CLOSED ?
			     "dropped (fallback closed)" : "sent unmanaged (fallback open)");
}

static void fpq_on_reject(struct fpq_sched_data *q, u64 now)
{
	const struct fp_reject *r = &q->conn.last_reject;
	bool adopt;

	q->last_reject = r->code;
	adopt = q->p.adopt && q->adoptions < FPQ_MAX_ADOPT &&
		     (r->code == FP_REJ_CUSTOM_SIZE || r->code == FP_REJ_FEATURES) &&
		     !(r->features & ~FP_FEAT_ALL) &&
		     r->req_custom_len <= FP_MAX_CUSTOM &&
		     r->verdict_custom_len <= FP_MAX_CUSTOM;

	net_warn_ratelimited("%s: flexplane: emulator refused the session: %s (endpoint custom %u/%u features %#x; emulator custom %u/%u features %#x scheme '%s')%s\n",
			     qdisc_dev(q->sch)->name, fp_reject_name(r->code),
			     q->req_custom_len, q->verdict_custom_len, q->features,
			     r->req_custom_len, r->verdict_custom_len, r->features,
			     r->scheme, adopt ? "; adopting the emulator's values" : "");
	if (adopt) {
		q->adoptions++;
		if (!fpq_conn_adopt(q, r, now)) {
			q->stats.adopted++;
			q->rejects_seen = 0;
			return;
		}
	}
	if (q->mode == FPQ_MODE_HOLD)
		fpq_fallback(q, FPQ_MODE_REJECTED, now);
	else
		q->mode = FPQ_MODE_REJECTED;
}

/* State changes that follow from the connection's state and the clock. */
static void fpq_watch(struct fpq_sched_data *q, u64 now)
{
	struct fp_ep_conn *c = &q->conn;

	if (c->state == FP_EP_REJECTED && c->stats.rejects != q->rejects_seen) {
		q->rejects_seen = c->stats.rejects;
		fpq_on_reject(q, now);
	}
	if (q->mode == FPQ_MODE_HOLD && fp_ep_pending(c) &&
	    now - q->progress_ns >= q->p.hold_us * NS_PER_US)
		fpq_fallback(q, FPQ_MODE_FALLBACK, now);
	if (q->mode != FPQ_MODE_HOLD && c->state == FP_EP_ESTABLISHED) {
		q->mode = FPQ_MODE_HOLD;
		q->stats.resyncs++;
		net_info_ratelimited("%s: flexplane: emulator answers again, packets managed\n",
				     qdisc_dev(q->sch)->name);
	}
	if (c->state == FP_EP_ESTABLISHED && c->apkt_bytes)
		q->apkt = c->apkt_bytes;
}

static u64 fpq_deadline(const struct fpq_sched_data *q)
{
	u64 due = fp_ep_next_deadline(&q->conn);

	if (q->mode == FPQ_MODE_HOLD && fp_ep_pending(&q->conn))
		due = min(due, q->progress_ns + q->p.hold_us * NS_PER_US);
	return due;
}

/* Make sure whatever is due gets done: now by the work item, later by the
 * timer. Under q->lock.
 */
static void fpq_schedule(struct fpq_sched_data *q, u64 now)
{
	u64 due;

	if (q->stopping)
		return;
	due = fpq_deadline(q);
	if (due <= now) {
		fpq_schedule_tx(q);
		return;
	}
	if (due == FP_TIME_NEVER)
		return;
	if (due != q->timer_at || !hrtimer_is_queued(&q->timer)) {
		q->timer_at = due;
		hrtimer_start(&q->timer, ns_to_ktime(due), HRTIMER_MODE_ABS_SOFT);
	}
}

void fpq_channel_kick(struct fpq_sched_data *q, u64 now)
{
	fpq_schedule(q, now);
}

static enum hrtimer_restart fpq_timer(struct hrtimer *timer)
{
	struct fpq_sched_data *q = container_of(timer, struct fpq_sched_data, timer);

	fpq_schedule_tx(q);
	return HRTIMER_NORESTART;
}

/* Held packets became ready (verdicts, fallback): let the device dequeue. */
static void fpq_wake(struct fpq_sched_data *q)
{
	if (!list_empty(&q->ready)) {
		rcu_read_lock();
		__netif_schedule(qdisc_root(q->sch));
		rcu_read_unlock();
	}
}

/* The protocol restarted the session: it renumbered the requests without
 * verdict, so the stamps no longer match their slots. They are forgotten;
 * the requests sent again are timed from then on, without a batch stage.
 */
static void fpq_stamps_check(struct fpq_sched_data *q)
{
	if (q->conn.stats.resets == q->resets_seen)
		return;
	q->resets_seen = q->conn.stats.resets;
	memset(q->stamps, 0, q->nslots * sizeof(*q->stamps));
}

/* Requests [from, tx.max) went out for the first time at now (stage
 * BATCH ends, TRIP begins). A session that restarted numbers them anew:
 * then the range is not one of ours and nothing is stamped.
 */
static void fpq_stamp_sent(struct fpq_sched_data *q, u32 from, u64 now)
{
	const struct fp_ep_conn *c = &q->conn;
	u32 i;

	if (c->tx.max - from > q->nslots)
		return;
	for (i = from; i != c->tx.max; i++)
		q->stamps[i & c->mask].sent_ns = now;
}

static void fpq_tx_work(struct work_struct *work)
{
	struct fpq_sched_data *q = container_of(work, struct fpq_sched_data, tx_work);
	int lens[FPQ_TX_BURST], n, i, errors;
	bool more;

	do {
		u64 t0 = fpq_cycles(), now;
		u32 first_new;

		spin_lock_bh(&q->lock);
		if (q->stopping) {
			spin_unlock_bh(&q->lock);
			return;
		}
		now = ktime_get_ns();
		fpq_watch(q, now);
		first_new = q->conn.tx.max;
		for (n = 0; n < FPQ_TX_BURST; n++) {
			lens[n] = fp_ep_poll(&q->conn, now, q->txbuf + n * FPQ_DGRAM_MAX,
					     FPQ_DGRAM_MAX);
			if (lens[n] <= 0)
				break;
		}
		fpq_stamps_check(q);
		fpq_stamp_sent(q, first_new, now);
		more = n == FPQ_TX_BURST;
		if (!more)
			fpq_schedule(q, now);
		fpq_wake(q);
		spin_unlock_bh(&q->lock);

		errors = 0;
		for (i = 0; i < n; i++) {
			struct kvec iov = { q->txbuf + i * FPQ_DGRAM_MAX, lens[i] };
			struct msghdr msg = {
				.msg_name = &q->emu,
				.msg_namelen = sizeof(q->emu),
				.msg_flags = MSG_DONTWAIT,
			};

			if (kernel_sendmsg(q->sock, &msg, &iov, 1, lens[i]) < 0)
				errors++;
		}

		spin_lock_bh(&q->lock);
		q->stats.tx_dgrams += n - errors;
		q->stats.tx_errors += errors;
		if (fpq_cycle_stats) {
			q->stats.cycles_tx += get_cycles() - t0;
			q->stats.calls_tx++;
		}
		spin_unlock_bh(&q->lock);
		cond_resched();
	} while (more);
}

static int fpq_encap_rcv(struct sock *sk, struct sk_buff *skb)
{
	struct fpq_sched_data *q = rcu_dereference_sk_user_data(sk);
	u64 t0 = fpq_cycles(), now, verdicts;
	bool forged;

	if (!q || skb_linearize(skb))
		goto out;
	forged = ip_hdr(skb)->saddr != q->emu.sin_addr.s_addr ||
		 udp_hdr(skb)->source != q->emu.sin_port;

	spin_lock_bh(&q->lock);
	if (q->stopping)
		goto unlock;
	q->stats.rx_dgrams++;
	if (forged) {
		q->stats.rx_forged++;
		goto unlock;
	}
	now = ktime_get_ns();
	verdicts = q->conn.stats.verdicts;
	q->rx_now = now;
	fp_ep_rx(&q->conn, skb->data + sizeof(struct udphdr),
		 skb->len - sizeof(struct udphdr), now, fpq_on_verdict, q);
	fpq_stamps_check(q);
	if (q->conn.stats.verdicts != verdicts)
		q->progress_ns = now;
	fpq_watch(q, now);
	fpq_schedule(q, now);
	fpq_wake(q);
	if (fpq_cycle_stats) {
		q->stats.cycles_rx += get_cycles() - t0;
		q->stats.calls_rx++;
	}
unlock:
	spin_unlock_bh(&q->lock);
out:
	consume_skb(skb);
	return 0;
}

int fpq_channel_start(struct fpq_sched_data *q, struct netlink_ext_ack *extack)
{
	struct net_device *dev = qdisc_dev(q->sch);
	struct udp_tunnel_sock_cfg tcfg = {
		.sk_user_data = q,
		.encap_type = 1,
		.encap_rcv = fpq_encap_rcv,
	};
	struct udp_port_cfg ucfg = {
		.family = AF_INET,
		.local_ip.s_addr = q->p.src_addr,
		.bind_ifindex = dev->ifindex,
		.use_udp_checksums = 1,
	};
	struct socket *sock;
	int err;

	INIT_WORK(&q->tx_work, fpq_tx_work);
	hrtimer_init(&q->timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS_SOFT);
	q->timer.function = fpq_timer;

	q->nslots = q->p.window;
	q->slots = kvcalloc(q->nslots, sizeof(*q->slots), GFP_KERNEL);
	q->stamps = kvcalloc(q->nslots, sizeof(*q->stamps), GFP_KERNEL);
	q->txbuf = kmalloc_array(FPQ_TX_BURST, FPQ_DGRAM_MAX, GFP_KERNEL);
	if (!q->slots || !q->stamps || !q->txbuf)
		return -ENOMEM;
	q->emu.sin_family = AF_INET;
	q->emu.sin_addr.s_addr = q->p.emu_addr;
	q->emu.sin_port = htons(q->p.emu_port);
	q->apkt = q->p.apkt;
	q->req_custom_len = 4 * q->p.nreq_words;
	q->verdict_custom_len = 4 * q->p.nverdict_words;
	q->features = q->p.prio != FLEXPLANE_PRIO_NONE ? FP_FEAT_PRIO : 0;
	q->mode = FPQ_MODE_HOLD;
	err = fpq_conn_open(q, ktime_get_ns(), get_random_u32());
	if (err) {
		NL_SET_ERR_MSG_MOD(extack, "invalid protocol configuration");
		return -EINVAL;
	}

	err = udp_sock_create(dev_net(dev), &ucfg, &sock);
	if (err) {
		NL_SET_ERR_MSG_MOD(extack,
				   "cannot create the UDP socket to the emulator (is src an address of this host?)");
		return err;
	}
	setup_udp_tunnel_sock(dev_net(dev), sock, &tcfg);
	WRITE_ONCE(q->sock, sock);

	spin_lock_bh(&q->lock);
	fpq_schedule_tx(q);	/* the first HELLO */
	spin_unlock_bh(&q->lock);
	return 0;
}

/* Also after a failed start. Process context. */
void fpq_channel_stop(struct fpq_sched_data *q)
{
	spin_lock_bh(&q->lock);
	q->stopping = true;
	spin_unlock_bh(&q->lock);
	/* Nothing re-arms the timer or queues the work once stopping is set
	 * (both happen under q->lock), so these two leave neither behind.
	 */
	if (q->timer.function) {
		hrtimer_cancel(&q->timer);
		cancel_work_sync(&q->tx_work);
	}
	if (q->sock) {
		/* Waits for receive hooks still running. */
		udp_tunnel_sock_release(q->sock);
		WRITE_ONCE(q->sock, NULL);
	}
	if (q->slots) {
		spin_lock_bh(&q->lock);
		q->stats.aborted += fp_ep_pending(&q->conn);
		spin_unlock_bh(&q->lock);
	}
	kvfree(q->slots);
	q->slots = NULL;
	kvfree(q->stamps);
	q->stamps = NULL;
	kfree(q->txbuf);
	q->txbuf = NULL;
}

/*
 * The null provider: a test-only verbs "device" whose post_send/post_recv accept every work request and do
 * nothing, and whose poll_cq returns one prepared completion. Its ibv_context, ibv_pd, ibv_cq, ibv_qp and ibv_mr
 * are plain structs laid out by infiniband/verbs.h, and the data-path verbs are reached through the context's
 * ops table, exactly as libibverbs' inline ibv_post_send/ibv_poll_cq reach a real provider's. So a loop over
 * it measures what the caller adds per verb: jrdma's Java path (NullProvider.java) or a C program's (c_loop).
 *
 * Built by the tests with gcc -O2 -shared -fPIC against the installed verbs.h (NullProvider.build).
 */
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* What the last work request said, for the tests that check what jrdma wrote. */
struct null_seen {
	uint64_t wr_id;
	int opcode, num_sge, send_flags, chain;
	uint64_t addr, remote_addr;
	uint32_t length, lkey, rkey, imm_data;
};

struct null_dev {
	struct ibv_context ctx;
	struct ibv_pd pd;
	struct ibv_cq cq;
	struct ibv_qp qp;
	struct ibv_mr mr;
	struct ibv_wc prepared;   /* what poll_cq returns */
	int cq_ready;             /* 1: poll_cq returns the prepared completion; 0: the CQ is empty */
	int record;               /* 1: remember the last work requests (tests); 0: benchmarks */
	long posts, recvs, polls;
	struct null_seen send, recv;
	/* the C program's own work request, prepared once and posted again and again, as perftest does */
	struct ibv_sge c_sge;
	struct ibv_send_wr c_wr;
};

static int null_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	struct null_dev *d = (struct null_dev *)qp->context;
	(void)bad_wr;
	d->posts++;
	if (d->record) {
		int n = 0;
		for (struct ibv_send_wr *w = wr; w; w = w->next) n++;
		d->send.chain = n;
		d->send.wr_id = wr->wr_id;
		d->send.opcode = wr->opcode;
		d->send.num_sge = wr->num_sge;
		d->send.send_flags = wr->send_flags;
		d->send.imm_data = wr->imm_data;
		d->send.addr = wr->num_sge > 0 ? wr->sg_list[0].addr : 0;
		d->send.length = wr->num_sge > 0 ? wr->sg_list[0].length : 0;
		d->send.lkey = wr->num_sge > 0 ? wr->sg_list[0].lkey : 0;
		d->send.remote_addr = wr->wr.rdma.remote_addr;
		d->send.rkey = wr->wr.rdma.rkey;
	}
	return 0;
}

static int null_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct null_dev *d = (struct null_dev *)qp->context;
	(void)bad_wr;
	d->recvs++;
	if (d->record) {
		d->recv.wr_id = wr->wr_id;
		d->recv.num_sge = wr->num_sge;
		d->recv.addr = wr->num_sge > 0 ? wr->sg_list[0].addr : 0;
		d->recv.length = wr->num_sge > 0 ? wr->sg_list[0].length : 0;
		d->recv.lkey = wr->num_sge > 0 ? wr->sg_list[0].lkey : 0;
	}
	return 0;
}

static int null_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	struct null_dev *d = (struct null_dev *)cq->context;
	d->polls++;
	if (!d->cq_ready || num_entries < 1) return 0;
	*wc = d->prepared;
	return 1;
}

static int null_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	(void)cq; (void)solicited_only;
	return 0;
}

/* A device with one PD, CQ (cqe 256), RC QP in RTS (qp_num 0x11) and an MR over [addr, addr+length). */
struct null_dev *null_open(uint64_t addr, uint64_t length)
{
	struct null_dev *d = calloc(1, sizeof(*d));
	if (!d) return NULL;
	d->ctx.ops.post_send = null_post_send;
	d->ctx.ops.post_recv = null_post_recv;
	d->ctx.ops.poll_cq = null_poll_cq;
	d->ctx.ops.req_notify_cq = null_req_notify_cq;
	d->pd.context = &d->ctx;
	d->pd.handle = 1;
	d->cq.context = &d->ctx;
	d->cq.cqe = 256;
	d->qp.context = &d->ctx;
	d->qp.pd = &d->pd;
	d->qp.send_cq = &d->cq;
	d->qp.recv_cq = &d->cq;
	d->qp.qp_num = 0x11;
	d->qp.state = IBV_QPS_RTS;
	d->qp.qp_type = IBV_QPT_RC;
	d->mr.context = &d->ctx;
	d->mr.pd = &d->pd;
	d->mr.addr = (void *)(uintptr_t)addr;
	d->mr.length = length;
	d->mr.lkey = 0x1234;
	d->mr.rkey = 0x5678;
	d->prepared.wr_id = 7;
	d->prepared.status = IBV_WC_SUCCESS;
	d->prepared.opcode = IBV_WC_RDMA_WRITE;
	d->prepared.byte_len = 64;
	d->prepared.qp_num = d->qp.qp_num;
	d->cq_ready = 1;
	d->c_sge.addr = addr;
	d->c_sge.length = 64;
	d->c_sge.lkey = d->mr.lkey;
	d->c_wr.wr_id = 7;
	d->c_wr.sg_list = &d->c_sge;
	d->c_wr.num_sge = 1;
	d->c_wr.opcode = IBV_WR_RDMA_WRITE;
	d->c_wr.send_flags = IBV_SEND_SIGNALED;
	d->c_wr.wr.rdma.remote_addr = addr;
	d->c_wr.wr.rdma.rkey = d->mr.rkey;
	return d;
}

void null_close(struct null_dev *d) { free(d); }

struct ibv_context *null_context(struct null_dev *d) { return &d->ctx; }
struct ibv_pd *null_pd(struct null_dev *d) { return &d->pd; }
struct ibv_cq *null_cq(struct null_dev *d) { return &d->cq; }
struct ibv_qp *null_qp(struct null_dev *d) { return &d->qp; }
struct ibv_mr *null_mr(struct null_dev *d) { return &d->mr; }
void null_set(struct null_dev *d, int cq_ready, int record) { d->cq_ready = cq_ready; d->record = record; }
long null_posts(struct null_dev *d) { return d->posts; }
long null_recvs(struct null_dev *d) { return d->recvs; }
long null_polls(struct null_dev *d) { return d->polls; }
struct null_seen *null_seen_send(struct null_dev *d) { return &d->send; }
struct null_seen *null_seen_recv(struct null_dev *d) { return &d->recv; }

/*
 * What a C program pays: n times ibv_post_send of a prepared RDMA WRITE + ibv_poll_cq of one completion, through
 * verbs.h's inline verbs (the ops table), as perftest's loops do. Returns the completions polled (n), or -1.
 */
long null_c_loop(struct null_dev *d, long n)
{
	struct ibv_qp *qp = &d->qp;
	struct ibv_cq *cq = &d->cq;
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	long got = 0;
	for (long i = 0; i < n; i++) {
		if (ibv_post_send(qp, &d->c_wr, &bad)) return -1;
		int c = ibv_poll_cq(cq, 1, &wc);
		if (c < 0 || (c == 1 && wc.status != IBV_WC_SUCCESS)) return -1;
		got += c;
	}
	return got;
}

/* The C program's prepared work request, for the Java side's bare-FFM floor loop. */
struct ibv_send_wr *null_c_wr(struct null_dev *d) { return &d->c_wr; }

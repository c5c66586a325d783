// SPDX-License-Identifier: GPL-2.0
/*
 * qp_size - how big a queue pair and a completion queue really are: the
 * course's exercise B (queue sizing in bytes) on the device the guest has.
 * Plain libibverbs; it does not use rdmaxfer.
 *
 *   qp_size [-d DEVICE] [--send N] [--recv N] [--cqe N]   (default 128, 64, 192)
 *
 * It creates one CQ of --cqe entries and one RC QP of --send/--recv work
 * requests (one SGE each) and prints what the device granted
 * (ibv_query_qp(), cq->cqe), which may be more than asked.  Where the
 * provider keeps the rings in memory the kernel maps into the process (rxe
 * and siw do: their "NIC" is the CPU, and the queues live in host memory
 * that both the library and the kernel use), the new mappings of
 * /dev/infiniband/uverbs* are the rings' real sizes.  To tell the send ring
 * from the receive ring without relying on the provider's code, a second QP
 * with twice the send depth is created: the ring that grew is the send
 * ring.  A provider that allocates its rings in ordinary memory (mlx5) shows
 * no such mappings; the program says so.
 *
 * Exit: 0, 1 a verb failed, 2 usage or no device.
 */
#include <getopt.h>
#include <infiniband/verbs.h>
#include <inttypes.h>
#include "labs.h"

#define MAX_MAPS 64

/* The process's mappings of the uverbs device: start addresses and lengths. */
struct maps {
	unsigned long start[MAX_MAPS], len[MAX_MAPS];
	int n;
};

static void uverbs_maps(struct maps *m)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long s, e;
	char line[512];

	m->n = 0;
	while (f && fgets(line, sizeof(line), f) && m->n < MAX_MAPS)
		if (strstr(line, "/dev/infiniband/uverbs") && sscanf(line, "%lx-%lx", &s, &e) == 2) {
			m->start[m->n] = s;
			m->len[m->n++] = e - s;
		}
	if (f)
		fclose(f);
}

/* new_maps - the lengths of the mappings in after that were not in before. */
static int new_maps(const struct maps *before, const struct maps *after, unsigned long *len)
{
	int i, j, n = 0;

	for (i = 0; i < after->n; i++) {
		for (j = 0; j < before->n && before->start[j] != after->start[i]; j++)
			;
		if (j == before->n)
			len[n++] = after->len[i];
	}
	return n;
}

static struct ibv_qp *make_qp(struct ibv_pd *pd, struct ibv_cq *cq, int send, int recv)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = send, .max_recv_wr = recv,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &a);

	if (!qp)
		fprintf(stderr, "qp_size: ibv_create_qp(send %d, recv %d): %s\n", send, recv,
			strerror(errno));
	return qp;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "send", 1, NULL, 's' }, { "recv", 1, NULL, 'r' }, { "cqe", 1, NULL, 'c' },
		{ "device", 1, NULL, 'd' }, { NULL, 0, NULL, 0 }
	};
	int c, n1, n2, send = 128, recv = 64, cqe = 192;
	unsigned long l1[MAX_MAPS], l2[MAX_MAPS], sq = 0, rq = 0, cqb = 0;
	struct ibv_qp *qp, *qp2 = NULL;
	struct maps m0, m1, m2, m3;
	struct ibv_qp_init_attr ia;
	struct ibv_device_attr da;
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_qp_attr qa;
	const char *dev = NULL;
	struct ibv_pd *pd;
	struct ibv_cq *cq;

	while ((c = getopt_long(argc, argv, "d:", lopts, NULL)) != -1) {
		switch (c) {
		case 's':
			send = atoi(optarg);
			break;
		case 'r':
			recv = atoi(optarg);
			break;
		case 'c':
			cqe = atoi(optarg);
			break;
		case 'd':
			dev = optarg;
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc || send < 1 || recv < 1 || cqe < 1)
		goto usage;

	list = ibv_get_device_list(NULL);
	for (c = 0; list && list[c] && !ctx; c++)
		if (!dev || !strcmp(ibv_get_device_name(list[c]), dev))
			ctx = ibv_open_device(list[c]);
	if (!ctx || ibv_query_device(ctx, &da) || !(pd = ibv_alloc_pd(ctx))) {
		fprintf(stderr, "qp_size: no usable RDMA device%s%s\n", dev ? " " : "",
			dev ? dev : "");
		return 2;
	}
	printf("device %s: max_qp_wr %d, max_cqe %d, max_sge %d\n",
	       ibv_get_device_name(ctx->device), da.max_qp_wr, da.max_cqe, da.max_sge);

	uverbs_maps(&m0);
	cq = ibv_create_cq(ctx, cqe, NULL, NULL, 0);
	if (!cq) {
		fprintf(stderr, "qp_size: ibv_create_cq(%d): %s\n", cqe, strerror(errno));
		return 1;
	}
	uverbs_maps(&m1);
	for (n1 = new_maps(&m0, &m1, l1); n1 > 0; n1--)
		cqb += l1[n1 - 1];
	qp = make_qp(pd, cq, send, recv);
	if (!qp || ibv_query_qp(qp, &qa, IBV_QP_CAP, &ia))
		return 1;
	uverbs_maps(&m2);
	n1 = new_maps(&m1, &m2, l1);
	qp2 = make_qp(pd, cq, 2 * send, recv);
	uverbs_maps(&m3);
	n2 = qp2 ? new_maps(&m2, &m3, l2) : 0;

	printf("CQ: asked %d entries, got %d (cq->cqe)", cqe, cq->cqe);
	if (cqb)
		printf("; its ring is %lu bytes mapped into this process = %.1f bytes per entry got\n",
		       cqb, (double)cqb / cq->cqe);
	else
		printf("; no ring mapped from the uverbs device (the provider allocates it itself)\n");
	printf("QP: asked send %d recv %d sge 1, got send %u recv %u send_sge %u recv_sge %u "
	       "inline %u (ibv_query_qp)\n", send, recv, qa.cap.max_send_wr, qa.cap.max_recv_wr,
	       qa.cap.max_send_sge, qa.cap.max_recv_sge, qa.cap.max_inline_data);
	/*
	 * The second QP's send ring is the one length the first QP did not
	 * have; its other ring, the receive ring, is the first QP's too.
	 */
	if (n1 == 2 && n2 == 2) {
		for (c = 0; c < 2; c++)
			if (l2[c] != l1[0] && l2[c] != l1[1])
				rq = l2[!c];
		if (rq && rq == l1[0])
			sq = l1[1];
		else if (rq && rq == l1[1])
			sq = l1[0];
	}
	if (sq && rq)
		printf("QP: send ring %lu bytes = %.1f bytes per send entry got; receive ring %lu "
		       "bytes = %.1f per receive entry got; %lu bytes in all\n", sq,
		       (double)sq / qa.cap.max_send_wr, rq, (double)rq / qa.cap.max_recv_wr, sq + rq);
	else if (n1)
		printf("QP: %d new mapping(s) of %lu%s bytes; could not tell the send ring from the "
		       "receive ring\n", n1, l1[0], n1 > 1 ? " and more" : "");
	else
		printf("QP: no rings mapped from the uverbs device (the provider allocates them)\n");
	printf("course's exercise B: SQ %d x 64 = %d B, RQ %d x 64 = %d B, QP %d B, CQ %d x 32 = %d B\n",
	       send, send * 64, recv, recv * 64, (send + recv) * 64, send + recv,
	       (send + recv) * 32);
	if (qp2)
		ibv_destroy_qp(qp2);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
usage:
	fprintf(stderr, "usage: qp_size [-d DEVICE] [--send N] [--recv N] [--cqe N]\n");
	return 2;
}

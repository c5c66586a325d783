// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer info - what the module sees: version, ABI, features, and for
 * every RDMA device its attributes, ports and GIDs.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "rdmaxfer.h"

struct port {
	struct rdmaxfer_port_info info;
	struct rdmaxfer_gid *gids;
};

struct device {
	struct rdmaxfer_device_info info;
	struct port *ports;
};

static const char *const port_states[] = {
	"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER",
};

static const char *const link_layers[] = {
	"unspecified", "InfiniBand", "Ethernet",
};

static const char *const gid_types[] = {
	"IB", "RoCEv1", "RoCEv2",
};

static const char *const atomic_caps[] = {
	"none", "HCA", "global",
};

static const char *const node_types[] = {
	"unknown", "CA", "switch", "router", "RNIC", "usNIC", "usNIC-UDP", "unspecified",
};

static const struct {
	uint32_t bit;
	const char *name;
} device_caps[] = {
	{ RDMAXFER_DEVICE_CAP_FRWR, "frwr" },
	{ RDMAXFER_DEVICE_CAP_ATOMIC, "atomic" },
	{ RDMAXFER_DEVICE_CAP_VIRT_DMA, "virt_dma" },
};

#define NAME_OF(table, v) ((v) < sizeof(table) / sizeof((table)[0]) ? (table)[v] : "?")

static void format_guid(uint64_t guid, char *buf, size_t len)
{
	snprintf(buf, len, "%04x:%04x:%04x:%04x",
		 (unsigned int)(guid >> 48) & 0xffff, (unsigned int)(guid >> 32) & 0xffff,
		 (unsigned int)(guid >> 16) & 0xffff, (unsigned int)guid & 0xffff);
}

static void format_gid(const struct rdmaxfer_gid *g, char *addr, char *ndev)
{
	if (!inet_ntop(AF_INET6, g->raw, addr, INET6_ADDRSTRLEN))
		strcpy(addr, "?");
	if (!g->ifindex || !if_indextoname(g->ifindex, ndev))
		strcpy(ndev, "-");
}

/* Query one port and all its GIDs.  Returns 0, or -1 with errno set. */
static int query_port(int fd, uint32_t index, uint32_t port, struct port *p)
{
	for (;;) {
		uint32_t cap = p->info.num_gids;

		memset(&p->info, 0, sizeof(p->info));
		p->info.size = sizeof(p->info);
		p->info.index = index;
		p->info.port = port;
		p->info.num_gids = cap;
		p->info.gids = (uintptr_t)p->gids;
		if (ioctl(fd, RDMAXFER_IOC_QUERY_PORT, &p->info))
			return -1;
		if (p->info.num_gids <= cap)
			return 0;
		/* the table grew (or first call): retry with room for all */
		free(p->gids);
		p->gids = calloc(p->info.num_gids, sizeof(*p->gids));
		if (!p->gids)
			return -1;
	}
}

/* Query one device and its ports.  Returns 0, or -1 with errno set. */
static int query_device(int fd, uint32_t index, struct device *d)
{
	uint32_t i;

	memset(d, 0, sizeof(*d));
	d->info.size = sizeof(d->info);
	d->info.index = index;
	if (ioctl(fd, RDMAXFER_IOC_QUERY_DEVICE, &d->info))
		return -1;
	d->ports = calloc(d->info.num_ports, sizeof(*d->ports));
	if (!d->ports && d->info.num_ports)
		return -1;
	for (i = 0; i < d->info.num_ports; i++)
		if (query_port(fd, index, i + 1, &d->ports[i]))
			return -1;
	return 0;
}

static void free_device(struct device *d)
{
	uint32_t i;

	for (i = 0; d->ports && i < d->info.num_ports; i++)
		free(d->ports[i].gids);
	free(d->ports);
}

static void print_human(const struct rdmaxfer_info *mi, const struct device *devs, int n)
{
	char guid[24], addr[INET6_ADDRSTRLEN], ndev[IF_NAMESIZE];
	size_t c;
	int i;

	printf("rdmaxfer module %s, ABI %u, %d RDMA device%s\n",
	       mi->version, mi->abi_version, n, n == 1 ? "" : "s");
	if (!n)
		printf("  (none: add Soft-RoCE with 'rdma link add rxe0 type rxe netdev NETDEV')\n");
	for (i = 0; i < n; i++) {
		const struct rdmaxfer_device_info *d = &devs[i].info;
		uint32_t p, g;

		format_guid(d->node_guid, guid, sizeof(guid));
		printf("%s: index %u, %s, node GUID %s, vendor 0x%x part %u, caps",
		       d->name, d->index, NAME_OF(node_types, d->node_type), guid,
		       d->vendor_id, d->vendor_part_id);
		for (c = 0; c < sizeof(device_caps) / sizeof(device_caps[0]); c++)
			if (d->caps & device_caps[c].bit)
				printf(" %s", device_caps[c].name);
		printf("\n  max_qp_wr %u, max_send_sge %u, max_recv_sge %u, max_sge_rd %u, max_qp_rd_atom %u\n",
		       d->max_qp_wr, d->max_send_sge, d->max_recv_sge, d->max_sge_rd,
		       d->max_qp_rd_atom);
		printf("  max_fast_reg_page_list_len %u, max_mr_size %llu, atomic %s, completion vectors %u\n",
		       d->max_fast_reg_page_list_len, (unsigned long long)d->max_mr_size,
		       NAME_OF(atomic_caps, d->atomic_cap), d->num_comp_vectors);
		for (p = 0; p < d->num_ports; p++) {
			const struct port *pt = &devs[i].ports[p];

			printf("  port %u: %s, %s, active MTU %u (max %u), max message %u, %u GID%s\n",
			       pt->info.port, NAME_OF(port_states, pt->info.state),
			       NAME_OF(link_layers, pt->info.link_layer), pt->info.active_mtu,
			       pt->info.max_mtu, pt->info.max_msg_sz, pt->info.num_gids,
			       pt->info.num_gids == 1 ? "" : "s");
			for (g = 0; g < pt->info.num_gids; g++) {
				format_gid(&pt->gids[g], addr, ndev);
				printf("    gid %-4u %-40s %-7s %s\n", pt->gids[g].index, addr,
				       NAME_OF(gid_types, pt->gids[g].type), ndev);
			}
		}
	}
}

static void print_json(const struct rdmaxfer_info *mi, const struct device *devs, int n)
{
	char guid[24], addr[INET6_ADDRSTRLEN], ndev[IF_NAMESIZE];
	size_t c;
	int i;

	json_begin_object(NULL);
	json_begin_object("module");
	json_string("version", mi->version);
	json_u64("abi_version", mi->abi_version);
	json_begin_array("features");
	if (mi->features & RDMAXFER_FEATURE_DEVICE_QUERY)
		json_string(NULL, "device_query");
	if (mi->features & RDMAXFER_FEATURE_TRANSFER)
		json_string(NULL, "transfer");
	json_end_array();
	json_u64("max_cmd_size", mi->max_cmd_size);
	if (mi->features & RDMAXFER_FEATURE_TRANSFER) {
		json_u64("max_buf_size", mi->max_buf_size);
		json_u64("max_window_size", mi->max_window_size);
		json_u64("max_send_size", mi->max_send_size);
		json_u64("max_batch", mi->max_batch);
		json_u64("max_pending", mi->max_pending);
		json_u64("max_objects", mi->max_objects);
	}
	json_end_object();
	json_begin_array("devices");
	for (i = 0; i < n; i++) {
		const struct rdmaxfer_device_info *d = &devs[i].info;
		uint32_t p, g;

		json_begin_object(NULL);
		json_string("name", d->name);
		json_u64("index", d->index);
		json_string("node_type", NAME_OF(node_types, d->node_type));
		format_guid(d->node_guid, guid, sizeof(guid));
		json_string("node_guid", guid);
		format_guid(d->sys_image_guid, guid, sizeof(guid));
		json_string("sys_image_guid", guid);
		json_u64("vendor_id", d->vendor_id);
		json_u64("vendor_part_id", d->vendor_part_id);
		json_u64("hw_ver", d->hw_ver);
		json_begin_array("caps");
		for (c = 0; c < sizeof(device_caps) / sizeof(device_caps[0]); c++)
			if (d->caps & device_caps[c].bit)
				json_string(NULL, device_caps[c].name);
		json_end_array();
		json_string("atomic_cap", NAME_OF(atomic_caps, d->atomic_cap));
		json_u64("device_cap_flags", d->device_cap_flags);
		json_u64("max_mr_size", d->max_mr_size);
		json_u64("page_size_cap", d->page_size_cap);
		json_u64("max_qp", d->max_qp);
		json_u64("max_qp_wr", d->max_qp_wr);
		json_u64("max_send_sge", d->max_send_sge);
		json_u64("max_recv_sge", d->max_recv_sge);
		json_u64("max_sge_rd", d->max_sge_rd);
		json_u64("max_cq", d->max_cq);
		json_u64("max_cqe", d->max_cqe);
		json_u64("max_mr", d->max_mr);
		json_u64("max_pd", d->max_pd);
		json_u64("max_qp_rd_atom", d->max_qp_rd_atom);
		json_u64("max_qp_init_rd_atom", d->max_qp_init_rd_atom);
		json_u64("max_fast_reg_page_list_len", d->max_fast_reg_page_list_len);
		json_u64("num_comp_vectors", d->num_comp_vectors);
		json_begin_array("ports");
		for (p = 0; p < d->num_ports; p++) {
			const struct port *pt = &devs[i].ports[p];

			json_begin_object(NULL);
			json_u64("port", pt->info.port);
			json_string("state", NAME_OF(port_states, pt->info.state));
			json_u64("phys_state", pt->info.phys_state);
			json_string("link_layer", NAME_OF(link_layers, pt->info.link_layer));
			json_u64("active_mtu", pt->info.active_mtu);
			json_u64("max_mtu", pt->info.max_mtu);
			json_u64("max_msg_sz", pt->info.max_msg_sz);
			json_u64("gid_tbl_len", pt->info.gid_tbl_len);
			json_u64("lid", pt->info.lid);
			json_begin_array("gids");
			for (g = 0; g < pt->info.num_gids; g++) {
				format_gid(&pt->gids[g], addr, ndev);
				json_begin_object(NULL);
				json_u64("index", pt->gids[g].index);
				json_string("gid", addr);
				json_string("type", NAME_OF(gid_types, pt->gids[g].type));
				json_string("netdev", ndev);
				json_end_object();
			}
			json_end_array();
			json_end_object();
		}
		json_end_array();
		json_end_object();
	}
	json_end_array();
	json_end_object();
	json_end_document();
}

static void info_usage(FILE *f)
{
	fprintf(f,
		"usage: rdmaxfer info [--json]\n"
		"\n"
		"Show the loaded module (version, ABI, features) and every RDMA device it\n"
		"sees, with its limits, ports and GIDs.\n"
		"\n"
		"  --json    one JSON object on stdout\n"
		"  --help    this text\n");
}

int cmd_info(int argc, char **argv)
{
	struct rdmaxfer_info mi;
	struct device *devs = NULL;
	uint32_t *idx = NULL;
	bool json = false;
	int fd, n, i, ndev = 0, ret = EXIT_FAIL, c;

	c = parse_json_only(argc, argv, "info ", info_usage, &json);
	if (c >= 0)
		return c;

	fd = rdmaxfer_open();
	if (fd < 0)
		return EXIT_FAIL;
	if (rdmaxfer_get_info(fd, &mi))
		goto out;
	n = list_device_indexes(fd, &idx);
	if (n < 0) {
		fail("LIST_DEVICES failed: %s", strerror(errno));
		goto out;
	}
	devs = calloc(n ? n : 1, sizeof(*devs));
	if (!devs) {
		fail("out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (!query_device(fd, idx[i], &devs[ndev])) {
			ndev++;
			continue;
		}
		if (errno != ENODEV) {	/* ENODEV: removed meanwhile, skip it */
			fail("querying device %u failed: %s", idx[i], strerror(errno));
			free_device(&devs[ndev]);
			goto out;
		}
		free_device(&devs[ndev]);
	}
	if (json)
		print_json(&mi, devs, ndev);
	else
		print_human(&mi, devs, ndev);
	ret = fflush(stdout) ? fail("writing output failed: %s", strerror(errno)) : EXIT_OK;
out:
	for (i = 0; i < ndev; i++)
		free_device(&devs[i]);
	free(devs);
	free(idx);
	close(fd);
	return ret;
}

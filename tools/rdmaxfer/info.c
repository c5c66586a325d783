// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer info - what the module sees: version, ABI, features, and for
 * every RDMA device its attributes, ports and GIDs.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
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

/* Query one device and its ports.  Returns 0, or -1 with errno set. */
static int query_device(int fd, uint32_t index, struct device *d)
{
	uint32_t i;

	memset(d, 0, sizeof(*d));
	if (rdx_query_device(fd, index, &d->info))
		return -1;
	d->ports = calloc(d->info.num_ports, sizeof(*d->ports));
	if (!d->ports && d->info.num_ports)
		return -1;
	for (i = 0; i < d->info.num_ports; i++)
		if (query_port_gids(fd, index, i + 1, &d->ports[i].info, &d->ports[i].gids))
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

/*
 * Printing: one walk over the module and its devices, both outputs.  Each
 * object has one function that shows every field once, in the JSON order,
 * through the helpers below (as iproute2's rdma tool does): a field is a
 * JSON member, and in human mode a piece of text from its own printf
 * format; a NULL format leaves the field out of the human text, human()
 * prints text that JSON does not have.  The human lines keep two fields
 * later than JSON does (max_mr_size, atomic): those are shown twice, once
 * for each mode.
 */
static bool json_mode;

/*
 * The formats are the callers' literals, each with one conversion of the
 * type of its helper (%llu or %llx; %s).
 */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"

/* A number: member @key (NULL: an array element), human text @fmt (or none). */
static void show_uint(const char *key, const char *fmt, unsigned long long v)
{
	if (json_mode)
		json_u64(key, v);
	else if (fmt)
		printf(fmt, v);
}

/* A string: member @key (NULL: an array element), human text @fmt (or none). */
static void show_str(const char *key, const char *fmt, const char *v)
{
	if (json_mode)
		json_string(key, v);
	else if (fmt)
		printf(fmt, v);
}

#pragma GCC diagnostic pop

/* Text of the human output only. */
static void human(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void human(const char *fmt, ...)
{
	va_list ap;

	if (json_mode)
		return;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
}

/* JSON containers: nothing in human mode. */
static void open_object(const char *key)
{
	if (json_mode)
		json_begin_object(key);
}

static void close_object(void)
{
	if (json_mode)
		json_end_object();
}

static void open_array(const char *key)
{
	if (json_mode)
		json_begin_array(key);
}

static void close_array(void)
{
	if (json_mode)
		json_end_array();
}

/* The module, and in human mode how many devices it sees (@n). */
static void show_module(const struct rdmaxfer_info *mi, int n)
{
	open_object("module");
	show_str("version", "rdmaxfer module %s", mi->version);
	show_uint("abi_version", ", ABI %llu", mi->abi_version);
	human(", %d RDMA device%s\n", n, n == 1 ? "" : "s");
	open_array("features");
	if (mi->features & RDMAXFER_FEATURE_DEVICE_QUERY)
		show_str(NULL, NULL, "device_query");
	if (mi->features & RDMAXFER_FEATURE_TRANSFER)
		show_str(NULL, NULL, "transfer");
	if (mi->features & RDMAXFER_FEATURE_RECV_SLOTS)
		show_str(NULL, NULL, "recv_slots");
	if (mi->features & RDMAXFER_FEATURE_RING)
		show_str(NULL, NULL, "ring");
	if (mi->features & RDMAXFER_FEATURE_SINK_SLOTS)
		show_str(NULL, NULL, "sink_slots");
	close_array();
	show_uint("max_cmd_size", NULL, mi->max_cmd_size);
	if (mi->features & RDMAXFER_FEATURE_TRANSFER) {
		show_uint("max_buf_size", NULL, mi->max_buf_size);
		show_uint("max_window_size", NULL, mi->max_window_size);
		show_uint("max_send_size", NULL, mi->max_send_size);
		show_uint("max_batch", NULL, mi->max_batch);
		show_uint("max_pending", NULL, mi->max_pending);
		show_uint("max_objects", NULL, mi->max_objects);
	}
	close_object();
	if (!n)
		human("  (none: add Soft-RoCE with 'rdma link add rxe0 type rxe netdev NETDEV')\n");
}

/* One GID: a line of its own. */
static void show_gid(const struct rdmaxfer_gid *g)
{
	char addr[INET6_ADDRSTRLEN], ndev[IF_NAMESIZE];

	format_gid(g, addr, ndev);
	open_object(NULL);
	show_uint("index", "    gid %-4llu ", g->index);
	show_str("gid", "%-40s ", addr);
	show_str("type", "%-7s ", NAME_OF(gid_types, g->type));
	show_str("netdev", "%s\n", ndev);
	close_object();
}

/* One port: a line, then its GIDs. */
static void show_port(const struct port *pt)
{
	const struct rdmaxfer_port_info *p = &pt->info;
	uint32_t g;

	open_object(NULL);
	show_uint("port", "  port %llu: ", p->port);
	show_str("state", "%s", NAME_OF(port_states, p->state));
	show_uint("phys_state", NULL, p->phys_state);
	show_str("link_layer", ", %s", NAME_OF(link_layers, p->link_layer));
	show_uint("active_mtu", ", active MTU %llu", p->active_mtu);
	show_uint("max_mtu", " (max %llu)", p->max_mtu);
	show_uint("max_msg_sz", ", max message %llu", p->max_msg_sz);
	show_uint("gid_tbl_len", NULL, p->gid_tbl_len);
	show_uint("lid", NULL, p->lid);
	human(", %u GID%s\n", p->num_gids, p->num_gids == 1 ? "" : "s");
	open_array("gids");
	for (g = 0; g < p->num_gids; g++)
		show_gid(&pt->gids[g]);
	close_array();
	close_object();
}

/* One device: three lines of attributes, then its ports. */
static void show_device(const struct device *dev)
{
	const struct rdmaxfer_device_info *d = &dev->info;
	char guid[24];
	uint32_t p;
	size_t c;

	open_object(NULL);
	show_str("name", "%s: ", d->name);
	show_uint("index", "index %llu", d->index);
	show_str("node_type", ", %s", NAME_OF(node_types, d->node_type));
	format_guid(d->node_guid, guid, sizeof(guid));
	show_str("node_guid", ", node GUID %s", guid);
	format_guid(d->sys_image_guid, guid, sizeof(guid));
	show_str("sys_image_guid", NULL, guid);
	show_uint("vendor_id", ", vendor 0x%llx", d->vendor_id);
	show_uint("vendor_part_id", " part %llu", d->vendor_part_id);
	show_uint("hw_ver", NULL, d->hw_ver);
	open_array("caps");
	human(", caps");
	for (c = 0; c < sizeof(device_caps) / sizeof(device_caps[0]); c++)
		if (d->caps & device_caps[c].bit)
			show_str(NULL, " %s", device_caps[c].name);
	close_array();
	show_str("atomic_cap", NULL, NAME_OF(atomic_caps, d->atomic_cap));
	show_uint("device_cap_flags", NULL, d->device_cap_flags);
	show_uint("max_mr_size", NULL, d->max_mr_size);
	show_uint("page_size_cap", NULL, d->page_size_cap);
	show_uint("max_qp", NULL, d->max_qp);
	show_uint("max_qp_wr", "\n  max_qp_wr %llu", d->max_qp_wr);
	show_uint("max_send_sge", ", max_send_sge %llu", d->max_send_sge);
	show_uint("max_recv_sge", ", max_recv_sge %llu", d->max_recv_sge);
	show_uint("max_sge_rd", ", max_sge_rd %llu", d->max_sge_rd);
	show_uint("max_cq", NULL, d->max_cq);
	show_uint("max_cqe", NULL, d->max_cqe);
	show_uint("max_mr", NULL, d->max_mr);
	show_uint("max_pd", NULL, d->max_pd);
	show_uint("max_qp_rd_atom", ", max_qp_rd_atom %llu\n", d->max_qp_rd_atom);
	show_uint("max_qp_init_rd_atom", NULL, d->max_qp_init_rd_atom);
	show_uint("max_fast_reg_page_list_len", "  max_fast_reg_page_list_len %llu",
		  d->max_fast_reg_page_list_len);
	/* shown to JSON above */
	human(", max_mr_size %llu, atomic %s", (unsigned long long)d->max_mr_size,
	      NAME_OF(atomic_caps, d->atomic_cap));
	show_uint("num_comp_vectors", ", completion vectors %llu\n", d->num_comp_vectors);
	open_array("ports");
	for (p = 0; p < d->num_ports; p++)
		show_port(&dev->ports[p]);
	close_array();
	close_object();
}

/* Everything, human or (@json) one JSON object. */
static void show_info(const struct rdmaxfer_info *mi, const struct device *devs, int n,
		      bool json)
{
	int i;

	json_mode = json;
	open_object(NULL);
	show_module(mi, n);
	open_array("devices");
	for (i = 0; i < n; i++)
		show_device(&devs[i]);
	close_array();
	close_object();
	if (json)
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

	fd = cli_open();
	if (fd < 0)
		return EXIT_FAIL;
	if (cli_get_info(fd, &mi))
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
	show_info(&mi, devs, ndev, json);
	ret = fflush(stdout) ? fail("writing output failed: %s", strerror(errno)) : EXIT_OK;
out:
	for (i = 0; i < ndev; i++)
		free_device(&devs[i]);
	free(devs);
	free(idx);
	close(fd);
	return ret;
}

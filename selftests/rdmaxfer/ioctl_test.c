// SPDX-License-Identifier: GPL-2.0
/*
 * ioctl_test - the /dev/rdmaxfer ioctls, positive and negative.
 *
 * Runs against the loaded module and whatever RDMA devices it sees, with one
 * of them made or named by rxe_env.sh (test_env_try()); without one, the
 * device cases skip.  Built twice: natively and as a 32-bit
 * binary, so the same assertions also cover compat_ioctl.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <net/if.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/rdmaxfer.h>

#include "kselftest_harness.h"
#include "rdmaxfer_test.h"

/* The number of devices (LIST_DEVICES with room for @cap in @idx), or -1. */
static int list_devices(int fd, __u32 *idx, __u32 cap)
{
	__u32 n;

	return rdx_list_devices(fd, idx, cap, &n) ? -1 : (int)n;
}

/* Index of the first device, or -1 if the module sees none. */
static long first_device(int fd)
{
	__u32 idx[8];

	if (list_devices(fd, idx, 8) < 1)
		return -1;
	return idx[0];
}

FIXTURE(dev) {
	int fd;
};

FIXTURE_SETUP(dev)
{
	self->fd = open(DEVPATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd) TH_LOG("open " DEVPATH ": %s", strerror(errno));
}

FIXTURE_TEARDOWN(dev)
{
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(dev, get_info)
{
	struct rdmaxfer_info info = { .size = sizeof(info) };
	int n;

	ASSERT_EQ(0, rdx_ioctl(self->fd, RDMAXFER_IOC_GET_INFO, &info));
	EXPECT_EQ(sizeof(info), info.size);
	EXPECT_EQ(0, info.flags);
	EXPECT_EQ(RDMAXFER_ABI_VERSION, info.abi_version);
	EXPECT_TRUE(info.features & RDMAXFER_FEATURE_DEVICE_QUERY);
	EXPECT_NE(0, info.version[0]);
	EXPECT_TRUE(memchr(info.version, 0, sizeof(info.version)) != NULL);
	EXPECT_LE(sizeof(struct rdmaxfer_device_info), info.max_cmd_size);
	EXPECT_EQ(RDMAXFER_NAME_LEN, info.name_len);
	n = list_devices(self->fd, NULL, 0);
	ASSERT_LE(0, n);
	EXPECT_EQ(n, info.num_devices);
}

TEST_F(dev, short_size_is_einval)
{
	struct rdmaxfer_info info = { 0 };
	__u32 sizes[] = { 0, 4, 8, offsetof(struct rdmaxfer_info, name_len) };
	unsigned int i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		info.size = sizes[i];
		EXPECT_EQ(EINVAL, rdx_ioctl(self->fd, RDMAXFER_IOC_GET_INFO, &info))
			TH_LOG("size %u", sizes[i]);
	}
}

TEST_F(dev, larger_struct_zero_tail_ok)
{
	struct {
		struct rdmaxfer_info info;
		__u64 tail[4];
	} big;

	memset(&big, 0, sizeof(big));
	big.info.size = sizeof(big);
	ASSERT_EQ(0, rdx_ioctl(self->fd, RDMAXFER_IOC_GET_INFO, &big));
	EXPECT_EQ(RDMAXFER_ABI_VERSION, big.info.abi_version);
	/* the kernel writes back only the part it knows */
	EXPECT_EQ(0, big.tail[0] | big.tail[1] | big.tail[2] | big.tail[3]);
}

TEST_F(dev, larger_struct_nonzero_tail_is_e2big)
{
	struct {
		struct rdmaxfer_info info;
		__u64 tail[4];
	} big;

	memset(&big, 0, sizeof(big));
	big.info.size = sizeof(big);
	big.tail[3] = 1;
	EXPECT_EQ(E2BIG, rdx_ioctl(self->fd, RDMAXFER_IOC_GET_INFO, &big));
	EXPECT_EQ(0, big.info.abi_version);	/* nothing written */
}

TEST_F(dev, oversized_struct_is_e2big)
{
	size_t len = 4 * sysconf(_SC_PAGESIZE);
	struct rdmaxfer_info *info;

	info = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(info != MAP_FAILED);
	info->size = len;
	EXPECT_EQ(E2BIG, rdx_ioctl(self->fd, RDMAXFER_IOC_GET_INFO, info));
	munmap(info, len);
}

TEST_F(dev, unknown_flags_are_einval)
{
	struct rdmaxfer_info info = { .size = sizeof(info), .flags = 1 };
	struct rdmaxfer_list_devices ld = { .size = sizeof(ld), .flags = 1u << 31 };
	struct rdmaxfer_device_info di = { .size = sizeof(di), .flags = 2 };
	struct rdmaxfer_port_info pi = { .size = sizeof(pi), .flags = 4, .port = 1 };

	EXPECT_EQ(EINVAL, rdx_ioctl(self->fd, RDMAXFER_IOC_GET_INFO, &info));
	EXPECT_EQ(EINVAL, rdx_ioctl(self->fd, RDMAXFER_IOC_LIST_DEVICES, &ld));
	EXPECT_EQ(EINVAL, rdx_ioctl(self->fd, RDMAXFER_IOC_QUERY_DEVICE, &di));
	EXPECT_EQ(EINVAL, rdx_ioctl(self->fd, RDMAXFER_IOC_QUERY_PORT, &pi));
}

TEST_F(dev, reserved_fields_are_einval)
{
	struct rdmaxfer_list_devices ld = { .size = sizeof(ld), .__reserved = 1 };
	struct rdmaxfer_device_info di = { .size = sizeof(di), .__reserved = 1 };
	long idx = first_device(self->fd);

	EXPECT_EQ(EINVAL, rdx_ioctl(self->fd, RDMAXFER_IOC_LIST_DEVICES, &ld));
	di.index = idx < 0 ? 0 : idx;
	EXPECT_EQ(EINVAL, rdx_ioctl(self->fd, RDMAXFER_IOC_QUERY_DEVICE, &di));
}

TEST_F(dev, unknown_command_is_enotty)
{
	struct rdmaxfer_info info = { .size = sizeof(info) };

	EXPECT_EQ(ENOTTY, rdx_ioctl(self->fd, _IO(RDMAXFER_TYPE, 0x7f), &info));
	EXPECT_EQ(ENOTTY, rdx_ioctl(self->fd, _IO(RDMAXFER_TYPE, 0xff), &info));
	EXPECT_EQ(ENOTTY, rdx_ioctl(self->fd, _IO(RDMAXFER_TYPE - 1, 0), &info));
	/* the right number with size/direction bits is not the command */
	EXPECT_EQ(ENOTTY, rdx_ioctl(self->fd, _IOWR(RDMAXFER_TYPE, RDMAXFER_CMD_GET_INFO,
						      struct rdmaxfer_info), &info));
	EXPECT_EQ(ENOTTY, rdx_ioctl(self->fd, TCGETS, &info));
}

TEST_F(dev, bad_pointers_are_efault)
{
	long page = sysconf(_SC_PAGESIZE);
	struct rdmaxfer_info *ro;
	void *hole;

	EXPECT_EQ(EFAULT, rdx_ioctl(self->fd, RDMAXFER_IOC_GET_INFO, NULL));
	EXPECT_EQ(EFAULT, rdx_ioctl(self->fd, RDMAXFER_IOC_GET_INFO, (void *)16));

	hole = mmap(NULL, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(hole != MAP_FAILED);
	EXPECT_EQ(EFAULT, rdx_ioctl(self->fd, RDMAXFER_IOC_GET_INFO, hole));
	munmap(hole, page);

	/* readable but not writable: the copy back must fail cleanly */
	ro = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(ro != MAP_FAILED);
	ro->size = sizeof(*ro);
	ASSERT_EQ(0, mprotect(ro, page, PROT_READ));
	EXPECT_EQ(EFAULT, rdx_ioctl(self->fd, RDMAXFER_IOC_GET_INFO, ro));
	munmap(ro, page);
}

TEST_F(dev, list_devices_capacity)
{
	__u32 idx[64];
	int n, i;

	n = list_devices(self->fd, NULL, 0);
	ASSERT_LE(0, n);
	if (n == 0)
		SKIP(return, "the module sees no RDMA device");
	ASSERT_GT(64, n);

	memset(idx, 0xa5, sizeof(idx));
	ASSERT_EQ(n, list_devices(self->fd, idx, 64));
	for (i = 1; i < n; i++)
		EXPECT_LT(idx[i - 1], idx[i]);	/* ascending, no duplicates */
	EXPECT_EQ(0xa5a5a5a5, idx[n]);		/* nothing past the count */

	/* a capacity of one writes exactly one entry and still counts all */
	memset(idx, 0xa5, sizeof(idx));
	ASSERT_EQ(n, list_devices(self->fd, idx, 1));
	EXPECT_NE(0xa5a5a5a5, idx[0]);
	EXPECT_EQ(0xa5a5a5a5, idx[1]);
}

TEST_F(dev, list_devices_bad_array_is_efault)
{
	struct rdmaxfer_list_devices ld = {
		.size = sizeof(ld), .count = 4, .indexes = U64_PTR(8),
	};

	if (first_device(self->fd) < 0)
		SKIP(return, "the module sees no RDMA device");
	EXPECT_EQ(EFAULT, rdx_ioctl(self->fd, RDMAXFER_IOC_LIST_DEVICES, &ld));
}

TEST_F(dev, query_device)
{
	struct rdmaxfer_device_info di;
	long idx = first_device(self->fd);

	if (idx < 0)
		SKIP(return, "the module sees no RDMA device");
	memset(&di, 0xa5, sizeof(di));
	di.size = sizeof(di);
	di.flags = 0;
	di.index = idx;
	di.__reserved = 0;
	ASSERT_EQ(0, rdx_ioctl(self->fd, RDMAXFER_IOC_QUERY_DEVICE, &di));
	EXPECT_EQ(idx, di.index);
	EXPECT_LE(1, di.num_ports);
	EXPECT_NE(0, di.name[0]);
	EXPECT_TRUE(memchr(di.name, 0, sizeof(di.name)) != NULL);
	/* the output is fully initialised: no 0xa5 filler survives */
	EXPECT_EQ(0, di.__reserved);
	EXPECT_NE(0xa5a5a5a5u, di.max_qp_wr);
	EXPECT_LT(0, di.max_qp_wr);
	EXPECT_LT(0, di.max_send_sge);
	EXPECT_LT(0, di.max_recv_sge);
	EXPECT_LT(0, di.max_cqe);
	EXPECT_LT(0, di.max_mr_size);
	EXPECT_GE(RDMAXFER_ATOMIC_GLOB, di.atomic_cap);
	EXPECT_EQ(!!(di.caps & RDMAXFER_DEVICE_CAP_ATOMIC),
		  di.atomic_cap != RDMAXFER_ATOMIC_NONE);
	if (di.caps & RDMAXFER_DEVICE_CAP_FRWR)
		EXPECT_LT(0, di.max_fast_reg_page_list_len);
	if (!strncmp(di.name, "rxe", 3)) {
		/* Soft-RoCE: software DMA, fast registration, 512 pages */
		EXPECT_TRUE(di.caps & RDMAXFER_DEVICE_CAP_VIRT_DMA);
		EXPECT_TRUE(di.caps & RDMAXFER_DEVICE_CAP_FRWR);
		EXPECT_EQ(RDMAXFER_NODE_CA, di.node_type);
		EXPECT_EQ(1, di.num_ports);
	}
}

TEST_F(dev, query_unknown_device_is_enodev)
{
	struct rdmaxfer_device_info di = { .size = sizeof(di), .index = 0xfffffff0 };
	struct rdmaxfer_port_info pi = { .size = sizeof(pi), .index = 0xfffffff0, .port = 1 };

	EXPECT_EQ(ENODEV, rdx_ioctl(self->fd, RDMAXFER_IOC_QUERY_DEVICE, &di));
	EXPECT_EQ(ENODEV, rdx_ioctl(self->fd, RDMAXFER_IOC_QUERY_PORT, &pi));
}

/* Does the GID list hold this address (IPv4-mapped or IPv6) on ifindex? */
static int has_gid(const struct rdmaxfer_gid *g, unsigned int n, const char *addr,
		   unsigned int ifindex)
{
	struct in6_addr a6;
	struct in_addr a4;
	unsigned int i;

	memset(&a6, 0, sizeof(a6));
	if (inet_pton(AF_INET, addr, &a4) == 1) {
		a6.s6_addr[10] = 0xff;
		a6.s6_addr[11] = 0xff;
		memcpy(&a6.s6_addr[12], &a4, 4);
	} else if (inet_pton(AF_INET6, addr, &a6) != 1) {
		return 0;
	}
	for (i = 0; i < n; i++)
		if (!memcmp(g[i].raw, &a6, 16) && g[i].ifindex == ifindex)
			return 1;
	return 0;
}

TEST_F(dev, query_port)
{
	struct rdmaxfer_gid gids[64];
	struct rdmaxfer_device_info di = { .size = sizeof(di) };
	struct rdmaxfer_port_info pi = { .size = sizeof(pi), .port = 1 };
	long idx = first_device(self->fd);
	unsigned int i, ifindex;

	if (idx < 0)
		SKIP(return, "the module sees no RDMA device");
	di.index = idx;
	ASSERT_EQ(0, rdx_ioctl(self->fd, RDMAXFER_IOC_QUERY_DEVICE, &di));

	pi.index = idx;
	pi.num_gids = 64;
	pi.gids = U64_PTR(gids);
	memset(gids, 0, sizeof(gids));
	ASSERT_EQ(0, rdx_ioctl(self->fd, RDMAXFER_IOC_QUERY_PORT, &pi));
	EXPECT_EQ(1, pi.port);
	EXPECT_LE(RDMAXFER_PORT_DOWN, pi.state);
	EXPECT_GE(RDMAXFER_PORT_ACTIVE_DEFER, pi.state);
	EXPECT_LE(256, pi.max_mtu);
	EXPECT_GE(4096, pi.max_mtu);
	EXPECT_LE(pi.active_mtu, pi.max_mtu);
	EXPECT_LE(pi.num_gids, pi.gid_tbl_len);
	for (i = 0; i < pi.num_gids && i < 64; i++) {
		EXPECT_GT(pi.gid_tbl_len, gids[i].index);
		EXPECT_GE(RDMAXFER_GID_TYPE_ROCE_V2, gids[i].type);
		EXPECT_EQ(0, gids[i].__reserved);
	}

	if (!test_env()->dev || strcmp(di.name, test_env()->dev))
		return;
	EXPECT_EQ(RDMAXFER_PORT_ACTIVE, pi.state);
	EXPECT_EQ(RDMAXFER_LINK_LAYER_ETHERNET, pi.link_layer);
	ifindex = if_nametoindex(test_env()->netdev);
	if (!ifindex)
		return;
	if (di.node_type == RDMAXFER_NODE_RNIC) {
		/* the test's iWARP device: one GID, its netdev's MAC in bytes 0-5 */
		unsigned char mac[6];
		char path[128];
		FILE *f;

		snprintf(path, sizeof(path), "/sys/class/net/%s/address", test_env()->netdev);
		f = fopen(path, "r");
		ASSERT_TRUE(f != NULL);
		ASSERT_EQ(6, fscanf(f, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &mac[0], &mac[1], &mac[2],
				    &mac[3], &mac[4], &mac[5]));
		fclose(f);
		ASSERT_LE(1, pi.num_gids);
		EXPECT_EQ(0, memcmp(gids[0].raw, mac, 6));
		return;
	}
	/* the test's RoCE device: its netdev's addresses are GIDs, no other's */
	EXPECT_LE(1, pi.num_gids);
	EXPECT_TRUE(has_gid(gids, pi.num_gids, test_env()->addr, ifindex));
	EXPECT_TRUE(has_gid(gids, pi.num_gids, test_env()->addr6, ifindex));
	if (*test_env()->other)
		EXPECT_FALSE(has_gid(gids, pi.num_gids, test_env()->other, ifindex));
}

TEST_F(dev, query_port_capacity)
{
	struct rdmaxfer_port_info pi = { .size = sizeof(pi), .port = 1 };
	struct rdmaxfer_gid gids[2];
	long idx = first_device(self->fd);
	__u32 total;

	if (idx < 0)
		SKIP(return, "the module sees no RDMA device");
	pi.index = idx;
	/* capacity 0 and no array: only the count */
	ASSERT_EQ(0, rdx_ioctl(self->fd, RDMAXFER_IOC_QUERY_PORT, &pi));
	total = pi.num_gids;
	if (total < 2)
		SKIP(return, "port has fewer than two GIDs");

	memset(gids, 0xa5, sizeof(gids));
	pi.num_gids = 1;
	pi.gids = U64_PTR(gids);
	ASSERT_EQ(0, rdx_ioctl(self->fd, RDMAXFER_IOC_QUERY_PORT, &pi));
	EXPECT_EQ(total, pi.num_gids);
	EXPECT_EQ(0, gids[0].__reserved);
	EXPECT_EQ(0xa5a5a5a5u, gids[1].index);	/* nothing past capacity */
}

TEST_F(dev, query_port_bad_args)
{
	struct rdmaxfer_device_info di = { .size = sizeof(di) };
	struct rdmaxfer_port_info pi = { .size = sizeof(pi) };
	long idx = first_device(self->fd);
	__u32 bad_ports[] = { 0, 0, 0xffffffff };
	unsigned int i;

	if (idx < 0)
		SKIP(return, "the module sees no RDMA device");
	di.index = idx;
	ASSERT_EQ(0, rdx_ioctl(self->fd, RDMAXFER_IOC_QUERY_DEVICE, &di));
	bad_ports[1] = di.num_ports + 1;
	for (i = 0; i < 3; i++) {
		memset(&pi, 0, sizeof(pi));
		pi.size = sizeof(pi);
		pi.index = idx;
		pi.port = bad_ports[i];
		EXPECT_EQ(EINVAL, rdx_ioctl(self->fd, RDMAXFER_IOC_QUERY_PORT, &pi))
			TH_LOG("port %u", bad_ports[i]);
	}
	memset(&pi, 0, sizeof(pi));
	pi.size = sizeof(pi);
	pi.index = idx;
	pi.port = 1;
	pi.num_gids = 16;
	pi.gids = U64_PTR(24);
	EXPECT_EQ(EFAULT, rdx_ioctl(self->fd, RDMAXFER_IOC_QUERY_PORT, &pi));
}

TEST_F(dev, not_seekable)
{
	EXPECT_EQ(-1, lseek(self->fd, 0, SEEK_SET));
	EXPECT_EQ(ESPIPE, errno);
}

TEST(device_node_is_root_0600)
{
	struct stat st;

	ASSERT_EQ(0, stat(DEVPATH, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(0600, st.st_mode & 07777);
	EXPECT_EQ(0, st.st_uid);
}

TEST(unprivileged_open_is_eacces)
{
	int status;
	pid_t pid;

	if (getuid() != 0)
		SKIP(return, "needs root to drop to an unprivileged user");
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd;

		if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
			_exit(2);
		fd = open(DEVPATH, O_RDWR);
		_exit(fd < 0 && errno == EACCES ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

int main(int argc, char **argv)
{
	if (access(DEVPATH, F_OK)) {
		ksft_print_header();
		ksft_exit_skip(DEVPATH " missing: rdmaxfer.ko is not loaded\n");
	}
	switch (test_env_try()) {
	case 0:
		break;
	case -2:
		ksft_print_header();
		ksft_exit_fail_msg("%s\n", test_env()->why);
		break;
	default:
		ksft_print_msg("no RDMA device of the test's own (%s): the device cases see what is there\n",
			       test_env()->why);
	}
	return test_harness_run(argc, argv);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * abi_test - pins the layout of uapi/linux/rdmaxfer.h.
 *
 * Every size, offset and command number below is part of the ABI: a change
 * that moves one is an incompatible change and must fail here first.  Built
 * natively and as a 32-bit binary, so the layout is also proven identical
 * for compat callers.  Needs no device and no module.
 */
#include <stddef.h>

#include <linux/rdmaxfer.h>

#include "kselftest_harness.h"

#define OFF(type, field, off) EXPECT_EQ(off, offsetof(struct type, field)) TH_LOG(#type "." #field)

TEST(command_numbers)
{
	EXPECT_EQ(0xE7, RDMAXFER_TYPE);
	EXPECT_EQ(0xE700, RDMAXFER_IOC_GET_INFO);
	EXPECT_EQ(0xE701, RDMAXFER_IOC_LIST_DEVICES);
	EXPECT_EQ(0xE702, RDMAXFER_IOC_QUERY_DEVICE);
	EXPECT_EQ(0xE703, RDMAXFER_IOC_QUERY_PORT);
	EXPECT_EQ(1, RDMAXFER_ABI_VERSION);
	EXPECT_EQ(64, RDMAXFER_NAME_LEN);
}

TEST(info_layout)
{
	EXPECT_EQ(64, sizeof(struct rdmaxfer_info));
	OFF(rdmaxfer_info, size, 0);
	OFF(rdmaxfer_info, flags, 4);
	OFF(rdmaxfer_info, abi_version, 8);
	OFF(rdmaxfer_info, num_devices, 12);
	OFF(rdmaxfer_info, features, 16);
	OFF(rdmaxfer_info, version, 24);
	OFF(rdmaxfer_info, max_cmd_size, 56);
	OFF(rdmaxfer_info, name_len, 60);
}

TEST(list_devices_layout)
{
	EXPECT_EQ(24, sizeof(struct rdmaxfer_list_devices));
	OFF(rdmaxfer_list_devices, size, 0);
	OFF(rdmaxfer_list_devices, flags, 4);
	OFF(rdmaxfer_list_devices, count, 8);
	OFF(rdmaxfer_list_devices, __reserved, 12);
	OFF(rdmaxfer_list_devices, indexes, 16);
}

TEST(device_info_layout)
{
	EXPECT_EQ(200, sizeof(struct rdmaxfer_device_info));
	OFF(rdmaxfer_device_info, size, 0);
	OFF(rdmaxfer_device_info, flags, 4);
	OFF(rdmaxfer_device_info, index, 8);
	OFF(rdmaxfer_device_info, num_ports, 12);
	OFF(rdmaxfer_device_info, name, 16);
	OFF(rdmaxfer_device_info, node_guid, 80);
	OFF(rdmaxfer_device_info, sys_image_guid, 88);
	OFF(rdmaxfer_device_info, max_mr_size, 96);
	OFF(rdmaxfer_device_info, page_size_cap, 104);
	OFF(rdmaxfer_device_info, device_cap_flags, 112);
	OFF(rdmaxfer_device_info, vendor_id, 120);
	OFF(rdmaxfer_device_info, vendor_part_id, 124);
	OFF(rdmaxfer_device_info, hw_ver, 128);
	OFF(rdmaxfer_device_info, node_type, 132);
	OFF(rdmaxfer_device_info, max_qp, 136);
	OFF(rdmaxfer_device_info, max_qp_wr, 140);
	OFF(rdmaxfer_device_info, max_send_sge, 144);
	OFF(rdmaxfer_device_info, max_recv_sge, 148);
	OFF(rdmaxfer_device_info, max_sge_rd, 152);
	OFF(rdmaxfer_device_info, max_cq, 156);
	OFF(rdmaxfer_device_info, max_cqe, 160);
	OFF(rdmaxfer_device_info, max_mr, 164);
	OFF(rdmaxfer_device_info, max_pd, 168);
	OFF(rdmaxfer_device_info, max_qp_rd_atom, 172);
	OFF(rdmaxfer_device_info, max_qp_init_rd_atom, 176);
	OFF(rdmaxfer_device_info, max_fast_reg_page_list_len, 180);
	OFF(rdmaxfer_device_info, atomic_cap, 184);
	OFF(rdmaxfer_device_info, caps, 188);
	OFF(rdmaxfer_device_info, num_comp_vectors, 192);
	OFF(rdmaxfer_device_info, __reserved, 196);
}

TEST(port_info_layout)
{
	EXPECT_EQ(72, sizeof(struct rdmaxfer_port_info));
	OFF(rdmaxfer_port_info, size, 0);
	OFF(rdmaxfer_port_info, flags, 4);
	OFF(rdmaxfer_port_info, index, 8);
	OFF(rdmaxfer_port_info, port, 12);
	OFF(rdmaxfer_port_info, state, 16);
	OFF(rdmaxfer_port_info, phys_state, 20);
	OFF(rdmaxfer_port_info, max_mtu, 24);
	OFF(rdmaxfer_port_info, active_mtu, 28);
	OFF(rdmaxfer_port_info, link_layer, 32);
	OFF(rdmaxfer_port_info, gid_tbl_len, 36);
	OFF(rdmaxfer_port_info, port_cap_flags, 40);
	OFF(rdmaxfer_port_info, max_msg_sz, 44);
	OFF(rdmaxfer_port_info, lid, 48);
	OFF(rdmaxfer_port_info, active_speed, 52);
	OFF(rdmaxfer_port_info, active_width, 56);
	OFF(rdmaxfer_port_info, num_gids, 60);
	OFF(rdmaxfer_port_info, gids, 64);
}

TEST(gid_layout)
{
	EXPECT_EQ(32, sizeof(struct rdmaxfer_gid));
	OFF(rdmaxfer_gid, raw, 0);
	OFF(rdmaxfer_gid, index, 16);
	OFF(rdmaxfer_gid, type, 20);
	OFF(rdmaxfer_gid, ifindex, 24);
	OFF(rdmaxfer_gid, __reserved, 28);
}

TEST_HARNESS_MAIN

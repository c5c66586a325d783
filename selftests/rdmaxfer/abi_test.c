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
	EXPECT_EQ(0xE704, RDMAXFER_IOC_LISTEN);
	EXPECT_EQ(0xE705, RDMAXFER_IOC_ACCEPT);
	EXPECT_EQ(0xE706, RDMAXFER_IOC_CONNECT);
	EXPECT_EQ(0xE707, RDMAXFER_IOC_CLOSE);
	EXPECT_EQ(0xE708, RDMAXFER_IOC_REG_BUF);
	EXPECT_EQ(0xE709, RDMAXFER_IOC_DEREG_BUF);
	EXPECT_EQ(0xE70A, RDMAXFER_IOC_EXPOSE);
	EXPECT_EQ(0xE70B, RDMAXFER_IOC_REVOKE);
	EXPECT_EQ(0xE70C, RDMAXFER_IOC_SUBMIT);
	EXPECT_EQ(0xE70D, RDMAXFER_IOC_REAP);
	EXPECT_EQ(0xE70E, RDMAXFER_IOC_RECV);
	EXPECT_EQ(0xE70F, RDMAXFER_IOC_QUERY_CONN);
	EXPECT_EQ(0xE710, RDMAXFER_IOC_STATS);
	EXPECT_EQ(0xE711, RDMAXFER_IOC_RING_SETUP);
	EXPECT_EQ(1, RDMAXFER_ABI_VERSION);
	EXPECT_EQ(64, RDMAXFER_NAME_LEN);
}

TEST(constants)
{
	EXPECT_EQ(1, RDMAXFER_FEATURE_DEVICE_QUERY);
	EXPECT_EQ(2, RDMAXFER_FEATURE_TRANSFER);
	EXPECT_EQ(8, RDMAXFER_FEATURE_RING);
	EXPECT_EQ(32, RDMAXFER_FEATURE_AUTH);
	EXPECT_EQ(64, RDMAXFER_FEATURE_ALLOW_LIST);
	EXPECT_EQ(16, RDMAXFER_KEY_MIN);
	EXPECT_EQ(256, RDMAXFER_KEY_MAX);
	EXPECT_EQ(64, RDMAXFER_MAX_ALLOW);
	EXPECT_EQ(1, RDMAXFER_RING_QUEUED);
	EXPECT_EQ(18515, RDMAXFER_DEFAULT_PORT);
	EXPECT_EQ(0, RDMAXFER_REJECT_NONE);
	EXPECT_EQ(1, RDMAXFER_REJECT_NOT_RDMAXFER);
	EXPECT_EQ(2, RDMAXFER_REJECT_VERSION);
	EXPECT_EQ(3, RDMAXFER_REJECT_PARAMS);
	EXPECT_EQ(4, RDMAXFER_REJECT_BACKLOG);
	EXPECT_EQ(5, RDMAXFER_REJECT_RESOURCES);
	EXPECT_EQ(6, RDMAXFER_REJECT_UNKNOWN);
	EXPECT_EQ(7, RDMAXFER_REJECT_AUTH_REQUIRED);
	EXPECT_EQ(8, RDMAXFER_REJECT_AUTH_UNAVAILABLE);
	EXPECT_EQ(9, RDMAXFER_REJECT_AUTH_FAILED);
	EXPECT_EQ(10, RDMAXFER_REJECT_NOT_ALLOWED);
	EXPECT_EQ(1, RDMAXFER_BUF_READ);
	EXPECT_EQ(2, RDMAXFER_BUF_WRITE);
	EXPECT_EQ(1, RDMAXFER_REMOTE_READ);
	EXPECT_EQ(2, RDMAXFER_REMOTE_WRITE);
	EXPECT_EQ(4, RDMAXFER_REMOTE_ATOMIC);
	EXPECT_EQ(1, RDMAXFER_OP_WRITE);
	EXPECT_EQ(2, RDMAXFER_OP_READ);
	EXPECT_EQ(3, RDMAXFER_OP_SEND);
	EXPECT_EQ(4, RDMAXFER_OP_WRITE_IMM);
	EXPECT_EQ(5, RDMAXFER_OP_CAS);
	EXPECT_EQ(6, RDMAXFER_OP_FADD);
	EXPECT_EQ(0x100, RDMAXFER_EVENT_WINDOW);
	EXPECT_EQ(0x101, RDMAXFER_EVENT_WINDOW_REVOKED);
	EXPECT_EQ(0x102, RDMAXFER_EVENT_RECV);
	EXPECT_EQ(0x103, RDMAXFER_EVENT_WRITE_IMM);
	EXPECT_EQ(0x104, RDMAXFER_EVENT_DISCONNECTED);
	EXPECT_EQ(0x105, RDMAXFER_EVENT_CONNECTED);
	EXPECT_EQ(1, RDMAXFER_CONN_CONNECTING);
	EXPECT_EQ(2, RDMAXFER_CONN_ESTABLISHED);
	EXPECT_EQ(3, RDMAXFER_CONN_DISCONNECTED);
	/* every opcode indexes the counter arrays */
	EXPECT_GT(sizeof(((struct rdmaxfer_counters *)0)->ops) / sizeof(__u64), RDMAXFER_OP_FADD);
}

TEST(info_layout)
{
	EXPECT_EQ(104, sizeof(struct rdmaxfer_info));
	OFF(rdmaxfer_info, size, 0);
	OFF(rdmaxfer_info, flags, 4);
	OFF(rdmaxfer_info, abi_version, 8);
	OFF(rdmaxfer_info, num_devices, 12);
	OFF(rdmaxfer_info, features, 16);
	OFF(rdmaxfer_info, version, 24);
	OFF(rdmaxfer_info, max_cmd_size, 56);
	OFF(rdmaxfer_info, name_len, 60);
	OFF(rdmaxfer_info, max_buf_size, 64);
	OFF(rdmaxfer_info, max_window_size, 72);
	OFF(rdmaxfer_info, max_send_size, 80);
	OFF(rdmaxfer_info, max_batch, 84);
	OFF(rdmaxfer_info, max_pending, 88);
	OFF(rdmaxfer_info, max_objects, 92);
	OFF(rdmaxfer_info, max_recv_slots, 96);
	OFF(rdmaxfer_info, min_recv_size, 100);
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

TEST(addr_layout)
{
	EXPECT_EQ(24, sizeof(struct rdmaxfer_addr));
	OFF(rdmaxfer_addr, family, 0);
	OFF(rdmaxfer_addr, port, 2);
	OFF(rdmaxfer_addr, scope_id, 4);
	OFF(rdmaxfer_addr, addr, 8);
}

TEST(listen_layout)
{
	EXPECT_EQ(56, sizeof(struct rdmaxfer_listen));
	OFF(rdmaxfer_listen, size, 0);
	OFF(rdmaxfer_listen, flags, 4);
	OFF(rdmaxfer_listen, addr, 8);
	OFF(rdmaxfer_listen, backlog, 32);
	OFF(rdmaxfer_listen, listen_id, 36);
	OFF(rdmaxfer_listen, key_id, 40);
	OFF(rdmaxfer_listen, allow_count, 44);
	OFF(rdmaxfer_listen, allow, 48);
}

TEST(prefix_layout)
{
	EXPECT_EQ(24, sizeof(struct rdmaxfer_prefix));
	OFF(rdmaxfer_prefix, family, 0);
	OFF(rdmaxfer_prefix, prefix_len, 2);
	OFF(rdmaxfer_prefix, __reserved, 3);
	OFF(rdmaxfer_prefix, addr, 8);
}

TEST(accept_layout)
{
	EXPECT_EQ(48, sizeof(struct rdmaxfer_accept));
	OFF(rdmaxfer_accept, size, 0);
	OFF(rdmaxfer_accept, flags, 4);
	OFF(rdmaxfer_accept, listen_id, 8);
	OFF(rdmaxfer_accept, conn_id, 12);
	OFF(rdmaxfer_accept, timeout_ns, 16);
	OFF(rdmaxfer_accept, peer, 24);
}

TEST(connect_layout)
{
	EXPECT_EQ(56, sizeof(struct rdmaxfer_connect));
	OFF(rdmaxfer_connect, size, 0);
	OFF(rdmaxfer_connect, flags, 4);
	OFF(rdmaxfer_connect, addr, 8);
	OFF(rdmaxfer_connect, timeout_ns, 32);
	OFF(rdmaxfer_connect, conn_id, 40);
	OFF(rdmaxfer_connect, reject_reason, 44);
	OFF(rdmaxfer_connect, key_id, 48);
	OFF(rdmaxfer_connect, __reserved, 52);
}

TEST(close_layout)
{
	EXPECT_EQ(16, sizeof(struct rdmaxfer_close));
	OFF(rdmaxfer_close, size, 0);
	OFF(rdmaxfer_close, flags, 4);
	OFF(rdmaxfer_close, id, 8);
	OFF(rdmaxfer_close, __reserved, 12);
}

TEST(reg_buf_layout)
{
	EXPECT_EQ(32, sizeof(struct rdmaxfer_reg_buf));
	OFF(rdmaxfer_reg_buf, size, 0);
	OFF(rdmaxfer_reg_buf, flags, 4);
	OFF(rdmaxfer_reg_buf, addr, 8);
	OFF(rdmaxfer_reg_buf, length, 16);
	OFF(rdmaxfer_reg_buf, access, 24);
	OFF(rdmaxfer_reg_buf, buf_id, 28);
}

TEST(dereg_buf_layout)
{
	EXPECT_EQ(16, sizeof(struct rdmaxfer_dereg_buf));
	OFF(rdmaxfer_dereg_buf, size, 0);
	OFF(rdmaxfer_dereg_buf, flags, 4);
	OFF(rdmaxfer_dereg_buf, buf_id, 8);
	OFF(rdmaxfer_dereg_buf, __reserved, 12);
}

TEST(expose_layout)
{
	EXPECT_EQ(40, sizeof(struct rdmaxfer_expose));
	OFF(rdmaxfer_expose, size, 0);
	OFF(rdmaxfer_expose, flags, 4);
	OFF(rdmaxfer_expose, conn_id, 8);
	OFF(rdmaxfer_expose, buf_id, 12);
	OFF(rdmaxfer_expose, offset, 16);
	OFF(rdmaxfer_expose, length, 24);
	OFF(rdmaxfer_expose, access, 32);
	OFF(rdmaxfer_expose, window_id, 36);
}

TEST(revoke_layout)
{
	EXPECT_EQ(16, sizeof(struct rdmaxfer_revoke));
	OFF(rdmaxfer_revoke, size, 0);
	OFF(rdmaxfer_revoke, flags, 4);
	OFF(rdmaxfer_revoke, window_id, 8);
	OFF(rdmaxfer_revoke, __reserved, 12);
}

TEST(op_layout)
{
	EXPECT_EQ(72, sizeof(struct rdmaxfer_op));
	OFF(rdmaxfer_op, opcode, 0);
	OFF(rdmaxfer_op, flags, 2);
	OFF(rdmaxfer_op, conn_id, 4);
	OFF(rdmaxfer_op, buf_id, 8);
	OFF(rdmaxfer_op, window_id, 12);
	OFF(rdmaxfer_op, buf_offset, 16);
	OFF(rdmaxfer_op, length, 24);
	OFF(rdmaxfer_op, remote_offset, 32);
	OFF(rdmaxfer_op, user_data, 40);
	OFF(rdmaxfer_op, compare_add, 48);
	OFF(rdmaxfer_op, swap, 56);
	OFF(rdmaxfer_op, imm_data, 64);
	OFF(rdmaxfer_op, __reserved, 68);
}

TEST(submit_layout)
{
	EXPECT_EQ(24, sizeof(struct rdmaxfer_submit));
	OFF(rdmaxfer_submit, size, 0);
	OFF(rdmaxfer_submit, flags, 4);
	OFF(rdmaxfer_submit, count, 8);
	OFF(rdmaxfer_submit, op_size, 12);
	OFF(rdmaxfer_submit, ops, 16);
}

TEST(completion_layout)
{
	EXPECT_EQ(48, sizeof(struct rdmaxfer_completion));
	OFF(rdmaxfer_completion, user_data, 0);
	OFF(rdmaxfer_completion, conn_id, 8);
	OFF(rdmaxfer_completion, opcode, 12);
	OFF(rdmaxfer_completion, flags, 14);
	OFF(rdmaxfer_completion, status, 16);
	OFF(rdmaxfer_completion, wc_status, 20);
	OFF(rdmaxfer_completion, bytes, 24);
	OFF(rdmaxfer_completion, value, 32);
	OFF(rdmaxfer_completion, imm_data, 40);
	OFF(rdmaxfer_completion, window_id, 44);
}

TEST(reap_layout)
{
	EXPECT_EQ(32, sizeof(struct rdmaxfer_reap));
	OFF(rdmaxfer_reap, size, 0);
	OFF(rdmaxfer_reap, flags, 4);
	OFF(rdmaxfer_reap, count, 8);
	OFF(rdmaxfer_reap, __reserved, 12);
	OFF(rdmaxfer_reap, timeout_ns, 16);
	OFF(rdmaxfer_reap, completions, 24);
}

TEST(recv_layout)
{
	EXPECT_EQ(24, sizeof(struct rdmaxfer_recv));
	OFF(rdmaxfer_recv, size, 0);
	OFF(rdmaxfer_recv, flags, 4);
	OFF(rdmaxfer_recv, conn_id, 8);
	OFF(rdmaxfer_recv, length, 12);
	OFF(rdmaxfer_recv, addr, 16);
}

TEST(conn_info_layout)
{
	EXPECT_EQ(120, sizeof(struct rdmaxfer_conn_info));
	OFF(rdmaxfer_conn_info, size, 0);
	OFF(rdmaxfer_conn_info, flags, 4);
	OFF(rdmaxfer_conn_info, conn_id, 8);
	OFF(rdmaxfer_conn_info, state, 12);
	OFF(rdmaxfer_conn_info, local, 16);
	OFF(rdmaxfer_conn_info, peer, 40);
	OFF(rdmaxfer_conn_info, dev_index, 64);
	OFF(rdmaxfer_conn_info, port, 68);
	OFF(rdmaxfer_conn_info, queue_depth, 72);
	OFF(rdmaxfer_conn_info, max_send_size, 76);
	OFF(rdmaxfer_conn_info, max_op_size, 80);
	OFF(rdmaxfer_conn_info, max_window_size, 88);
	OFF(rdmaxfer_conn_info, max_msg_size, 96);
	OFF(rdmaxfer_conn_info, conn_flags, 100);
	OFF(rdmaxfer_conn_info, sink_msgs, 104);
	OFF(rdmaxfer_conn_info, sink_bytes, 112);
}

TEST(counters_layout)
{
	EXPECT_EQ(240, sizeof(struct rdmaxfer_counters));
	OFF(rdmaxfer_counters, ops, 0);
	OFF(rdmaxfer_counters, bytes, 64);
	OFF(rdmaxfer_counters, errors, 128);
	OFF(rdmaxfer_counters, recv_msgs, 192);
	OFF(rdmaxfer_counters, recv_bytes, 200);
	OFF(rdmaxfer_counters, writes_imm_in, 208);
	OFF(rdmaxfer_counters, conns, 216);
	OFF(rdmaxfer_counters, conn_errors, 224);
	OFF(rdmaxfer_counters, protocol_errors, 232);
}

TEST(stats_layout)
{
	EXPECT_EQ(560, sizeof(struct rdmaxfer_stats));
	OFF(rdmaxfer_stats, file_auth, 512);
	OFF(rdmaxfer_stats, global_auth, 536);
	EXPECT_EQ(24, sizeof(struct rdmaxfer_auth_counters));
	OFF(rdmaxfer_auth_counters, auth_ok, 0);
	OFF(rdmaxfer_auth_counters, auth_failed, 8);
	OFF(rdmaxfer_auth_counters, not_allowed, 16);
	OFF(rdmaxfer_stats, size, 0);
	OFF(rdmaxfer_stats, flags, 4);
	OFF(rdmaxfer_stats, file, 8);
	OFF(rdmaxfer_stats, global, 248);
	OFF(rdmaxfer_stats, pinned_bytes, 488);
	OFF(rdmaxfer_stats, num_conns, 496);
	OFF(rdmaxfer_stats, num_bufs, 500);
	OFF(rdmaxfer_stats, num_windows, 504);
	OFF(rdmaxfer_stats, __reserved, 508);
}

TEST(ring_layout)
{
	EXPECT_EQ(256, sizeof(struct rdmaxfer_ring));
	OFF(rdmaxfer_ring, head, 0);
	OFF(rdmaxfer_ring, tail, 128);
	OFF(rdmaxfer_ring, mask, 132);
	OFF(rdmaxfer_ring, flags, 136);
	OFF(rdmaxfer_ring, entries, 256);
	EXPECT_EQ(48, sizeof(struct rdmaxfer_completion));
	EXPECT_EQ(24, sizeof(struct rdmaxfer_ring_setup));
	OFF(rdmaxfer_ring_setup, size, 0);
	OFF(rdmaxfer_ring_setup, flags, 4);
	OFF(rdmaxfer_ring_setup, entries, 8);
	OFF(rdmaxfer_ring_setup, __reserved, 12);
	OFF(rdmaxfer_ring_setup, mmap_size, 16);
}

TEST_HARNESS_MAIN

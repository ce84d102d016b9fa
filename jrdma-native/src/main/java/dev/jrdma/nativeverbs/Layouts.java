package dev.jrdma.nativeverbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.PaddingLayout;
import java.lang.foreign.SequenceLayout;
import java.lang.foreign.StructLayout;
import java.lang.foreign.UnionLayout;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The libibverbs structs this binding reads or writes, as {@link MemoryLayout}s (x86-64 / LP64, rdma-core 44).
 * Field names are the C member designators, so {@code offset(SEND_WR, "wr.atomic.rkey")} is
 * {@code offsetof(struct ibv_send_wr, wr.atomic.rkey)}. Anonymous C unions are unnamed union layouts here and
 * are transparent in paths. Members the binding does not touch are left as padding (or named for reference).
 * {@code LayoutConformanceTest} compiles a C program against the installed {@code infiniband/verbs.h} and checks
 * every named field's offset and size against these layouts.
 */
public final class Layouts {
    private Layouts() {}

    /** A field at a fixed offset; {@link #struct} fills the gaps with padding. */
    private record At(long offset, MemoryLayout layout) {}

    private static At at(long offset, MemoryLayout layout, String name) {
        return new At(offset, layout.withName(name));
    }

    private static At at(long offset, MemoryLayout unnamed) {
        return new At(offset, unnamed);
    }

    private static StructLayout struct(String name, long size, At... fields) {
        List<MemoryLayout> members = new ArrayList<>();
        long pos = 0;
        for (At f : fields) {
            if (f.offset < pos)
                throw new IllegalStateException(name + ": field " + f.layout + " overlaps at " + f.offset);
            if (f.offset > pos) members.add(MemoryLayout.paddingLayout(f.offset - pos));
            members.add(f.layout);
            pos = f.offset + f.layout.byteSize();
        }
        if (size > pos) members.add(MemoryLayout.paddingLayout(size - pos));
        StructLayout s = MemoryLayout.structLayout(members.toArray(MemoryLayout[]::new));
        if (s.byteSize() != size) throw new IllegalStateException(name + ": size " + s.byteSize() + " != " + size);
        return name == null ? s : s.withName(name);
    }

    private static UnionLayout union(MemoryLayout... members) {
        return MemoryLayout.unionLayout(members);
    }

    private static SequenceLayout bytes(long n) {
        return MemoryLayout.sequenceLayout(n, JAVA_BYTE);
    }

    static final MemoryLayout U8 = JAVA_BYTE, U16 = JAVA_SHORT, U32 = JAVA_INT, U64 = JAVA_LONG, PTR = ADDRESS;

    // ---------------------------------------------------------------- device, context
    /**
     * {@code struct ibv_device} (664 bytes): a device of {@code ibv_get_device_list}: its node and transport type,
     * kernel name and sysfs paths.
     */
    public static final StructLayout DEVICE = struct(
            "ibv_device",
            664,
            at(16, U32, "node_type"),
            at(20, U32, "transport_type"),
            at(24, bytes(64), "name"),
            at(88, bytes(64), "dev_name"),
            at(152, bytes(256), "dev_path"),
            at(408, bytes(256), "ibdev_path"));

    private static final String[] OPS = {
        "_compat_query_device",
        "_compat_query_port",
        "_compat_alloc_pd",
        "_compat_dealloc_pd",
        "_compat_reg_mr",
        "_compat_rereg_mr",
        "_compat_dereg_mr",
        "alloc_mw",
        "bind_mw",
        "dealloc_mw",
        "_compat_create_cq",
        "poll_cq",
        "req_notify_cq",
        "_compat_cq_event",
        "_compat_resize_cq",
        "_compat_destroy_cq",
        "_compat_create_srq",
        "_compat_modify_srq",
        "_compat_query_srq",
        "_compat_destroy_srq",
        "post_srq_recv",
        "_compat_create_qp",
        "_compat_query_qp",
        "_compat_modify_qp",
        "_compat_destroy_qp",
        "post_send",
        "post_recv",
        "_compat_create_ah",
        "_compat_destroy_ah",
        "_compat_attach_mcast",
        "_compat_detach_mcast",
        "_compat_async_event"
    };

    /**
     * {@code struct ibv_context_ops} (256 bytes): the context's table of provider entry points; the data path calls
     * {@code post_send}, {@code post_recv} and {@code poll_cq} through it, as libibverbs' inline functions do.
     */
    public static final StructLayout CONTEXT_OPS;

    static {
        At[] ops = new At[OPS.length];
        for (int i = 0; i < OPS.length; i++) ops[i] = at(8L * i, PTR, OPS[i]);
        CONTEXT_OPS = struct("ibv_context_ops", 256, ops);
    }

    /**
     * {@code struct ibv_context} (328 bytes): an open device ({@code ibv_open_device}): its device, ops table and the
     * command and async event file descriptors.
     */
    public static final StructLayout CONTEXT = struct(
            "ibv_context",
            328,
            at(0, PTR, "device"),
            at(8, CONTEXT_OPS, "ops"),
            at(264, U32, "cmd_fd"),
            at(268, U32, "async_fd"),
            at(272, U32, "num_comp_vectors"),
            at(320, PTR, "abi_compat"));

    /**
     * {@code struct ibv_device_attr} (232 bytes): what {@code ibv_query_device} fills in: firmware, GUIDs and the
     * device's limits.
     */
    public static final StructLayout DEVICE_ATTR = struct(
            "ibv_device_attr",
            232,
            at(0, bytes(64), "fw_ver"),
            at(64, U64, "node_guid"),
            at(72, U64, "sys_image_guid"),
            at(80, U64, "max_mr_size"),
            at(88, U64, "page_size_cap"),
            at(96, U32, "vendor_id"),
            at(100, U32, "vendor_part_id"),
            at(104, U32, "hw_ver"),
            at(108, U32, "max_qp"),
            at(112, U32, "max_qp_wr"),
            at(116, U32, "device_cap_flags"),
            at(120, U32, "max_sge"),
            at(124, U32, "max_sge_rd"),
            at(128, U32, "max_cq"),
            at(132, U32, "max_cqe"),
            at(136, U32, "max_mr"),
            at(140, U32, "max_pd"),
            at(144, U32, "max_qp_rd_atom"),
            at(148, U32, "max_ee_rd_atom"),
            at(152, U32, "max_res_rd_atom"),
            at(156, U32, "max_qp_init_rd_atom"),
            at(160, U32, "max_ee_init_rd_atom"),
            at(164, U32, "atomic_cap"),
            at(168, U32, "max_ee"),
            at(172, U32, "max_rdd"),
            at(176, U32, "max_mw"),
            at(180, U32, "max_raw_ipv6_qp"),
            at(184, U32, "max_raw_ethy_qp"),
            at(188, U32, "max_mcast_grp"),
            at(192, U32, "max_mcast_qp_attach"),
            at(196, U32, "max_total_mcast_qp_attach"),
            at(200, U32, "max_ah"),
            at(204, U32, "max_fmr"),
            at(208, U32, "max_map_per_fmr"),
            at(212, U32, "max_srq"),
            at(216, U32, "max_srq_wr"),
            at(220, U32, "max_srq_sge"),
            at(224, U16, "max_pkeys"),
            at(226, U8, "local_ca_ack_delay"),
            at(227, U8, "phys_port_cnt"));

    /**
     * {@code struct ibv_device_attr_ex} (400 bytes): what {@code ibv_query_device_ex} fills in: {@code orig_attr} (the
     * base attributes) and the extended capabilities (ODP, timestamps, TSO, RSS, packet pacing, tag matching, CQ
     * moderation, device memory, PCIe atomics).
     */
    public static final StructLayout DEVICE_ATTR_EX = struct(
            "ibv_device_attr_ex",
            400,
            at(0, DEVICE_ATTR, "orig_attr"),
            at(232, U32, "comp_mask"),
            at(
                    240,
                    struct(
                            null,
                            24,
                            at(0, U64, "general_caps"),
                            at(
                                    8,
                                    struct(
                                            null,
                                            12,
                                            at(0, U32, "rc_odp_caps"),
                                            at(4, U32, "uc_odp_caps"),
                                            at(8, U32, "ud_odp_caps")),
                                    "per_transport_caps")),
                    "odp_caps"),
            at(264, U64, "completion_timestamp_mask"),
            at(272, U64, "hca_core_clock"),
            at(280, U64, "device_cap_flags_ex"),
            at(288, struct(null, 8, at(0, U32, "max_tso"), at(4, U32, "supported_qpts")), "tso_caps"),
            at(
                    296,
                    struct(
                            null,
                            32,
                            at(0, U32, "supported_qpts"),
                            at(4, U32, "max_rwq_indirection_tables"),
                            at(8, U32, "max_rwq_indirection_table_size"),
                            at(16, U64, "rx_hash_fields_mask"),
                            at(24, U8, "rx_hash_function")),
                    "rss_caps"),
            at(328, U32, "max_wq_type_rq"),
            at(
                    332,
                    struct(
                            null,
                            12,
                            at(0, U32, "qp_rate_limit_min"),
                            at(4, U32, "qp_rate_limit_max"),
                            at(8, U32, "supported_qpts")),
                    "packet_pacing_caps"),
            at(344, U32, "raw_packet_caps"),
            at(
                    348,
                    struct(
                            null,
                            20,
                            at(0, U32, "max_rndv_hdr_size"),
                            at(4, U32, "max_num_tags"),
                            at(8, U32, "flags"),
                            at(12, U32, "max_ops"),
                            at(16, U32, "max_sge")),
                    "tm_caps"),
            at(368, struct(null, 4, at(0, U16, "max_cq_count"), at(2, U16, "max_cq_period")), "cq_mod_caps"),
            at(376, U64, "max_dm_size"),
            at(
                    384,
                    struct(null, 6, at(0, U16, "fetch_add"), at(2, U16, "swap"), at(4, U16, "compare_swap")),
                    "pci_atomic_caps"),
            at(392, U32, "xrc_odp_caps"),
            at(396, U32, "phys_port_cnt_ex"));

    /**
     * {@code struct verbs_context} ends with {@code query_device_ex}, seven more entry points, a placeholder,
     * {@code sz} and the {@code struct ibv_context} itself; libibverbs grows it at its start, so its tail is the fixed
     * part: {@code query_device_ex} lies this many bytes before the {@code ibv_context} ({@code offsetof(context) -
     * offsetof(query_device_ex)}), valid when {@code abi_compat} is {@link #VERBS_ABI_IS_EXTENDED}.
     */
    public static final long VCTX_QUERY_DEVICE_EX_BACK = 104;
    /** {@code verbs_context.sz} (the provider's size of its verbs_context) lies this many bytes before the context. */
    public static final long VCTX_SZ_BACK = 8;
    /** {@code ibv_context.abi_compat} of a context that is a {@code verbs_context} ({@code (void *)UINTPTR_MAX}). */
    public static final long VERBS_ABI_IS_EXTENDED = -1L;

    /**
     * {@code struct ibv_port_attr} (52 bytes): what {@code ibv_query_port} fills in: state, MTUs, LID, link layer and
     * capability flags.
     */
    public static final StructLayout PORT_ATTR = struct(
            "ibv_port_attr",
            52,
            at(0, U32, "state"),
            at(4, U32, "max_mtu"),
            at(8, U32, "active_mtu"),
            at(12, U32, "gid_tbl_len"),
            at(16, U32, "port_cap_flags"),
            at(20, U32, "max_msg_sz"),
            at(24, U32, "bad_pkey_cntr"),
            at(28, U32, "qkey_viol_cntr"),
            at(32, U16, "pkey_tbl_len"),
            at(34, U16, "lid"),
            at(36, U16, "sm_lid"),
            at(38, U8, "lmc"),
            at(39, U8, "max_vl_num"),
            at(40, U8, "sm_sl"),
            at(41, U8, "subnet_timeout"),
            at(42, U8, "init_type_reply"),
            at(43, U8, "active_width"),
            at(44, U8, "active_speed"),
            at(45, U8, "phys_state"),
            at(46, U8, "link_layer"),
            at(47, U8, "flags"),
            at(48, U16, "port_cap_flags2"));

    /**
     * {@code struct ibv_gid_entry} (32 bytes): one GID table entry of {@code ibv_query_gid_table}/{@code
     * ibv_query_gid_ex}: the GID, its index, port, type and netdev.
     */
    public static final StructLayout GID_ENTRY = struct(
            "ibv_gid_entry",
            32,
            at(0, bytes(16), "gid"),
            at(16, U32, "gid_index"),
            at(20, U32, "port_num"),
            at(24, U32, "gid_type"),
            at(28, U32, "ndev_ifindex"));

    // ---------------------------------------------------------------- PD, MR, MW, channel, CQ, QP objects
    /** {@code struct ibv_pd} (16 bytes): a protection domain ({@code ibv_alloc_pd}). */
    public static final StructLayout PD = struct("ibv_pd", 16, at(0, PTR, "context"), at(8, U32, "handle"));

    /**
     * {@code struct ibv_mr} (48 bytes): a registered memory region ({@code ibv_reg_mr}): its address, length and
     * keys.
     */
    public static final StructLayout MR = struct(
            "ibv_mr",
            48,
            at(0, PTR, "context"),
            at(8, PTR, "pd"),
            at(16, PTR, "addr"),
            at(24, U64, "length"),
            at(32, U32, "handle"),
            at(36, U32, "lkey"),
            at(40, U32, "rkey"));

    /** {@code struct ibv_mw} (32 bytes): a memory window ({@code ibv_alloc_mw}): its rkey and type. */
    public static final StructLayout MW = struct(
            "ibv_mw",
            32,
            at(0, PTR, "context"),
            at(8, PTR, "pd"),
            at(16, U32, "rkey"),
            at(20, U32, "handle"),
            at(24, U32, "type"));

    /**
     * {@code struct ibv_mw_bind_info} (32 bytes): what a window is bound to: region, address, length and access flags
     * (in a bind and a BIND_MW work request).
     */
    public static final StructLayout MW_BIND_INFO = struct(
            "ibv_mw_bind_info",
            32,
            at(0, PTR, "mr"),
            at(8, U64, "addr"),
            at(16, U64, "length"),
            at(24, U32, "mw_access_flags"));

    /** {@code struct ibv_mw_bind} (48 bytes): the argument of {@code ibv_bind_mw} (type 1 windows). */
    public static final StructLayout MW_BIND =
            struct("ibv_mw_bind", 48, at(0, U64, "wr_id"), at(8, U32, "send_flags"), at(16, MW_BIND_INFO, "bind_info"));

    /**
     * {@code struct ibv_comp_channel} (16 bytes): a completion channel ({@code ibv_create_comp_channel}): its file
     * descriptor.
     */
    public static final StructLayout COMP_CHANNEL =
            struct("ibv_comp_channel", 16, at(0, PTR, "context"), at(8, U32, "fd"), at(12, U32, "refcnt"));

    /**
     * {@code struct ibv_cq} (128 bytes): a completion queue ({@code ibv_create_cq}): its capacity and the event
     * counters {@code ibv_destroy_cq} waits for.
     */
    public static final StructLayout CQ = struct(
            "ibv_cq",
            128,
            at(0, PTR, "context"),
            at(8, PTR, "channel"),
            at(16, PTR, "cq_context"),
            at(24, U32, "handle"),
            at(28, U32, "cqe"),
            at(120, U32, "comp_events_completed"),
            at(124, U32, "async_events_completed"));

    /** {@code struct ibv_qp} (160 bytes): a queue pair ({@code ibv_create_qp}): its number, state and type. */
    public static final StructLayout QP = struct(
            "ibv_qp",
            160,
            at(0, PTR, "context"),
            at(8, PTR, "qp_context"),
            at(16, PTR, "pd"),
            at(24, PTR, "send_cq"),
            at(32, PTR, "recv_cq"),
            at(40, PTR, "srq"),
            at(48, U32, "handle"),
            at(52, U32, "qp_num"),
            at(56, U32, "state"),
            at(60, U32, "qp_type"),
            at(152, U32, "events_completed"));

    /** {@code struct ibv_ah} (24 bytes): an address handle ({@code ibv_create_ah}). */
    public static final StructLayout AH =
            struct("ibv_ah", 24, at(0, PTR, "context"), at(8, PTR, "pd"), at(16, U32, "handle"));

    /** {@code struct ibv_srq} (128 bytes): a shared receive queue ({@code ibv_create_srq}). */
    public static final StructLayout SRQ = struct(
            "ibv_srq",
            128,
            at(0, PTR, "context"),
            at(8, PTR, "srq_context"),
            at(16, PTR, "pd"),
            at(24, U32, "handle"),
            at(120, U32, "events_completed"));

    /**
     * {@code struct ibv_srq_attr} (12 bytes): a shared receive queue's size and limit ({@code ibv_modify_srq}, {@code
     * ibv_query_srq}).
     */
    public static final StructLayout SRQ_ATTR =
            struct("ibv_srq_attr", 12, at(0, U32, "max_wr"), at(4, U32, "max_sge"), at(8, U32, "srq_limit"));

    /** {@code struct ibv_srq_init_attr} (24 bytes): the argument of {@code ibv_create_srq}. */
    public static final StructLayout SRQ_INIT_ATTR =
            struct("ibv_srq_init_attr", 24, at(0, PTR, "srq_context"), at(8, SRQ_ATTR, "attr"));

    /** {@code struct ibv_async_event}: the element union (a pointer or the port number), then the type. */
    public static final StructLayout ASYNC_EVENT = struct(
            "ibv_async_event",
            16,
            at(
                    0,
                    union(
                            PTR.withName("cq"),
                            PTR.withName("qp"),
                            PTR.withName("srq"),
                            PTR.withName("wq"),
                            U32.withName("port_num")),
                    "element"),
            at(8, U32, "event_type"));

    /**
     * {@code struct ibv_qp_cap} (20 bytes): a queue pair's capacities: work requests, scatter/gather entries, inline
     * data.
     */
    public static final StructLayout QP_CAP = struct(
            "ibv_qp_cap",
            20,
            at(0, U32, "max_send_wr"),
            at(4, U32, "max_recv_wr"),
            at(8, U32, "max_send_sge"),
            at(12, U32, "max_recv_sge"),
            at(16, U32, "max_inline_data"));

    /**
     * {@code struct ibv_qp_init_attr} (64 bytes): the argument of {@code ibv_create_qp}: CQs, SRQ, capacities, type.
     */
    public static final StructLayout QP_INIT_ATTR = struct(
            "ibv_qp_init_attr",
            64,
            at(0, PTR, "qp_context"),
            at(8, PTR, "send_cq"),
            at(16, PTR, "recv_cq"),
            at(24, PTR, "srq"),
            at(32, QP_CAP, "cap"),
            at(52, U32, "qp_type"),
            at(56, U32, "sq_sig_all"));

    /**
     * {@code struct ibv_global_route} (24 bytes): the GRH part of an address vector: destination GID, flow label,
     * source GID index, hop limit, traffic class.
     */
    public static final StructLayout GLOBAL_ROUTE = struct(
            "ibv_global_route",
            24,
            at(0, bytes(16), "dgid"),
            at(16, U32, "flow_label"),
            at(20, U8, "sgid_index"),
            at(21, U8, "hop_limit"),
            at(22, U8, "traffic_class"));

    /**
     * {@code struct ibv_ah_attr} (32 bytes): an address vector ({@code ibv_create_ah}, a QP's path): GRH, LID,
     * service level, rate, port.
     */
    public static final StructLayout AH_ATTR = struct(
            "ibv_ah_attr",
            32,
            at(0, GLOBAL_ROUTE, "grh"),
            at(24, U16, "dlid"),
            at(26, U8, "sl"),
            at(27, U8, "src_path_bits"),
            at(28, U8, "static_rate"),
            at(29, U8, "is_global"),
            at(30, U8, "port_num"));

    /** {@code struct ibv_qp_attr} (144 bytes): the attributes of {@code ibv_modify_qp} and {@code ibv_query_qp}. */
    public static final StructLayout QP_ATTR = struct(
            "ibv_qp_attr",
            144,
            at(0, U32, "qp_state"),
            at(4, U32, "cur_qp_state"),
            at(8, U32, "path_mtu"),
            at(12, U32, "path_mig_state"),
            at(16, U32, "qkey"),
            at(20, U32, "rq_psn"),
            at(24, U32, "sq_psn"),
            at(28, U32, "dest_qp_num"),
            at(32, U32, "qp_access_flags"),
            at(36, QP_CAP, "cap"),
            at(56, AH_ATTR, "ah_attr"),
            at(88, AH_ATTR, "alt_ah_attr"),
            at(120, U16, "pkey_index"),
            at(122, U16, "alt_pkey_index"),
            at(124, U8, "en_sqd_async_notify"),
            at(125, U8, "sq_draining"),
            at(126, U8, "max_rd_atomic"),
            at(127, U8, "max_dest_rd_atomic"),
            at(128, U8, "min_rnr_timer"),
            at(129, U8, "port_num"),
            at(130, U8, "timeout"),
            at(131, U8, "retry_cnt"),
            at(132, U8, "rnr_retry"),
            at(133, U8, "alt_port_num"),
            at(134, U8, "alt_timeout"),
            at(136, U32, "rate_limit"));

    // ---------------------------------------------------------------- data path
    /** {@code struct ibv_sge} (16 bytes): one scatter/gather element: address, length, lkey. */
    public static final StructLayout SGE =
            struct("ibv_sge", 16, at(0, U64, "addr"), at(8, U32, "length"), at(12, U32, "lkey"));

    /**
     * {@code struct ibv_send_wr} (128 bytes): a send work request ({@code ibv_post_send}) with its RDMA, atomic, UD
     * and memory-window-bind unions.
     */
    public static final StructLayout SEND_WR = struct(
            "ibv_send_wr",
            128,
            at(0, U64, "wr_id"),
            at(8, PTR, "next"),
            at(16, PTR, "sg_list"),
            at(24, U32, "num_sge"),
            at(28, U32, "opcode"),
            at(32, U32, "send_flags"),
            at(36, union(U32.withName("imm_data"), U32.withName("invalidate_rkey"))),
            at(
                    40,
                    union(
                            struct(null, 16, at(0, U64, "remote_addr"), at(8, U32, "rkey"))
                                    .withName("rdma"),
                            struct(
                                            null,
                                            32,
                                            at(0, U64, "remote_addr"),
                                            at(8, U64, "compare_add"),
                                            at(16, U64, "swap"),
                                            at(24, U32, "rkey"))
                                    .withName("atomic"),
                            struct(null, 16, at(0, PTR, "ah"), at(8, U32, "remote_qpn"), at(12, U32, "remote_qkey"))
                                    .withName("ud")),
                    "wr"),
            at(72, union(struct(null, 4, at(0, U32, "remote_srqn")).withName("xrc")), "qp_type"),
            at(
                    80,
                    union(
                            struct(null, 48, at(0, PTR, "mw"), at(8, U32, "rkey"), at(16, MW_BIND_INFO, "bind_info"))
                                    .withName("bind_mw"),
                            struct(null, 16, at(0, PTR, "hdr"), at(8, U16, "hdr_sz"), at(10, U16, "mss"))
                                    .withName("tso"))));

    /**
     * {@code struct ibv_recv_wr} (32 bytes): a receive work request ({@code ibv_post_recv}, {@code
     * ibv_post_srq_recv}).
     */
    public static final StructLayout RECV_WR = struct(
            "ibv_recv_wr", 32, at(0, U64, "wr_id"), at(8, PTR, "next"), at(16, PTR, "sg_list"), at(24, U32, "num_sge"));

    /** {@code struct ibv_wc} (48 bytes): a work completion ({@code ibv_poll_cq}). */
    public static final StructLayout WC = struct(
            "ibv_wc",
            48,
            at(0, U64, "wr_id"),
            at(8, U32, "status"),
            at(12, U32, "opcode"),
            at(16, U32, "vendor_err"),
            at(20, U32, "byte_len"),
            at(24, union(U32.withName("imm_data"), U32.withName("invalidated_rkey"))),
            at(28, U32, "qp_num"),
            at(32, U32, "src_qp"),
            at(36, U32, "wc_flags"),
            at(40, U16, "pkey_index"),
            at(42, U16, "slid"),
            at(44, U8, "sl"),
            at(45, U8, "dlid_path_bits"));

    /** libc {@code struct pollfd}. */
    public static final StructLayout POLLFD =
            struct("pollfd", 8, at(0, U32, "fd"), at(4, U16, "events"), at(6, U16, "revents"));

    /** Every libibverbs struct above (the conformance test checks them all). */
    public static final List<StructLayout> ALL = List.of(
            DEVICE,
            CONTEXT_OPS,
            CONTEXT,
            DEVICE_ATTR,
            DEVICE_ATTR_EX,
            PORT_ATTR,
            GID_ENTRY,
            PD,
            MR,
            MW,
            MW_BIND_INFO,
            MW_BIND,
            COMP_CHANNEL,
            CQ,
            QP,
            QP_CAP,
            QP_INIT_ATTR,
            GLOBAL_ROUTE,
            AH_ATTR,
            QP_ATTR,
            SGE,
            SEND_WR,
            RECV_WR,
            WC,
            SRQ,
            SRQ_ATTR,
            SRQ_INIT_ATTR,
            ASYNC_EVENT,
            AH);

    /**
     * One named field: its C member designator, offset and size.
     *
     * @param path   the member designator, e.g. {@code wr.atomic.rkey}
     * @param offset its offset from the struct's start, in bytes ({@code offsetof})
     * @param size   its size in bytes ({@code sizeof} the member)
     */
    public record Field(String path, long offset, long size) {}

    /**
     * {@return every named field of a struct, nested ones included, in order (anonymous unions are transparent)}
     *
     * @param layout one of this class's layouts
     */
    public static List<Field> fields(GroupLayout layout) {
        List<Field> out = new ArrayList<>();
        walk(layout, "", 0, out);
        return out;
    }

    private static void walk(GroupLayout g, String prefix, long base, List<Field> out) {
        long pos = base;
        for (MemoryLayout m : g.memberLayouts()) {
            long off = g instanceof UnionLayout ? base : pos;
            if (!(m instanceof PaddingLayout)) {
                if (m.name().isPresent()) {
                    String path = prefix + m.name().get();
                    out.add(new Field(path, off, m.byteSize()));
                    if (m instanceof GroupLayout sub) walk(sub, path + ".", off, out);
                } else if (m instanceof GroupLayout sub) {
                    walk(sub, prefix, off, out);
                }
            }
            if (g instanceof StructLayout) pos += m.byteSize();
        }
    }

    private static final Map<GroupLayout, Map<String, Field>> INDEX = new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * {@return {@code offsetof(struct, path)}, in bytes}
     *
     * @param layout one of this class's layouts
     * @param path   a member designator, e.g. {@code wr.atomic.rkey}
     * @throws IllegalArgumentException when the path names no field (a bug in this binding)
     */
    public static long offset(GroupLayout layout, String path) {
        Map<String, Field> idx = INDEX.computeIfAbsent(layout, l -> {
            Map<String, Field> m = new LinkedHashMap<>();
            for (Field f : fields(l)) m.put(f.path(), f);
            return m;
        });
        Field f = idx.get(path);
        if (f == null) throw new IllegalArgumentException(layout.name().orElse("?") + " has no field " + path);
        return f.offset();
    }
}

package dev.jrdma.cli;

import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.Device;
import dev.jrdma.verbs.DeviceAttr;
import dev.jrdma.verbs.DeviceAttrEx;
import dev.jrdma.verbs.GidEntry;
import dev.jrdma.verbs.PortAttr;
import dev.jrdma.verbs.Verbs;
import java.io.PrintStream;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code jrdma devinfo}: what {@code ibv_devinfo} prints, for every provider's devices. */
@Command(name = "devinfo", description = "Show device and port attributes (like ibv_devinfo).")
public final class DevinfoCommand implements Callable<Integer> {
    /** The {@code jrdma devinfo} subcommand; picocli creates it and sets its options from the command line. */
    public DevinfoCommand() {}

    @Option(
            names = {"-d", "--ib-dev"},
            paramLabel = "DEV",
            description = "Only this device (default: all).")
    String deviceName;

    @Option(
            names = {"-i", "--ib-port"},
            paramLabel = "PORT",
            description = "Only this port (default: all).")
    int port;

    @Option(
            names = {"-v", "--verbose"},
            description = "Print all the attributes and the GID table.")
    boolean verbose;

    @Option(
            names = {"-l", "--list"},
            description = "Only list the device names.")
    boolean list;

    @Override
    public Integer call() {
        List<Device> devices = deviceName != null ? List.of(Verbs.device(deviceName)) : Verbs.devices();
        PrintStream out = System.out;
        if (list) {
            out.printf("%d HCA%s found:%n", devices.size(), devices.size() == 1 ? "" : "s");
            for (Device d : devices) out.println("\t" + d.name());
            return 0;
        }
        if (devices.isEmpty()) {
            out.println("No IB devices found");
            return 255;
        }
        for (Device d : devices) print(out, d, port, verbose);
        return 0;
    }

    static String guid(long g) {
        String h = String.format("%016x", g);
        return h.substring(0, 4) + ":" + h.substring(4, 8) + ":" + h.substring(8, 12) + ":" + h.substring(12);
    }

    static void print(PrintStream out, Device d, int onlyPort, boolean verbose) {
        try (Context ctx = d.open()) {
            DeviceAttr a = ctx.queryDevice();
            out.printf("hca_id:\t%s%n", d.name());
            out.printf("\ttransport:\t\t\t%s (%d)%n", transportName(d), d.transportType().code);
            if (!ctx.linkDescription().isEmpty())
                out.printf(
                        "\tlink:\t\t\t\t%s%n",
                        ctx.linkDescription()); // the software device's socket and same-host ring
            if (!a.fwVer().isEmpty()) out.printf("\tfw_ver:\t\t\t\t%s%n", a.fwVer());
            out.printf("\tnode_guid:\t\t\t%s%n", guid(a.nodeGuid()));
            out.printf("\tsys_image_guid:\t\t\t%s%n", guid(a.sysImageGuid()));
            out.printf("\tvendor_id:\t\t\t0x%04x%n", a.vendorId());
            out.printf("\tvendor_part_id:\t\t\t%d%n", a.vendorPartId());
            out.printf("\thw_ver:\t\t\t\t0x%X%n", a.hwVer());
            String board = boardId(d.name());
            if (board != null) out.printf("\tboard_id:\t\t\t%s%n", board);
            out.printf("\tphys_port_cnt:\t\t\t%d%n", a.physPortCnt());
            if (verbose) {
                // the software device's congestion control settings (jrdma.soft.* properties)
                for (var e : ctx.providerSettings().entrySet())
                    out.printf(
                            "\t%s:%s%s%n",
                            e.getKey(), "\t".repeat(Math.max(1, 4 - (e.getKey().length() + 2) / 8)), e.getValue());
                out.printf("\tmax_mr_size:\t\t\t0x%x%n", a.maxMrSize());
                out.printf("\tpage_size_cap:\t\t\t0x%x%n", a.pageSizeCap());
                out.printf("\tmax_qp:\t\t\t\t%d%n", a.maxQp());
                out.printf("\tmax_qp_wr:\t\t\t%d%n", a.maxQpWr());
                out.printf("\tdevice_cap_flags:\t\t0x%08x%n", a.deviceCapFlags());
                printCapFlags(out, a.deviceCapFlags());
                out.printf("\tmax_sge:\t\t\t%d%n", a.maxSge());
                out.printf("\tmax_sge_rd:\t\t\t%d%n", a.maxSgeRd());
                out.printf("\tmax_cq:\t\t\t\t%d%n", a.maxCq());
                out.printf("\tmax_cqe:\t\t\t%d%n", a.maxCqe());
                out.printf("\tmax_mr:\t\t\t\t%d%n", a.maxMr());
                out.printf("\tmax_pd:\t\t\t\t%d%n", a.maxPd());
                out.printf("\tmax_qp_rd_atom:\t\t\t%d%n", a.maxQpRdAtom());
                out.printf("\tmax_ee_rd_atom:\t\t\t%d%n", a.maxEeRdAtom());
                out.printf("\tmax_res_rd_atom:\t\t%d%n", a.maxResRdAtom());
                out.printf("\tmax_qp_init_rd_atom:\t\t%d%n", a.maxQpInitRdAtom());
                out.printf("\tmax_ee_init_rd_atom:\t\t%d%n", a.maxEeInitRdAtom());
                out.printf(
                        "\tatomic_cap:\t\t\t%s (%d)%n",
                        a.atomicCap().ibvName(), a.atomicCap().ordinal());
                out.printf("\tmax_ee:\t\t\t\t%d%n", a.maxEe());
                out.printf("\tmax_rdd:\t\t\t%d%n", a.maxRdd());
                out.printf("\tmax_mw:\t\t\t\t%d%n", a.maxMw());
                out.printf("\tmax_raw_ipv6_qp:\t\t%d%n", a.maxRawIpv6Qp());
                out.printf("\tmax_raw_ethy_qp:\t\t%d%n", a.maxRawEthyQp());
                out.printf("\tmax_mcast_grp:\t\t\t%d%n", a.maxMcastGrp());
                out.printf("\tmax_mcast_qp_attach:\t\t%d%n", a.maxMcastQpAttach());
                out.printf("\tmax_total_mcast_qp_attach:\t%d%n", a.maxTotalMcastQpAttach());
                out.printf("\tmax_ah:\t\t\t\t%d%n", a.maxAh());
                out.printf("\tmax_fmr:\t\t\t%d%n", a.maxFmr());
                if (a.maxFmr() > 0) out.printf("\tmax_map_per_fmr:\t\t%d%n", a.maxMapPerFmr());
                out.printf("\tmax_srq:\t\t\t%d%n", a.maxSrq());
                if (a.maxSrq() > 0) {
                    out.printf("\tmax_srq_wr:\t\t\t%d%n", a.maxSrqWr());
                    out.printf("\tmax_srq_sge:\t\t\t%d%n", a.maxSrqSge());
                }
                out.printf("\tmax_pkeys:\t\t\t%d%n", a.maxPkeys());
                out.printf("\tlocal_ca_ack_delay:\t\t%d%n", a.localCaAckDelay());
                printExtended(out, ctx.queryDeviceEx());
                out.printf("\tnum_comp_vectors:\t\t%d%n", ctx.numCompVectors());
            }
            for (int p = 1; p <= a.physPortCnt(); p++) {
                if (onlyPort != 0 && p != onlyPort) continue;
                PortAttr pa = ctx.queryPort(p);
                out.printf("\t\tport:\t%d%n", p);
                out.printf("\t\t\tstate:\t\t\t%s (%d)%n", pa.state().ibvName(), pa.state().code);
                out.printf("\t\t\tmax_mtu:\t\t%s (%d)%n", pa.maxMtu(), pa.maxMtu().code);
                out.printf("\t\t\tactive_mtu:\t\t%s (%d)%n", pa.activeMtu(), pa.activeMtu().code);
                out.printf("\t\t\tsm_lid:\t\t\t%d%n", pa.smLid());
                out.printf("\t\t\tport_lid:\t\t%d%n", pa.lid());
                out.printf("\t\t\tport_lmc:\t\t0x%02x%n", pa.lmc());
                out.printf("\t\t\tlink_layer:\t\t%s%n", pa.linkLayer().ibvName());
                if (verbose) {
                    out.printf("\t\t\tmax_msg_sz:\t\t0x%x%n", pa.maxMsgSz());
                    out.printf("\t\t\tport_cap_flags:\t\t0x%08x%n", pa.portCapFlags());
                    out.printf("\t\t\tport_cap_flags2:\t0x%04x%n", pa.portCapFlags2());
                    out.printf("\t\t\tmax_vl_num:\t\t%s (%d)%n", vlName(pa.maxVlNum()), pa.maxVlNum());
                    out.printf("\t\t\tbad_pkey_cntr:\t\t0x%x%n", pa.badPkeyCntr());
                    out.printf("\t\t\tqkey_viol_cntr:\t\t0x%x%n", pa.qkeyViolCntr());
                    out.printf("\t\t\tsm_sl:\t\t\t%d%n", pa.smSl());
                    out.printf("\t\t\tpkey_tbl_len:\t\t%d%n", pa.pkeyTblLen());
                    out.printf("\t\t\tgid_tbl_len:\t\t%d%n", pa.gidTblLen());
                    out.printf("\t\t\tsubnet_timeout:\t\t%d%n", pa.subnetTimeout());
                    out.printf("\t\t\tinit_type_reply:\t%d%n", pa.initTypeReply());
                    out.printf("\t\t\tactive_width:\t\t%s%n", width(pa.activeWidth()));
                    out.printf("\t\t\tactive_speed:\t\t%s%n", speed(pa.activeSpeed()));
                    out.printf("\t\t\tphys_state:\t\t%s (%d)%n", pa.physStateName(), pa.physState());
                    for (GidEntry g : ctx.gidTable(p)) {
                        out.printf(
                                "\t\t\tGID[%3d]:\t\t%s%s%n",
                                g.index(), ipv6Text(g.gid().toByteArray()), g.type() == null ? "" : ", " + g.type());
                    }
                }
                out.println();
            }
        }
    }

    /** The sysfs board_id of a kernel device (ibv_devinfo prints it when it can read it), or null. */
    static String boardId(String device) {
        try {
            java.nio.file.Path p = java.nio.file.Path.of("/sys/class/infiniband", device, "board_id");
            if (!java.nio.file.Files.isReadable(p)) return null;
            String v = java.nio.file.Files.readString(p).strip();
            return v.isEmpty() ? null : v;
        } catch (java.io.IOException | RuntimeException e) {
            return null;
        }
    }

    /**
     * The part of ibv_devinfo -v that comes from ibv_query_device_ex, in its order and formats (rdma-core 44's
     * devinfo.c): the native provider reads them with ibv_query_device_ex, the software device has none of these
     * features and reports each absent.
     */
    static void printExtended(PrintStream out, DeviceAttrEx x) {
        out.printf("\tgeneral_odp_caps:%n");
        if ((x.odpGeneralCaps() & 1) != 0) out.printf("\t\t\t\t\tODP_SUPPORT%n");
        if ((x.odpGeneralCaps() & 2) != 0) out.printf("\t\t\t\t\tODP_SUPPORT_IMPLICIT%n");
        if ((x.odpGeneralCaps() & ~3L) != 0) out.printf("\t\t\t\t\tUnknown flags: 0x%X%n", x.odpGeneralCaps() & ~3L);
        printOdpTransport(out, "rc_odp_caps", x.rcOdpCaps());
        printOdpTransport(out, "uc_odp_caps", x.ucOdpCaps());
        printOdpTransport(out, "ud_odp_caps", x.udOdpCaps());
        printOdpTransport(out, "xrc_odp_caps", x.xrcOdpCaps());
        if (x.completionTimestampMask() != 0)
            out.printf("\tcompletion timestamp_mask:\t\t\t0x%016x%n", x.completionTimestampMask());
        else out.printf("\tcompletion_timestamp_mask not supported%n");
        if (x.hcaCoreClockKhz() != 0)
            out.printf("\thca_core_clock:\t\t\t%skHZ%n", Long.toUnsignedString(x.hcaCoreClockKhz()));
        else out.printf("\tcore clock not supported%n");
        if (x.rawPacketCaps() != 0) {
            out.printf("\traw packet caps:%n");
            if ((x.rawPacketCaps() & 1) != 0) out.printf("\t\t\t\t\tC-VLAN stripping offload%n");
            if ((x.rawPacketCaps() & 2) != 0) out.printf("\t\t\t\t\tScatter FCS offload%n");
            if ((x.rawPacketCaps() & 4) != 0) out.printf("\t\t\t\t\tIP csum offload%n");
            if ((x.rawPacketCaps() & 8) != 0) out.printf("\t\t\t\t\tDelay drop%n");
        }
        out.printf("\tdevice_cap_flags_ex:\t\t0x%X%n", x.deviceCapFlagsEx());
        long ex = x.deviceCapFlagsEx() & 0xffffffff00000000L;
        if ((ex & (1L << 34)) != 0) out.printf("\t\t\t\t\tRAW_SCATTER_FCS%n");
        if ((ex & (1L << 36)) != 0) out.printf("\t\t\t\t\tPCI_WRITE_END_PADDING%n");
        if ((ex & ~((1L << 34) | (1L << 36))) != 0)
            out.printf("\t\t\t\t\tUnknown flags: 0x%X%n", ex & ~((1L << 34) | (1L << 36)));
        out.printf("\ttso_caps:%n");
        out.printf("\t\tmax_tso:\t\t\t%d%n", x.maxTso());
        if (x.maxTso() != 0) printQpTypes(out, x.tsoSupportedQpts());
        out.printf("\trss_caps:%n");
        out.printf("\t\tmax_rwq_indirection_tables:\t\t\t%s%n", Integer.toUnsignedString(x.maxRwqIndirectionTables()));
        out.printf(
                "\t\tmax_rwq_indirection_table_size:\t\t\t%s%n",
                Integer.toUnsignedString(x.maxRwqIndirectionTableSize()));
        out.printf("\t\trx_hash_function:\t\t\t\t0x%x%n", x.rxHashFunction());
        out.printf("\t\trx_hash_fields_mask:\t\t\t\t0x%X%n", x.rxHashFieldsMask());
        if (x.rssSupportedQpts() != 0) printQpTypes(out, x.rssSupportedQpts());
        out.printf("\tmax_wq_type_rq:\t\t\t%s%n", Integer.toUnsignedString(x.maxWqTypeRq()));
        out.printf("\tpacket_pacing_caps:%n");
        out.printf("\t\tqp_rate_limit_min:\t%skbps%n", Integer.toUnsignedString(x.qpRateLimitMin()));
        out.printf("\t\tqp_rate_limit_max:\t%skbps%n", Integer.toUnsignedString(x.qpRateLimitMax()));
        if (x.qpRateLimitMax() != 0) printQpTypes(out, x.pacingSupportedQpts());
        if (x.tmMaxNumTags() != 0) {
            out.printf("\tmax_rndv_hdr_size:\t\t%s%n", Integer.toUnsignedString(x.tmMaxRndvHdrSize()));
            out.printf("\tmax_num_tags:\t\t\t%s%n", Integer.toUnsignedString(x.tmMaxNumTags()));
            out.printf("\tmax_ops:\t\t\t%s%n", Integer.toUnsignedString(x.tmMaxOps()));
            out.printf("\tmax_sge:\t\t\t%s%n", Integer.toUnsignedString(x.tmMaxSge()));
            out.printf("\tflags:%n");
            if ((x.tmFlags() & 1) != 0) out.printf("\t\t\t\t\tIBV_TM_CAP_RC%n");
        } else out.printf("\ttag matching not supported%n");
        if (x.maxCqCount() != 0 && x.maxCqPeriodUs() != 0) {
            out.printf("%n\tcq moderation caps:%n");
            out.printf("\t\tmax_cq_count:\t%d%n", x.maxCqCount());
            out.printf("\t\tmax_cq_period:\t%d us%n%n", x.maxCqPeriodUs());
        }
        if (x.maxDmSize() != 0)
            out.printf("\tmaximum available device memory:\t%sBytes%n%n", Long.toUnsignedString(x.maxDmSize()));
    }

    /** The supported_qp list of tso/rss/packet pacing caps: RAW_PACKET (ibv_qp_type 8) and UD (4). */
    private static void printQpTypes(PrintStream out, int qpts) {
        out.printf("\t\tsupported_qp:%n");
        if ((qpts & (1 << 8)) != 0) out.printf("\t\t\t\t\tSUPPORT_RAW_PACKET%n");
        if ((qpts & (1 << 4)) != 0) out.printf("\t\t\t\t\tSUPPORT_UD%n");
        int unknown = qpts & ~((1 << 8) | (1 << 4));
        if (unknown != 0) out.printf("\t\t\t\t\tUnknown flags: 0x%X%n", unknown);
    }

    private static void printOdpTransport(PrintStream out, String name, int caps) {
        out.printf("\t%s:%n", name);
        if (caps == 0) {
            out.printf("\t\t\t\t\tNO SUPPORT%n");
            return;
        }
        String[] names = {
            "SUPPORT_SEND", "SUPPORT_RECV", "SUPPORT_WRITE", "SUPPORT_READ", "SUPPORT_ATOMIC", "SUPPORT_SRQ"
        };
        for (int bit = 0; bit < names.length; bit++)
            if ((caps & (1 << bit)) != 0) out.printf("\t\t\t\t\t%s%n", names[bit]);
        if ((caps & ~0x3f) != 0) out.printf("\t\t\t\t\tUnknown flags: 0x%X%n", caps & ~0x3f);
    }

    /** ibv_devinfo's names of the device_cap_flags bits ({@code enum ibv_device_cap_flags}), one per line. */
    private static final String[] CAP_FLAG_NAMES = new String[32];

    static {
        String[][] names = {
            {"0", "RESIZE_MAX_WR"},
            {"1", "BAD_PKEY_CNTR"},
            {"2", "BAD_QKEY_CNTR"},
            {"3", "RAW_MULTI"},
            {"4", "AUTO_PATH_MIG"},
            {"5", "CHANGE_PHY_PORT"},
            {"6", "UD_AV_PORT_ENFORCE"},
            {"7", "CURR_QP_STATE_MOD"},
            {"8", "SHUTDOWN_PORT"},
            {"9", "INIT_TYPE"},
            {"10", "PORT_ACTIVE_EVENT"},
            {"11", "SYS_IMAGE_GUID"},
            {"12", "RC_RNR_NAK_GEN"},
            {"13", "SRQ_RESIZE"},
            {"14", "N_NOTIFY_CQ"},
            {"17", "MEM_WINDOW"},
            {"18", "UD_IP_CSUM"},
            {"20", "XRC"},
            {"21", "MEM_MGT_EXTENSIONS"},
            {"23", "MEM_WINDOW_TYPE_2A"},
            {"24", "MEM_WINDOW_TYPE_2B"},
            {"25", "RC_IP_CSUM"},
            {"26", "RAW_IP_CSUM"},
            {"29", "MANAGED_FLOW_STEERING"}
        };
        for (String[] n : names) CAP_FLAG_NAMES[Integer.parseInt(n[0])] = n[1];
    }

    private static void printCapFlags(PrintStream out, int flags) {
        int unknown = 0;
        for (int bit = 0; bit < 32; bit++) {
            if ((flags & (1 << bit)) == 0) continue;
            if (CAP_FLAG_NAMES[bit] != null) out.printf("\t\t\t\t\t%s%n", CAP_FLAG_NAMES[bit]);
            else unknown |= 1 << bit;
        }
        if (unknown != 0) out.printf("\t\t\t\t\tUnknown flags: 0x%08x%n", unknown);
    }

    /** ibv_devinfo's text for max_vl_num (the IBA VLCap encoding). */
    private static String vlName(int code) {
        return switch (code) {
            case 1 -> "1";
            case 2 -> "2";
            case 3 -> "4";
            case 4 -> "8";
            case 5 -> "15";
            default -> "invalid value";
        };
    }

    /**
     * An IPv6 address as glibc's inet_ntop writes it (ibv_devinfo prints GIDs with it): the longest run of two or
     * more zero groups as "::", and a dotted IPv4 tail for IPv4-mapped and IPv4-compatible addresses.
     */
    static String ipv6Text(byte[] a) {
        int[] w = new int[8];
        for (int i = 0; i < 8; i++) w[i] = ((a[2 * i] & 0xFF) << 8) | (a[2 * i + 1] & 0xFF);
        int bestBase = -1, bestLen = 0;
        for (int i = 0; i < 8; ) {
            if (w[i] != 0) {
                i++;
                continue;
            }
            int j = i;
            while (j < 8 && w[j] == 0) j++;
            if (j - i > bestLen) {
                bestBase = i;
                bestLen = j - i;
            }
            i = j;
        }
        if (bestLen < 2) bestBase = -1;
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 8; i++) {
            if (bestBase >= 0 && i >= bestBase && i < bestBase + bestLen) {
                if (i == bestBase) sb.append(':');
                continue;
            }
            if (i != 0) sb.append(':');
            if (i == 6
                    && bestBase == 0
                    && (bestLen == 6 || (bestLen == 7 && w[7] != 1) || (bestLen == 5 && w[5] == 0xFFFF))) {
                sb.append(a[12] & 0xFF)
                        .append('.')
                        .append(a[13] & 0xFF)
                        .append('.')
                        .append(a[14] & 0xFF)
                        .append('.')
                        .append(a[15] & 0xFF);
                return sb.toString();
            }
            sb.append(Integer.toHexString(w[i]));
        }
        if (bestBase >= 0 && bestBase + bestLen == 8) sb.append(':');
        return sb.toString();
    }

    private static String transportName(Device d) {
        return switch (d.transportType()) {
            case IB -> "InfiniBand";
            case IWARP -> "iWARP";
            case USNIC -> "usNIC";
            case USNIC_UDP -> "usNIC UDP";
            case UNSPECIFIED -> "unspecified";
            case UNKNOWN -> "invalid transport";
        };
    }

    private static String width(int w) {
        return switch (w) {
            case 1 -> "1X (1)";
            case 2 -> "4X (2)";
            case 4 -> "8X (4)";
            case 8 -> "12X (8)";
            case 16 -> "2X (16)";
            default -> "invalid width (" + w + ")";
        };
    }

    private static String speed(int s) {
        return switch (s) {
            case 1 -> "2.5 Gbps (1)";
            case 2 -> "5.0 Gbps (2)";
            case 4, 8 -> "10.0 Gbps (" + s + ")";
            case 16 -> "14.0 Gbps (16)";
            case 32 -> "25.0 Gbps (32)";
            case 64 -> "50.0 Gbps (64)";
            case 128 -> "100.0 Gbps (128)";
            default -> "invalid speed (" + s + ")";
        };
    }
}

package dev.jrdma.verbs;

/**
 * Port attributes ({@code struct ibv_port_attr} from {@code ibv_query_port}), the fields {@code ibv_devinfo} prints per
 * port. The InfiniBand subnet fields (LIDs, SM, VLs) are 0 on RoCE.
 *
 * @param state         the logical port state ({@code state})
 * @param maxMtu        the largest MTU the port supports ({@code max_mtu})
 * @param activeMtu     the MTU in use ({@code active_mtu}): on RoCE the largest that fits the interface MTU; the
 *                      ceiling for a QP's path MTU
 * @param gidTblLen     the number of entries of the GID table ({@code gid_tbl_len})
 * @param portCapFlags  the {@code IBV_PORT_*} capability bits ({@code port_cap_flags})
 * @param maxMsgSz      the largest message, in bytes ({@code max_msg_sz})
 * @param badPkeyCntr   the count of packets dropped for a bad P_Key ({@code bad_pkey_cntr})
 * @param qkeyViolCntr  the count of UD packets dropped for a wrong Q_Key ({@code qkey_viol_cntr})
 * @param pkeyTblLen    the number of entries of the P_Key table ({@code pkey_tbl_len})
 * @param lid           the base LID the subnet manager gave the port ({@code lid}; InfiniBand)
 * @param smLid         the LID of the subnet manager ({@code sm_lid}; InfiniBand)
 * @param lmc           the LID mask control: the port answers to 2<sup>lmc</sup> LIDs from {@code lid} ({@code lmc})
 * @param maxVlNum      the data virtual lanes, as a code ({@code max_vl_num}): 1 = VL0, 2 = VL0-1, 3 = VL0-3, 4 = VL0-7,
 *                      5 = VL0-14
 * @param smSl          the service level to reach the subnet manager ({@code sm_sl})
 * @param subnetTimeout the subnet propagation delay as an exponent: 4.096 µs × 2<sup>n</sup> ({@code subnet_timeout})
 * @param initTypeReply what the subnet manager set in the port's InitTypeReply ({@code init_type_reply})
 * @param activeWidth   the link width code ({@code active_width}): 1 = 1x, 2 = 4x, 4 = 8x, 8 = 12x, 16 = 2x
 * @param activeSpeed   the per-lane speed code ({@code active_speed}): 1 = SDR 2.5 Gb/s, 2 = DDR 5, 4 = QDR 10,
 *                      8 = FDR10, 16 = FDR 14, 32 = EDR 25, 64 = HDR 50, 128 = NDR 100
 * @param physState     the physical port state ({@code phys_state}), 1..7: see {@link #physStateName()}
 * @param linkLayer     what the port runs on ({@code link_layer})
 * @param portCapFlags2 the {@code IBV_PORT_*2} capability bits of the second mask ({@code port_cap_flags2})
 */
public record PortAttr(
        PortState state,
        Mtu maxMtu,
        Mtu activeMtu,
        int gidTblLen,
        int portCapFlags,
        long maxMsgSz,
        int badPkeyCntr,
        int qkeyViolCntr,
        int pkeyTblLen,
        int lid,
        int smLid,
        int lmc,
        int maxVlNum,
        int smSl,
        int subnetTimeout,
        int initTypeReply,
        int activeWidth,
        int activeSpeed,
        int physState,
        LinkLayer linkLayer,
        int portCapFlags2) {

    /** {@return the physical port state as {@code ibv_devinfo} prints it, e.g. {@code LINK_UP} for 5} */
    public String physStateName() {
        return switch (physState) {
            case 1 -> "SLEEP";
            case 2 -> "POLLING";
            case 3 -> "DISABLED";
            case 4 -> "PORT_CONFIGURATION TRAINING";
            case 5 -> "LINK_UP";
            case 6 -> "LINK_ERROR_RECOVERY";
            case 7 -> "PHY TEST";
            default -> "invalid physical port state";
        };
    }
}

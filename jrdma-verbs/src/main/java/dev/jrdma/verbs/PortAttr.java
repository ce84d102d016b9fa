package dev.jrdma.verbs;

/** Port attributes ({@code struct ibv_port_attr}), the fields {@code ibv_devinfo} prints per port. */
public record PortAttr(
        PortState state, Mtu maxMtu, Mtu activeMtu, int gidTblLen, int portCapFlags, long maxMsgSz,
        int badPkeyCntr, int qkeyViolCntr, int pkeyTblLen, int lid, int smLid, int lmc, int maxVlNum,
        int smSl, int subnetTimeout, int initTypeReply, int activeWidth, int activeSpeed, int physState,
        LinkLayer linkLayer, int portCapFlags2) {

    /** Physical port state as ibv_devinfo prints it. */
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

package dev.jrdma.verbs;

/**
 * One entry of a port's GID table, as {@link Context#gidTable(int)} lists it.
 *
 * @param port   the port, from 1
 * @param index  the entry's index in the table (a QP's {@link AhAttr#sgidIndex})
 * @param gid    the GID
 * @param type   "IB/RoCE v1" or "RoCE v2" as ibv_devinfo prints it, or null where the device does not say
 * @param netdev the network interface the GID belongs to, or null
 */
public record GidEntry(int port, int index, Gid gid, String type, String netdev) {
    /** {@return whether the entry is a RoCE v2 GID (packets in UDP/IP, port 4791)} */
    public boolean isRoceV2() {
        return "RoCE v2".equals(type);
    }
}

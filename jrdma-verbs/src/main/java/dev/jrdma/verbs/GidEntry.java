package dev.jrdma.verbs;

/**
 * One entry of a port's GID table.
 *
 * @param type   "IB/RoCE v1" or "RoCE v2" as ibv_devinfo prints it, or null where the device does not say
 * @param netdev the network interface the GID belongs to, or null
 */
public record GidEntry(int port, int index, Gid gid, String type, String netdev) {
    public boolean isRoceV2() {
        return "RoCE v2".equals(type);
    }
}

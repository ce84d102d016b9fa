package dev.jrdma.verbs;

/**
 * Address vector of the remote port ({@code struct ibv_ah_attr} with its {@code ibv_global_route}).
 * On RoCE set {@code isGlobal}, the peer's GID and the local GID index; on InfiniBand the peer's LID suffices.
 */
public final class AhAttr {
    /** The destination LID ({@code dlid}); InfiniBand only, 0 on RoCE. */
    public int dlid;
    /** The service level ({@code sl}), 0..15; on RoCE it maps to the Ethernet priority. */
    public int sl;
    /** The low bits of the source LID when the port has several ({@code src_path_bits}); InfiniBand only. */
    public int srcPathBits;
    /** An {@code enum ibv_rate} injection rate limit ({@code static_rate}); 0 sends at the port's full rate. */
    public int staticRate;
    /** Whether packets carry a GRH with {@link #dgid} ({@code is_global}); required on RoCE. */
    public boolean isGlobal;
    /** The local port the packets leave through ({@code port_num}), from 1; 1 by default. */
    public int portNum = 1;
    /** The destination GID ({@code grh.dgid}): on RoCE the peer's IP address as a GID. */
    public Gid dgid = Gid.ZERO;
    /**
     * The IPv6 flow label of the GRH ({@code grh.flow_label}), 20 bits; RoCEv2 also derives the UDP source port from it.
     */
    public int flowLabel;
    /**
     * The index of the local GID the packets come from ({@code grh.sgid_index}); on RoCE it picks the source address and
     * the RoCE version.
     */
    public int sgidIndex;
    /** The IPv6 hop limit or IPv4 TTL ({@code grh.hop_limit}); 64 by default. */
    public int hopLimit = 64;
    /** The IPv6 traffic class or IPv4 DSCP/ECN byte ({@code grh.traffic_class}). */
    public int trafficClass;

    /** An address vector for port 1 with no destination yet: set {@link #global} (RoCE) or {@link #dlid} (InfiniBand). */
    public AhAttr() {}

    /**
     * Sets {@link #dlid}.
     *
     * @param lid the destination LID (InfiniBand)
     * @return this
     */
    public AhAttr dlid(int lid) {
        dlid = lid;
        return this;
    }

    /**
     * Routes by GID (RoCE): sets {@link #isGlobal}, the destination GID and the source GID index.
     *
     * @param dgid      the peer's GID
     * @param sgidIndex the index of the local GID to send from
     * @return this
     */
    public AhAttr global(Gid dgid, int sgidIndex) {
        this.isGlobal = true;
        this.dgid = dgid;
        this.sgidIndex = sgidIndex;
        return this;
    }

    /**
     * Sets {@link #hopLimit}.
     *
     * @param h the hop limit, 0..255
     * @return this
     */
    public AhAttr hopLimit(int h) {
        hopLimit = h;
        return this;
    }

    /**
     * Sets {@link #portNum}.
     *
     * @param p the local port, from 1
     * @return this
     */
    public AhAttr portNum(int p) {
        portNum = p;
        return this;
    }

    /** {@return a new address vector with the same fields} */
    public AhAttr copy() {
        AhAttr a = new AhAttr();
        a.dlid = dlid;
        a.sl = sl;
        a.srcPathBits = srcPathBits;
        a.staticRate = staticRate;
        a.isGlobal = isGlobal;
        a.portNum = portNum;
        a.dgid = dgid;
        a.flowLabel = flowLabel;
        a.sgidIndex = sgidIndex;
        a.hopLimit = hopLimit;
        a.trafficClass = trafficClass;
        return a;
    }

    @Override
    public String toString() {
        return "AhAttr[dlid=" + dlid + ", port=" + portNum
                + (isGlobal ? ", dgid=" + dgid + ", sgidIndex=" + sgidIndex + ", hopLimit=" + hopLimit : "") + "]";
    }
}

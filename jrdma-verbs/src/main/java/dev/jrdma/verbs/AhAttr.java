package dev.jrdma.verbs;

/**
 * Address vector of the remote port ({@code struct ibv_ah_attr} with its {@code ibv_global_route}).
 * On RoCE set {@code isGlobal}, the peer's GID and the local GID index; on InfiniBand the peer's LID suffices.
 */
public final class AhAttr {
    public int dlid;
    public int sl;
    public int srcPathBits;
    public int staticRate;
    public boolean isGlobal;
    public int portNum = 1;
    public Gid dgid = Gid.ZERO;
    public int flowLabel;
    public int sgidIndex;
    public int hopLimit = 64;
    public int trafficClass;

    public AhAttr dlid(int lid) {
        dlid = lid;
        return this;
    }

    /** Routes by GID (RoCE): sets isGlobal, the destination GID and the source GID index. */
    public AhAttr global(Gid dgid, int sgidIndex) {
        this.isGlobal = true;
        this.dgid = dgid;
        this.sgidIndex = sgidIndex;
        return this;
    }

    public AhAttr hopLimit(int h) {
        hopLimit = h;
        return this;
    }

    public AhAttr portNum(int p) {
        portNum = p;
        return this;
    }

    public AhAttr copy() {
        AhAttr a = new AhAttr();
        a.dlid = dlid; a.sl = sl; a.srcPathBits = srcPathBits; a.staticRate = staticRate; a.isGlobal = isGlobal;
        a.portNum = portNum; a.dgid = dgid; a.flowLabel = flowLabel; a.sgidIndex = sgidIndex; a.hopLimit = hopLimit;
        a.trafficClass = trafficClass;
        return a;
    }

    @Override
    public String toString() {
        return "AhAttr[dlid=" + dlid + ", port=" + portNum + (isGlobal ? ", dgid=" + dgid + ", sgidIndex=" + sgidIndex + ", hopLimit=" + hopLimit : "") + "]";
    }
}

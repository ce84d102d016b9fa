package dev.jrdma.verbs;

/** Device attributes ({@code struct ibv_device_attr}), the fields {@code ibv_devinfo -v} prints. */
public record DeviceAttr(
        String fwVer, long nodeGuid, long sysImageGuid, long maxMrSize, long pageSizeCap,
        int vendorId, int vendorPartId, int hwVer, int maxQp, int maxQpWr, int deviceCapFlags,
        int maxSge, int maxSgeRd, int maxCq, int maxCqe, int maxMr, int maxPd,
        int maxQpRdAtom, int maxEeRdAtom, int maxResRdAtom, int maxQpInitRdAtom, int maxEeInitRdAtom,
        AtomicCap atomicCap, int maxEe, int maxRdd, int maxMw, int maxRawIpv6Qp, int maxRawEthyQp,
        int maxMcastGrp, int maxMcastQpAttach, int maxTotalMcastQpAttach, int maxAh, int maxFmr, int maxMapPerFmr,
        int maxSrq, int maxSrqWr, int maxSrqSge, int maxPkeys, int localCaAckDelay, int physPortCnt) {

    /** {@code IBV_DEVICE_*} capability bits that matter to jrdma. */
    public static final int CAP_MEM_WINDOW = 1 << 17, CAP_MEM_WINDOW_TYPE_2A = 1 << 23, CAP_MEM_WINDOW_TYPE_2B = 1 << 24,
            CAP_RC_RNR_NAK_GEN = 1 << 12, CAP_MEM_MGT_EXTENSIONS = 1 << 21;

    public boolean supportsMemoryWindows() {
        return (deviceCapFlags & CAP_MEM_WINDOW) != 0 || maxMw > 0;
    }

    public boolean supportsType2Windows() {
        return (deviceCapFlags & (CAP_MEM_WINDOW_TYPE_2A | CAP_MEM_WINDOW_TYPE_2B)) != 0;
    }
}

package dev.jrdma.verbs;

/**
 * Device attributes ({@code struct ibv_device_attr} from {@code ibv_query_device}), the fields {@code ibv_devinfo -v}
 * prints. Limits are per device; 0 means the device supports none of that object (or does not say).
 *
 * @param fwVer                 the firmware version ({@code fw_ver})
 * @param nodeGuid              the node GUID ({@code node_guid}), as {@link Device#nodeGuid()} gives it
 * @param sysImageGuid          the system image GUID ({@code sys_image_guid}): equal on the ports of one system
 * @param maxMrSize             the largest memory region that can be registered, in bytes ({@code max_mr_size})
 * @param pageSizeCap           the page sizes the device supports, one bit per size ({@code page_size_cap})
 * @param vendorId              the IEEE vendor ID ({@code vendor_id})
 * @param vendorPartId          the vendor's part ID ({@code vendor_part_id})
 * @param hwVer                 the hardware version ({@code hw_ver})
 * @param maxQp                 the most queue pairs ({@code max_qp})
 * @param maxQpWr               the most outstanding work requests on one work queue ({@code max_qp_wr})
 * @param deviceCapFlags        the {@code IBV_DEVICE_*} capability bits ({@code device_cap_flags}), e.g. {@link #CAP_MEM_WINDOW}
 * @param maxSge                the most scatter/gather entries of a send or receive request other than RDMA READ
 *                              ({@code max_sge})
 * @param maxSgeRd              the most scatter/gather entries of an RDMA READ ({@code max_sge_rd})
 * @param maxCq                 the most completion queues ({@code max_cq})
 * @param maxCqe                the most entries of one completion queue ({@code max_cqe})
 * @param maxMr                 the most memory regions ({@code max_mr})
 * @param maxPd                 the most protection domains ({@code max_pd})
 * @param maxQpRdAtom           the most RDMA READ/atomic requests one QP handles at once as responder
 *                              ({@code max_qp_rd_atom}): the ceiling of {@link QpAttr#maxDestRdAtomic(int)}
 * @param maxEeRdAtom           the same per EE context ({@code max_ee_rd_atom}; reliable datagram, unused)
 * @param maxResRdAtom          the responder resources for RDMA READ/atomics of the whole device ({@code max_res_rd_atom})
 * @param maxQpInitRdAtom       the most RDMA READ/atomic requests one QP may have outstanding as initiator
 *                              ({@code max_qp_init_rd_atom}): the ceiling of {@link QpAttr#maxRdAtomic(int)}
 * @param maxEeInitRdAtom       the same per EE context ({@code max_ee_init_rd_atom}; reliable datagram, unused)
 * @param atomicCap             how atomic the atomic operations are ({@code atomic_cap})
 * @param maxEe                 the most EE contexts ({@code max_ee}; reliable datagram, unused)
 * @param maxRdd                the most reliable datagram domains ({@code max_rdd}; unused)
 * @param maxMw                 the most memory windows ({@code max_mw})
 * @param maxRawIpv6Qp          the most raw IPv6 datagram QPs ({@code max_raw_ipv6_qp})
 * @param maxRawEthyQp          the most raw Ethertype datagram QPs ({@code max_raw_ethy_qp})
 * @param maxMcastGrp           the most multicast groups ({@code max_mcast_grp})
 * @param maxMcastQpAttach      the most QPs attached to one multicast group ({@code max_mcast_qp_attach})
 * @param maxTotalMcastQpAttach the most QP attachments to multicast groups in all ({@code max_total_mcast_qp_attach})
 * @param maxAh                 the most address handles ({@code max_ah})
 * @param maxFmr                the most fast memory regions ({@code max_fmr}; obsolete)
 * @param maxMapPerFmr          the most maps of one FMR before it must be unmapped ({@code max_map_per_fmr}; obsolete)
 * @param maxSrq                the most shared receive queues ({@code max_srq})
 * @param maxSrqWr              the most receive requests of one SRQ ({@code max_srq_wr})
 * @param maxSrqSge             the most scatter/gather entries of an SRQ receive request ({@code max_srq_sge})
 * @param maxPkeys              the number of partitions, the size of a port's P_Key table ({@code max_pkeys})
 * @param localCaAckDelay       the local CA's ACK delay as an exponent: 4.096 µs × 2<sup>n</sup>
 *                              ({@code local_ca_ack_delay})
 * @param physPortCnt           the number of physical ports ({@code phys_port_cnt}), numbered from 1
 */
public record DeviceAttr(
        String fwVer,
        long nodeGuid,
        long sysImageGuid,
        long maxMrSize,
        long pageSizeCap,
        int vendorId,
        int vendorPartId,
        int hwVer,
        int maxQp,
        int maxQpWr,
        int deviceCapFlags,
        int maxSge,
        int maxSgeRd,
        int maxCq,
        int maxCqe,
        int maxMr,
        int maxPd,
        int maxQpRdAtom,
        int maxEeRdAtom,
        int maxResRdAtom,
        int maxQpInitRdAtom,
        int maxEeInitRdAtom,
        AtomicCap atomicCap,
        int maxEe,
        int maxRdd,
        int maxMw,
        int maxRawIpv6Qp,
        int maxRawEthyQp,
        int maxMcastGrp,
        int maxMcastQpAttach,
        int maxTotalMcastQpAttach,
        int maxAh,
        int maxFmr,
        int maxMapPerFmr,
        int maxSrq,
        int maxSrqWr,
        int maxSrqSge,
        int maxPkeys,
        int localCaAckDelay,
        int physPortCnt) {

    /**
     * {@code IBV_DEVICE_*} capability bits of {@link #deviceCapFlags()} that jrdma reads: memory windows
     * ({@code IBV_DEVICE_MEM_WINDOW}, type 2A and 2B windows), RNR NAK generation by RC QPs
     * ({@code IBV_DEVICE_RC_RNR_NAK_GEN}) and memory management extensions ({@code IBV_DEVICE_MEM_MGT_EXTENSIONS}).
     */
    public static final int CAP_MEM_WINDOW = 1 << 17,
            CAP_MEM_WINDOW_TYPE_2A = 1 << 23,
            CAP_MEM_WINDOW_TYPE_2B = 1 << 24,
            CAP_RC_RNR_NAK_GEN = 1 << 12,
            CAP_MEM_MGT_EXTENSIONS = 1 << 21;

    /**
     * {@return whether the device has memory windows: the {@code IBV_DEVICE_MEM_WINDOW} bit or a non-zero {@code max_mw}}
     */
    public boolean supportsMemoryWindows() {
        return (deviceCapFlags & CAP_MEM_WINDOW) != 0 || maxMw > 0;
    }

    /** {@return whether the device has type 2 memory windows (bound by a BIND_MW work request): type 2A or 2B} */
    public boolean supportsType2Windows() {
        return (deviceCapFlags & (CAP_MEM_WINDOW_TYPE_2A | CAP_MEM_WINDOW_TYPE_2B)) != 0;
    }
}

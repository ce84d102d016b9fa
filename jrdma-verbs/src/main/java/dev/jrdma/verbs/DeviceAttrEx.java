package dev.jrdma.verbs;

/**
 * The extended device attributes of {@code ibv_query_device_ex} ({@code struct ibv_device_attr_ex} beyond its
 * {@code orig_attr}), the fields {@code ibv_devinfo -v} prints. 0 means the device does not have the feature (or does
 * not say), as in libibverbs, whose legacy path zeroes them all.
 *
 * @param odpGeneralCaps             on-demand paging: {@code IBV_ODP_SUPPORT*} bits ({@code odp_caps.general_caps})
 * @param rcOdpCaps                  ODP operations on RC QPs, {@code IBV_ODP_SUPPORT_*} bits
 * @param ucOdpCaps                  the same on UC QPs
 * @param udOdpCaps                  the same on UD QPs
 * @param xrcOdpCaps                 the same on XRC QPs ({@code xrc_odp_caps})
 * @param completionTimestampMask    the bits of a completion's timestamp ({@code completion_timestamp_mask})
 * @param hcaCoreClockKhz            the clock of those timestamps in kHz ({@code hca_core_clock})
 * @param deviceCapFlagsEx           the 64-bit capability flags ({@code device_cap_flags_ex}; its low half is
 *                                   {@link DeviceAttr#deviceCapFlags()})
 * @param maxTso                     the largest TCP segmentation offload ({@code tso_caps.max_tso})
 * @param tsoSupportedQpts           the QP types with TSO, one bit per {@code ibv_qp_type}
 * @param rssSupportedQpts           the QP types with receive side scaling ({@code rss_caps.supported_qpts})
 * @param maxRwqIndirectionTables    the most receive WQ indirection tables
 * @param maxRwqIndirectionTableSize the largest receive WQ indirection table
 * @param rxHashFieldsMask           the fields RSS can hash ({@code rx_hash_fields_mask})
 * @param rxHashFunction             the RSS hash functions ({@code rx_hash_function})
 * @param maxWqTypeRq                the most receive work queues ({@code max_wq_type_rq})
 * @param qpRateLimitMin             packet pacing's lowest rate in kbps ({@code packet_pacing_caps})
 * @param qpRateLimitMax             packet pacing's highest rate in kbps; 0: no pacing
 * @param pacingSupportedQpts        the QP types that pace
 * @param rawPacketCaps              raw packet QP offloads ({@code raw_packet_caps}, {@code IBV_RAW_PACKET_CAP_*})
 * @param tmMaxRndvHdrSize           tag matching: the largest rendezvous header ({@code tm_caps})
 * @param tmMaxNumTags               tag matching: the most tagged buffers; 0: no tag matching
 * @param tmFlags                    tag matching: {@code IBV_TM_CAP_*} bits
 * @param tmMaxOps                   tag matching: the most outstanding list operations
 * @param tmMaxSge                   tag matching: the most SGEs of a tagged buffer
 * @param maxCqCount                 CQ moderation: the largest completion count ({@code cq_mod_caps})
 * @param maxCqPeriodUs              CQ moderation: the longest period in microseconds
 * @param maxDmSize                  the device memory available, in bytes ({@code max_dm_size})
 * @param pciAtomicFetchAdd          PCIe atomic fetch-and-add sizes ({@code pci_atomic_caps})
 * @param pciAtomicSwap              PCIe atomic swap sizes
 * @param pciAtomicCompareSwap       PCIe atomic compare-and-swap sizes
 * @param physPortCntEx              the port count when it does not fit in 8 bits ({@code phys_port_cnt_ex})
 */
public record DeviceAttrEx(
        long odpGeneralCaps,
        int rcOdpCaps,
        int ucOdpCaps,
        int udOdpCaps,
        int xrcOdpCaps,
        long completionTimestampMask,
        long hcaCoreClockKhz,
        long deviceCapFlagsEx,
        int maxTso,
        int tsoSupportedQpts,
        int rssSupportedQpts,
        int maxRwqIndirectionTables,
        int maxRwqIndirectionTableSize,
        long rxHashFieldsMask,
        int rxHashFunction,
        int maxWqTypeRq,
        int qpRateLimitMin,
        int qpRateLimitMax,
        int pacingSupportedQpts,
        int rawPacketCaps,
        int tmMaxRndvHdrSize,
        int tmMaxNumTags,
        int tmFlags,
        int tmMaxOps,
        int tmMaxSge,
        int maxCqCount,
        int maxCqPeriodUs,
        long maxDmSize,
        int pciAtomicFetchAdd,
        int pciAtomicSwap,
        int pciAtomicCompareSwap,
        int physPortCntEx) {
    /**
     * {@return the extended attributes of a device without any of the extended features: every field 0 but
     * {@code device_cap_flags_ex}, whose low half is the base flags (as the kernel's providers report it)}
     *
     * @param base the device's base attributes
     */
    public static DeviceAttrEx without(DeviceAttr base) {
        return new DeviceAttrEx(
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                base.deviceCapFlags() & 0xffffffffL,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0);
    }
}

package dev.jrdma.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * perftest 4.5's command line as a table: every option its ib_* tools' parser accepts (long_options[] and the short
 * option string of perftest_parameters.c, v4.5-0.17), jrdma's own options, and the perftest options that jrdma perf
 * refuses, each with the reason. {@link PerfOptions#parse} reads arguments through it, as getopt_long does: short
 * options may be bundled ({@code -aF}) and take their value attached ({@code -s64}); a long option may be abbreviated
 * to a unique prefix and take its value after {@code =}.
 */
final class PerftestFlags {
    private PerftestFlags() {}

    /**
     * One option.
     *
     * @param letter  its short form, or 0 when it has none
     * @param name    its long form (the canonical one: perftest's spelling where perftest has it)
     * @param hasArg  whether it takes a value
     */
    record Option(char letter, String name, boolean hasArg) {
        /** {@return how a message names it: {@code -s (--size)} or {@code --size}} */
        String display() {
            return letter != 0 ? "-" + letter + " (--" + name + ")" : "--" + name;
        }
    }

    private static final Map<String, Option> BY_NAME = new LinkedHashMap<>();
    private static final Map<Character, Option> BY_LETTER = new LinkedHashMap<>();
    /** Other spellings jrdma accepts for an option: jrdma's hyphenated ones, perftest's usage() spellings. */
    private static final Map<String, String> ALIASES = new LinkedHashMap<>();
    /** The perftest options jrdma perf refuses, with the reason. */
    private static final Map<String, String> REFUSED = new LinkedHashMap<>();

    private static void option(char letter, String name, boolean hasArg) {
        Option o = new Option(letter, name, hasArg);
        BY_NAME.put(name, o);
        if (letter != 0) BY_LETTER.put(letter, o);
    }

    private static void refuse(String reason, String... names) {
        for (String n : names) REFUSED.put(n, reason);
    }

    static {
        // perftest's long_options[], in its order ('G' and 'Y' are missing from its short string: long only)
        option('p', "port", true);
        option('d', "ib-dev", true);
        option('i', "ib-port", true);
        option('m', "mtu", true);
        option('s', "size", true);
        option('n', "iters", true);
        option('t', "tx-depth", true);
        option('u', "qp-timeout", true);
        option('S', "sl", true);
        option('x', "gid-index", true);
        option('a', "all", false);
        option('F', "CPU-freq", false);
        option('c', "connection", true);
        option('q', "qp", true);
        option('e', "events", false);
        option('X', "vector", true);
        option('I', "inline_size", true);
        option('o', "outs", true);
        option('g', "mcg", false);
        option('z', "comm_rdma_cm", false);
        option('R', "rdma_cm", false);
        option('T', "tos", true);
        option('L', "hop_limit", true);
        option('h', "help", false);
        option('M', "MGID", true);
        option('r', "rx-depth", true);
        option('b', "bidirectional", false);
        option('Q', "cq-mod", true);
        option('N', "noPeak", false);
        option('V', "version", false);
        option('C', "report-cycles", false);
        option('H', "report-histogrm", false);
        option('U', "report-unsorted", false);
        option('A', "atomic_type", true);
        option('O', "dualport", false);
        option('l', "post_list", true);
        option('D', "duration", true);
        option('f', "margin", true);
        option('B', "source_mac", true);
        option('E', "dest_mac", true);
        option('J', "dest_ip", true);
        option('j', "source_ip", true);
        option('K', "dest_port", true);
        option('k', "source_port", true);
        option((char) 0, "ethertype", true);
        option('w', "limit_bw", true);
        option('y', "limit_msgrate", true);
        option('Z', "server", false);
        option('P', "client", false);
        option('v', "mac_fwd", false);
        option((char) 0, "use_rss", false);
        option('W', "report-counters", true);
        for (String n :
                List.of("force-link", "remote_mac", "local_mac", "remote_ip", "local_ip", "remote_port", "local_port"))
            option((char) 0, n, true);
        option((char) 0, "run_infinitely", false);
        option((char) 0, "report_gbits", false);
        option((char) 0, "use-srq", false);
        option((char) 0, "report-both", false);
        option((char) 0, "reversed", false);
        option((char) 0, "pkey_index", true);
        option((char) 0, "inline_recv", true);
        option((char) 0, "tcp", false);
        for (String n :
                List.of("burst_size", "typical_pkt_size", "rate_limit", "rate_limit_type", "rate_units", "output"))
            option((char) 0, n, true);
        option((char) 0, "cpu_util", false);
        option((char) 0, "out_json", false);
        for (String n : List.of("out_json_file", "latency_gap", "flow_label", "retry_count")) option((char) 0, n, true);
        option((char) 0, "dont_xchg_versions", false);
        for (String n : List.of("use_cuda", "use_cuda_bus_id", "use_rocm", "mmap", "mmap-offset"))
            option((char) 0, n, true);
        for (String n : List.of(
                "ipv6",
                "raw_ipv6",
                "report-per-port",
                "odp",
                "use_hugepages",
                "use_old_post_send",
                "promiscuous",
                "sniffer",
                "raw_mcast",
                "mr_per_qp")) option((char) 0, n, false);
        for (String n : List.of("dlid", "tclass", "wait_destroy", "flows", "flows_burst", "reply_every"))
            option((char) 0, n, true);
        option((char) 0, "perform_warm_up", false);
        option((char) 0, "vlan_en", false);
        option((char) 0, "vlan_pcp", true);
        option((char) 0, "recv_post_list", true);
        option((char) 0, "aes_xts", false);
        option((char) 0, "encrypt_on_tx", false);
        option((char) 0, "sig_before", false);
        for (String n : List.of(
                "aes_block_size",
                "kek_path",
                "credentials_path",
                "data_enc_keys_number",
                "data_enc_key_app_path",
                "log_dci_streams",
                "log_active_dci_streams")) option((char) 0, n, true);
        option((char) 0, "disable_pcie_relaxed", false);
        option((char) 0, "use_ooo", false);

        // jrdma's own
        option((char) 0, "busy-poll", false);
        option((char) 0, "quiet", false);
        option((char) 0, "timeout", true);
        option((char) 0, "accept-timeout", true);
        option((char) 0, "poll-budget", true);
        option((char) 0, "sizes", true);
        option((char) 0, "html", true);
        option((char) 0, "tests", true);
        ALIASES.put("report-gbits", "report_gbits");
        ALIASES.put("inline-size", "inline_size");
        ALIASES.put("rdma-cm", "rdma_cm");
        ALIASES.put("report-histogram", "report-histogrm"); // usage() spells it so; long_options[] does not
        ALIASES.put("com_rdma_cm", "comm_rdma_cm"); // ditto

        String rawEth =
                "a raw_ethernet_* option (Ethernet frames on a raw packet QP); jrdma perf runs the ib_* tests only";
        refuse(
                rawEth,
                "source_mac",
                "dest_mac",
                "dest_ip",
                "source_ip",
                "dest_port",
                "source_port",
                "ethertype",
                "server",
                "client",
                "mac_fwd",
                "use_rss",
                "remote_mac",
                "local_mac",
                "remote_ip",
                "local_ip",
                "remote_port",
                "local_port",
                "tcp",
                "raw_ipv6",
                "promiscuous",
                "sniffer",
                "raw_mcast",
                "flows",
                "flows_burst",
                "reply_every",
                "vlan_en",
                "vlan_pcp");
        refuse(
                "GPU memory (GPUDirect RDMA) needs a NIC and a GPU driver that share it; jrdma registers host memory only",
                "use_cuda",
                "use_cuda_bus_id",
                "use_rocm");
        refuse(
                "an mlx5 hardware feature (crypto engine); no jrdma device has it",
                "aes_xts",
                "encrypt_on_tx",
                "sig_before",
                "aes_block_size",
                "kek_path",
                "credentials_path",
                "data_enc_keys_number",
                "data_enc_key_app_path");
        refuse(
                "DC transport (mlx5 DC initiator streams); jrdma runs RC and UD QPs",
                "log_dci_streams",
                "log_active_dci_streams");
        refuse(
                "PCIe relaxed ordering is a setting of a PCIe NIC's memory registration; jrdma's devices have none",
                "disable_pcie_relaxed");
        refuse("out-of-order data placement is an mlx5 QP attribute; no jrdma device has it", "use_ooo");
        refuse("on-demand paging needs a NIC that faults pages in itself; jrdma registers pinned memory", "odp");
        refuse("inline receive (scatter to CQE) is an mlx5 hardware feature; no jrdma device has it", "inline_recv");
        refuse(
                "the typical packet size is for packet pacing (--rate_limit_type=PP) on raw Ethernet QPs of a NIC that"
                        + " paces; jrdma perf's rate limiter is the software one (--rate_limit_type=SW)",
                "typical_pkt_size");
        refuse(
                "dual-port mode needs a device with two active ports; the soft device has one and jrdma perf runs one port",
                "dualport",
                "report-per-port");
        refuse("multicast groups: jrdma's devices do not attach UD QPs to multicast groups", "mcg", "MGID");
        refuse(
                "the JVM reads no CPU cycle counter (perftest reads the TSC); jrdma reports microseconds from System.nanoTime",
                "report-cycles");
        refuse("the JVM's memory (Arena) cannot be placed on huge pages on request", "use_hugepages");
    }

    /** {@return the option of a short letter, or null} */
    static Option byLetter(char c) {
        return BY_LETTER.get(c);
    }

    /**
     * The option a long name names: exact, an alias, or (as getopt_long) a prefix of exactly one name.
     *
     * @param name the name without {@code --}
     * @return the option, or null when it names none
     * @throws IllegalArgumentException when it is a prefix of several names
     */
    static Option byName(String name) {
        Option o = BY_NAME.get(name);
        if (o != null) return o;
        if (ALIASES.containsKey(name)) return BY_NAME.get(ALIASES.get(name));
        List<Option> hits = new ArrayList<>();
        for (Option c : BY_NAME.values()) if (c.name.startsWith(name)) hits.add(c);
        for (Map.Entry<String, String> a : ALIASES.entrySet())
            if (a.getKey().startsWith(name) && !hits.contains(BY_NAME.get(a.getValue())))
                hits.add(BY_NAME.get(a.getValue()));
        if (hits.size() == 1) return hits.getFirst();
        if (hits.size() > 1) {
            List<String> names = new ArrayList<>();
            for (Option h : hits) names.add("--" + h.name);
            throw new IllegalArgumentException("--" + name + " is ambiguous: " + names);
        }
        return null;
    }

    /** {@return why jrdma perf refuses the option, or null when it runs it} */
    static String refusal(Option o) {
        return REFUSED.get(o.name);
    }

    /** {@return every option the table knows: perftest's and jrdma's} */
    static List<Option> all() {
        return List.copyOf(BY_NAME.values());
    }
}

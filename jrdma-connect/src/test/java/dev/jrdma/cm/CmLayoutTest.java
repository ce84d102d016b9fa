package dev.jrdma.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Compiles a C program against {@code <rdma/rdma_cma.h>} that prints every offset, size and enum value
 * {@link Librdmacm}, {@link PortSpace} and {@link CmEventType} use, and compares them with the Java constants.
 * Needs gcc and librdmacm-dev; {@code -Djrdma.skipLayoutTest} skips it where they cannot be installed.
 */
class CmLayoutTest {

    @Test
    void constantsMatchTheInstalledHeader() throws Exception {
        Assumptions.assumeTrue(
                System.getProperty("jrdma.skipLayoutTest") == null, "skipped: -Djrdma.skipLayoutTest is set");
        Path gcc = which("gcc");
        if (gcc == null)
            fail(
                    "gcc not found: this test compiles a C program against rdma/rdma_cma.h (apt-get install gcc librdmacm-dev, or -Djrdma.skipLayoutTest)");
        if (!Files.exists(Path.of("/usr/include/rdma/rdma_cma.h")))
            fail("/usr/include/rdma/rdma_cma.h not found: install librdmacm-dev (or -Djrdma.skipLayoutTest)");

        Map<String, Long> expected = new LinkedHashMap<>();
        expected.put("offsetof(struct rdma_cm_id, verbs)", Librdmacm.ID_VERBS);
        expected.put("offsetof(struct rdma_cm_id, route.addr.src_addr)", Librdmacm.ID_SRC_ADDR);
        expected.put("offsetof(struct rdma_cm_id, route.addr.dst_addr)", Librdmacm.ID_DST_ADDR);
        expected.put("offsetof(struct rdma_cm_id, ps)", Librdmacm.ID_PS);
        expected.put("offsetof(struct rdma_cm_id, port_num)", Librdmacm.ID_PORT_NUM);
        expected.put("sizeof(struct rdma_cm_id)", Librdmacm.ID_SIZE);
        expected.put("offsetof(struct rdma_cm_event, id)", Librdmacm.EV_ID);
        expected.put("offsetof(struct rdma_cm_event, listen_id)", Librdmacm.EV_LISTEN_ID);
        expected.put("offsetof(struct rdma_cm_event, event)", Librdmacm.EV_EVENT);
        expected.put("offsetof(struct rdma_cm_event, status)", Librdmacm.EV_STATUS);
        expected.put("offsetof(struct rdma_cm_event, param)", Librdmacm.EV_PARAM);
        expected.put("sizeof(struct rdma_cm_event)", Librdmacm.EV_SIZE);
        expected.put("offsetof(struct rdma_conn_param, private_data)", Librdmacm.CP_PRIVATE_DATA);
        expected.put("offsetof(struct rdma_conn_param, private_data_len)", Librdmacm.CP_PRIVATE_DATA_LEN);
        expected.put("offsetof(struct rdma_conn_param, responder_resources)", Librdmacm.CP_RESPONDER_RESOURCES);
        expected.put("offsetof(struct rdma_conn_param, initiator_depth)", Librdmacm.CP_INITIATOR_DEPTH);
        expected.put("offsetof(struct rdma_conn_param, flow_control)", Librdmacm.CP_FLOW_CONTROL);
        expected.put("offsetof(struct rdma_conn_param, retry_count)", Librdmacm.CP_RETRY_COUNT);
        expected.put("offsetof(struct rdma_conn_param, rnr_retry_count)", Librdmacm.CP_RNR_RETRY_COUNT);
        expected.put("offsetof(struct rdma_conn_param, srq)", Librdmacm.CP_SRQ);
        expected.put("offsetof(struct rdma_conn_param, qp_num)", Librdmacm.CP_QP_NUM);
        expected.put("sizeof(struct rdma_conn_param)", Librdmacm.CP_SIZE);
        expected.put("offsetof(struct rdma_ud_param, private_data)", Librdmacm.CP_PRIVATE_DATA);
        expected.put("offsetof(struct rdma_ud_param, private_data_len)", Librdmacm.CP_PRIVATE_DATA_LEN);
        expected.put("offsetof(struct rdma_ud_param, ah_attr)", Librdmacm.UD_AH_ATTR);
        expected.put("offsetof(struct rdma_ud_param, qp_num)", Librdmacm.UD_QP_NUM);
        expected.put("offsetof(struct rdma_ud_param, qkey)", Librdmacm.UD_QKEY);
        expected.put("sizeof(struct rdma_ud_param)", Librdmacm.UD_SIZE);
        expected.put("offsetof(struct ibv_qp_attr, qp_state)", Librdmacm.QA_STATE);
        expected.put("offsetof(struct ibv_qp_attr, path_mtu)", Librdmacm.QA_PATH_MTU);
        expected.put("offsetof(struct ibv_qp_attr, qkey)", Librdmacm.QA_QKEY);
        expected.put("offsetof(struct ibv_qp_attr, rq_psn)", Librdmacm.QA_RQ_PSN);
        expected.put("offsetof(struct ibv_qp_attr, sq_psn)", Librdmacm.QA_SQ_PSN);
        expected.put("offsetof(struct ibv_qp_attr, dest_qp_num)", Librdmacm.QA_DEST_QPN);
        expected.put("offsetof(struct ibv_qp_attr, qp_access_flags)", Librdmacm.QA_ACCESS);
        expected.put("offsetof(struct ibv_qp_attr, ah_attr)", Librdmacm.QA_AH);
        expected.put("offsetof(struct ibv_qp_attr, pkey_index)", Librdmacm.QA_PKEY_INDEX);
        expected.put("offsetof(struct ibv_qp_attr, max_rd_atomic)", Librdmacm.QA_MAX_RD_ATOMIC);
        expected.put("offsetof(struct ibv_qp_attr, max_dest_rd_atomic)", Librdmacm.QA_MAX_DEST_RD_ATOMIC);
        expected.put("offsetof(struct ibv_qp_attr, min_rnr_timer)", Librdmacm.QA_MIN_RNR_TIMER);
        expected.put("offsetof(struct ibv_qp_attr, port_num)", Librdmacm.QA_PORT);
        expected.put("offsetof(struct ibv_qp_attr, timeout)", Librdmacm.QA_TIMEOUT);
        expected.put("offsetof(struct ibv_qp_attr, retry_cnt)", Librdmacm.QA_RETRY_CNT);
        expected.put("offsetof(struct ibv_qp_attr, rnr_retry)", Librdmacm.QA_RNR_RETRY);
        expected.put("sizeof(struct ibv_qp_attr)", Librdmacm.QA_SIZE);
        expected.put("offsetof(struct ibv_ah_attr, grh.dgid)", Librdmacm.AH_DGID);
        expected.put("offsetof(struct ibv_ah_attr, grh.flow_label)", Librdmacm.AH_FLOW_LABEL);
        expected.put("offsetof(struct ibv_ah_attr, grh.sgid_index)", Librdmacm.AH_SGID_INDEX);
        expected.put("offsetof(struct ibv_ah_attr, grh.hop_limit)", Librdmacm.AH_HOP_LIMIT);
        expected.put("offsetof(struct ibv_ah_attr, grh.traffic_class)", Librdmacm.AH_TRAFFIC_CLASS);
        expected.put("offsetof(struct ibv_ah_attr, dlid)", Librdmacm.AH_DLID);
        expected.put("offsetof(struct ibv_ah_attr, sl)", Librdmacm.AH_SL);
        expected.put("offsetof(struct ibv_ah_attr, src_path_bits)", Librdmacm.AH_SRC_PATH_BITS);
        expected.put("offsetof(struct ibv_ah_attr, static_rate)", Librdmacm.AH_STATIC_RATE);
        expected.put("offsetof(struct ibv_ah_attr, is_global)", Librdmacm.AH_IS_GLOBAL);
        expected.put("offsetof(struct ibv_ah_attr, port_num)", Librdmacm.AH_PORT);
        expected.put("sizeof(struct ibv_ah_attr)", Librdmacm.AH_SIZE);
        String[][] masks = {
            {"IBV_QP_STATE", "M_STATE"},
            {"IBV_QP_ACCESS_FLAGS", "M_ACCESS"},
            {"IBV_QP_PKEY_INDEX", "M_PKEY"},
            {"IBV_QP_PORT", "M_PORT"},
            {"IBV_QP_QKEY", "M_QKEY"},
            {"IBV_QP_AV", "M_AV"},
            {"IBV_QP_PATH_MTU", "M_PATH_MTU"},
            {"IBV_QP_TIMEOUT", "M_TIMEOUT"},
            {"IBV_QP_RETRY_CNT", "M_RETRY_CNT"},
            {"IBV_QP_RNR_RETRY", "M_RNR_RETRY"},
            {"IBV_QP_RQ_PSN", "M_RQ_PSN"},
            {"IBV_QP_MAX_QP_RD_ATOMIC", "M_MAX_QP_RD_ATOMIC"},
            {"IBV_QP_MIN_RNR_TIMER", "M_MIN_RNR_TIMER"},
            {"IBV_QP_SQ_PSN", "M_SQ_PSN"},
            {"IBV_QP_MAX_DEST_RD_ATOMIC", "M_MAX_DEST_RD_ATOMIC"},
            {"IBV_QP_DEST_QPN", "M_DEST_QPN"}
        };
        for (String[] m : masks)
            expected.put("(long) " + m[0], (long)
                    Librdmacm.class.getDeclaredField(m[1]).getInt(null));
        expected.put("(long) RDMA_OPTION_ID", (long) Librdmacm.OPT_LEVEL_ID);
        expected.put("(long) RDMA_OPTION_ID_TOS", (long) Librdmacm.OPT_ID_TOS);
        for (PortSpace p : PortSpace.values()) expected.put("(long) RDMA_PS_" + p.name(), (long) p.code());
        // the events this header has (ADDRINFO_* came with newer librdmacm)
        for (CmEventType t : CmEventType.values())
            if (t.ordinal() <= CmEventType.TIMEWAIT_EXIT.ordinal())
                expected.put("(long) " + t.cName(), (long) t.code());

        StringBuilder c = new StringBuilder(
                "#include <stddef.h>\n#include <stdio.h>\n#include <rdma/rdma_cma.h>\nint main(void) {\n");
        for (String e : expected.keySet())
            c.append("  printf(\"%ld\\n\", (long) (").append(e).append("));\n");
        c.append("  return 0;\n}\n");
        Path dir = Files.createTempDirectory("jrdma-cm-layout");
        Path src = dir.resolve("cm.c"), exe = dir.resolve("cm");
        Files.writeString(src, c);
        run(List.of(gcc.toString(), "-std=gnu11", "-o", exe.toString(), src.toString()));
        String[] printed = run(List.of(exe.toString())).trim().split("\n");
        assertEquals(
                expected.size(),
                printed.length,
                "the C program printed " + printed.length + " values for " + expected.size() + " expressions");
        List<String> mismatches = new ArrayList<>();
        int i = 0;
        for (Map.Entry<String, Long> e : expected.entrySet()) {
            long c_ = Long.parseLong(printed[i++].trim());
            if (c_ != e.getValue()) mismatches.add(e.getKey() + ": C " + c_ + ", Java " + e.getValue());
        }
        assertTrue(mismatches.isEmpty(), "differ from rdma/rdma_cma.h:\n" + String.join("\n", mismatches));
        System.out.println(
                "rdma_cm layout: " + expected.size() + " offsets, sizes and constants match rdma/rdma_cma.h");
    }

    private static Path which(String exe) {
        for (String d : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(":")) {
            Path p = Path.of(d, exe);
            if (Files.isExecutable(p)) return p;
        }
        return null;
    }

    private static String run(List<String> cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "timed out: " + cmd);
        assertEquals(0, p.exitValue(), String.join(" ", cmd) + " failed:\n" + out);
        return out;
    }
}

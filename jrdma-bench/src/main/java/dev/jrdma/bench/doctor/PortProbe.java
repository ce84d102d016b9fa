package dev.jrdma.bench.doctor;

import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.Device;
import dev.jrdma.verbs.GidEntry;
import dev.jrdma.verbs.LinkLayer;
import dev.jrdma.verbs.Mtu;
import dev.jrdma.verbs.PortAttr;
import dev.jrdma.verbs.PortState;
import dev.jrdma.verbs.Verbs;
import java.util.ArrayList;
import java.util.List;

/** What the doctor learns about devices and ports through the verbs API; tests supply their own. */
public interface PortProbe {
    /**
     * A device as the verbs API sees it.
     *
     * @param name     the device's name, e.g. {@code rxe0} or {@code soft@127.0.0.1}
     * @param provider the provider's name, e.g. {@code native} or {@code soft}
     * @param ports    its ports, from 1 (empty when it could not be queried)
     * @param error    why it could not be opened or queried, else null
     */
    record DeviceInfo(String name, String provider, List<PortInfo> ports, String error) {
        /** Copies the port list. */
        public DeviceInfo {
            ports = List.copyOf(ports);
        }
    }

    /**
     * One port ({@code ibv_query_port} and its GID table).
     *
     * @param port      the port number, from 1
     * @param state     its state (ACTIVE when usable)
     * @param linkLayer InfiniBand or Ethernet (RoCE)
     * @param activeMtu the MTU in use
     * @param maxMtu    the largest MTU the port supports
     * @param gids      the GID table's valid entries (empty when it could not be read)
     */
    record PortInfo(int port, PortState state, LinkLayer linkLayer, Mtu activeMtu, Mtu maxMtu, List<GidEntry> gids) {
        /** Copies the GID list. */
        public PortInfo {
            gids = List.copyOf(gids);
        }
    }

    /** {@return every device and its ports; a device that failed carries its error} */
    List<DeviceInfo> devices();

    /** {@return one line per provider found: its name and "available", or why it is not (none by default)} */
    default List<String> providerNotes() {
        return List.of();
    }

    /** {@return a probe that finds no devices (a foreign root, or tests)} */
    static PortProbe none() {
        return List::of;
    }

    /** {@return the real probe: {@link Verbs#devices()}, {@link Context#queryPort}, {@link Context#gidTable}} */
    static PortProbe verbs() {
        return new PortProbe() {
            @Override
            public List<DeviceInfo> devices() {
                List<DeviceInfo> out = new ArrayList<>();
                List<Device> devs;
                try {
                    devs = Verbs.devices();
                } catch (RuntimeException | LinkageError e) {
                    return List.of(new DeviceInfo("?", "?", List.of(), "listing devices failed: " + e.getMessage()));
                }
                for (Device d : devs) {
                    try (Context ctx = d.open()) {
                        int n = ctx.queryDevice().physPortCnt();
                        List<PortInfo> ports = new ArrayList<>();
                        for (int p = 1; p <= n; p++) {
                            PortAttr a = ctx.queryPort(p);
                            List<GidEntry> gids;
                            try {
                                gids = ctx.gidTable(p);
                            } catch (RuntimeException e) {
                                gids = List.of();
                            }
                            ports.add(new PortInfo(p, a.state(), a.linkLayer(), a.activeMtu(), a.maxMtu(), gids));
                        }
                        out.add(new DeviceInfo(d.name(), d.provider(), ports, null));
                    } catch (RuntimeException | LinkageError e) {
                        out.add(new DeviceInfo(d.name(), d.provider(), List.of(), e.getMessage()));
                    }
                }
                return out;
            }

            @Override
            public List<String> providerNotes() {
                List<String> notes = new ArrayList<>();
                try {
                    for (var p : Verbs.providers()) {
                        String why = p.unavailableReason().orElse(null);
                        notes.add(p.name() + (why == null ? ": available" : ": " + why));
                    }
                } catch (RuntimeException | LinkageError e) {
                    notes.add("providers: " + e.getMessage());
                }
                return notes;
            }
        };
    }
}

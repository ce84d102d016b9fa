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
    /** A device as the verbs API sees it; {@code error} is set when it could not be opened or queried. */
    record DeviceInfo(String name, String provider, List<PortInfo> ports, String error) {
        public DeviceInfo {
            ports = List.copyOf(ports);
        }
    }

    /** One port. */
    record PortInfo(int port, PortState state, LinkLayer linkLayer, Mtu activeMtu, Mtu maxMtu, List<GidEntry> gids) {
        public PortInfo {
            gids = List.copyOf(gids);
        }
    }

    List<DeviceInfo> devices();

    /** Names of the providers found and, for those without devices, why. */
    default List<String> providerNotes() {
        return List.of();
    }

    /** No devices (a foreign root, or tests). */
    static PortProbe none() {
        return List::of;
    }

    /** The real probe: {@link Verbs#devices()}, {@link Context#queryPort}, {@link Context#gidTable}. */
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

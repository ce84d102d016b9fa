package dev.jrdma.connect;

import java.util.Arrays;

/**
 * A group's endpoints by QP number, for the owner's dispatch of each completion: a lookup reads an immutable table
 * (a sorted int array searched in place), so it allocates nothing, where a map keyed by {@code Integer} boxes the QP
 * number of every completion. Changes (an endpoint made or closed) copy the table, under this object's lock.
 */
final class EndpointsByQpn {
    private static final Endpoint[] NONE = new Endpoint[0];

    /** The QP numbers, ascending, and their endpoints at the same index: replaced whole, never changed. */
    private record Table(int[] qpns, Endpoint[] endpoints) {}

    private volatile Table table = new Table(new int[0], NONE);

    /** {@return the endpoint of QP {@code qpn}, or null} Any thread; allocates nothing. */
    Endpoint get(int qpn) {
        Table t = table;
        int i = Arrays.binarySearch(t.qpns, qpn);
        return i >= 0 ? t.endpoints[i] : null;
    }

    /** Adds (or replaces) the endpoint of QP {@code qpn}. */
    synchronized void put(int qpn, Endpoint ep) {
        Table t = table;
        int i = Arrays.binarySearch(t.qpns, qpn);
        if (i >= 0) {
            Endpoint[] e = t.endpoints.clone();
            e[i] = ep;
            table = new Table(t.qpns, e);
            return;
        }
        int at = -i - 1, n = t.qpns.length;
        int[] q = new int[n + 1];
        Endpoint[] e = new Endpoint[n + 1];
        System.arraycopy(t.qpns, 0, q, 0, at);
        System.arraycopy(t.endpoints, 0, e, 0, at);
        q[at] = qpn;
        e[at] = ep;
        System.arraycopy(t.qpns, at, q, at + 1, n - at);
        System.arraycopy(t.endpoints, at, e, at + 1, n - at);
        table = new Table(q, e);
    }

    /** Removes QP {@code qpn}'s entry when it is {@code ep}'s. */
    synchronized void remove(int qpn, Endpoint ep) {
        Table t = table;
        int i = Arrays.binarySearch(t.qpns, qpn);
        if (i < 0 || t.endpoints[i] != ep) return;
        int n = t.qpns.length;
        int[] q = new int[n - 1];
        Endpoint[] e = new Endpoint[n - 1];
        System.arraycopy(t.qpns, 0, q, 0, i);
        System.arraycopy(t.endpoints, 0, e, 0, i);
        System.arraycopy(t.qpns, i + 1, q, i, n - 1 - i);
        System.arraycopy(t.endpoints, i + 1, e, i, n - 1 - i);
        table = new Table(q, e);
    }

    int size() {
        return table.qpns.length;
    }

    /** {@return the endpoints now (the table's own array: read it, do not change it)} */
    Endpoint[] snapshot() {
        return table.endpoints;
    }
}

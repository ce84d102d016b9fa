package dev.jrdma.verbs;

import static dev.jrdma.verbs.QpAttrMask.*;

import java.util.EnumSet;
import java.util.Set;

/**
 * The legal queue pair transitions and the attributes each requires or allows, as the InfiniBand spec
 * (vol. 1, 10.3 and table 91) and the Linux kernel's {@code ib_modify_qp_is_ok} define them for RC and UC.
 * Both providers check a modify here first, so a mistake gets a message that names what is legal.
 */
public final class QpStateMachine {
    private QpStateMachine() {}

    /**
     * A legal transition: what it must carry and what it may carry besides STATE.
     *
     * @param required the attributes the modify must set
     * @param optional the attributes it may set as well
     */
    public record Transition(Set<QpAttrMask> required, Set<QpAttrMask> optional) {}

    private static final Set<QpAttrMask> NONE = EnumSet.noneOf(QpAttrMask.class);

    /**
     * The rules of one transition. Any state may move to RESET or ERR with no other attribute.
     *
     * @param type the QP's type
     * @param cur  the state it is in
     * @param next the state to move to
     * @return the required and optional attributes, or null when the transition is illegal
     */
    public static Transition transition(QpType type, QpState cur, QpState next) {
        if (next == QpState.RESET || next == QpState.ERR) return new Transition(NONE, NONE);
        boolean rc = type == QpType.RC;
        return switch (cur) {
            case RESET ->
                next == QpState.INIT
                        ? new Transition(
                                type == QpType.UD
                                        ? EnumSet.of(PKEY_INDEX, PORT, QKEY)
                                        : EnumSet.of(PKEY_INDEX, PORT, ACCESS_FLAGS),
                                NONE)
                        : null;
            case INIT ->
                switch (next) {
                    case INIT ->
                        new Transition(
                                NONE,
                                type == QpType.UD
                                        ? EnumSet.of(PKEY_INDEX, PORT, QKEY)
                                        : EnumSet.of(PKEY_INDEX, PORT, ACCESS_FLAGS));
                    case RTR ->
                        type == QpType.UD
                                ? new Transition(NONE, EnumSet.of(PKEY_INDEX, QKEY))
                                : new Transition(
                                        rc
                                                ? EnumSet.of(
                                                        AV,
                                                        PATH_MTU,
                                                        DEST_QPN,
                                                        RQ_PSN,
                                                        MAX_DEST_RD_ATOMIC,
                                                        MIN_RNR_TIMER)
                                                : EnumSet.of(AV, PATH_MTU, DEST_QPN, RQ_PSN),
                                        rc
                                                ? EnumSet.of(ALT_PATH, ACCESS_FLAGS, PKEY_INDEX, PACKET_AUTH_KEY)
                                                : EnumSet.of(ALT_PATH, ACCESS_FLAGS, PKEY_INDEX));
                    default -> null;
                };
            case RTR ->
                next == QpState.RTS
                        ? type == QpType.UD
                                ? new Transition(EnumSet.of(SQ_PSN), EnumSet.of(CUR_STATE, QKEY))
                                : new Transition(
                                        rc
                                                ? EnumSet.of(TIMEOUT, RETRY_CNT, RNR_RETRY, SQ_PSN, MAX_QP_RD_ATOMIC)
                                                : EnumSet.of(SQ_PSN),
                                        rc
                                                ? EnumSet.of(
                                                        CUR_STATE,
                                                        ALT_PATH,
                                                        ACCESS_FLAGS,
                                                        MIN_RNR_TIMER,
                                                        PATH_MIG_STATE)
                                                : EnumSet.of(CUR_STATE, ALT_PATH, ACCESS_FLAGS, PATH_MIG_STATE))
                        : null;
            case RTS ->
                switch (next) {
                    case RTS ->
                        new Transition(
                                NONE, EnumSet.of(CUR_STATE, ACCESS_FLAGS, ALT_PATH, PATH_MIG_STATE, MIN_RNR_TIMER));
                    case SQD -> new Transition(NONE, EnumSet.of(EN_SQD_ASYNC_NOTIFY));
                    default -> null;
                };
            case SQD ->
                switch (next) {
                    case RTS ->
                        new Transition(
                                NONE, EnumSet.of(CUR_STATE, ACCESS_FLAGS, ALT_PATH, MIN_RNR_TIMER, PATH_MIG_STATE));
                    case SQD ->
                        new Transition(
                                NONE,
                                EnumSet.of(
                                        AV,
                                        ALT_PATH,
                                        ACCESS_FLAGS,
                                        PKEY_INDEX,
                                        MIN_RNR_TIMER,
                                        PATH_MIG_STATE,
                                        TIMEOUT,
                                        RETRY_CNT,
                                        RNR_RETRY,
                                        MAX_QP_RD_ATOMIC,
                                        MAX_DEST_RD_ATOMIC));
                    default -> null;
                };
            case SQE -> next == QpState.RTS && !rc ? new Transition(NONE, EnumSet.of(CUR_STATE, ACCESS_FLAGS)) : null;
            case ERR -> null;
        };
    }

    /**
     * Checks a modify of a QP in state {@code cur} with {@code attr}.
     *
     * @param type the QP's type
     * @param cur  the state it is in
     * @param attr the modify's attributes
     * @return the state it moves to ({@code cur} when the modify does not set STATE)
     * @throws VerbsException (EINVAL) naming the legal transitions or the missing/forbidden attributes
     */
    public static QpState check(QpType type, QpState cur, QpAttr attr) {
        Set<QpAttrMask> mask = attr.mask();
        QpState next = mask.contains(STATE) ? attr.state() : cur;
        if (mask.contains(CUR_STATE) && attr.curState() != cur) {
            throw new VerbsException(
                    "ibv_modify_qp",
                    VerbsException.EINVAL,
                    "cur_state says " + attr.curState() + " but the QP is in " + cur
                            + ": leave CUR_STATE out or set it right");
        }
        Transition t = transition(type, cur, next);
        if (t == null) {
            throw new VerbsException(
                    "ibv_modify_qp",
                    VerbsException.EINVAL,
                    "a " + type + " QP cannot go from " + cur + " to " + next + "; from " + cur + " it can go to "
                            + legalTargets(type, cur) + " (the path to send is RESET->INIT->RTR->RTS)");
        }
        EnumSet<QpAttrMask> missing = EnumSet.noneOf(QpAttrMask.class);
        for (QpAttrMask m : t.required()) if (!mask.contains(m)) missing.add(m);
        if (!missing.isEmpty()) {
            throw new VerbsException(
                    "ibv_modify_qp",
                    VerbsException.EINVAL,
                    cur + "->" + next + " requires " + names(t.required()) + "; missing " + names(missing)
                            + (t.optional().isEmpty() ? "" : " (it may also set " + names(t.optional()) + ")"));
        }
        EnumSet<QpAttrMask> extra = EnumSet.noneOf(QpAttrMask.class);
        for (QpAttrMask m : mask)
            if (m != STATE && !t.required().contains(m) && !t.optional().contains(m)) extra.add(m);
        if (!extra.isEmpty()) {
            EnumSet<QpAttrMask> allowed = EnumSet.copyOf(t.required().isEmpty() ? EnumSet.of(STATE) : t.required());
            allowed.addAll(t.optional());
            allowed.add(STATE);
            throw new VerbsException(
                    "ibv_modify_qp",
                    VerbsException.EINVAL,
                    cur + "->" + next + " does not take " + names(extra) + "; it takes " + names(allowed));
        }
        return next;
    }

    /**
     * States a QP of this type may move to from {@code cur}.
     *
     * @param type the QP's type
     * @param cur  the state it is in
     * @return the legal next states
     */
    public static Set<QpState> legalTargets(QpType type, QpState cur) {
        EnumSet<QpState> s = EnumSet.noneOf(QpState.class);
        for (QpState n : QpState.values()) if (transition(type, cur, n) != null) s.add(n);
        return s;
    }

    private static String names(Set<QpAttrMask> set) {
        StringBuilder sb = new StringBuilder();
        for (QpAttrMask m : set) sb.append(sb.isEmpty() ? "" : ", ").append(m.name());
        return sb.isEmpty() ? "nothing" : sb.toString();
    }
}

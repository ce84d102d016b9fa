package dev.jrdma.connect;

/** How an endpoint group's completion thread waits for completions. */
public enum PollMode {
    /** Arm the CQ and sleep on the completion channel (no CPU while idle; a few microseconds more latency). */
    EVENT,
    /** Spin on the CQ (one core busy; lowest latency). */
    BUSY
}

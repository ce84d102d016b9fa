package dev.jrdma.connect;

/** What an {@link Endpoint} operation does (its work request's kind, or the endpoint's own credit message). */
enum OperationKind {
    SEND,
    WRITE,
    WRITE_IMM,
    READ,
    CAS,
    FAA,
    BIND,
    INVALIDATE,
    CREDIT
}

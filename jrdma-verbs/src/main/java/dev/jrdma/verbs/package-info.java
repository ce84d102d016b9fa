/**
 * The verbs API: libibverbs' objects and verbs, as Java.
 *
 * <p>{@link dev.jrdma.verbs.Verbs} lists devices of every provider; a {@link dev.jrdma.verbs.Device} opens a
 * {@link dev.jrdma.verbs.Context}, which makes protection domains, completion channels and completion queues;
 * a {@link dev.jrdma.verbs.ProtectionDomain} registers memory, allocates memory windows and creates queue pairs.
 * Every object is {@link java.lang.AutoCloseable}: closing a parent closes its children first, use after close
 * throws {@link dev.jrdma.verbs.ClosedException}, and close is idempotent.
 *
 * <p>Data path: {@link dev.jrdma.verbs.SendWorkRequest} / {@link dev.jrdma.verbs.RecvWorkRequest} objects are
 * created once and mutated in place; {@link dev.jrdma.verbs.QueuePair#postSend} copies what it needs, so a request
 * may be reused as soon as the call returns. {@link dev.jrdma.verbs.CompletionQueue#poll} fills a reusable
 * {@link dev.jrdma.verbs.WorkCompletion} array. Neither allocates.
 *
 * <p>Errors: verbs throw {@link dev.jrdma.verbs.VerbsException} (the verb, the errno, what to check); failed work
 * completes with a {@link dev.jrdma.verbs.WcStatus} that explains itself and says what to do.
 *
 * <p>Providers implement {@link dev.jrdma.verbs.spi.VerbsProvider} (found by {@link java.util.ServiceLoader}) and
 * build their objects on {@link dev.jrdma.verbs.spi.Resource}, which gives every provider the same close rules.
 * A provider checks every modify with {@link dev.jrdma.verbs.QpStateMachine#check} before acting on it.
 */
package dev.jrdma.verbs;

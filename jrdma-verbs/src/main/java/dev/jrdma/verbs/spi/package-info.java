/**
 * The provider side of the verbs API. A provider implements {@link dev.jrdma.verbs.spi.VerbsProvider}, is declared as
 * a service ({@code provides dev.jrdma.verbs.spi.VerbsProvider with ...} in its module, or a
 * {@code META-INF/services} entry on the class path), and builds its verbs objects on
 * {@link dev.jrdma.verbs.spi.Resource} so that every provider closes, refuses use after close and reports errors the
 * same way. Applications do not use this package: they go through {@link dev.jrdma.verbs.Verbs}.
 */
package dev.jrdma.verbs.spi;

/**
 * The native provider: libibverbs through the Foreign Function &amp; Memory API, no JNI and no C shim. It calls
 * native code, so grant it access: {@code --enable-native-access=dev.jrdma.nativeverbs} on the module path
 * ({@code ALL-UNNAMED} on the class path). Nothing here is API: use it through {@code dev.jrdma.verbs}.
 *
 * @provides dev.jrdma.verbs.spi.VerbsProvider the {@code native} provider: the devices libibverbs lists
 */
module dev.jrdma.nativeverbs {
    requires dev.jrdma.verbs;

    provides dev.jrdma.verbs.spi.VerbsProvider with
            dev.jrdma.nativeverbs.NativeVerbsProvider;
}

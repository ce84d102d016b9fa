package dev.jrdma.connect;

import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.interfaces.XECPublicKey;
import java.security.spec.NamedParameterSpec;
import java.security.spec.XECPublicKeySpec;
import javax.crypto.KeyAgreement;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * One side's part in agreeing a connection's packet key ({@code QpAttr.packetAuthKey}, issue 21 §7) in the TCP
 * handshake: an ephemeral X25519 key pair whose public half travels in HELLO / ACCEPT, and the key both sides derive
 * from the shared secret with HKDF-SHA256 (RFC 5869) over both QP numbers and both public keys, so a passive
 * observer of the handshake learns nothing of it, and a key is never reused for another connection or QP pair. An
 * active attacker on the TCP path (who can swap the public keys) is not kept out: the handshake has no identities to
 * authenticate; that takes a channel with them (TLS) around it.
 */
final class PacketAuthAgreement {
    /** An X25519 public key on the wire: its u-coordinate, 32 bytes little-endian (RFC 7748). */
    static final int PUBLIC_KEY_BYTES = 32;
    /** The packet key's length. */
    static final int KEY_BYTES = 16;

    private static final byte[] SALT =
            "jrdma packet authentication v1".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

    private final KeyPair pair;
    /** This side's public key as it goes on the wire. */
    final byte[] publicKey;

    PacketAuthAgreement() {
        try {
            pair = KeyPairGenerator.getInstance("X25519").generateKeyPair();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("this JDK has no X25519 (java.security)", e);
        }
        publicKey = encode(((XECPublicKey) pair.getPublic()).getU());
    }

    /** Whether a side with {@code cfg} on {@code group}'s device offers the authenticated mode (and accepts an offer). */
    static boolean possible(EndpointConfig cfg, EndpointGroup group) {
        return cfg.packetAuth() && group.context().supportsPacketAuth();
    }

    /**
     * The connection's packet key.
     *
     * @param peerPublic   the peer's public key from the handshake
     * @param clientQpn    the client's QP number
     * @param serverQpn    the server's QP number
     * @param clientPublic the client's public key
     * @param serverPublic the server's public key
     * @return {@link #KEY_BYTES} bytes, the same on both sides
     * @throws RdmaConnectException (PROTOCOL_ERROR) when the peer's key is not one (e.g. a point of small order)
     */
    byte[] key(byte[] peerPublic, int clientQpn, int serverQpn, byte[] clientPublic, byte[] serverPublic)
            throws RdmaConnectException {
        try {
            KeyAgreement ka = KeyAgreement.getInstance("X25519");
            ka.init(pair.getPrivate());
            ka.doPhase(
                    KeyFactory.getInstance("X25519")
                            .generatePublic(new XECPublicKeySpec(NamedParameterSpec.X25519, decode(peerPublic))),
                    true);
            byte[] secret = ka.generateSecret();
            Mac hmac = Mac.getInstance("HmacSHA256");
            hmac.init(new SecretKeySpec(SALT, "HmacSHA256")); // HKDF-Extract
            byte[] prk = hmac.doFinal(secret);
            hmac.init(new SecretKeySpec(prk, "HmacSHA256")); // HKDF-Expand, one block: info | 0x01
            hmac.update(
                    ByteBuffer.allocate(8).putInt(clientQpn).putInt(serverQpn).array());
            hmac.update(clientPublic);
            hmac.update(serverPublic);
            hmac.update((byte) 1);
            return java.util.Arrays.copyOf(hmac.doFinal(), KEY_BYTES);
        } catch (GeneralSecurityException | RuntimeException e) {
            throw new RdmaConnectException(
                    RdmaConnectException.Reason.PROTOCOL_ERROR,
                    "the peer's key for packet authentication is not a usable X25519 public key: " + e.getMessage(),
                    e);
        }
    }

    private static byte[] encode(BigInteger u) {
        byte[] be = u.toByteArray(), le = new byte[PUBLIC_KEY_BYTES];
        for (int i = 0; i < PUBLIC_KEY_BYTES && i < be.length; i++) le[i] = be[be.length - 1 - i];
        return le;
    }

    private static BigInteger decode(byte[] le) {
        if (le.length != PUBLIC_KEY_BYTES) throw new IllegalArgumentException(le.length + " bytes");
        byte[] be = new byte[PUBLIC_KEY_BYTES];
        for (int i = 0; i < PUBLIC_KEY_BYTES; i++) be[i] = le[PUBLIC_KEY_BYTES - 1 - i];
        be[0] &= 0x7F; // RFC 7748: the top bit of the u-coordinate is ignored
        return new BigInteger(1, be);
    }
}

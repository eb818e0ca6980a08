/// The 64-bit FNV-1a hash: a fast change detector (a file source's etag, the config's digest),
/// not a security measure.
public enum FNV1a {
    /// The hash of `bytes`.
    public static func hash(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        return hash
    }

    /// `fnv1a-<hex>`: the hash as the file source's etags and the evaluation context's tag spell it.
    public static func tag(_ bytes: some Sequence<UInt8>) -> String { "fnv1a-" + String(hash(bytes), radix: 16) }
}

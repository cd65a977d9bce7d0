import CCrypto

/// SHA-256 (FIPS 180-4) from OpenSSL's libcrypto, for the digests of bearer tokens (a tokens
/// file keeps only a token's digest, and a presented token is digested and compared with them)
/// and the fingerprints of idempotent writes (taken as a body streams in). libcrypto is the
/// implementation everyone audits, it uses the CPU's SHA instructions on x86 and ARM, and libpq
/// links it already.
///
/// A value like any other: a copy taken mid-message goes on by itself (its libcrypto context is
/// copied when one of two sharers writes).
struct SHA256 {
    private var context = DigestContext()

    /// Takes the next bytes of the message.
    mutating func update<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        if bytes.withContiguousStorageIfAvailable({ update(buffer: UnsafeRawBufferPointer($0)) }) == nil {
            Array(bytes).withUnsafeBytes { update(buffer: $0) }
        }
    }

    /// Takes the UTF-8 bytes of `text`.
    mutating func update(_ text: String) {
        var text = text
        text.withUTF8 { update(buffer: UnsafeRawBufferPointer($0)) }
    }

    private mutating func update(buffer: UnsafeRawBufferPointer) {
        guard let start = buffer.baseAddress, !buffer.isEmpty else { return }
        if !isKnownUniquelyReferenced(&context) { context = DigestContext(copying: context) }
        context.check(EVP_DigestUpdate(context.pointer, start, buffer.count))
    }

    /// The 32-byte digest of everything taken. The hash is spent: take a new one for another message.
    mutating func finish() -> [UInt8] {
        if !isKnownUniquelyReferenced(&context) { context = DigestContext(copying: context) }
        var digest = [UInt8](repeating: 0, count: 32)
        var size: UInt32 = 0
        context.check(EVP_DigestFinal_ex(context.pointer, &digest, &size))
        return digest
    }

    /// The 32-byte digest of `message`, in one call.
    static func digest<Bytes: Collection>(_ message: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        let bytes = Array(message)
        var digest = [UInt8](repeating: 0, count: 32)
        var size: UInt32 = 0
        let done = bytes.withUnsafeBytes { EVP_Digest($0.baseAddress, $0.count, &digest, &size, DigestContext.algorithm, nil) }
        // As `DigestContext.check`: it fails only without memory or with a broken library.
        precondition(done == 1 && size == 32, "libcrypto's SHA-256 failed")
        return digest
    }

    static func hex<Bytes: Collection>(_ message: Bytes) -> String where Bytes.Element == UInt8 {
        digest(message).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    /// Whether two digests are equal, in a time that does not depend on where they differ
    /// (`CRYPTO_memcmp`), so that comparing a presented token's digest tells nothing of how
    /// much of it was right. Digests of different lengths are unequal.
    static func equalInConstantTime(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return a.withUnsafeBytes { a in b.withUnsafeBytes { b in CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 } }
    }
}

/// A libcrypto digest context for SHA-256, owned: made ready in `init`, freed in `deinit`.
private final class DigestContext {
    /// SHA-256, fetched from libcrypto's providers once: passing `EVP_sha256()` to each
    /// initialization would look it up again every time (OpenSSL 3's "implicit fetch").
    /// `nonisolated(unsafe)`: a fetched EVP_MD is read-only and may be used from any thread at
    /// once (OpenSSL's threading rules, "Objects"); it is never freed.
    nonisolated(unsafe) static let algorithm: OpaquePointer = EVP_MD_fetch(nil, "SHA256", nil) ?? EVP_sha256()

    let pointer: OpaquePointer

    init() {
        pointer = Self.newContext()
        check(EVP_DigestInit_ex2(pointer, Self.algorithm, nil))
    }

    init(copying other: DigestContext) {
        pointer = Self.newContext()
        check(EVP_MD_CTX_copy_ex(pointer, other.pointer))
    }

    deinit { EVP_MD_CTX_free(pointer) }

    private static func newContext() -> OpaquePointer {
        guard let context = EVP_MD_CTX_new() else { fatalError("libcrypto could not allocate a digest context (out of memory)") }
        return context
    }

    /// libcrypto's SHA-256 fails only without memory or with a broken library: nothing a
    /// request can cause, and nothing to answer truthfully after.
    func check(_ result: Int32) {
        precondition(result == 1, "libcrypto's SHA-256 failed")
    }
}

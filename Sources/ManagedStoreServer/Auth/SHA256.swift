/// SHA-256 (FIPS 180-4), for the digests of bearer tokens (a tokens file keeps only a
/// token's digest, and a presented token is digested and compared with them) and the
/// fingerprints of idempotent writes (taken as a body streams in). Foundation on Linux has no
/// CryptoKit, and one hash does not justify a dependency.
///
/// Every keyed write hashes its request on an HTTP thread, so the hash allocates nothing
/// per block: the state is eight words, the partial block a fixed 64 bytes, and the message
/// schedule lives on the stack. (Side by side, a POST's fingerprint took half the time of the
/// version with arrays; a block itself is about 4,400 instructions either way.)
struct SHA256 {
    private static let roundConstants: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    private var state = State()
    /// Bytes taken that do not yet fill a 64-byte block: the first `pendingCount` of `pending`.
    private var pending: Block = (0, 0, 0, 0, 0, 0, 0, 0)
    private var pendingCount = 0
    private var length: UInt64 = 0

    init() {}

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
        length &+= UInt64(buffer.count)
        var offset = 0
        if pendingCount > 0 {
            offset = min(64 - pendingCount, buffer.count)
            appendPending(UnsafeRawBufferPointer(rebasing: buffer[0..<offset]))
            guard pendingCount == 64 else { return }
            compressPending()
        }
        // Whole blocks straight from the input; what is left waits for the next bytes.
        while buffer.count - offset >= 64 {
            state.compress(UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + 64]))
            offset += 64
        }
        appendPending(UnsafeRawBufferPointer(rebasing: buffer[offset...]))
    }

    private mutating func appendPending(_ bytes: UnsafeRawBufferPointer) {
        let start = pendingCount
        withUnsafeMutableBytes(of: &pending) { block in
            block.baseAddress!.advanced(by: start).copyMemory(from: bytes.baseAddress ?? UnsafeRawPointer(block.baseAddress!), byteCount: bytes.count)
        }
        pendingCount += bytes.count
    }

    private mutating func zeroPending(upTo end: Int) {
        let start = pendingCount
        withUnsafeMutableBytes(of: &pending) { block in
            for i in start..<end { block[i] = 0 }
        }
    }

    private mutating func compressPending() {
        let block = pending
        withUnsafeBytes(of: block) { state.compress($0) }
        pendingCount = 0
    }

    /// The 32-byte digest of everything taken.
    mutating func finish() -> [UInt8] {
        // The message, a 1 bit, zeros to 56 bytes mod 64, then its length in bits (big-endian).
        let bitLength = length &* 8
        var one: UInt8 = 0x80
        withUnsafeBytes(of: &one) { appendPending($0) }
        if pendingCount > 56 {
            zeroPending(upTo: 64)
            compressPending()
        }
        zeroPending(upTo: 56)
        var bigEndianLength = bitLength.bigEndian
        pendingCount = 56
        withUnsafeBytes(of: &bigEndianLength) { appendPending($0) }
        compressPending()
        var digest = [UInt8]()
        digest.reserveCapacity(32)
        for word in state.words {
            for shift in stride(from: 24, through: 0, by: -8) { digest.append(UInt8(truncatingIfNeeded: word >> UInt32(shift))) }
        }
        return digest
    }

    /// The 32-byte digest of `message`.
    static func digest<Bytes: Collection>(_ message: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        var hash = SHA256()
        hash.update(message)
        return hash.finish()
    }

    static func hex<Bytes: Collection>(_ message: Bytes) -> String where Bytes.Element == UInt8 {
        digest(message).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    /// 64 bytes, inline.
    private typealias Block = (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)

    /// The eight working words of the hash.
    private struct State {
        var h0: UInt32 = 0x6a09e667, h1: UInt32 = 0xbb67ae85, h2: UInt32 = 0x3c6ef372, h3: UInt32 = 0xa54ff53a
        var h4: UInt32 = 0x510e527f, h5: UInt32 = 0x9b05688c, h6: UInt32 = 0x1f83d9ab, h7: UInt32 = 0x5be0cd19

        var words: [UInt32] { [h0, h1, h2, h3, h4, h5, h6, h7] }

        /// One 64-byte block into the state.
        mutating func compress(_ block: UnsafeRawBufferPointer) {
            withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
                for i in 0..<16 {
                    let b = i * 4
                    w[i] = UInt32(block[b]) &<< 24 | UInt32(block[b + 1]) &<< 16 | UInt32(block[b + 2]) &<< 8 | UInt32(block[b + 3])
                }
                for i in 16..<64 {
                    let s0 = rotateRight(w[i - 15], 7) ^ rotateRight(w[i - 15], 18) ^ (w[i - 15] &>> 3)
                    let s1 = rotateRight(w[i - 2], 17) ^ rotateRight(w[i - 2], 19) ^ (w[i - 2] &>> 10)
                    w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
                }
                var (a, b, c, d, e, f, g, h) = (h0, h1, h2, h3, h4, h5, h6, h7)
                SHA256.roundConstants.withUnsafeBufferPointer { k in
                    for i in 0..<64 {
                        let sum1 = rotateRight(e, 6) ^ rotateRight(e, 11) ^ rotateRight(e, 25)
                        let choice = (e & f) ^ (~e & g)
                        let temp1 = h &+ sum1 &+ choice &+ k[i] &+ w[i]
                        let sum0 = rotateRight(a, 2) ^ rotateRight(a, 13) ^ rotateRight(a, 22)
                        let majority = (a & b) ^ (a & c) ^ (b & c)
                        let temp2 = sum0 &+ majority
                        (h, g, f, e, d, c, b, a) = (g, f, e, d &+ temp1, c, b, a, temp1 &+ temp2)
                    }
                }
                h0 &+= a; h1 &+= b; h2 &+= c; h3 &+= d; h4 &+= e; h5 &+= f; h6 &+= g; h7 &+= h
            }
        }

        /// Masking shifts: the counts are constants below 32, so no overshift check is needed.
        @inline(__always)
        private func rotateRight(_ value: UInt32, _ count: UInt32) -> UInt32 { (value &>> count) | (value &<< (32 &- count)) }
    }
}

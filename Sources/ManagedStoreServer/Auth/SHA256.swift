import CSHA256

/// SHA-256 (FIPS 180-4), for the digests of bearer tokens (a tokens file keeps only a
/// token's digest, and a presented token is digested and compared with them) and the
/// fingerprints of idempotent writes (taken as a body streams in). Foundation on Linux has no
/// CryptoKit, and one hash does not justify a dependency.
///
/// Every keyed write hashes its request on an HTTP thread, so the hash allocates nothing
/// per block: the state is eight words, the partial block a fixed 64 bytes, and the message
/// schedule lives on the stack (arrays made the fingerprint the largest part of a keyed
/// POST's own work). Blocks go through the CPU's SHA extensions where it has them
/// (`CSHA256`), a fraction of the Swift loop's cost (Benchmarks/RESULTS.md, "Figures behind the
/// code"). The Swift loop is kept for other CPUs, and a test compares the two.
struct SHA256 {
    /// How blocks are compressed.
    enum Compression: Sendable {
        /// The Swift loop, on any CPU.
        case portable
        /// The x86 SHA extensions, where the CPU has them.
        case hardware
    }

    /// `hardware` when this CPU has the SHA extensions.
    static let fastest: Compression = csha256_hardware_available() != 0 ? .hardware : .portable

    /// K of FIPS 180-4, from the C side that the hardware path reads it from (a constant
    /// table there, so the pointer is read afresh rather than shared).
    private static var roundConstants: UnsafeBufferPointer<UInt32> { UnsafeBufferPointer(start: csha256_round_constants(), count: 64) }

    private var state = State()
    /// Bytes taken that do not yet fill a 64-byte block: the first `pendingCount` of `pending`.
    private var pending: Block = (0, 0, 0, 0, 0, 0, 0, 0)
    private var pendingCount = 0
    private var length: UInt64 = 0
    private let compression: Compression

    /// A hash compressing its blocks with `compression`; `hardware` falls back to `portable`
    /// on a CPU without the SHA extensions.
    init(compression: Compression = SHA256.fastest) {
        self.compression = compression == .hardware ? SHA256.fastest : .portable
    }

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
        let wholeBlocks = (buffer.count - offset) / 64
        if wholeBlocks > 0 {
            state.compress(UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + wholeBlocks * 64]), compression)
            offset += wholeBlocks * 64
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
        withUnsafeBytes(of: block) { state.compress($0, compression) }
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

        /// `blocks` (a whole number of 64-byte blocks) into the state.
        mutating func compress(_ blocks: UnsafeRawBufferPointer, _ compression: Compression) {
            switch compression {
            case .hardware:
                compressWithExtensions(blocks)
            case .portable:
                for start in stride(from: 0, to: blocks.count, by: 64) {
                    compressPortably(UnsafeRawBufferPointer(rebasing: blocks[start..<start + 64]))
                }
            }
        }

        private mutating func compressWithExtensions(_ blocks: UnsafeRawBufferPointer) {
            guard let start = blocks.baseAddress else { return }
            // A homogeneous tuple is laid out as an array of its elements.
            var words = (h0, h1, h2, h3, h4, h5, h6, h7)
            withUnsafeMutablePointer(to: &words) { tuple in
                tuple.withMemoryRebound(to: UInt32.self, capacity: 8) { state in
                    csha256_compress_hardware(state, start, blocks.count / 64)
                }
            }
            (h0, h1, h2, h3, h4, h5, h6, h7) = words
        }

        /// One 64-byte block into the state, in Swift.
        private mutating func compressPortably(_ block: UnsafeRawBufferPointer) {
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
                do {
                    let k = SHA256.roundConstants
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

/// SHA-256 (FIPS 180-4), for the digests of bearer tokens (a tokens file keeps only a
/// token's digest, and a presented token is digested and compared with them) and the
/// fingerprints of idempotent writes (taken as a body streams in). Foundation on Linux has no
/// CryptoKit, and one hash does not justify a dependency.
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

    private var state: [UInt32] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]
    /// Bytes taken that do not yet fill a 64-byte block.
    private var pending: [UInt8] = []
    private var length: UInt64 = 0
    private var words = [UInt32](repeating: 0, count: 64)

    init() { pending.reserveCapacity(64) }

    /// Takes the next bytes of the message.
    mutating func update<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        if bytes.withContiguousStorageIfAvailable({ update(buffer: $0) }) == nil {
            Array(bytes).withUnsafeBufferPointer { update(buffer: $0) }
        }
    }

    private mutating func update(buffer: UnsafeBufferPointer<UInt8>) {
        length &+= UInt64(buffer.count)
        var offset = 0
        if !pending.isEmpty {
            offset = min(64 - pending.count, buffer.count)
            pending.append(contentsOf: buffer[0..<offset])
            guard pending.count == 64 else { return }
            compress(pending)
            pending.removeAll(keepingCapacity: true)
        }
        // Whole blocks straight from the input; what is left waits for the next bytes.
        while buffer.count - offset >= 64 {
            compress(UnsafeBufferPointer(rebasing: buffer[offset..<offset + 64]))
            offset += 64
        }
        pending.append(contentsOf: buffer[offset...])
    }

    /// The 32-byte digest of everything taken.
    mutating func finish() -> [UInt8] {
        // The message, a 1 bit, zeros to 56 bytes mod 64, then its length in bits (big-endian).
        let bitLength = length &* 8
        var tail = pending
        tail.append(0x80)
        while tail.count % 64 != 56 { tail.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) { tail.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))) }
        for blockStart in stride(from: 0, to: tail.count, by: 64) { compress(tail[blockStart..<blockStart + 64]) }
        pending = []
        return state.flatMap { word in [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: word >> UInt32($0)) } }
    }

    /// One 64-byte block into the state.
    private mutating func compress<Block: Collection>(_ block: Block) where Block.Element == UInt8, Block.Index == Int {
        let b0 = block.startIndex
        for i in 0..<16 {
            let b = b0 + i * 4
            words[i] = UInt32(block[b]) << 24 | UInt32(block[b + 1]) << 16 | UInt32(block[b + 2]) << 8 | UInt32(block[b + 3])
        }
        for i in 16..<64 {
            let s0 = Self.rotateRight(words[i - 15], 7) ^ Self.rotateRight(words[i - 15], 18) ^ (words[i - 15] >> 3)
            let s1 = Self.rotateRight(words[i - 2], 17) ^ Self.rotateRight(words[i - 2], 19) ^ (words[i - 2] >> 10)
            words[i] = words[i - 16] &+ s0 &+ words[i - 7] &+ s1
        }
        var (a, b, c, d, e, f, g, h) = (state[0], state[1], state[2], state[3], state[4], state[5], state[6], state[7])
        for i in 0..<64 {
            let sum1 = Self.rotateRight(e, 6) ^ Self.rotateRight(e, 11) ^ Self.rotateRight(e, 25)
            let choice = (e & f) ^ (~e & g)
            let temp1 = h &+ sum1 &+ choice &+ Self.roundConstants[i] &+ words[i]
            let sum0 = Self.rotateRight(a, 2) ^ Self.rotateRight(a, 13) ^ Self.rotateRight(a, 22)
            let majority = (a & b) ^ (a & c) ^ (b & c)
            let temp2 = sum0 &+ majority
            (h, g, f, e, d, c, b, a) = (g, f, e, d &+ temp1, c, b, a, temp1 &+ temp2)
        }
        for (i, value) in [a, b, c, d, e, f, g, h].enumerated() { state[i] = state[i] &+ value }
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

    private static func rotateRight(_ value: UInt32, _ count: UInt32) -> UInt32 { (value >> count) | (value << (32 - count)) }
}

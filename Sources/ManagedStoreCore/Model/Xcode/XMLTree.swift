/// An XML document as a tree of elements, for the files Xcode writes (a model's `contents`, a
/// bundle's `.xccurrentversion` plist): elements, attributes, character data, the five named
/// entities and character references. Comments, processing instructions and the DOCTYPE are
/// skipped; a DTD's declarations are not read. Not a general XML parser: no namespaces, no
/// CDATA sections, no external entities (so nothing a file names is ever fetched).
package struct XMLTreeElement: Sendable, Equatable {
    package var name: String
    package var attributes: [(name: String, value: String)]
    package var children: [XMLTreeElement]
    /// The character data directly inside the element, entities resolved.
    package var text: String

    package init(name: String, attributes: [(name: String, value: String)] = [], children: [XMLTreeElement] = [], text: String = "") {
        self.name = name
        self.attributes = attributes
        self.children = children
        self.text = text
    }

    package subscript(attribute name: String) -> String? { attributes.first { $0.name == name }?.value }

    /// The children named `name`, in document order.
    package func children(named name: String) -> [XMLTreeElement] { children.filter { $0.name == name } }

    package static func == (a: XMLTreeElement, b: XMLTreeElement) -> Bool {
        a.name == b.name && a.attributes.map(\.name) == b.attributes.map(\.name) && a.attributes.map(\.value) == b.attributes.map(\.value)
            && a.children == b.children && a.text == b.text
    }
}

/// Why a document could not be read, and where (a byte offset).
package struct XMLError: Error, Sendable, Equatable, CustomStringConvertible {
    package let message: String
    package let offset: Int
    package var description: String { "XML: \(message) at byte \(offset)" }
}

/// Reads a document's root element (`parse`). Depth is bounded, so no input can exhaust the stack.
package struct XMLTreeParser {
    private let bytes: [UInt8]
    private var position = 0
    private let maxDepth: Int

    package init(_ bytes: some Collection<UInt8>, maxDepth: Int = 64) {
        self.bytes = Array(bytes)
        self.maxDepth = maxDepth
    }

    package static func parse(_ bytes: some Collection<UInt8>) throws(XMLError) -> XMLTreeElement {
        var parser = XMLTreeParser(bytes)
        return try parser.document()
    }

    private mutating func document() throws(XMLError) -> XMLTreeElement {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { position = 3 }  // a UTF-8 byte order mark
        try skipMisc()
        guard peek() == UInt8(ascii: "<") else { throw fail("expected the root element") }
        let root = try element(depth: 0)
        try skipMisc()
        guard position == bytes.count else { throw fail("content after the root element") }
        return root
    }

    /// Whitespace, comments, processing instructions (the XML declaration) and a DOCTYPE.
    private mutating func skipMisc() throws(XMLError) {
        while true {
            skipWhitespace()
            if starts(with: "<?") {
                try skip(past: "?>")
            } else if starts(with: "<!--") {
                try skip(past: "-->")
            } else if starts(with: "<!DOCTYPE") {
                try skip(past: ">")
            } else {
                return
            }
        }
    }

    private mutating func element(depth: Int) throws(XMLError) -> XMLTreeElement {
        guard depth < maxDepth else { throw fail("elements nested deeper than \(maxDepth)") }
        position += 1  // "<"
        var element = XMLTreeElement(name: try name())
        while true {
            skipWhitespace()
            if starts(with: "/>") {
                position += 2
                return element
            }
            if peek() == UInt8(ascii: ">") {
                position += 1
                break
            }
            let attribute = try name()
            skipWhitespace()
            guard peek() == UInt8(ascii: "=") else { throw fail("expected = after attribute \(attribute)") }
            position += 1
            skipWhitespace()
            guard let quote = peek(), quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") else { throw fail("expected a quoted value") }
            position += 1
            let value = try characters(until: quote)
            position += 1
            guard element[attribute: attribute] == nil else { throw fail("attribute \(attribute) given twice") }
            element.attributes.append((attribute, value))
        }
        // Content: character data, child elements, comments; then the end tag.
        while true {
            element.text += try characters(until: UInt8(ascii: "<"))
            if starts(with: "</") {
                position += 2
                let closing = try name()
                guard closing == element.name else { throw fail("</\(closing)> closes <\(element.name)>") }
                skipWhitespace()
                guard peek() == UInt8(ascii: ">") else { throw fail("expected > after </\(closing)") }
                position += 1
                return element
            } else if starts(with: "<!--") {
                try skip(past: "-->")
            } else if starts(with: "<![CDATA[") {
                throw fail("CDATA sections are not read")
            } else if starts(with: "<?") {
                try skip(past: "?>")
            } else {
                element.children.append(try self.element(depth: depth + 1))
            }
        }
    }

    private mutating func name() throws(XMLError) -> String {
        let start = position
        while let byte = peek(), byte > 0x7F || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "-")
                || byte == UInt8(ascii: ".") || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || (byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "z")) {
            position += 1
        }
        guard position > start else { throw fail("expected a name") }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    /// Character data up to (not including) `end`, entities resolved; the document must go on to `end`.
    private mutating func characters(until end: UInt8) throws(XMLError) -> String {
        var result: [UInt8] = []
        while true {
            guard let byte = peek() else {
                if end == UInt8(ascii: "<") { throw fail("the document ends inside an element") }
                throw fail("the document ends inside a quoted value")
            }
            if byte == end { break }
            if byte == UInt8(ascii: "<") { throw fail("< inside a quoted value") }
            if byte == UInt8(ascii: "&") {
                result += try entity()
            } else {
                result.append(byte)
                position += 1
            }
        }
        guard let text = String(validating: result, as: UTF8.self) else { throw fail("text that is not UTF-8") }
        return text
    }

    /// `&amp;` and the other named entities, `&#NN;` and `&#xNN;`, as UTF-8.
    private mutating func entity() throws(XMLError) -> [UInt8] {
        let start = position
        guard let semicolon = bytes[position...].prefix(12).firstIndex(of: UInt8(ascii: ";")) else { throw fail("an & that starts no entity") }
        let body = String(decoding: bytes[(position + 1)..<semicolon], as: UTF8.self)
        position = semicolon + 1
        switch body {
        case "amp": return Array("&".utf8)
        case "lt": return Array("<".utf8)
        case "gt": return Array(">".utf8)
        case "quot": return Array("\"".utf8)
        case "apos": return Array("'".utf8)
        default:
            let number: UInt32?
            if body.hasPrefix("#x") || body.hasPrefix("#X") {
                number = UInt32(body.dropFirst(2), radix: 16)
            } else if body.hasPrefix("#") {
                number = UInt32(body.dropFirst(), radix: 10)
            } else {
                number = nil
            }
            guard let number, number != 0, let scalar = Unicode.Scalar(number) else {
                position = start
                throw fail("unknown entity &\(body);")
            }
            return Array(String(Character(scalar)).utf8)
        }
    }

    private mutating func skipWhitespace() {
        while let byte = peek(), byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { position += 1 }
    }

    private mutating func skip(past end: String) throws(XMLError) {
        let terminator = Array(end.utf8)
        var i = position
        while i + terminator.count <= bytes.count {
            if bytes[i..<(i + terminator.count)].elementsEqual(terminator) {
                position = i + terminator.count
                return
            }
            i += 1
        }
        throw fail("no \(end) before the end")
    }

    private func starts(with text: String) -> Bool { bytes[position...].starts(with: text.utf8) }
    private func peek() -> UInt8? { position < bytes.count ? bytes[position] : nil }
    private func fail(_ message: String) -> XMLError { XMLError(message: message, offset: position) }
}

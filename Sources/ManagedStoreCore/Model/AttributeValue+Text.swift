import Foundation

extension AttributeValue {
    /// `text` read as a value of `type`, as a URL or a command line gives it: integers in
    /// range, numbers, exact decimals, `true`/`false` (or YES/NO, 1/0), RFC 3339 dates, UUIDs,
    /// URIs, base64 for binary; nil when it is not one.
    package init?(text: String, type: AttributeType) {
        switch type {
        case .integer16, .integer32, .integer64:
            guard let value = Int64(text), type.integerRange!.contains(value) else { return nil }
            self = .integer(value)
        case .double:
            guard let value = Double(text), value.isFinite else { return nil }
            self = .double(value)
        case .float:
            guard let value = Float(text), value.isFinite else { return nil }
            self = .float(value)
        case .decimal:
            guard let value = Decimal.exactly(text) else { return nil }
            self = .decimal(value)
        case .boolean:
            switch text {
            case "true", "YES", "1": self = .boolean(true)
            case "false", "NO", "0": self = .boolean(false)
            default: return nil
            }
        case .date:
            guard let date = RFC3339.date(from: text) else { return nil }
            self = .date(date)
        case .uuid:
            guard let uuid = UUID(uuidString: text) else { return nil }
            self = .uuid(uuid)
        case .uri:
            guard let url = URL(string: text) else { return nil }
            self = .uri(url)
        case .string: self = .string(text)
        case .binary:
            guard let data = Data(base64Encoded: text) else { return nil }
            self = .binary(data)
        }
    }
}

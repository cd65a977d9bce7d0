import ManagedStoreCore

/// The values of the contract that PostgreSQL cannot keep as they are. A save holding one is
/// refused at validation (HTTP 422 naming the attribute), before anything is written; written,
/// PostgreSQL would refuse it and the save would fail as the store failing (503), which a
/// client retries for ever. The SQLite store keeps both.
///
/// - U+0000 in a string (`invalid-type`): `text` has no such character. No escape keeps every
///   answer: an escape of two characters (say U+0001 then a second) keeps equality, order and
///   prefixes, but a `CONTAINS` or `ENDSWITH` could then find the escape's second character
///   where the stored string has none.
/// - A value that would make an entry of a B-tree index (a uniqueness constraint or an index
///   the model declares) longer than PostgreSQL's 2,704 bytes (`too-long`). The size is
///   reckoned before compression, an upper bound of what PostgreSQL stores: whatever passes,
///   PostgreSQL indexes; a longer value it might compress below the limit is refused all the
///   same, so that what is refused does not depend on the value's content.
enum PGValueLimits {
    /// PostgreSQL's largest B-tree entry on 8 KiB pages (`BTMaxItemSize`), in bytes.
    static let indexEntryBytes = 2_704

    /// What of `attributes`, an object of `entity` whose table has B-tree indexes over
    /// `indexes` (`indexedAttributes`), PostgreSQL cannot keep.
    static func refusals(of attributes: [AttributeValue], entity: Entity, indexes: [[Int?]]) -> [StoreValueRefusal] {
        var refusals: [StoreValueRefusal] = []
        for (index, value) in attributes.enumerated() {
            if case .string(let text) = value, text.utf8.contains(0) {
                refusals.append(StoreValueRefusal(attribute: index, code: .invalidType,
                                                  message: "a PostgreSQL store cannot hold U+0000 (NUL) in a string"))
            }
        }
        for columns in indexes {
            let needed = entryBytes(columns.map { $0.map { attributes[$0] } })
            guard needed > indexEntryBytes else { continue }
            // The longest value of the entry is the one to shorten.
            guard let longest = columns.compactMap({ $0 }).max(by: { variableBytes(attributes[$0]) < variableBytes(attributes[$1]) }),
                  !refusals.contains(where: { $0.attribute == longest }) else { continue }
            let names = columns.map { $0.map { entity.attributes[$0].name } ?? "a relationship" }.joined(separator: ", ")
            refusals.append(StoreValueRefusal(attribute: longest, code: .tooLong, message:
                "\(variableBytes(attributes[longest])) bytes: PostgreSQL indexes (\(names)) in entries of at most \(indexEntryBytes) bytes, "
                + "and this one would need \(needed)"))
        }
        return refusals
    }

    /// The attributes of each B-tree index of `entity`'s table but its keys: uniqueness
    /// constraints, then declared indexes (nil: a column that is not an attribute, a key).
    static func indexedAttributes(of entity: Entity) -> [[Int?]] {
        entity.uniquenessConstraints.map { $0.map(Optional.some) } + entity.indexes.map { $0.map { entity.attributeIndex($0) } }
    }

    /// An upper bound of the bytes of an index entry holding `values` (nil: a key column):
    /// PostgreSQL's header and null bitmap, each fixed-size value at its largest with its
    /// alignment, each variable-length value with its length word and alignment.
    static func entryBytes(_ values: [AttributeValue?]) -> Int {
        16 + values.reduce(0) { sum, value in
            let bytes = value.map(variableBytes) ?? 0
            return sum + (bytes > 0 ? 12 + bytes : 16)
        }
    }

    /// The bytes of a variable-length value as PostgreSQL stores it (0: a fixed-size value or null).
    static func variableBytes(_ value: AttributeValue) -> Int {
        switch value {
        case .string(let text): return text.utf8.count
        case .uri(let url): return url.absoluteString.utf8.count
        case .binary(let data): return data.count
        case .decimal(let decimal): return "\(decimal)".utf8.count
        default: return 0
        }
    }
}

extension PostgreSQLStore {
    package var refusesSomeValues: Bool { true }

    package func refusals(of attributes: [AttributeValue], entity: Entity) -> [StoreValueRefusal] {
        PGValueLimits.refusals(of: attributes, entity: entity, indexes: schema[entity].bTreeIndexes)
    }
}

import Foundation
import ManagedStoreCore
import ManagedStoreHTTP

/// The answer to a write, made on a front thread from what the write thread reported: JSON
/// written here, so that the write thread does SQL and little else (except for a write with
/// an idempotency key, whose answer is stored with it: `IdempotentWrite`).
enum WriteResponse {
    /// The answer for `outcome`, the write queue's report on one request.
    static func make(_ outcome: WriteOutcome<WriteResult>, layouts: JSONLayouts) -> HTTPResponse {
        switch outcome {
        case .completed(let result):
            return make(result, layouts: layouts)
        case .undone:
            return Problem.unavailable("the store rolled the transaction back (a full disk, an I/O error, or a statement the database refused at its end); nothing was written: send it again").response
        case .notRun:
            return Problem.unavailable("the server is shutting down; nothing was written").response
        }
    }

    static func make(_ result: WriteResult, layouts: JSONLayouts) -> HTTPResponse {
        let encoder = ObjectJSONEncoder(layouts: layouts)
        switch result {
        case .problem(let problem):
            return problem.response
        case let .object(status, state, location, merge, token):
            var writer = JSONWriter(reservingCapacity: 512)
            encoder.encode(state, into: &writer)
            var response = HTTPResponse.json(status, writer.bytes, version: state.version)
            if let location { response.headers.append(("Location", location)) }
            response.headers.append(historyToken(token))
            response.headers += headers(merge)
            return response
        case let .deleted(merge, token):
            return HTTPResponse(status: 204, headers: [historyToken(token)] + headers(merge))
        case .transaction(let answer):
            var writer = JSONWriter(reservingCapacity: 512 + 256 * answer.objects.count)
            writer.writeRaw("{\"ids\":")
            writer.write(.object(answer.ids.map { ($0.ref, .string($0.id.description)) }))
            writer.writeRaw(",\"objects\":[")
            var first = true
            for state in answer.objects {
                if !first { writer.writeRaw(",") }
                first = false
                encoder.encode(state, into: &writer)
            }
            for id in answer.deleted {
                if !first { writer.writeRaw(",") }
                first = false
                writer.write(.object([("_id", .string(id.description)), ("_deleted", .bool(true))]))
            }
            writer.writeRaw("],\"token\":")
            writer.writeString(answer.token.description)
            writer.writeRaw(",\"resolved\":")
            writer.write(.array(answer.resolved))
            writer.writeRaw("}")
            return HTTPResponse.json(200, writer.bytes, headers: [historyToken(answer.token)] + headers(answer.merge))
        case let .batch(count, entity, keys, token):
            return batchAnswer(count: count, entity: entity, keys: keys, token: token)
        }
    }

    /// `{"count": n}`, and `"ids"` in order when there are IDs to tell (a batch insert, from a
    /// JSON array or an NDJSON stream).
    static func batchAnswer(count: Int, entity: String, keys: [Int64]?, token: PersistentHistoryToken) -> HTTPResponse {
        var writer = JSONWriter(reservingCapacity: 32 + (keys?.count ?? 0) * (entity.utf8.count + 12))
        writer.writeRaw("{\"count\":")
        writer.writeInteger(Int64(count))
        if let keys {
            writer.writeRaw(",\"ids\":[")
            // IDs are `Entity/key`: an entity name is an identifier, nothing in it needs escaping.
            let prefix = Array("\"\(entity)/".utf8)
            for (i, key) in keys.enumerated() {
                if i > 0 { writer.writeRaw(",") }
                writer.writeRaw(prefix)
                writer.writeInteger(key)
                writer.writeRaw("\"")
            }
            writer.writeRaw("]")
        }
        writer.writeRaw("}")
        return .json(200, writer.bytes, headers: [historyToken(token)])
    }

    /// `History-Token`: the token the write's save committed, so that a client can wait until
    /// a live query (or the change feed) has reached its own write.
    private static func historyToken(_ token: PersistentHistoryToken) -> (name: String, value: String) {
        ("History-Token", token.description)
    }

    /// `Merge-Policy-Applied` and `Merge-Conflicts`, when the merge policy resolved conflicts.
    private static func headers(_ merge: MergeReport?) -> [(name: String, value: String)] {
        guard let merge else { return [] }
        return [("Merge-Policy-Applied", merge.policy), ("Merge-Conflicts", merge.properties)]
    }
}

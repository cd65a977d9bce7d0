import ArgumentParser
import Foundation
import ManagedStore

/// `import` and `export` through a running server's API: the same NDJSON, the server's model
/// and its tokens, its checks and its write queue.
enum RemoteTransfer {
    /// Every object of `entity` matching `predicate`, a page of 1,000 at a time (keyset cursors:
    /// a write between pages neither repeats nor skips an object), one JSON line each. Returns
    /// how many.
    static func export(entity: String, where predicate: String?, through server: ServerClient,
                       write: ([UInt8]) throws -> Void, progress: (Int) -> Void) throws -> Int {
        var rows = 0
        var cursor: String?
        repeat {
            var query = "limit=1000"
            if let predicate { query += "&where=" + encoded(predicate) }
            if let cursor { query += "&after=" + encoded(cursor) }
            let answer = try call { try server.send("GET", "/v1/objects/\(encoded(entity))?\(query)") }
            guard answer.status == 200, let page = try? JSONParser().parse(answer.body), let objects = page["objects"]?.arrayValue else {
                throw failure("GET /v1/objects/\(entity)", answer)
            }
            var lines: [UInt8] = []
            for object in objects { lines += Array(object.serialized().utf8) + [UInt8(ascii: "\n")] }
            try write(lines)
            rows += objects.count
            progress(rows)
            cursor = page["next"]?.stringValue
        } while cursor != nil
        return rows
    }

    /// The NDJSON `input` POSTed as it is read (chunked, never held whole), as one streamed
    /// batch insert; returns how many objects the server stored.
    static func `import`(_ input: FileHandle, entity: String, through server: ServerClient, progress: @escaping (Int) -> Void) throws -> Int {
        var sent = 0
        var client = server
        client.timeout = 3_600  // the answer comes once the whole body is stored
        let answer = try call {
            try client.send("POST", "/v1/objects/\(encoded(entity))", contentType: "application/x-ndjson") {
                let chunk = [UInt8](input.readData(ofLength: 65_536))
                sent += chunk.count
                progress(sent)
                return chunk
            }
        }
        guard answer.status == 200, let result = try? JSONParser().parse(answer.body), let count = result["count"]?.int64Value else {
            throw failure("POST /v1/objects/\(entity)", answer)
        }
        return Int(count)
    }

    private static func call(_ body: () throws -> ServerClient.Answer) throws -> ServerClient.Answer {
        do { return try body() } catch let error as HTTPProbe.Failure {
            CommandLog.error("the server: \(error)")
            throw ExitCode(1)
        }
    }

    /// A refusal, in the server's own words (its problem's detail).
    private static func failure(_ request: String, _ answer: ServerClient.Answer) -> ExitCode {
        let problem = try? JSONParser().parse(answer.body)
        let detail = problem?["detail"]?.stringValue ?? answer.text.prefix(500).description
        CommandLog.error("\(request): \(answer.status) \(problem?["code"]?.stringValue ?? ""): \(detail)")
        if let errors = problem?["errors"] { CommandLog.write(errors.serialized() + "\n") }
        return ExitCode(1)
    }

    private static func encoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")) ?? text
    }
}

import Foundation
import ManagedStoreCore

/// `managedstore import`: an NDJSON file into a store, exactly as `POST /v1/objects/{Entity}`
/// with `application/x-ndjson` takes it (the same parsing, checks, chunks of 1000 lines, each
/// one transaction on a write queue, and the same stop at a bad line), without a server.
public struct NDJSONFileImport {
    /// How far the import is, after each piece of the file read.
    public struct Progress: Sendable {
        /// Rows stored so far (whole chunks).
        public let rows: Int
        public let bytesRead: Int
    }

    /// Why the import stopped: nothing of the failing line's chunk was stored, the `committed`
    /// rows before it were.
    public struct Failure: Error, CustomStringConvertible {
        /// The contract's problem code (`invalid-json`, `validation`, ...).
        public let code: String
        /// 1-based, blank lines counted; nil when no line is to blame.
        public let line: Int?
        public let committed: Int
        /// The problem as the API would answer it (problem+json).
        public let problemJSON: String
        public let message: String
        public var description: String { message }
    }

    let coordinator: PersistentStoreCoordinator
    let entity: EntityDescription
    let author: String?

    public init(coordinator: PersistentStoreCoordinator, entityName: String, author: String? = "managedstore import") throws {
        guard let entity = coordinator.model.entity(named: entityName) else {
            throw Failure(code: "unknown-entity", line: nil, committed: 0, problemJSON: "",
                          message: "the model has no entity '\(entityName)' (its entities: \(coordinator.model.entities.map(\.name).joined(separator: ", ")))")
        }
        guard !entity.isAbstract else {
            throw Failure(code: "bad-request", line: nil, committed: 0, problemJSON: "",
                          message: "\(entityName) is abstract: import into one of its sub-entities (\(coordinator.model.kindNames(of: entityName).joined(separator: ", ")))")
        }
        self.coordinator = coordinator
        self.entity = entity
        self.author = author
    }

    /// Reads `input` to its end and imports it; returns the number of rows stored.
    public func run(from input: FileHandle, progress: (Progress) -> Void = { _ in }) throws -> Int {
        let writes = WriteQueue(coordinator: coordinator, name: "import")
        writes.start()
        defer { writes.stop() }
        let importer = NDJSONImport(entity: entity, coordinator: coordinator, writes: writes, policy: .error, author: author,
                                    atomic: false, byteLimit: ServiceConfiguration().maxBodyBytes)
        let room = DispatchSemaphore(value: 0)
        var bytesRead = 0
        while let piece = try input.read(upToCount: 1 << 16), !piece.isEmpty {
            while !importer.hasRoom {
                importer.whenRoom { room.signal() }
                room.wait()
            }
            piece.withUnsafeBytes { raw in importer.receive(raw.bindMemory(to: UInt8.self)) }
            bytesRead += piece.count
            progress(Progress(rows: importer.committedRows, bytesRead: bytesRead))
        }
        let finished = DispatchSemaphore(value: 0)
        let result = OutcomeBox()
        importer.finish { outcome in
            result.set(outcome)
            finished.signal()
        }
        finished.wait()
        switch result.get() {
        case .imported(_, let keys, _)?:
            progress(Progress(rows: keys.count, bytesRead: bytesRead))
            return keys.count
        case let .stopped(problem, committed)?:
            let line = problem.extra.first { $0.0 == "line" }?.1.int64Value.map(Int.init)
            throw Failure(code: problem.code, line: line, committed: committed,
                          problemJSON: String(decoding: NDJSONImportOutcome.stopped(problem, committed: committed).response.body, as: UTF8.self),
                          message: "\(problem.detail) (\(committed) rows stored before it)")
        case .replayed?, nil:
            // A file import has no idempotency key, so it is never a replay.
            preconditionFailure("an import finished without an outcome")
        }
    }
}

/// The outcome, handed from the write queue's thread to the importing one.
private final class OutcomeBox: @unchecked Sendable {
    // @unchecked Sendable: set once before a semaphore is signalled, read after it was waited for.
    private var value: NDJSONImportOutcome?
    func set(_ outcome: NDJSONImportOutcome) { value = outcome }
    func get() -> NDJSONImportOutcome? { value }
}

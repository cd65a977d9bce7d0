import Foundation
import ManagedStoreCore
import ManagedStoreHTTP

/// `POST /v1/objects/{Entity}` with an `application/x-ndjson` body (the contract's "Batch insert
/// as a stream"): lines are parsed as they arrive and committed in chunks, each chunk one unit
/// on the write queue (its own savepoint, so readers and other writers interleave). At most
/// `maxChunksInFlight` chunks wait at once; past that the upload pauses, so memory stays
/// bounded whatever the size of the body.
///
/// A bad line stops the import: nothing of its chunk is stored, later chunks are skipped, and
/// the answer (once the body has ended: libmicrohttpd takes no answer mid-upload) names the
/// `line` and `committed`, the rows stored before that chunk. `?atomic=true` gathers the whole
/// stream (up to the body size limit) and writes it as one unit.
///
/// With an `Idempotency-Key` the stream is atomic too: the key and the answer are stored in the
/// write's transaction, and only the whole body tells whether a retry is the same request (its
/// fingerprint is taken as the bytes arrive).
///
/// `@unchecked Sendable`: the reading side (`receive`, `finish`, `cancel`, and the fields
/// marked as front state) runs on the connection's libmicrohttpd thread, one call at a time;
/// everything the write queue's thread touches (chunk work and completions) is under `lock`.
final class NDJSONImport: HTTPBodyStream, @unchecked Sendable {
    static let chunkRows = 1000
    static let maxChunksInFlight = 2

    private let entity: EntityDescription
    private let coordinator: PersistentStoreCoordinator
    private let writes: WriteQueue
    private let policy: MergePolicy
    private let author: String?
    private let atomic: Bool
    /// The key, and the fingerprint's hash so far (front state), of a keyed import.
    private let key: IdempotencyKey?
    private var fingerprint: SHA256?
    /// The longest line taken; with `atomic`, the most bytes of the whole body.
    private let byteLimit: Int

    // Front state (the connection's thread).
    private var partialLine: [UInt8] = []
    private var lineNumber = 0
    private var received = 0
    private var bodies: [ObjectBody] = []
    private var lines: [Int] = []
    /// Why reading stopped early (the rest of the body is discarded): answered at the end.
    private var refusal: Problem?

    // Shared with the write queue's thread, under `lock`.
    private let lock = NSLock()
    private var inFlight = 0
    private var committed = 0
    private var keys: [Int64] = []
    /// The history token of the last chunk committed (the answer's `History-Token`).
    private var lastToken: PersistentHistoryToken?
    private var failure: Problem?
    /// The stored answer of a keyed import carried out before.
    private var replayed: HTTPResponse?
    /// Set once nothing more may be written (a chunk failed, the client went away); chunks still
    /// queued then write nothing.
    private var stopped = false
    private var resumeUpload: (@Sendable () -> Void)?
    private var whenFinished: (@Sendable (NDJSONImportOutcome) -> Void)?

    /// `idempotency`: the request's key and the fingerprint of all of it but the body
    /// (`IdempotentWrite.fingerprintStart`), for a keyed import.
    init(entity: EntityDescription, coordinator: PersistentStoreCoordinator, writes: WriteQueue, policy: MergePolicy,
         author: String?, atomic: Bool, byteLimit: Int, idempotency: (key: IdempotencyKey, fingerprint: SHA256)? = nil) {
        self.entity = entity
        self.coordinator = coordinator
        self.writes = writes
        self.policy = policy
        self.author = author
        self.atomic = atomic || idempotency != nil
        self.byteLimit = byteLimit
        self.key = idempotency?.key
        self.fingerprint = idempotency?.fingerprint
    }

    // MARK: Reading

    var hasRoom: Bool { lock.withLock { inFlight < Self.maxChunksInFlight || stopped } }

    func receive(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard refusal == nil, !isStopped else { return }  // discarding what is left
        received += bytes.count
        fingerprint?.update(bytes)
        if atomic && received > byteLimit {
            refuse(Problem.payloadTooLarge(limit: byteLimit).about("an atomic import is one transaction held in memory", ("line", .number(String(lineNumber + 1)))))
            return
        }
        var start = 0
        for (i, byte) in bytes.enumerated() where byte == UInt8(ascii: "\n") {
            guard gather(bytes[start..<i]) else { return }
            start = i + 1
            takeLine()
            partialLine.removeAll(keepingCapacity: true)
            if refusal != nil { return }
        }
        _ = gather(bytes[start...])
    }

    func whenRoom(_ resume: @escaping @Sendable () -> Void) {
        let now: Bool = lock.withLock {
            if inFlight < Self.maxChunksInFlight || stopped { return true }
            resumeUpload = resume
            return false
        }
        if now { resume() }
    }

    func finish() -> HTTPHandlerOutcome {
        .suspend { [self] deferred in
            finish { outcome in deferred.complete(making: { outcome.response }) }
        }
    }

    /// Ends the body: the last line (which may lack its newline) and the last chunk are taken,
    /// and `done` is called (on this thread or the write queue's) once every chunk has finished,
    /// with the outcome. Call it on the reading thread, once.
    func finish(_ done: @escaping @Sendable (NDJSONImportOutcome) -> Void) {
        if refusal == nil && !isStopped {
            if !partialLine.isEmpty { takeLine() }
            if refusal == nil && !bodies.isEmpty { submitChunk() }
        }
        let doneNow: Bool = lock.withLock {
            if inFlight == 0 { return true }
            whenFinished = done
            return false
        }
        if doneNow { done(outcome) }
    }

    /// Rows stored so far.
    var committedRows: Int { lock.withLock { committed } }

    func cancel() {
        let resume: (@Sendable () -> Void)? = lock.withLock {
            stopped = true
            defer { resumeUpload = nil }
            return resumeUpload
        }
        resume?()
    }

    private var isStopped: Bool { lock.withLock { stopped } }

    /// Adds a piece of the current line; false (and the import refused) once the line is longer
    /// than a body may be.
    private func gather(_ piece: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        guard partialLine.count + piece.count <= byteLimit else {
            refuse(Problem.payloadTooLarge(limit: byteLimit).about("line \(lineNumber + 1) is too long", ("line", .number(String(lineNumber + 1)))))
            return false
        }
        partialLine.append(contentsOf: piece)
        return true
    }

    private func refuse(_ problem: Problem) {
        refusal = problem
        bodies = []
        partialLine = []
    }

    /// Parses the line in `partialLine` (blank lines are skipped) into the chunk being gathered.
    private func takeLine() {
        lineNumber += 1
        var line = partialLine[...]
        while let last = line.last, last == UInt8(ascii: "\r") || last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") { line = line.dropLast() }
        guard line.contains(where: { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") }) else { return }
        let position = ("line", JSONValue.number(String(lineNumber)))
        let json: JSONValue
        do { json = try JSONParser(maxDepth: 64).parse(line) } catch {
            refuse(Problem.invalidJSON("not valid JSON: \(error)").about("line \(lineNumber)", position))
            return
        }
        do { bodies.append(try ObjectBody(json: json, entity: entity, coordinator: coordinator)) } catch {
            refuse(error.about("line \(lineNumber)", position))
            return
        }
        lines.append(lineNumber)
        if !atomic && bodies.count >= Self.chunkRows { submitChunk() }
    }

    // MARK: Writing

    /// What one chunk came to on the write thread.
    private enum ChunkResult: Sendable {
        case written(WriteResult)
        /// A keyed import carried out before: its stored answer.
        case replayed(HTTPResponse)
        /// Not run: an earlier chunk failed, or the client went away.
        case skipped
    }

    private func submitChunk() {
        let chunkLines = lines
        let request = WriteRequest(operation: .batchInsert(entity: entity.name, bodies: bodies, names: chunkLines.map { "line \($0)" }),
                                   mergePolicy: policy, author: author)
        bodies = []
        lines = []
        lock.withLock { inFlight += 1 }
        // A keyed import is atomic: this is its one chunk, submitted once the body has ended.
        let keyed = key.map { key in IdempotentWrite(key: key, fingerprint: fingerprint.map(IdempotentWrite.fingerprint) ?? []) }
        writes.submit({ [self] context -> ChunkResult in
            // Chunks run in order on the write thread: a failed one stops those behind it, even
            // within the same group commit.
            guard !isStopped else { return .skipped }
            var result: WriteResult
            if let keyed {
                switch keyed.perform(in: context, layouts: JSONLayouts(coordinator.model), { request.perform(in: context) }) {
                case .performed(let performed, _): result = performed
                case .replayed(let answer): return .replayed(answer)
                }
            } else {
                result = request.perform(in: context)
            }
            if case .problem = result { lock.withLock { stopped = true } }
            return .written(result)
        }, completion: { [self] outcome in
            chunkFinished(outcome, lines: chunkLines)
        })
    }

    /// On the write thread, after the chunk's group committed (completions come in order).
    private func chunkFinished(_ outcome: WriteOutcome<ChunkResult>, lines chunkLines: [Int]) {
        let firstLine = chunkLines.first ?? 0
        let (resume, finished): ((@Sendable () -> Void)?, (@Sendable (NDJSONImportOutcome) -> Void)?) = lock.withLock {
            inFlight -= 1
            switch outcome {
            case .completed(.written(.batch(let count, _, let chunkKeys, let token))):
                lastToken = max(lastToken ?? token, token)
                if failure == nil {
                    committed += count
                    keys += chunkKeys ?? []
                }
            case .completed(.replayed(let answer)):
                replayed = answer
            case .completed(.written(.problem(let problem))) where problem.code == Problem.idempotencyKeyReused().code:
                if failure == nil { failure = problem }
            case .completed(.written(.problem(let problem))):
                if failure == nil { failure = problem.about("line \(Self.failedLine(problem) ?? firstLine)", ("line", .number(String(Self.failedLine(problem) ?? firstLine)))) }
            case .completed(.written), .completed(.skipped):
                break
            case .undone, .notRun:
                stopped = true
                if failure == nil {
                    failure = Problem.unavailable("the chunk from line \(firstLine) was not written (the store rolled it back, or the server is stopping)")
                        .about("line \(firstLine)", ("line", .number(String(firstLine))))
                }
            }
            var resume: (@Sendable () -> Void)?
            if inFlight < Self.maxChunksInFlight || stopped { resume = resumeUpload; resumeUpload = nil }
            var finished: (@Sendable (NDJSONImportOutcome) -> Void)?
            if inFlight == 0 { finished = whenFinished; whenFinished = nil }
            return (resume, finished)
        }
        resume?()
        finished?(self.outcome)
    }

    /// The line of the first object a chunk's 422 names (its objects are named `line N`).
    private static func failedLine(_ problem: Problem) -> Int? {
        guard let errors = problem.extra.first(where: { $0.0 == "errors" })?.1.arrayValue else { return nil }
        return errors.compactMap { $0["object"]?.stringValue }.compactMap { name in
            name.hasPrefix("line ") ? Int(name.dropFirst(5)) : nil
        }.min()
    }

    // MARK: Answering

    /// What the import came to, once no chunk is in flight.
    private var outcome: NDJSONImportOutcome {
        let (failure, committed, keys, replayed, token) = lock.withLock { (self.failure, self.committed, self.keys, self.replayed, self.lastToken) }
        if let problem = failure ?? refusal { return .stopped(problem, committed: committed) }
        if let replayed { return .replayed(replayed) }
        return .imported(entity: entity.name, keys: keys, token: token ?? (try? coordinator.lastHistoryToken()) ?? .zero)
    }
}

/// How an NDJSON import ended.
enum NDJSONImportOutcome: Sendable {
    /// Every line stored: the primary keys of the objects, in line order.
    case imported(entity: String, keys: [Int64], token: PersistentHistoryToken)
    /// Stopped by `problem`; `committed` rows (whole chunks before it) were stored.
    case stopped(Problem, committed: Int)
    /// A keyed import carried out before: nothing was written now; the answer it had.
    case replayed(HTTPResponse)

    var response: HTTPResponse {
        switch self {
        case let .stopped(problem, committed):
            let stored = committed == 0 ? "no row was stored" : "the \(committed) rows before its chunk were stored"
            var told = Problem(status: problem.status, code: problem.code, title: problem.title,
                               detail: "\(problem.detail) (the import stopped there: \(stored))", extra: problem.extra, headers: problem.headers)
            told.extra.append(("committed", .number(String(committed))))
            return told.response
        case let .imported(entity, keys, token):
            return WriteResponse.batchAnswer(count: keys.count, entity: entity, keys: keys, token: token)
        case .replayed(let answer):
            return answer
        }
    }
}

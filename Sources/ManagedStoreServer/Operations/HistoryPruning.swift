import Foundation
import ManagedStore

/// `DELETE /v1/changes` (scope admin): prunes the persistent history now, as the retention
/// timer does on its own: the saves before a token (`before=T`), or recorded before a time
/// (`olderThan=` a period such as `7d`, or an RFC 3339 date). Answers how many went and the
/// oldest token still kept; a change feed reading from before it is then 410.
enum HistoryPruning {
    enum Cut {
        case token(PersistentHistoryToken)
        case date(Date)
    }

    static func cut(_ request: HTTPRequest) throws(Problem) -> Cut {
        for (name, _) in request.query where name != "before" && name != "olderThan" {
            throw Problem.badRequest("unknown query parameter '\(name.prefix(100))' (known: before, olderThan)")
        }
        switch (request.queryValue("before"), request.queryValue("olderThan")) {
        case (let text?, nil):
            guard let token = PersistentHistoryToken(text) else { throw Problem.badRequest("before must be a token: a whole number, 0 or more") }
            return .token(token)
        case (nil, let text?):
            if case .period(let period)? = HistoryRetention.Setting(text) {
                return .date(Date(timeIntervalSinceNow: -HistoryRetention.seconds(period)))
            }
            if let date = RFC3339.date(from: text) { return .date(date) }
            throw Problem.badRequest("olderThan must be a period (90m, 7d) or an RFC 3339 date")
        default:
            throw Problem.badRequest("give one of before=TOKEN or olderThan=PERIOD|DATE (DELETE /v1/changes prunes the history)")
        }
    }

    /// Prunes off the front thread (a prune is many short writes), then answers.
    static func handle(_ request: HTTPRequest, coordinator: PersistentStoreCoordinator) throws(Problem) -> HTTPHandlerOutcome {
        let cut = try cut(request)
        return .suspend { deferred in
            DispatchQueue.global(qos: .utility).async {
                deferred.complete(answer(cut, coordinator: coordinator))
            }
        }
    }

    private static func answer(_ cut: Cut, coordinator: PersistentStoreCoordinator) -> HTTPResponse {
        do {
            let deleted: Int
            switch cut {
            case .token(let token): deleted = try coordinator.deleteHistory(before: token)
            case .date(let date): deleted = try HistoryRetention.prune(coordinator, olderThan: date)
            }
            let oldest = try coordinator.oldestHistoryToken()
            let body = JSONValue.object([("deleted", .number(String(deleted))), ("oldestToken", .string(oldest.description))])
            return .json(200, body.serialized().utf8Array)
        } catch {
            return Problem.unavailable("pruning the history failed; what was pruned before the failure stays pruned, the rest is kept: \(error)").response
        }
    }
}

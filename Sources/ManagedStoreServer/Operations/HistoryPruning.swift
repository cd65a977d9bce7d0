import Foundation
import ManagedStoreCore
import ManagedStoreHTTP

/// `DELETE /v1/changes` (scope admin): prunes the persistent history now, as the retention
/// timer does on its own: the saves before a token (`before=T`), and those recorded before a
/// time (`olderThan=` a period such as `7d`, or an RFC 3339 date); with neither, what the
/// server's `--history-retention` keeps no longer (nothing under `forever`). Answers how many
/// went and the oldest token still kept; a change feed reading from before it is then 410.
enum HistoryPruning {
    /// What to delete: each part given names saves to delete (both: the saves either names).
    struct Cut {
        var token: PersistentHistoryToken?
        var date: Date?
    }

    static func cut(_ request: HTTPRequest, retention: HistoryRetention.Setting) throws(Problem) -> Cut {
        for (name, _) in request.query where name != "before" && name != "olderThan" {
            throw Problem.badRequest("unknown query parameter '\(name.prefix(100))' (known: before, olderThan)")
        }
        var cut = Cut()
        if let text = request.queryValue("before") {
            guard let token = PersistentHistoryToken(text) else { throw Problem.badRequest("before must be a token: a whole number, 0 or more") }
            cut.token = token
        }
        if let text = request.queryValue("olderThan") {
            if case .period(let period)? = HistoryRetention.Setting(text) {
                cut.date = Date(timeIntervalSinceNow: -HistoryRetention.seconds(period))
            } else if let date = RFC3339.date(from: text) {
                cut.date = date
            } else {
                throw Problem.badRequest("olderThan must be a period (90m, 7d) or an RFC 3339 date")
            }
        }
        if cut.token == nil, cut.date == nil, case .period(let period) = retention {
            cut.date = Date(timeIntervalSinceNow: -HistoryRetention.seconds(period))
        }
        return cut
    }

    /// Prunes off the front thread (a prune is many short writes), then answers.
    static func handle(_ request: HTTPRequest, coordinator: PersistentStoreCoordinator,
                       retention: HistoryRetention.Setting) throws(Problem) -> HTTPHandlerOutcome {
        let cut = try cut(request, retention: retention)
        return .suspend { deferred in
            DispatchQueue.global(qos: .utility).async {
                deferred.complete(answer(cut, coordinator: coordinator))
            }
        }
    }

    private static func answer(_ cut: Cut, coordinator: PersistentStoreCoordinator) -> HTTPResponse {
        do {
            var deleted = 0
            if let token = cut.token { deleted += try coordinator.deleteHistory(before: token) }
            if let date = cut.date { deleted += try HistoryRetention.prune(coordinator, olderThan: date) }
            let oldest = try coordinator.oldestHistoryToken()
            let body = JSONValue.object([("deleted", .number(String(deleted))), ("oldestToken", .string(oldest.description))])
            return .json(200, body.serialized().utf8Array)
        } catch {
            return Problem.unavailable("pruning the history failed; what was pruned before the failure stays pruned, the rest is kept: \(error)").response
        }
    }
}

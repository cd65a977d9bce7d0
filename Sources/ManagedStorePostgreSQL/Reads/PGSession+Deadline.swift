import Foundation
import ManagedStoreCore

// A fetch's deadline (`FetchRequest.timeout`, the server's --query-timeout) in PostgreSQL: its
// statements run under `statement_timeout`, so that PostgreSQL stops one that would run past
// the deadline instead of finishing it for an answer no one waits for (the SQLite store stops
// its statements the same way, from its progress handler).

extension PGSession {
    /// Runs `body` (a fetch's reads) with PostgreSQL's `statement_timeout` at what is left of
    /// `fetch`'s deadline; a statement PostgreSQL stops for it is the fetch's `timedOut`.
    func underDeadline<T>(_ fetch: StoreFetch, _ body: () throws(FetchError) -> T) throws(FetchError) -> T {
        guard let timeout = armDeadline(fetch.prepared) else { return try body() }
        defer { disarmDeadline() }
        do { return try body() } catch { throw Self.timedOut(error, timeout) }
    }

    /// `underDeadline` for an aggregate's reads.
    func underDeadline<T>(_ aggregate: PreparedAggregate, _ body: () throws(AggregateError) -> T) throws(AggregateError) -> T {
        guard let timeout = armDeadline(aggregate.fetch) else { return try body() }
        defer { disarmDeadline() }
        do {
            return try body()
        } catch {
            if case .fetch(let fetchError) = error { throw .fetch(Self.timedOut(fetchError, timeout)) }
            throw error
        }
    }

    /// Sets `statement_timeout` to what is left of `prepared`'s deadline (whole milliseconds,
    /// at least one: 0 is no limit), with the next statement, no round trip of its own; the
    /// request's timeout when it did. Not in the writer's transaction, where a statement
    /// stopped would end the transaction (the in-memory checks stop a fetch there).
    private func armDeadline(_ prepared: PreparedFetch) -> Duration? {
        guard !isWriter, let deadline = prepared.deadline, let timeout = prepared.request.timeout else { return nil }
        let now = DispatchTime.now().uptimeNanoseconds
        let milliseconds = deadline > now ? max(1, (deadline - now + 999_999) / 1_000_000) : 1
        connection.sendWithNextStatement("SET LOCAL statement_timeout = \(milliseconds)")
        return timeout
    }

    /// The statements after the fetch, in the same read transaction, run without its limit
    /// (SET LOCAL ends with the transaction in any case).
    private func disarmDeadline() {
        connection.sendWithNextStatement("SET LOCAL statement_timeout = 0")
    }

    /// A statement PostgreSQL stopped for `statement_timeout` as the fetch's timeout.
    private static func timedOut(_ error: FetchError, _ timeout: Duration) -> FetchError {
        if case .store(.engine(let code, _, _)) = error, code == PGSQLState.code(PGSQLState.queryCanceled) { return .timedOut(timeout) }
        return error
    }
}

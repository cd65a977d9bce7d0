import Foundation
import ManagedStoreCore
import ManagedStoreHTTP

extension ServiceMetrics {
    /// Counts the conflict a write met, if it met one: a 409 under `policy`, or one its merge
    /// policy resolved.
    func recordConflicts(of outcome: WriteOutcome<WriteResult>, policy: String) {
        guard case .completed(let result) = outcome else { return }
        switch result {
        case .problem(let problem) where problem.code == "conflict":
            recordConflict(policy: policy, resolved: false)
        case .object(_, _, _, let merge?, _), .deleted(let merge?, _):
            recordConflict(policy: merge.policy, resolved: true)
        case .transaction(let answer) where answer.merge != nil:
            recordConflict(policy: answer.merge?.policy ?? policy, resolved: true)
        default:
            break
        }
    }
}

extension ManagedStoreService {
    /// `/v1/metrics`: the contract's families, in Prometheus text format 0.0.4.
    func metricsText() -> String {
        let counts = metrics.snapshot()
        var text = PrometheusText()
        text.family("managedstore_http_requests_total", "counter", "Requests answered, by route template, method and status.")
        for (key, count) in counts.requests.sorted(by: { ($0.key.route, $0.key.method, $0.key.status) < ($1.key.route, $1.key.method, $1.key.status) }) {
            text.sample("managedstore_http_requests_total", Double(count), labels: [("route", key.route), ("method", key.method), ("status", key.status)])
        }
        text.family("managedstore_http_request_duration_seconds", "histogram", "Time from a request's headers to its answer's end, by route template.")
        for (route, histogram) in counts.latencies.sorted(by: { $0.key < $1.key }) {
            text.histogram("managedstore_http_request_duration_seconds", histogram, labels: [("route", route)])
        }
        text.family("managedstore_write_queue_depth", "gauge", "Writes waiting for the write queue.")
        text.sample("managedstore_write_queue_depth", Double(writes.depth))
        text.family("managedstore_commit_group_size", "histogram", "Writes committed together in one transaction.")
        text.histogram("managedstore_commit_group_size", writes.groupSizeHistogram)
        text.family("managedstore_commits_total", "counter", "Transactions the store committed.")
        text.sample("managedstore_commits_total", Double(coordinator.commitCount))
        text.family("managedstore_conflicts_total", "counter", "Write conflicts, by merge policy and whether the policy resolved them (false: answered 409).")
        for (key, count) in counts.conflicts.sorted(by: { ($0.key.policy, $0.key.resolved ? 1 : 0) < ($1.key.policy, $1.key.resolved ? 1 : 0) }) {
            text.sample("managedstore_conflicts_total", Double(count), labels: [("policy", key.policy), ("resolved", String(key.resolved))])
        }
        text.family("managedstore_live_queries_open", "gauge", "Live query streams open (--max-live-queries bounds them).")
        text.sample("managedstore_live_queries_open", Double(live.openCount))
        text.family("managedstore_live_windows", "gauge", "Distinct live queries the engine keeps current (streams of one query share one; a window is kept a minute after its last stream, for resumes).")
        text.sample("managedstore_live_windows", Double(coordinator.liveWindowsHeld))
        text.family("managedstore_read_pool_wait_seconds", "histogram", "Time reads waited for a reader of the store's pool.")
        text.histogram("managedstore_read_pool_wait_seconds", coordinator.readerWaitHistogram)
        // The store's own figures, each a gauge in its words (the SQLite store: its file and WAL).
        for figure in coordinator.storeFigures {
            text.family("managedstore_" + figure.metric, "gauge", figure.help)
            text.sample("managedstore_" + figure.metric, Double(figure.value))
        }
        if let transactions = try? coordinator.historyTransactionCount() {
            text.family("managedstore_history_transactions", "gauge", "Saves the persistent history holds.")
            text.sample("managedstore_history_transactions", Double(transactions))
        }
        if let keys = try? coordinator.idempotencyRecordCount() {
            text.family("managedstore_idempotency_keys", "gauge", "Idempotency keys whose writes and answers the store holds (expired ones until the next expiry run).")
            text.sample("managedstore_idempotency_keys", Double(keys))
        }
        if let connections = metrics.connections { connectionFamilies(connections, into: &text) }
        text.family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.")
        text.sample("process_resident_memory_bytes", Double(ProcessStatistics.residentMemoryBytes))
        text.family("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.")
        text.sample("process_start_time_seconds", ProcessStatistics.startTime)
        return text.text
    }

    /// The HTTP front's connections: open, the limits, and those it refused or closed, by reason.
    private func connectionFamilies(_ connections: ConnectionStatistics, into text: inout PrometheusText) {
        text.family("managedstore_connections_open", "gauge", "TCP connections open.")
        text.sample("managedstore_connections_open", Double(connections.open))
        text.family("managedstore_connections_limit", "gauge", "The most connections held at once, in all and per client address (0: no limit).")
        text.sample("managedstore_connections_limit", Double(connections.limit), labels: [("scope", "total")])
        text.sample("managedstore_connections_limit", Double(connections.perClientLimit), labels: [("scope", "per_client")])
        text.family("managedstore_connections_refused_total", "counter",
                    "Connections closed as they were accepted: per_client (the address held its limit), total (the server was full and none was idle), stopping.")
        for reason in ConnectionRefusal.allCases {
            text.sample("managedstore_connections_refused_total", Double(connections.refused[reason] ?? 0), labels: [("reason", reason.rawValue)])
        }
        text.family("managedstore_connections_closed_total", "counter",
                    "Connections the server closed: header_timeout, idle_timeout, body_timeout, made_room (the longest idle, for a new one when full).")
        for reason in ConnectionClosure.allCases {
            text.sample("managedstore_connections_closed_total", Double(connections.closed[reason] ?? 0), labels: [("reason", reason.rawValue)])
        }
    }
}

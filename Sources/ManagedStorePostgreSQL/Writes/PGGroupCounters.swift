import ManagedStoreCore

/// The store's counters (each key sequence's last key, the history's last token) as a group
/// commit's transaction has moved them, counted on here after the first use of each.
///
/// Why: a group commit is one transaction of hundreds of saves, and each save took its keys and
/// its token with an UPDATE of the counter's row. Every UPDATE leaves a row version that cannot
/// be pruned while the transaction is open, and the next UPDATE walks past all of them: a
/// group's cost grew with the square of its saves, and PostgreSQL spent most of a POST there.
/// The first UPDATE of a counter in the transaction locks its row until the transaction ends, so
/// no other server can take from it meanwhile, and the values after it can be counted here;
/// the row is written once, with the COMMIT (`finalSQL`).
///
/// A save's savepoint rolled back takes its counting back with it (`state`, `restore`), as
/// PostgreSQL takes back its UPDATEs; a counter first used within that save is forgotten, since
/// its row is unlocked again and must be read anew.
///
/// Not Sendable: used on the thread that runs the group.
final class PGGroupCounters {
    struct State {
        /// Per key sequence (its root entity's name): the last key handed out, and whether that
        /// is ahead of the row.
        fileprivate var keys: [String: (last: Int64, ahead: Bool)] = [:]
        fileprivate var token: (last: Int64, ahead: Bool)?
    }

    private(set) var state = State()

    func restore(_ earlier: State) { state = earlier }

    /// Forgets every counter: the transaction ended or was rolled back.
    func reset() { state = State() }

    /// The first of `count` keys of the sequence `root`, counted here; nil when the transaction
    /// has not locked its row yet.
    func keys(of root: String, count: Int) -> Int64? {
        guard let last = state.keys[root]?.last else { return nil }
        state.keys[root] = (last + Int64(count), true)
        return last + 1
    }

    /// The sequence's row now says `last`, locked by this transaction.
    func lockedKeys(of root: String, last: Int64) { state.keys[root] = (last, false) }

    /// The next history token, counted here; nil when the transaction has not locked the row.
    func nextToken() -> Int64? {
        guard let last = state.token?.last else { return nil }
        state.token = (last + 1, true)
        return last + 1
    }

    /// The store's row now says `last` for the history's token, locked by this transaction.
    func lockedToken(_ last: Int64) { state.token = (last, false) }

    /// The UPDATEs that bring the counters' rows to what was counted here (none when they say
    /// it already), and marks them said: to run in the transaction, before anything reads the
    /// rows and at the latest with its COMMIT.
    func finalSQL() -> [String] {
        var statements: [String] = []
        for (root, counter) in state.keys.sorted(by: { $0.key < $1.key }) where counter.ahead {
            statements.append("UPDATE _managedstore_keys SET last = \(counter.last) WHERE entity = \(PGValues.literal(root))")
            state.keys[root] = (counter.last, false)
        }
        if let token = state.token, token.ahead {
            statements.append("UPDATE _managedstore_store SET last_token = \(token.last) WHERE id = 1")
            state.token = (token.last, false)
        }
        return statements
    }
}

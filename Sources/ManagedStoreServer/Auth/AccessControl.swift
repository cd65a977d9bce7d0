import Foundation
import ManagedStoreCore
import ManagedStoreHTTP

/// Who may do what (RFC 6750 bearer tokens): the tokens the server accepts, or none, when it
/// is open (loopback only, or `--insecure-open`).
struct AccessControl: Sendable {
    /// What a request reaches.
    enum Target: Equatable {
        /// The objects of one entity.
        case entity(String)
        /// What every scope of the level may see, narrowed or not (the model, the OpenAPI
        /// document, the change feed filtered to the token's entities).
        case anyEntity
        /// The whole store (metrics, history pruning): only scopes not narrowed to an entity.
        case wholeStore
    }

    let tokens: [AccessToken]
    var isOpen: Bool { tokens.isEmpty }

    /// The token `request` presents; nil when the server is open. 401 when it presents none
    /// or one the server does not know.
    func authenticate(_ request: HTTPRequest) throws(Problem) -> AccessToken? {
        guard !isOpen else { return nil }
        guard let header = request.header("Authorization"), let presented = Self.bearerToken(header) else {
            throw Problem.unauthorized("this server needs a bearer token: send Authorization: Bearer <token>")
        }
        let digest = SHA256.digest(Array(presented.utf8))
        // Every token is compared, whole, whatever matched: the time taken says nothing about
        // which token, or how much of one, was right.
        var match: AccessToken?
        for token in tokens where SHA256.equalInConstantTime(token.digest, digest) { match = token }
        guard let match else { throw Problem.unauthorized("the bearer token is not one this server accepts") }
        return match
    }

    /// 403 unless `token` (nil on an open server: allowed) may do `level` on `target`.
    func require(_ token: AccessToken?, _ level: AccessScope.Level, on target: Target) throws(Problem) {
        guard let token else { return }
        guard !token.scopes.contains(where: { $0.allows(level, on: target) }) else { return }
        let what: String
        switch target {
        case .entity(let name): what = "\(level.name) \(name)"
        case .anyEntity: what = "\(level.name)"
        case .wholeStore: what = "\(level.name) (on every entity)"
        }
        throw Problem.forbidden("the token '\(token.name)' may not \(what): it has \(token.scopes.map(\.description).joined(separator: ", "))")
    }

    /// Whether `request` presents a token (if the server needs one) that may do `level` on `target`.
    func allows(_ request: HTTPRequest, _ level: AccessScope.Level, on target: Target) -> Bool {
        do {
            try require(try authenticate(request), level, on: target)
            return true
        } catch {
            return false
        }
    }

    /// The level a request with `method` needs on the objects it names.
    static func level(for method: String) -> AccessScope.Level {
        method == "GET" || method == "HEAD" ? .read : .write
    }

    /// The entities `token` may `level`; nil for all of them.
    func entities(_ token: AccessToken?, _ level: AccessScope.Level) -> Set<String>? {
        guard let token else { return nil }
        let scopes = token.scopes.filter { $0.level >= level }
        if scopes.contains(where: { $0.entity == nil }) { return nil }
        return Set(scopes.compactMap(\.entity))
    }

    /// The token of an `Authorization: Bearer <token>` header (the scheme in any case).
    static func bearerToken(_ header: String) -> String? {
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        return token.isEmpty || token.count > 4096 ? nil : token
    }
}

extension Problem {
    static func unauthorized(_ detail: String) -> Problem {
        Problem(status: 401, code: "unauthorized", title: "Unauthorized", detail: detail,
                headers: [("WWW-Authenticate", #"Bearer realm="managedstore""#)])
    }
    static func forbidden(_ detail: String) -> Problem {
        Problem(status: 403, code: "forbidden", title: "Forbidden", detail: detail,
                headers: [("WWW-Authenticate", #"Bearer error="insufficient_scope""#)])
    }
}

extension WriteOperation {
    /// The entities whose objects the operation writes, for checking a token's scopes: every
    /// operation's entity, for a transaction (a ref names an object the transaction inserts).
    var entitiesWritten: Set<String> {
        switch self {
        case .insert(let entity, _), .batchInsert(let entity, _, _), .batchUpdate(let entity, _, _), .batchDelete(let entity, _):
            return [entity]
        case .update(let id, _, _, _), .delete(let id, _):
            return [id.entityName]
        case .transaction(let operations):
            var entities: Set<String> = []
            for operation in operations {
                switch operation {
                case .insert(let entity, _, _): entities.insert(entity)
                case .update(let target, _, _), .delete(let target, _):
                    if let id = target.savedID { entities.insert(id.entityName) }
                }
            }
            return entities
        }
    }
}

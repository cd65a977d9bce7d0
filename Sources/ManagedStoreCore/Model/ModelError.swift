/// A problem that makes a model unusable, naming the entity and property it is about.
public struct ModelProblem: Sendable, Hashable, CustomStringConvertible {
    public var entity: String?
    public var property: String?
    public var message: String

    public init(entity: String? = nil, property: String? = nil, message: String) {
        self.entity = entity
        self.property = property
        self.message = message
    }

    public var description: String {
        switch (entity, property) {
        case let (e?, p?): return "\(e).\(p): \(message)"
        case let (e?, nil): return "\(e): \(message)"
        default: return message
        }
    }
}

/// Why a model could not be built or loaded. Lists every problem found, not just the first.
public struct ModelError: Error, Sendable, CustomStringConvertible {
    public var problems: [ModelProblem]

    public init(_ problems: [ModelProblem]) { self.problems = problems }

    public var description: String {
        "invalid model: " + problems.map(\.description).joined(separator: "; ")
    }
}

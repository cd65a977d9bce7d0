import Foundation

/// A fetch request stored in the model under a name [NSManagedObjectModel's fetch request
/// templates]: Xcode's model editor makes them, and an app fetches with one by name, giving
/// a value to each `$VARIABLE` of its predicate
/// (`model.fetchRequestFromTemplate(withName:substitutionVariables:)`).
///
/// It stores nothing, so it is no part of the model's version hash.
public struct FetchRequestTemplate: Sendable, Hashable {
    public var name: String
    public var entityName: String
    /// The predicate in NSPredicate's format, with `$NAME` for each substitution variable;
    /// nil fetches every object of the entity.
    public var predicateFormat: String?
    public var sortDescriptors: [ObjectSortDescriptor]
    /// At most this many objects; nil for no limit (Core Data's 0).
    public var fetchLimit: Int?

    public init(name: String, entityName: String, predicateFormat: String? = nil, sortDescriptors: [ObjectSortDescriptor] = [],
                fetchLimit: Int? = nil) {
        self.name = name
        self.entityName = entityName
        self.predicateFormat = predicateFormat
        self.sortDescriptors = sortDescriptors
        self.fetchLimit = fetchLimit
    }
}

/// A substitution variable of a template, typed by the key path it is compared with: what a
/// value given as text (an HTTP query parameter) is read as.
public struct FetchTemplateVariable: Sendable, Hashable {
    public let name: String
    /// The key path it meets (`priority` in `priority >= $MIN`); nil where it meets none.
    public let keyPath: String?
    /// The type of that key path's values; nil where it meets none (its text stays a string).
    package let type: OperandType?
    /// `keyPath IN $NAME`: the variable holds a list of such values.
    public let isList: Bool

    /// For a variable compared with a relationship: the destination entity, whose objects'
    /// IDs it takes.
    public let destinationEntityName: String?

    /// What the variable takes, in words: the attribute type as the model's JSON names it,
    /// or the ID of an object of the destination; nil when untyped.
    public var typeName: String? {
        switch type {
        case .attribute(let t)?: return t.rawValue
        case .object?: return "ID of a \(destinationEntityName ?? "?") (such as \"\(destinationEntityName ?? "?")/7\")"
        case nil: return nil
        }
    }
}

/// Why a template could not be used.
public enum FetchTemplateError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The model has no template of this name.
    case unknownTemplate(String)
    /// A `$VARIABLE` of the template was given no value.
    case missingVariable(template: String, variable: String)
    /// A value was given that the variable cannot take (text not of its key path's type).
    case invalidVariable(template: String, variable: String, detail: String)
    /// A value was given for a variable the template does not have; `known` are its variables.
    case unknownVariable(template: String, variable: String, known: [String])

    public var description: String {
        switch self {
        case .unknownTemplate(let name): return "the model has no fetch request template named '\(name)'"
        case let .missingVariable(template, variable): return "fetch request template '\(template)' needs a value for $\(variable)"
        case let .invalidVariable(template, variable, detail): return "fetch request template '\(template)': $\(variable) \(detail)"
        case let .unknownVariable(template, variable, known):
            return "fetch request template '\(template)' has no variable $\(variable)"
                + (known.isEmpty ? ": it takes none" : " (it takes \(known.map { "$" + $0 }.joined(separator: ", ")))")
        }
    }
}

/// A template checked against its model: its predicate parsed, its variables typed.
struct ResolvedFetchTemplate: Sendable {
    let template: FetchRequestTemplate
    let predicate: ObjectPredicate?
    let variables: [FetchTemplateVariable]
}

extension ManagedObjectModel {
    /// Every fetch request template, by name [fetchRequestTemplatesByName], each a fetch
    /// request whose predicate still holds its `$VARIABLES`.
    public var fetchRequestTemplatesByName: [String: FetchRequest] {
        Dictionary(uniqueKeysWithValues: fetchRequestTemplates.compactMap { t in fetchRequestTemplate(forName: t.name).map { (t.name, $0) } })
    }

    /// The template called `name` as a fetch request, its `$VARIABLES` not yet given values
    /// [fetchRequestTemplate(forName:)]; nil when the model has none of that name.
    public func fetchRequestTemplate(forName name: String) -> FetchRequest? {
        resolvedTemplate(named: name).map { Self.fetchRequest($0, predicate: $0.predicate) }
    }

    /// The template called `name` as a fetch request, each `$NAME` of its predicate replaced
    /// by `substitutionVariables["NAME"]` (an attribute's Swift value, an object ID, an array
    /// for `IN`, or `NSNull()`) [fetchRequestFromTemplate(withName:substitutionVariables:)].
    /// Nil when the model has no template of that name; a variable without a value throws.
    public func fetchRequestFromTemplate(withName name: String, substitutionVariables: [String: Any]) throws(FetchTemplateError) -> FetchRequest? {
        guard let resolved = resolvedTemplate(named: name) else { return nil }
        for variable in resolved.variables {
            guard let value = substitutionVariables[variable.name] else { throw .missingVariable(template: name, variable: variable.name) }
            guard PredicateParser.expression(for: value) != nil else {
                throw .invalidVariable(template: name, variable: variable.name, detail: "cannot take a value of type \(type(of: value))")
            }
        }
        return try Self.fetchRequest(resolved, substituting: substitutionVariables)
    }

    /// The substitution variables of the template called `name`, typed by what they meet,
    /// in the order the predicate first names them; nil when there is no such template.
    public func variables(ofFetchRequestTemplate name: String) -> [FetchTemplateVariable]? {
        resolvedTemplate(named: name)?.variables
    }

    /// The template called `name` with each variable's value given as text, read as the type
    /// of the key path it meets (`"3"` for an integer, an RFC 3339 date, `"Project/7"` for an
    /// object, comma-separated values for `IN`): how a value reaches it from a URL. A text for
    /// a variable the template does not have is refused too: one parse of the template checks all.
    package func fetchRequestFromTemplate(withName name: String, variableTexts: [String: String],
                                          storeIdentifier: UUID) throws(FetchTemplateError) -> FetchRequest {
        guard let resolved = resolvedTemplate(named: name) else { throw .unknownTemplate(name) }
        let known = resolved.variables.map(\.name)
        for given in variableTexts.keys.sorted() where !known.contains(given) {
            throw .unknownVariable(template: name, variable: given, known: known)
        }
        var values: [String: Any] = [:]
        for variable in resolved.variables {
            guard let text = variableTexts[variable.name] else { throw .missingVariable(template: name, variable: variable.name) }
            let texts = variable.isList ? text.split(separator: ",", omittingEmptySubsequences: false).map(String.init) : [text]
            var typed: [Any] = []
            for item in texts {
                guard let value = value(item, for: variable, storeIdentifier: storeIdentifier) else {
                    let meets = variable.keyPath.map { " (it is compared with \($0))" } ?? ""
                    throw .invalidVariable(template: name, variable: variable.name,
                                           detail: "takes \(variable.isList ? "comma-separated values, each " : "")a \(variable.typeName ?? "string")\(meets): \"\(item)\" is not one")
                }
                typed.append(value)
            }
            values[variable.name] = variable.isList ? typed as Any : typed[0]
        }
        return try Self.fetchRequest(resolved, substituting: values)
    }

    /// The template's request with `values` in place of its variables, each of which was
    /// checked to have a value of a kind a predicate takes.
    private static func fetchRequest(_ resolved: ResolvedFetchTemplate, substituting values: [String: Any]) throws(FetchTemplateError) -> FetchRequest {
        do {
            return fetchRequest(resolved, predicate: try resolved.predicate?.withSubstitutionVariables(values))
        } catch {
            // Unreached while every variable has a checked value; said plainly should it change.
            throw .invalidVariable(template: resolved.template.name, variable: "", detail: error.message)
        }
    }

    private static func fetchRequest(_ resolved: ResolvedFetchTemplate, predicate: ObjectPredicate?) -> FetchRequest {
        var request = FetchRequest(entityName: resolved.template.entityName, predicate: predicate,
                                   sortDescriptors: resolved.template.sortDescriptors)
        if let limit = resolved.template.fetchLimit { request.fetchLimit = limit }
        return request
    }

    /// `text` as a value of the variable's type, or nil when it is not one.
    private func value(_ text: String, for variable: FetchTemplateVariable, storeIdentifier: UUID) -> Any? {
        switch variable.type {
        case nil: return text
        case .object(let destination)?:
            guard let id = ManagedObjectID(description: text, storeIdentifier: storeIdentifier),
                  let kind = entityIndexByName[id.entityName], isKind(kind, of: destination) else { return nil }
            return id
        case .attribute(let type)?:
            return AttributeValue(text: text, type: type).map { value -> Any in PredicateValue.attribute(value) }
        }
    }

    /// The template called `name`, parsed and typed again: a model has a few short templates,
    /// and a final class that is Sendable keeps no cache; its problems were refused at init.
    private func resolvedTemplate(named name: String) -> ResolvedFetchTemplate? {
        guard let template = fetchRequestTemplates.first(where: { $0.name == name }) else { return nil }
        return Self.resolveTemplates([template], in: self).resolved[name]
    }

    /// Parses and types every template, or names what is wrong with each.
    static func resolveTemplates(_ templates: [FetchRequestTemplate], in model: ManagedObjectModel)
        -> (resolved: [String: ResolvedFetchTemplate], problems: [ModelProblem]) {
        var resolved: [String: ResolvedFetchTemplate] = [:]
        var problems: [ModelProblem] = []
        for template in templates {
            func problem(_ message: String) {
                problems.append(ModelProblem(entity: template.entityName, message: "fetch request template \(template.name): \(message)"))
            }
            guard resolved[template.name] == nil else { problem("another template has the same name"); continue }
            guard let entity = model.resolvedEntity(named: template.entityName) else {
                problems.append(ModelProblem(message: "fetch request template \(template.name): unknown entity '\(template.entityName)'"))
                continue
            }
            var predicate: ObjectPredicate?
            if let format = template.predicateFormat {
                do { predicate = try ObjectPredicate(format: format, argumentArray: []) } catch {
                    problem("its predicate \(format) is not valid: \(error.message)")
                    continue
                }
            }
            var typer = TemplateVariableTyper(model: model)
            do {
                if let predicate { try typer.type(predicate, root: entity) }
                for sort in template.sortDescriptors { _ = try ResolvedKeyPath(sort.keyPath, rootEntity: entity, model: model) }
            } catch {
                problem(error.description)
                continue
            }
            resolved[template.name] = ResolvedFetchTemplate(template: template, predicate: predicate, variables: typer.variables)
        }
        return (resolved, problems)
    }
}

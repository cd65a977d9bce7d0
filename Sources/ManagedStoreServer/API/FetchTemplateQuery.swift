import Foundation
import ManagedStoreCore
import ManagedStoreHTTP

/// `GET /v1/objects/{Entity}?fetch=NAME&var.NAME=value`: a fetch with one of the model's
/// fetch request templates [fetchRequestFromTemplate(withName:substitutionVariables:)].
///
/// Each `var.NAME` gives `$NAME` its value as text, read as the type of the key path the
/// variable is compared with (`FetchTemplateVariable`). The template's predicate is ANDed with
/// `where` when both are given; its sort keys and limit apply unless `sort` and `limit` are
/// given. A missing, unknown or ill-typed variable is 400 naming it.
struct FetchTemplateQuery {
    /// The prefix of a variable's query parameter.
    static let variablePrefix = "var."

    let predicate: ObjectPredicate?
    let sorts: [ObjectSortDescriptor]
    let limit: Int?

    /// The template request `request` names, or nil when it names none (no `fetch`).
    init?(_ request: HTTPRequest, entity: EntityDescription, model: ManagedObjectModel, storeIdentifier: UUID) throws(Problem) {
        guard let name = request.queryValue("fetch") else {
            if let stray = request.query.first(where: { $0.name.hasPrefix(Self.variablePrefix) }) {
                throw Problem.badRequest("\(stray.name) gives a template variable, but no template is named: add fetch=NAME")
            }
            return nil
        }
        guard let template = model.fetchRequestTemplates.first(where: { $0.name == name }) else {
            let known = model.fetchRequestTemplates.filter { $0.entityName == entity.name }.map(\.name)
            throw Problem.badRequest("the model has no fetch request template '\(name)'"
                                     + (known.isEmpty ? "" : " (\(entity.name) has: \(known.joined(separator: ", ")))"))
        }
        // A template of a parent entity fetches its sub-entities' objects too, as a fetch of
        // that entity does: its own path is where it answers.
        guard template.entityName == entity.name else {
            throw Problem.badRequest("fetch request template '\(name)' fetches \(template.entityName): use /v1/objects/\(template.entityName)?fetch=\(name)")
        }
        var texts: [String: String] = [:]
        for (parameter, value) in request.query where parameter.hasPrefix(Self.variablePrefix) {
            texts[String(parameter.dropFirst(Self.variablePrefix.count))] = value
        }
        let fetch: FetchRequest
        do throws(FetchTemplateError) {
            fetch = try model.fetchRequestFromTemplate(withName: name, variableTexts: texts, storeIdentifier: storeIdentifier)
        } catch {
            switch error {
            case let .missingVariable(_, variable):
                throw Problem.badRequest("\(error): give it as var.\(variable)=value").with(("variable", .string(variable)))
            case let .invalidVariable(_, variable, _):
                throw Problem.badRequest(error.description).with(("variable", .string(variable)))
            case let .unknownVariable(_, variable, known):
                let names = known.map { "var." + $0 }
                throw Problem.badRequest("fetch request template '\(name)' has no variable $\(variable)"
                                         + (names.isEmpty ? ": it takes none" : " (it takes \(names.joined(separator: ", ")))"))
                    .with(("variable", .string(variable)))
            case .unknownTemplate:
                throw Problem.badRequest(error.description)
            }
        }
        predicate = fetch.predicate
        sorts = fetch.sortDescriptors
        limit = fetch.fetchLimit > 0 ? fetch.fetchLimit : nil
    }
}

extension Problem {
    /// The same problem with `member` added to its body.
    func with(_ member: (String, JSONValue)) -> Problem {
        Problem(status: status, code: code, title: title, detail: detail, extra: extra + [member], headers: headers)
    }
}

import ManagedStoreCore
import ManagedStoreHTTP

extension ReadHandlers {
    /// The parameters of GET /v1/objects/{Entity}/aggregate.
    func aggregateQuery(_ request: HTTPRequest, entity: EntityDescription) throws -> AggregateQuery {
        try AggregateQuery(request, entity: entity, timeout: configuration.queryTimeout)
    }

    /// GET /v1/objects/{Entity}/aggregate: `{"groups": [...]}`, each group a JSON object of its
    /// results in `select` order, computed in one SQL statement on a read context (a snapshot,
    /// under the query timeout).
    func aggregate(_ query: AggregateQuery, entity: EntityDescription) throws -> HTTPResponse {
        try coordinator.withReadContext { context in
            let groups: [AggregateGroup]
            do throws(AggregateError) {
                groups = try context.aggregate(query.request)
            } catch {
                throw Problem.aggregate(error, entity: entity.name)
            }
            var writer = JSONWriter(reservingCapacity: 32 + groups.count * 64)
            writer.writeRaw("{\"groups\":[")
            for (i, group) in groups.enumerated() {
                writer.writeRaw(i == 0 ? "{" : ",{")
                for (j, (name, value)) in zip(group.names, group.values).enumerated() {
                    if j > 0 { writer.writeRaw(",") }
                    writer.writeString(name)
                    writer.writeRaw(":")
                    writer.write(value)
                }
                writer.writeRaw("}")
            }
            writer.writeRaw("]}")
            return .json(200, writer.bytes)
        }
    }
}

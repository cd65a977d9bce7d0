
/// Lightweight (inferred) migration [NSInferMappingModelAutomaticallyOption]: what opening a
/// store made from one model (the source, recorded in the store) with another (the
/// destination) changes, decided by comparing the two, and by reading the stored data where
/// a change depends on it.
///
/// Inferred, as Core Data infers them: entities and properties added, removed or renamed
/// (`renamingIdentifier`); an attribute made optional, or required with a default for the
/// objects without a value (or with none lacking one); relationships added and removed (both
/// sides: every relationship has an inverse); indexes and uniqueness constraints added or
/// dropped, a new constraint only when the stored data satisfies it; validation rules. Not
/// inferred, each named with its entity and property: a changed attribute type, a changed
/// relationship destination, inverse or cardinality, a property that changes kind, a required
/// attribute or relationship added while objects exist.
///
/// The plan is data: the steps for people (`MigrationPlan`), and the storage-level work
/// (`SchemaChanges`) that each store's runner carries out, in the transaction that opens it.
package struct LightweightMigration {
    /// The steps, in order.
    package let steps: [MigrationStep]
    /// Every change that cannot be inferred; the migration runs only when there is none.
    package let refusals: [String]
    package let changes: SchemaChanges

    /// Plans the migration from `source` to `destination`. `data` reads the store the plan is
    /// for; without it nothing depends on data (every entity is taken to be empty), which only
    /// tests want: it lets a migration fail half way on the data instead of being refused.
    package init(from source: ManagedObjectModel, to destination: ManagedObjectModel, data: (any MigrationDataSource)?) throws(StoreError) {
        var planner = MigrationPlanner(match: ModelCorrespondence(source: source, destination: destination), data: data)
        try planner.planEntities()
        try planner.planRelationships()
        try planner.planSharedKeys()
        if planner.steps.isEmpty { planner.steps.append(.recordModel(name: destination.name, version: destination.version)) }
        steps = planner.steps
        refusals = planner.refusals
        changes = planner.changes
    }

    package var plan: MigrationPlan { MigrationPlan(steps: steps) }

    /// The model a store records, which must be the one its hash names.
    package static func recordedModel(_ json: String, hash: String) throws(StoreError) -> ManagedObjectModel {
        let model: ManagedObjectModel
        do {
            model = try ManagedObjectModel(jsonData: Array(json.utf8))
        } catch {
            throw .migrationNotInferable(["the model recorded in the store cannot be read: \(error)"])
        }
        guard model.versionHash == hash else {
            throw .migrationNotInferable(["the model recorded in the store (hash \(model.versionHash)) is not the one its hash names (\(hash))"])
        }
        return model
    }
}

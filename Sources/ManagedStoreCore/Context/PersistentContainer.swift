/// A model, its coordinator and a context for reading, set up in one step [NSPersistentContainer].
public final class PersistentContainer: Sendable {
    public let model: ManagedObjectModel
    public let coordinator: PersistentStoreCoordinator
    /// The context for reading (and light writing) that an application keeps around.
    public let viewContext: ManagedObjectContext

    /// A container over `coordinator`'s store (`init(model:store:)` opens one from its description).
    public init(coordinator: PersistentStoreCoordinator) {
        self.model = coordinator.model
        self.coordinator = coordinator
        self.viewContext = ManagedObjectContext(coordinator: coordinator, name: "view")
    }

    /// A new context with its own queue, for work off the view context [newBackgroundContext()].
    public func newBackgroundContext(name: String = "background") -> ManagedObjectContext {
        ManagedObjectContext(coordinator: coordinator, name: name)
    }

    /// Runs `body` on a new background context and returns its result [performBackgroundTask(_:)].
    public func performBackgroundTask<T: Sendable>(_ body: @escaping @Sendable (ManagedObjectContext) throws -> T) async throws -> T {
        let context = newBackgroundContext()
        return try await context.perform { try body(context) }
    }
}

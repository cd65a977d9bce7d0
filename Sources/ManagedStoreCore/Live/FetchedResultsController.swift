import Dispatch
import Foundation

/// Hears a controller's changes, on its context's queue [NSFetchedResultsControllerDelegate].
/// Every callback has a default that does nothing.
public protocol FetchedResultsControllerDelegate: AnyObject {
    func controllerWillChangeContent(_ controller: FetchedResultsController)
    func controller(_ controller: FetchedResultsController, didChange section: FetchedResultsSectionInfo?, atSectionIndex index: Int,
                    for type: FetchedResultsChangeType)
    func controller(_ controller: FetchedResultsController, didChange objectID: ManagedObjectID, at indexPath: IndexPath?,
                    for type: FetchedResultsChangeType, newIndexPath: IndexPath?)
    func controllerDidChangeContent(_ controller: FetchedResultsController)
}

extension FetchedResultsControllerDelegate {
    public func controllerWillChangeContent(_ controller: FetchedResultsController) {}
    public func controller(_ controller: FetchedResultsController, didChange section: FetchedResultsSectionInfo?, atSectionIndex index: Int,
                           for type: FetchedResultsChangeType) {}
    public func controller(_ controller: FetchedResultsController, didChange objectID: ManagedObjectID, at indexPath: IndexPath?,
                           for type: FetchedResultsChangeType, newIndexPath: IndexPath?) {}
    public func controllerDidChangeContent(_ controller: FetchedResultsController) {}
}

/// Why a controller cannot fetch.
public enum FetchedResultsControllerError: Error, Sendable, Equatable {
    case fetch(FetchError)
    /// `sectionNameKeyPath` must be the first sort descriptor's key path (sections follow the order).
    case sectionKeyPathNotFirstSort(String)
}

/// A fetch whose answer stays current, with the changes of each save told as positions
/// [NSFetchedResultsController]: the objects (or their IDs) in the request's order, sections by
/// the first sort key's value, a delegate with Core Data's callbacks, and `changeSets`, an
/// `AsyncSequence` of the same changes.
///
/// It is fed by the store's persistent history (the live-query engine), not by its context's
/// notifications: it sees every save of every context, batch updates and deletes, and with a
/// PostgreSQL store the saves of other processes. It answers the saved state (pending changes
/// of its context are not in it) and keeps the request's `fetchLimit` as the answer's size.
///
/// Use it on its context's queue, like the context; changes arrive there, as blocks on the queue.
public final class FetchedResultsController {
    public let fetchRequest: FetchRequest
    public let managedObjectContext: ManagedObjectContext
    /// Sections by this key path's value; it must be the first sort descriptor's key path.
    public let sectionNameKeyPath: String?
    public weak var delegate: (any FetchedResultsControllerDelegate)?

    private var members: [LiveMember] = []
    private var more = false
    private var subscription: LiveSubscription?
    private var continuations: [UUID: AsyncStream<FetchedResultsChangeSet>.Continuation] = [:]
    /// The history token the answer holds at (zero before `performFetch`).
    public private(set) var token: PersistentHistoryToken = .zero
    public private(set) var sections: [FetchedResultsSectionInfo]?

    public init(fetchRequest: FetchRequest, managedObjectContext: ManagedObjectContext, sectionNameKeyPath: String? = nil) {
        self.fetchRequest = fetchRequest
        self.managedObjectContext = managedObjectContext
        self.sectionNameKeyPath = sectionNameKeyPath
    }

    deinit {
        subscription?.cancel()
        for continuation in continuations.values { continuation.finish() }
    }

    /// The answer's object IDs, in order; nil before `performFetch`.
    public var fetchedObjectIDs: [ManagedObjectID]? {
        subscription == nil ? nil : members.map(\.id)
    }

    /// The answer's objects, in order (faults until used); nil before `performFetch`.
    public var fetchedObjects: [ManagedObject]? {
        managedObjectContext.assertOnQueue()
        return fetchedObjectIDs?.map { managedObjectContext.object(with: $0) }
    }

    /// Whether matches exist past `fetchLimit`.
    public var hasMore: Bool { more }

    public func objectID(at indexPath: IndexPath) -> ManagedObjectID {
        guard let sections, sections.indices.contains(indexPath.sectionIndex),
              sections[indexPath.sectionIndex].objectIDs.indices.contains(indexPath.itemIndex) else {
            preconditionFailure("FetchedResultsController: no object at \(indexPath)")
        }
        return sections[indexPath.sectionIndex].objectIDs[indexPath.itemIndex]
    }

    public func object(at indexPath: IndexPath) -> ManagedObject { managedObjectContext.object(with: objectID(at: indexPath)) }

    public func indexPath(forObjectID id: ManagedObjectID) -> IndexPath? {
        for (s, section) in (sections ?? []).enumerated() {
            if let i = section.objectIDs.firstIndex(of: id) { return IndexPath(item: i, inSection: s) }
        }
        return nil
    }

    public func indexPath(forObject object: ManagedObject) -> IndexPath? { indexPath(forObjectID: object.objectID) }

    /// Every change set from now on, as the delegate hears them (each access makes a new sequence).
    public var changeSets: AsyncStream<FetchedResultsChangeSet> {
        let (stream, continuation) = AsyncStream.makeStream(of: FetchedResultsChangeSet.self, bufferingPolicy: .unbounded)
        let key = UUID()
        continuations[key] = continuation
        let box = ControllerBox(self)
        continuation.onTermination = { [context = managedObjectContext] _ in
            context.performLater { box.controller?.continuations[key] = nil }
        }
        return stream
    }

    /// Fetches the answer and follows the store from there [performFetch()]. On the context's
    /// queue; waits for the first answer. Again: starts over (the delegate hears nothing of it).
    public func performFetch() throws(FetchedResultsControllerError) {
        managedObjectContext.assertOnQueue()
        if let key = sectionNameKeyPath, fetchRequest.sortDescriptors.first?.keyPath != key {
            throw .sectionKeyPathNotFirstSort(key)
        }
        subscription?.cancel()
        subscription = nil
        let first = FirstAnswer()
        let box = ControllerBox(self)
        let context = managedObjectContext
        var spec = LiveQuerySpec(request: fetchRequest, limit: fetchRequest.fetchLimit > 0 ? fetchRequest.fetchLimit : Int(Int32.max),
                                 renderingKey: sectionNameKeyPath == nil ? "controller" : "controller, sectioned", render: Self.render)
        spec.rendersFirstSortValue = sectionNameKeyPath != nil
        let made: LiveSubscription
        do {
            made = try managedObjectContext.coordinator.liveQueries.subscribe(spec, promptProgress: true) { event in
                if first.take(event) { return }
                context.performLater { box.controller?.receive(event) }
            }
        } catch {
            throw .fetch(error)
        }
        let event = first.wait()
        subscription = made
        switch event {
        case let .snapshot(token, members, more, _):
            self.token = token
            self.members = members
            self.more = more
            sections = FetchedResultsLayout.sections(members, bySectionKey: sectionNameKeyPath != nil)
        case .failed(let error):
            made.cancel()
            subscription = nil
            throw .fetch(error)
        default:
            break
        }
    }

    /// What the controller holds of an object, to tell an update: its version, and its
    /// relationships' destinations (a project whose task moved to another keeps its version).
    private static let render: @Sendable (ManagedObject) throws -> [UInt8] = { object in
        var bytes: [UInt8] = []
        withUnsafeBytes(of: object.version.littleEndian) { bytes += $0 }
        guard let context = object.managedObjectContext else { return bytes }
        for r in object.entity.relationships.indices {
            if object.entity.relationships[r].isToMany {
                for id in context.toManyValue(of: object, r).sortedByKey() {
                    withUnsafeBytes(of: (id.primaryKey ?? 0).littleEndian) { bytes += $0 }
                }
            } else if let id = context.toOneValue(of: object, r) {
                withUnsafeBytes(of: (id.primaryKey ?? 0).littleEndian) { bytes += $0 }
            }
            bytes.append(0xFF)
        }
        return bytes
    }

    // MARK: Changes (on the context's queue)

    private func receive(_ event: LiveEvent) {
        guard subscription != nil else { return }
        let new: [LiveMember]
        let newMore: Bool
        let at: PersistentHistoryToken
        var reload = false
        switch event {
        case let .snapshot(eventToken, members, more, _):
            (new, newMore, at, reload) = (members, more, eventToken, true)
        case let .diff(_, to, ops, more):
            guard let applied = LiveDiff.apply(ops, to: members) else { return }
            (new, newMore, at) = (applied, more, to)
        case .progress(let eventToken):
            token = max(token, eventToken)
            return
        case .failed:
            subscription = nil
            for continuation in continuations.values { continuation.finish() }
            continuations.removeAll()
            return
        }
        var changes = FetchedResultsLayout.changes(from: members, to: new, bySectionKey: sectionNameKeyPath != nil, token: at)
        if reload { changes = FetchedResultsChangeSet(token: at, sectionChanges: changes.sectionChanges, objectChanges: changes.objectChanges, isReload: true) }
        refreshChangedObjects(changes)
        members = new
        more = newMore
        token = at
        let oldSections = sections ?? []
        sections = FetchedResultsLayout.sections(new, bySectionKey: sectionNameKeyPath != nil)
        tell(changes, oldSections: oldSections)
    }

    /// Objects the context holds of what changed, without changes of its own, are turned back
    /// into faults: their next use reads what the store holds now.
    private func refreshChangedObjects(_ changes: FetchedResultsChangeSet) {
        for change in changes.objectChanges where change.type == .update || change.type == .move || change.type == .insert {
            if let object = managedObjectContext.registeredObject(for: change.objectID), !object.hasChanges, !object.isFault {
                managedObjectContext.refresh(object, mergeChanges: false)
            }
        }
    }

    private func tell(_ changes: FetchedResultsChangeSet, oldSections: [FetchedResultsSectionInfo]) {
        if let delegate, !(changes.sectionChanges.isEmpty && changes.objectChanges.isEmpty) {
            delegate.controllerWillChangeContent(self)
            for change in changes.sectionChanges {
                let info = change.type == .delete ? oldSections[change.index] : sections?[change.index]
                delegate.controller(self, didChange: info, atSectionIndex: change.index, for: change.type)
            }
            for change in changes.objectChanges {
                delegate.controller(self, didChange: change.objectID, at: change.indexPath, for: change.type, newIndexPath: change.newIndexPath)
            }
            delegate.controllerDidChangeContent(self)
        }
        for continuation in continuations.values { continuation.yield(changes) }
    }
}

/// The first event of a subscription, handed to the `performFetch` that waits for it.
///
/// `@unchecked Sendable`: `event` and `taken` are only touched under `lock`.
private final class FirstAnswer: @unchecked Sendable {
    private let lock = NSCondition()
    private var event: LiveEvent?
    private var taken = false

    /// Takes `event` if it is the first; false for every later one.
    func take(_ event: LiveEvent) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard !taken else { return false }
        taken = true
        self.event = event
        lock.broadcast()
        return true
    }

    func wait() -> LiveEvent {
        lock.lock()
        defer { lock.unlock() }
        while true {
            if let event { return event }
            lock.wait()
        }
    }
}

/// A controller reached from the engine's queue, for a block run on its context's queue.
///
/// `@unchecked Sendable`: `controller` is only read on the context's queue, the only place
/// the controller is used.
private final class ControllerBox: @unchecked Sendable {
    weak var controller: FetchedResultsController?
    init(_ controller: FetchedResultsController) { self.controller = controller }
}

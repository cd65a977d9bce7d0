import Foundation

/// Where a store lives and how it is opened [NSPersistentStoreDescription].
public struct StoreDescription: Sendable {
    public enum Location: Sendable, Equatable {
        /// An SQLite file in WAL mode.
        case file(URL)
        /// A private in-memory database [NSInMemoryStoreType]: same behaviour, gone at close.
        case inMemory
    }

    /// How much a committed save survives.
    public enum Durability: String, Sendable, CaseIterable {
        /// WAL with synchronous=FULL: a returned save survives a power cut.
        case full
        /// WAL with synchronous=NORMAL: survives a crash of the process, not of the machine.
        case normal
    }

    public var location: Location
    /// Read-only connections that fetches and faults use; reads never wait for the writer.
    public var readerCount: Int
    public var durability: Durability

    public init(location: Location, readerCount: Int = 4, durability: Durability = .full) {
        self.location = location
        self.readerCount = max(1, readerCount)
        self.durability = durability
    }

    /// A store file at `url`.
    public static func sqlite(_ url: URL, readerCount: Int = 4, durability: Durability = .full) -> StoreDescription {
        StoreDescription(location: .file(url), readerCount: readerCount, durability: durability)
    }

    /// A store at `path`, or in memory when `path` is `:memory:`, as the command line accepts.
    public static func path(_ path: String, readerCount: Int = 4, durability: Durability = .full) -> StoreDescription {
        path == ":memory:" ? StoreDescription(location: .inMemory, readerCount: readerCount, durability: durability)
                           : .sqlite(URL(fileURLWithPath: path), readerCount: readerCount, durability: durability)
    }

    public static var inMemory: StoreDescription { StoreDescription(location: .inMemory) }
}

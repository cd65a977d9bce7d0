import Foundation
import ManagedStoreCore

extension StoreDescription {
    /// An SQLite store file at `url`, in WAL mode.
    public static func sqlite(_ url: URL, readerCount: Int = 4, durability: Durability = .full) -> StoreDescription {
        StoreDescription(location: .file(url), readerCount: readerCount, durability: durability)
    }
}

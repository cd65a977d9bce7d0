// Kiwix's own Core Data model (an offline Wikipedia reader's, from ../shared/coredata-models),
// its typed classes made by the plugin from the `.xcdatamodeld` as Kiwix ships it: an insert,
// and a typed predicate through `Bookmark.zimFile`. Exits 1 on a wrong answer or an error.

import Foundation
import ManagedStore

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("KiwixViews: \(message)\n".utf8))
    exit(1)
}

/// The French bookmarks' titles, found through their ZIM files.
func frenchBookmarks(modelAt path: String) async throws -> [String] {
    let model = try ManagedObjectModel(contentsOf: URL(fileURLWithPath: path))
    let container = try PersistentContainer(model: model, store: .inMemory)
    let context = container.newBackgroundContext()
    return try await context.perform {
        for (name, language) in [("wikipedia_en_all", "en"), ("wikipedia_fr_all", "fr")] {
            let zimFile = ZimFile.insert(into: context)
            zimFile.name = name
            zimFile.languageCode = language
            zimFile.fileID = UUID()
            zimFile.persistentID = name
            zimFile.fileDescription = "Wikipedia (\(language))"
            zimFile.created = Date()
            let bookmark = Bookmark.insert(into: context)
            bookmark.title = "Ada Lovelace (\(language))"
            bookmark.articleURL = URL(string: "kiwix://\(name)/A/Ada_Lovelace")!
            bookmark.created = Date()
            bookmark.zimFile = zimFile
            // Kiwix's tabs and bookmarks are required to-manys: Core Data asks for one at least.
            let tab = Tab.insert(into: context)
            tab.created = Date()
            tab.lastOpened = Date()
            tab.zimFile = zimFile
        }
        try context.save()
        return try Bookmark.fetch(in: context, where: Bookmark.zimFile.languageCode == "fr" && Bookmark.zimFile.isMissing == false,
                                  sortedBy: [Bookmark.zimFile.name.ascending]).compactMap(\.title)
    }
}

guard CommandLine.arguments.count == 2 else {
    FileHandle.standardError.write(Data("usage: KiwixViews PATH/Kiwix.xcdatamodeld\n".utf8))
    exit(2)
}
do {
    let titles = try await frenchBookmarks(modelAt: CommandLine.arguments[1])
    guard titles == ["Ada Lovelace (fr)"] else { fail("the typed predicate through zimFile found \(titles)") }
    print("KiwixViews: Kiwix's model made its typed classes; a typed predicate through Bookmark.zimFile found \(titles)")
} catch {
    fail("\(error)")
}

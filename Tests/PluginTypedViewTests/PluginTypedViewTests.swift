import Foundation
import Testing
import ManagedStore

/// The GenerateTypedViews build plugin: Library.model.json sits in this target, and its typed
/// views (`Author`, `Book`) exist only because the plugin generated them at build time.
@Suite("Typed views made by the build plugin")
struct PluginTypedViewTests {
    static func model() throws -> ManagedObjectModel {
        try ManagedObjectModel(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Library.model.json"))
    }

    @Test("the generated views insert, link, save and fetch with typed predicates")
    func generatedAtBuildTime() throws {
        let container = try PersistentContainer(model: try Self.model(), store: .inMemory)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let author = Author.insert(into: context)
            author.name = "Le Guin"
            author.born = 1929
            for (title, pages) in [("The Dispossessed", Int32(387)), ("A Wizard of Earthsea", 183)] {
                let book = Book.insert(into: context)
                book.title = title
                book.pages = pages
                book.price = Decimal(string: "9.99")
                book.author = author
            }
            try context.save()
            let long = try Book.fetch(in: context, where: Book.pages > 200 && Book.author == author, sortedBy: [Book.title.ascending])
            #expect(long.map(\.title) == ["The Dispossessed"])
            #expect(author.books.count == 2 && Book.entityName == "Book")
        }
    }
}

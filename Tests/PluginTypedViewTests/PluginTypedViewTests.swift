import Foundation
import Testing
import ManagedStore

/// The GenerateTypedViews build plugin: Library.model.json and Garden.xcdatamodel sit in this
/// target, and their typed views (`Author`, `Book`, `Bed`, `Plant`) exist only because the
/// plugin generated them at build time.
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
            // A transient attribute is a plain optional on the view, held on the object only.
            #expect(long[0].isSelected == nil)
            long[0].isSelected = true
            #expect(long[0].isSelected == true && !long[0].object.hasChanges)
            #expect(author.books.count == 2 && Book.entityName == "Book")
        }
    }

    @Test("an ordered to-many is an array in its order, a one-way to-one lets go of a deleted book, a count rule holds")
    func orderedOneWayAndCounts() throws {
        let container = try PersistentContainer(model: try Self.model(), store: .inMemory)
        let context = container.newBackgroundContext()
        let shelfID = try context.performAndWait {
            let author = Author.insert(into: context)
            author.name = "Calvino"
            let books = ["If on a winter's night", "Invisible Cities", "Cosmicomics"].map { title in
                let book = Book.insert(into: context)
                book.title = title
                book.author = author
                return book
            }
            let shelf = Shelf.insert(into: context)
            shelf.books = [books[2], books[0], books[1]]
            author.favorite = books[1]
            try context.save()
            context.delete(books[1].object)
            #expect(author.favorite == nil, "a one-way to-one lets go of a deleted book")
            try context.save()
            return shelf.objectID
        }
        let reader = container.newBackgroundContext()
        let titles = try reader.performAndWait {
            try reader.existingObject(with: shelfID).typed(as: Shelf.self).map { $0.books.map(\.title) } ?? []
        }
        #expect(titles == ["Cosmicomics", "If on a winter's night"])
        // A fourth book on a shelf of at most three is refused.
        let crowded = try context.performAndWait { () -> Bool in
            let shelf = try context.existingObject(with: shelfID).typed(as: Shelf.self)!
            for title in ["a", "b"] {
                let book = Book.insert(into: context)
                book.title = title
                book.author = try Author.fetch(in: context, where: Author.name == "Calvino").first
                book.shelf = shelf
            }
            return context.validatePendingChanges().contains { $0.code == .tooLarge && $0.property == "books" }
        }
        #expect(crowded)
    }

    @Test("inheritance: a typed fetch of the abstract parent returns each sub-entity's objects, viewed as the parent")
    func inheritedViews() throws {
        let container = try PersistentContainer(model: try Self.model(), store: .inMemory)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let magazine = Magazine.insert(into: context)
            magazine.catalogNumber = 20
            magazine.issue = 3
            let atlas = Atlas.insert(into: context)
            atlas.catalogNumber = 10
            atlas.region = "Alps"
            try context.save()
            let media = try Medium.fetch(in: context, where: Medium.catalogNumber >= 5, sortedBy: [Medium.catalogNumber.ascending])
            #expect(media.map(\.catalogNumber) == [10, 20])
            #expect(media.map(\.object.entityName) == ["Atlas", "Magazine"])
            #expect(media[1].object.typed(as: Magazine.self)?.issue == 3)
            #expect(media[1].object.typed(as: Atlas.self) == nil)
            #expect(atlas.object.typed(as: Medium.self)?.catalogNumber == 10 && magazine.asMedium.catalogNumber == 20)
            // A relationship to the parent holds either kind; each sub-entity has the inverse.
            let shelf = Shelf.insert(into: context)
            shelf.media = [magazine.asMedium, atlas.asMedium]
            try context.save()
            #expect(Set(shelf.media.map(\.object.entityName)) == ["Atlas", "Magazine"])
            #expect(magazine.shelf?.object == shelf.object && atlas.shelf?.object == shelf.object)
            // The parent's uniqueness constraint spans both kinds.
            Magazine.insert(into: context).catalogNumber = 10
            #expect(throws: SaveError.self) { try context.save() }
        }
    }

    @Test("an Xcode model in the target (an .xcdatamodel, listed by SwiftPM as one file) gets its views, keys through to-ones included")
    func xcodeModelInTarget() throws {
        let url = try #require(Bundle.module.url(forResource: "Garden", withExtension: "xcdatamodel"))
        let container = try PersistentContainer(model: try ManagedObjectModel(contentsOf: url), store: .inMemory)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            for (name, species) in [("North", ["Kale", "Leek"]), ("South", ["Basil"])] {
                let bed = Bed.insert(into: context)
                bed.name = name
                for kind in species {
                    let plant = Plant.insert(into: context)
                    plant.species = kind
                    plant.bed = bed
                }
            }
            try context.save()
            let north = try Plant.fetch(in: context, where: Plant.bed.name == "North", sortedBy: [Plant.species.descending])
            #expect(north.map(\.species) == ["Leek", "Kale"])
            #expect(try Plant.fetch(in: context, sortedBy: [Plant.bed.name.descending, Plant.species.ascending]).map(\.species) == ["Basil", "Kale", "Leek"])
        }
    }

    @Test("keys through to-ones go on through a second to-one, and a book's author's name is a typed key of Book")
    func keysThroughTwoToOnes() throws {
        let container = try PersistentContainer(model: try Self.model(), store: .inMemory)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            for (name, title) in [("Le Guin", "The Lathe of Heaven"), ("Calvino", "Mr Palomar")] {
                let author = Author.insert(into: context)
                author.name = name
                let book = Book.insert(into: context)
                book.title = title
                book.author = author
                author.favorite = book
            }
            try context.save()
            #expect(Author.favorite.author.name.keyPath == "favorite.author.name")
            let found = try Author.fetch(in: context, where: Author.favorite.author.name == "Calvino").map(\.name)
            #expect(found == ["Calvino"])
            #expect(try Book.fetch(in: context, where: Book.author.favorite == nil).isEmpty)
            #expect(try Book.fetch(in: context, sortedBy: [Book.author.name.ascending]).map(\.title) == ["Mr Palomar", "The Lathe of Heaven"])
        }
    }
}

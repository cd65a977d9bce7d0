// A reading list, written as a Core Data user writes an app: the model from the bundle, typed
// classes the build made from it, writes on one queue, and a list on screen kept current from
// the view context's notifications alone. It checks what it shows and exits 1 on a difference,
// so `make test` can run it (scripts/example-package.sh).

import Foundation
import ManagedStore
import Synchronization

func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    guard !condition else { return }
    FileHandle.standardError.write(Data("ReadingList: \(message())\n".utf8))
    exit(1)
}

let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ReadingList-\(UUID().uuidString)")
try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: folder) }
let storeURL = folder.appendingPathComponent("Reading.sqlite")

// README: begin model
// The model is the file the typed classes (Book, Shelf, Reader) were generated from.
let modelURL = Bundle.module.url(forResource: "Reading", withExtension: "xcdatamodeld")!
let container = try PersistentContainer(model: try ManagedObjectModel(contentsOf: modelURL), store: .sqlite(storeURL))
// README: end model
let model = container.model

// Every write goes through one queue; the view context shows each once it returns.
let view = container.viewContext
let queue = WriteQueue(coordinator: container.coordinator, mergingInto: view)
queue.start()

// The list on screen: each book's title, by ID. Only the notifications change it: a merged
// save lists the books it inserted (faults the view reads when it shows them), the books it
// changed (refreshed) and those it deleted (invalidated).
let shown = Mutex<[ManagedObjectID: String]>([:])
let observation = view.addObserver { notification in
    guard case .objectsDidChange(let changes) = notification else { return }
    // Observers run on the view context's queue, so the view may be read here.
    for id in changes.inserted + changes.refreshed where id.entityName == Book.entityName {
        let title = view.object(with: id).typed(as: Book.self)?.title ?? ""
        shown.withLock { $0[id] = title }
    }
    for id in changes.invalidated + changes.deleted { _ = shown.withLock { $0.removeValue(forKey: id) } }
}

/// What a fresh fetch finds: the list must show exactly that.
func fetchedTitles() throws -> [String] {
    try view.performAndWait { try Book.fetch(in: view).compactMap(\.title).sorted() }
}
func shownTitles() -> [String] { shown.withLock { $0.values.sorted() } }

let novelsID = try await queue.perform { context in
    let ada = Reader.insert(into: context)
    ada.name = "Ada"
    let novels = Shelf.insert(into: context)
    novels.name = "Novels"
    novels.owner = ada
    let science = Shelf.insert(into: context)
    science.name = "Science"
    for (title, pages, shelf) in [("Middlemarch", 880, novels), ("Emma", 474, novels), ("Persuasion", 249, novels),
                                  ("Cosmos", 396, science), ("The Selfish Gene", 360, science)] {
        let book = Book.insert(into: context)
        book.title = title
        book.pages = Int32(pages)
        book.added = Date()
        book.shelf = shelf
    }
    try context.save()
    return novels.objectID
}
var fetched = try fetchedTitles()
check(shownTitles() == fetched, "after the first write the list shows \(shownTitles()), a fetch finds \(fetched)")
check(shownTitles().count == 5, "the list shows \(shownTitles().count) books, not 5")

// Finish one, rename one, delete one, add one: the list follows.
try await queue.perform { context in
    let novels = try context.existingObject(with: novelsID).typed(as: Shelf.self)!
    let books = novels.books.sorted { ($0.title ?? "") < ($1.title ?? "") }
    books[0].finished = true                 // Emma
    books[1].title = "Middlemarch (2nd ed.)"
    context.delete(books[2].object)          // Persuasion
    let added = Book.insert(into: context)
    added.title = "Sense and Sensibility"
    added.added = Date()
    added.shelf = novels
    try context.save()
}
fetched = try fetchedTitles()
check(shownTitles() == fetched, "after the second write the list shows \(shownTitles()), a fetch finds \(fetched)")
check(shownTitles().contains("Middlemarch (2nd ed.)") && !shownTitles().contains("Persuasion"), "the list missed a change: \(shownTitles())")

// Typed predicates and sorts through to-one relationships: checked by the compiler
// (`Book.shelf.name == 3` does not compile), the same fetch as the string predicate.
// README: begin path
let unfinishedNovels = try view.performAndWait {
    try Book.fetch(in: view, where: Book.shelf.name == "Novels" && Book.finished == false,
                   sortedBy: [Book.shelf.owner.name.ascending, Book.title.ascending]).compactMap(\.title)
}
// Book.shelf.name == 3 does not compile; Book.shelf.name is "shelf.name" to the store.
// README: end path
check(unfinishedNovels == ["Middlemarch (2nd ed.)", "Sense and Sensibility"], "unfinished novels: \(unfinishedNovels)")
let template = try model.fetchRequestFromTemplate(withName: "unfinishedOnShelf", substitutionVariables: ["SHELF": "Novels"])!
let fromTemplate = try view.performAndWait { try view.fetch(template).compactMap { $0.value("title", as: String.self) }.sorted() }
check(fromTemplate == unfinishedNovels, "the model's template finds \(fromTemplate), the typed predicate \(unfinishedNovels)")

let adasBooks = try view.performAndWait {
    try Book.fetch(in: view, where: Book.shelf.owner.name == "Ada", sortedBy: [Book.shelf.name.ascending, Book.pages.descending])
        .map { "\($0.shelf?.name ?? "-"): \($0.title ?? "-")" }
}
check(adasBooks == ["Novels: Middlemarch (2nd ed.)", "Novels: Emma", "Novels: Sense and Sensibility"], "Ada's books: \(adasBooks)")
let owner = try view.performAndWait { try Book.fetch(in: view, where: Book.title == "Emma").first?.value(Book.shelf.owner.name) }
check(owner == "Ada", "Emma's shelf's owner reads \(String(describing: owner)) through the typed key path")

observation.cancel()
queue.stop()
print("ReadingList: the list followed 2 writes from notifications alone (\(shownTitles().count) books); typed predicates through to-ones match their string forms")

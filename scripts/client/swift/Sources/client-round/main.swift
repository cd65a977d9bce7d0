// A round with the Swift clients generated from the served documents: the demo model's
// (TrackerClient) and a model with every attribute type and a to-many relationship
// (CatalogClient). Every answer is decoded into the generated types; any other answer, or a
// value that does not come back as it was sent, fails the round with a message.
//
//   client-round <tracker base URL> <catalog base URL>
import CatalogClient
import Foundation
import TrackerClient

struct RoundFailure: Error, CustomStringConvertible {
    let description: String
}

func expect(_ condition: Bool, _ message: @autoclosure () -> String) throws {
    if !condition { throw RoundFailure(description: message()) }
}

/// A write answer's History-Token, which every 2xx write carries.
func historyToken(_ header: String?) throws -> String {
    guard let header else { throw RoundFailure(description: "a write answered without a History-Token") }
    return header
}

/// The `pk` of an ID such as `Task/42`.
func primaryKey(_ id: String) throws -> Int {
    guard let key = id.split(separator: "/").last.flatMap({ Int($0) }) else { throw RoundFailure(description: "not an object ID: \(id)") }
    return key
}

// MARK: The demo model

func trackerRound(_ base: URL) async throws {
    typealias Schemas = TrackerClient.Components.Schemas
    let client = TrackerClient.Client.connecting(to: base)

    // Insert a project, then the README's lines: a task of Project/1, fetched back.
    let project = try await client.insertProject(body: .json(.init(value1: Schemas.ProjectInsert(name: "Apollo")))).created.body.json
    let (readmeTask, readmePage) = try await readmeLines(base)
    try expect(project._id == "Project/1" && readmeTask.project?.value1 == "Project/1" && readmePage.objects.map(\._id) == [readmeTask._id],
               "the README's lines inserted \(readmeTask) and fetched \(readmePage.objects.map(\._id))")
    _ = try await client.deleteTask(path: .init(pk: try primaryKey(readmeTask._id))).noContent

    // A task with its relationship set.
    let inserted = try await client.insertTask(body: .json(.init(value1: Schemas.TaskInsert(title: "Launch", priority: 3, project: project._id))))
    let created = try inserted.created
    let task = try created.body.json
    try expect(task.project?.value1 == project._id, "the task's project is \(String(describing: task.project)), not \(project._id)")
    try expect(task._version == 1 && created.headers.eTag == "\"1\"", "a new task is version 1 with ETag \"1\"")
    let pk = try primaryKey(task._id)

    // Fetch with where.
    let page = try await client.fetchTask(query: .init(_where: #"priority >= 2 AND project.name == "Apollo""#)).ok.body.json
    try expect(page.objects.map(\._id) == [task._id] && page.next == nil, "the fetch found \(page.objects.map(\._id))")

    // Get one, with its ETag.
    let got = try await client.getTask(path: .init(pk: pk)).ok
    try expect(try got.body.json.title == "Launch" && got.headers.eTag == "\"1\"", "GET answered \(got)")

    // A live query follows the task from here: each write's History-Token names the event
    // that carries it.
    let live = try LiveQueryReader(base: base, path: "/v1/objects/Task/live?where=priority%20%3E=%202&sort=title&fields=title,done")
    let snapshot = try live.next()
    try expect(snapshot.kind == "snapshot" && (snapshot.data["objects"] as? [[String: Any]])?.map { $0["_id"] as? String } == [task._id],
               "the live query's snapshot: \(snapshot.data)")

    // Patch with If-Match.
    let patchAnswer = try await client.patchTask(path: .init(pk: pk), headers: .init(ifMatch: "\"1\""),
                                                  body: .json(Schemas.TaskValues(done: true))).ok
    let patched = try patchAnswer.body.json
    try expect(patched._version == 2 && patched.done == true && patched.priority == 3, "the patch answered \(patched)")
    let patchOps = try live.ops(through: try historyToken(patchAnswer.headers.historyToken))
    try expect(patchOps.count == 1 && patchOps[0]["op"] as? String == "update" && patchOps[0]["index"] as? Int == 0
               && (patchOps[0]["object"] as? [String: Any])?["done"] as? Bool == true, "the live query's diff for the patch: \(patchOps)")

    // The same patch again, still based on version 1: a 409 decoded as the conflict problem.
    let stale = try await client.patchTask(path: .init(pk: pk), headers: .init(ifMatch: "\"1\""), body: .json(Schemas.TaskValues(title: "Liftoff")))
    guard case .conflict(let conflict) = stale else { throw RoundFailure(description: "a stale If-Match answered \(stale), not 409") }
    let problem = try conflict.body.applicationProblemJson
    try expect(problem.value1.code == .conflict && problem.value1.status == 409, "the 409's problem is \(problem.value1)")
    guard case .OptimisticLockingConflict(let locking)? = problem.value2.conflicts.first else {
        throw RoundFailure(description: "the 409 lists \(problem.value2.conflicts), not an optimistic-locking conflict")
    }
    try expect(locking.object == task._id && locking.oldVersion == 1 && locking.newVersion == 2 && locking.properties == [], "the conflict is \(locking)")

    // A transaction with refs: a tag, a task linked to it and to the project, then an update of the new task by its ref.
    let operations: [Schemas.TransactionOperation] = [
        .TagInsertOperation(.init(op: .insert, entity: .tag, ref: "urgent", values: .init(label: "urgent"))),
        .TaskInsertOperation(.init(op: .insert, entity: .task, ref: "next", values: .init(title: "Review", project: project._id, tags: ["urgent"]))),
        .RefUpdateOperation(.init(op: .update, object: "next", values: try .init(unvalidatedValue: ["priority": 4]))),
    ]
    let saved = try await client.saveTransaction(body: .json(.init(operations: operations))).ok.body.json
    let tagID = saved.ids.additionalProperties["urgent"], nextID = saved.ids.additionalProperties["next"]
    try expect(tagID?.hasPrefix("Tag/") == true && nextID?.hasPrefix("Task/") == true, "the transaction's ids are \(saved.ids)")
    var tasks: [Schemas.Task] = [], tags: [Schemas.Tag] = [], projects: [Schemas.Project] = []
    for object in saved.objects {
        switch object {
        case .Task(let t): tasks.append(t)
        case .Tag(let t): tags.append(t)
        case .Project(let p): projects.append(p)
        case .DeletedObject(let d): throw RoundFailure(description: "the transaction deleted \(d._id)")
        }
    }
    let next = tasks.first { $0._id == nextID }
    try expect(next?.priority == 4 && next?._version == 1 && next?.tags?.compactMap(\.value1) == [tagID].compactMap { $0 },
               "the new task is answered as \(String(describing: next))")
    try expect(tags.map(\._id) == [tagID].compactMap { $0 } && projects.map(\._id) == [project._id],
               "objects: the tag and the project whose tasks gained one, got \(tags.map(\._id)) and \(projects.map(\._id))")
    try expect(Int(saved.token).map { $0 > 0 } == true, "the token is \(saved.token)")

    // The transaction's task (priority 4, "Review") entered the live query after "Launch".
    let transactionOps = try live.ops(through: saved.token)
    try expect(transactionOps.count == 1 && transactionOps[0]["op"] as? String == "insert" && transactionOps[0]["index"] as? Int == 1
               && (transactionOps[0]["object"] as? [String: Any])?["_id"] as? String == nextID, "the live query's diff for the transaction: \(transactionOps)")

    // Delete, then the object is gone (and left the live query).
    let deleted = try await client.deleteTask(path: .init(pk: pk)).noContent
    let deleteOps = try live.ops(through: try historyToken(deleted.headers.historyToken))
    try expect(deleteOps.count == 1 && deleteOps[0]["op"] as? String == "delete" && deleteOps[0]["index"] as? Int == 0,
               "the live query's diff for the delete: \(deleteOps)")
    let gone = try await client.getTask(path: .init(pk: pk))
    guard case .notFound(let notFound) = gone else { throw RoundFailure(description: "GET after DELETE answered \(gone)") }
    try expect(try notFound.body.applicationProblemJson.code == .notFound, "the 404's code")
}

// MARK: A model with every attribute type

func catalogRound(_ base: URL) async throws {
    typealias Schemas = CatalogClient.Components.Schemas
    let client = CatalogClient.Client.connecting(to: base)

    let wheel = try await client.insertPart(body: .json(.init(value1: Schemas.PartInsert(name: "wheel")))).created.body.json
    let bell = try await client.insertPart(body: .json(.init(value1: Schemas.PartInsert(name: "bell")))).created.body.json
    // Milliseconds: what a Date holds exactly through the runtime's ISO 8601 transcoder.
    let released = Date(timeIntervalSince1970: 1_782_000_000.125)
    let thumbnail = Data([0, 1, 2, 250, 251, 252, 253, 254, 255])
    let sent = Schemas.ProductInsert(sku: "BK-1042", stock: 7, sold: 120_000, views: 9_000_000_000_123, price: "1234.5678",
                                     weight: 8.25, rating: 4.5, available: false, released: released, thumbnail: .init(thumbnail),
                                     serial: "6f1c2b3a-4d5e-4f60-8a7b-9c0d1e2f3a4b", homepage: "https://example.com/bikes/1042?ref=a%20b",
                                     parts: [wheel._id, bell._id])
    let product = try await client.insertProduct(body: .json(.init(value1: sent))).created.body.json
    try expect(product.sku == "BK-1042" && product.stock == 7 && product.sold == 120_000 && product.views == 9_000_000_000_123,
               "integers: \(product)")
    try expect(product.price == "1234.5678", "a decimal comes back exact: \(String(describing: product.price))")
    try expect(product.weight == 8.25 && product.rating == 4.5 && product.available == false, "double, float, boolean: \(product)")
    try expect(product.released == released, "the date: \(String(describing: product.released)), not \(released)")
    try expect(product.thumbnail.map { Data($0.data) } == thumbnail, "binary comes back byte for byte")
    try expect(product.serial?.lowercased() == "6f1c2b3a-4d5e-4f60-8a7b-9c0d1e2f3a4b" && product.homepage == "https://example.com/bikes/1042?ref=a%20b",
               "uuid and uri: \(String(describing: product.serial)) \(String(describing: product.homepage))")
    try expect(Set(product.parts?.compactMap(\.value1) ?? []) == [wheel._id, bell._id], "the to-many relationship: \(String(describing: product.parts))")
    let pk = try primaryKey(product._id)

    // Fetch with where over a decimal and a to-many key path.
    let found = try await client.fetchProduct(query: .init(_where: #"price > 1000 AND ANY parts.name == "bell""#)).ok.body.json
    try expect(found.objects.map(\._id) == [product._id], "the fetch found \(found.objects.map(\._id))")
    let got = try await client.getProduct(path: .init(pk: pk)).ok
    try expect(try got.body.json.price == "1234.5678" && got.headers.eTag == "\"1\"", "GET answered \(got)")

    // Patch with If-Match, then a stale one: 409.
    let patched = try await client.patchProduct(path: .init(pk: pk), headers: .init(ifMatch: "\"1\""),
                                                body: .json(Schemas.ProductValues(price: "999.99", parts: [wheel._id]))).ok.body.json
    try expect(patched._version == 2 && patched.price == "999.99" && patched.parts?.compactMap(\.value1) == [wheel._id], "the patch answered \(patched)")
    let stale = try await client.patchProduct(path: .init(pk: pk), headers: .init(ifMatch: "\"1\""), body: .json(Schemas.ProductValues(stock: 1)))
    guard case .conflict(let conflict) = stale, case .OptimisticLockingConflict(let locking)? = try conflict.body.applicationProblemJson.value2.conflicts.first else {
        throw RoundFailure(description: "a stale If-Match answered \(stale), not a 409 with an optimistic-locking conflict")
    }
    try expect(locking.oldVersion == 1 && locking.newVersion == 2, "the conflict is \(locking)")

    // A transaction with refs: a new part given to the product.
    let saved = try await client.saveTransaction(body: .json(.init(operations: [
        .PartInsertOperation(.init(op: .insert, entity: .part, ref: "chain", values: .init(name: "chain"))),
        .ProductUpdateOperation(.init(op: .update, object: product._id, version: 2, values: .init(parts: [wheel._id, "chain"]))),
    ]))).ok.body.json
    let chainID = saved.ids.additionalProperties["chain"]
    let updated = saved.objects.compactMap { object -> Schemas.Product? in if case .Product(let p) = object { return p } else { return nil } }.first
    try expect(updated?._version == 3 && Set(updated?.parts?.compactMap(\.value1) ?? []) == Set([wheel._id, chainID].compactMap { $0 }),
               "the transaction answered \(String(describing: updated))")

    // Delete the product: its parts go with it (cascade).
    _ = try await client.deleteProduct(path: .init(pk: pk)).noContent
    guard case .notFound = try await client.getPart(path: .init(pk: try primaryKey(wheel._id))) else {
        throw RoundFailure(description: "a part of the deleted product is still there")
    }
}

// MARK: Main

let arguments = CommandLine.arguments
guard arguments.count == 3, let tracker = URL(string: arguments[1]), let catalog = URL(string: arguments[2]) else {
    FileHandle.standardError.write(Data("usage: client-round <tracker base URL> <catalog base URL>\n".utf8))
    exit(2)
}
do {
    try await trackerRound(tracker)
    print("swift client, demo model: insert with a relationship, fetch with where, get, a live query followed through patch, transaction and delete, patch with If-Match, 409 decoded, transaction with refs, delete: ok")
    try await catalogRound(catalog)
    print("swift client, every attribute type: insert, values back exact, fetch with where, get, patch with If-Match, 409 decoded, transaction with refs, delete with cascade: ok")
} catch {
    FileHandle.standardError.write(Data("swift client round failed: \(error)\n".utf8))
    exit(1)
}

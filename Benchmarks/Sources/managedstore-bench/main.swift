// managedstore-bench: ManagedStore against raw SQLite on the same schema, in one run.
//
//   swift run -c release managedstore-bench [--count N] [--batch N] [--keep]
//
// Order matters: the ManagedStore insert runs first, so the peak memory read right after it
// is the library's (plus the process's baseline), not raw SQLite's.
import Foundation
import ManagedStore

var workload = Workload()
var keepFiles = false
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    func number() -> Int {
        guard let text = arguments.popFirst(), let n = Int(text.filter { $0 != "_" && $0 != "," }), n > 0 else {
            say("\(argument) needs a positive number"); exit(2)
        }
        return n
    }
    switch argument {
    case "--count": workload.count = number()
    case "--batch": workload.batchSize = number()
    case "--keep": keepFiles = true
    default:
        say("usage: managedstore-bench [--count N (default 1000000)] [--batch N (default 10000)] [--keep (keep the store files)]")
        exit(argument == "--help" || argument == "-h" ? 0 : 2)
    }
}

/// 1234567 -> "1,234,567".
func grouped(_ value: Double) -> String {
    let digits = String(Int(value.rounded()))
    var result = ""
    for (i, c) in digits.reversed().enumerated() {
        if i > 0 && i % 3 == 0 && c != "-" { result.append(",") }
        result.append(c)
    }
    return String(result.reversed())
}

func fixed(_ value: Double, _ places: Int = 2) -> String { String(format: "%.\(places)f", value) }

/// Prints a line at once, unbuffered, so progress shows while a phase runs (also through a pipe).
func say(_ text: String = "") {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

func step(_ text: String) { say("  \(text)") }

let directory = FileManager.default.temporaryDirectory.appendingPathComponent("managedstore-bench-\(UUID().uuidString)")
let storeURL = directory.appendingPathComponent("managedstore.sqlite")
let rawPath = directory.appendingPathComponent("raw.sqlite").path

say("ManagedStore benchmark: \(grouped(Double(workload.count))) Task objects, save + reset every \(grouped(Double(workload.batchSize)))")
say("Stores: SQLite \(RawDatabase.version) files, WAL, durability .normal = PRAGMA synchronous=NORMAL on both sides")
say("Files:  \(directory.path)\(keepFiles ? " (kept)" : " (removed at the end)")")
say()

var failures: [String] = []
@MainActor func check<T: Equatable>(_ what: String, _ a: T, _ b: T) {
    if a == b { step("check \(what): same on both sides") } else {
        failures.append(what)
        step("CHECK FAILED \(what):\n      ManagedStore: \(a)\n      raw SQLite:   \(b)")
    }
}

do {
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { if !keepFiles { try? FileManager.default.removeItem(at: directory) } }
    let baselineMB = Memory.peakResidentMB()

    // 1. ManagedStore insert, first in the process.
    step("ManagedStore insert...")
    let msInsert = try InsertBenchmark.managedStore(at: storeURL, workload)
    let peakAfterInsertMB = Memory.peakResidentMB()
    let residentAfterInsertMB = Memory.currentResidentMB()
    step("  \(fixed(msInsert.seconds)) s (save \(fixed(msInsert.saveSeconds)) s, reset \(fixed(msInsert.resetSeconds)) s, "
        + "insert + setters \(fixed(msInsert.seconds - msInsert.saveSeconds - msInsert.resetSeconds)) s); "
        + "peak RSS \(fixed(peakAfterInsertMB, 1)) MB")

    // 2. Raw SQLite insert into a second file with the schema ManagedStore made.
    step("raw SQLite insert...")
    try InsertBenchmark.createSchema(at: URL(fileURLWithPath: rawPath))
    let rawInsert = try InsertBenchmark.rawSQLite(at: rawPath, workload)
    step("  \(fixed(rawInsert.seconds)) s")
    let msPrint = try InsertBenchmark.fingerprint(of: storeURL.path)
    let rawPrint = try InsertBenchmark.fingerprint(of: rawPath)
    check("Task schema (table + indexes)", msPrint.schema, rawPrint.schema)
    check("stored rows (count, key range, sums)", msPrint.rows, rawPrint.rows)

    // 3. Reads: each side reads its own file; the files hold the same rows.
    let container = try PersistentContainer(model: .taskTracker(), store: .sqlite(storeURL, durability: .normal))
    let rawDB = try RawDatabase(path: rawPath, readOnly: true)
    let keys = workload.lookupKeys()

    /// Runs both sides `workload.readRounds` times, alternating who goes first, checks that
    /// they read the same rows every time, and keeps each side's fastest round.
    func bestOf(_ what: String, managedStore: () throws -> FetchBenchmark.Result,
                raw: () throws -> FetchBenchmark.Result) throws -> (FetchBenchmark.Result, FetchBenchmark.Result) {
        step("\(what)...")
        var best: (ms: FetchBenchmark.Result?, raw: FetchBenchmark.Result?) = (nil, nil)
        for round in 0..<workload.readRounds {
            let ms: FetchBenchmark.Result, r: FetchBenchmark.Result
            if round % 2 == 0 {
                ms = try managedStore()
                r = try raw()
            } else {
                r = try raw()
                ms = try managedStore()
            }
            if round == 0 { check(what, ms.digest, r.digest) }
            else if ms.digest != r.digest { check("\(what), round \(round + 1)", ms.digest, r.digest) }
            if best.ms.map({ ms.seconds < $0.seconds }) ?? true { best.ms = ms }
            if best.raw.map({ r.seconds < $0.seconds }) ?? true { best.raw = r }
        }
        return (best.ms!, best.raw!)
    }

    let (msByID, rawByID) = try bestOf("fetch \(grouped(Double(keys.count))) by ID",
                                       managedStore: { try FetchBenchmark.managedStoreByID(container, keys: keys) },
                                       raw: { try FetchBenchmark.rawByID(rawDB, keys: keys) })
    // The brief's query sorts by priority descending; with the primary key ascending as the
    // tie-breaker SQLite sorts the whole top-priority group of each fetch (the same on both
    // sides). Ascending, the (done, priority) index delivers the order and the fetch stops at
    // the limit, which shows the library's own cost per fetch.
    let (msPredicate, rawPredicate) = try bestOf("predicate fetches, priority descending",
                                                 managedStore: { try FetchBenchmark.managedStorePredicate(container, workload, descending: true) },
                                                 raw: { try FetchBenchmark.rawPredicate(rawDB, workload, descending: true) })
    let (msAscending, rawAscending) = try bestOf("predicate fetches, priority ascending",
                                                 managedStore: { try FetchBenchmark.managedStorePredicate(container, workload, descending: false) },
                                                 raw: { try FetchBenchmark.rawPredicate(rawDB, workload, descending: false) })
    let peakAtEndMB = Memory.peakResidentMB()

    // 4. The table.
    func verdict(_ ok: Bool) -> String { ok ? "met" : "MISSED" }
    let insertRatio = msInsert.perSecond / rawInsert.perSecond
    let n = grouped(Double(workload.count))
    say()
    say("| Benchmark | ManagedStore | raw SQLite | ManagedStore / raw | target |")
    say("|---|---:|---:|---:|---|")
    say("| Insert \(n) Tasks, commit every \(grouped(Double(workload.batchSize))) | \(grouped(msInsert.perSecond)) objects/s (\(fixed(msInsert.seconds)) s) "
        + "| \(grouped(rawInsert.perSecond)) rows/s (\(fixed(rawInsert.seconds)) s) | \(fixed(insertRatio)) | >= 0.50: \(verdict(insertRatio >= 0.5)) |")
    say("| Fetch \(grouped(Double(keys.count))) by ID | \(grouped(msByID.perSecond)) objects/s (\(fixed(msByID.seconds, 3)) s) "
        + "| \(grouped(rawByID.perSecond)) rows/s (\(fixed(rawByID.seconds, 3)) s) | \(fixed(msByID.perSecond / rawByID.perSecond)) | |")
    for (order, ms, raw) in [("DESC", msPredicate, rawPredicate), ("ASC", msAscending, rawAscending)] {
        say("| \(workload.fetches) predicate fetches, priority \(order), limit \(workload.fetchLimit) | \(grouped(ms.perSecond)) fetches/s (\(fixed(ms.seconds, 3)) s) "
            + "| \(grouped(raw.perSecond)) fetches/s (\(fixed(raw.seconds, 3)) s) | \(fixed(ms.perSecond / raw.perSecond)) | |")
    }
    say("| Peak RSS after the ManagedStore insert | \(fixed(peakAfterInsertMB, 1)) MB | | | < 250 MB: \(verdict(peakAfterInsertMB < 250)) |")
    say()
    say("Memory (getrusage ru_maxrss, whole process): \(fixed(baselineMB, 1)) MB before the insert, "
        + "\(fixed(peakAfterInsertMB, 1)) MB peak right after the ManagedStore insert"
        + (residentAfterInsertMB.map { " (resident then: \(fixed($0, 1)) MB)" } ?? "")
        + ", \(fixed(peakAtEndMB, 1)) MB peak at the end of the run.")
    say("ManagedStore insert time: save() \(fixed(100 * msInsert.saveSeconds / msInsert.seconds, 0))%, "
        + "reset() \(fixed(100 * msInsert.resetSeconds / msInsert.seconds, 0))%, "
        + "insertNewObject + setters \(fixed(100 * (msInsert.seconds - msInsert.saveSeconds - msInsert.resetSeconds) / msInsert.seconds, 0))%.")
    if !failures.isEmpty {
        say("\nCONSISTENCY CHECKS FAILED (\(failures.joined(separator: "; "))): the numbers above compare different work.")
        exit(1)
    }
} catch {
    say("managedstore-bench failed: \(error)")
    if !keepFiles { try? FileManager.default.removeItem(at: directory) }
    exit(1)
}

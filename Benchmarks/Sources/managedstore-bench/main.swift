// managedstore-bench: ManagedStore against raw SQLite on the same schema, in one run.
//
//   swift run -c release managedstore-bench [--count N] [--batch N] [--keep] [--insert-only] [--regex-only] [--stacks-only] [--walk-only] [--inheritance-only]
//
// The ManagedStore insert runs first, so the peak memory read right after it is the
// library's (on top of the process's start-up), not raw SQLite's.
import Foundation
import ManagedStore

var workload = Workload()
var keepFiles = false
/// Only the two inserts and their check: the quick loop for profiling the insert path.
var insertOnly = false
/// Only the MATCHES engine against NSRegularExpression (no store).
var regexOnly = false
/// Only the import through three context stacks, with a reader fetching meanwhile
/// (StacksBenchmark.swift); 100,000 objects unless `--count` says otherwise.
var stacksOnly = false
/// Only walking a long result: fetch batch size and the asynchronous fetch (WalkBenchmark.swift).
var walkOnly = false
/// Only a parent entity's fetches against one entity's (InheritanceBenchmark.swift).
var inheritanceOnly = false
/// The library's lines of `make bench-check`: the insert (history on, the default) in alternating
/// rounds and the 3-clause fetch, each against raw SQLite, as `check NAME RATIO (...)` lines.
var checkOnly = false
/// The library's store records no persistent history (`--no-history`; for what history costs).
var recordsHistory = true
var countGiven = false
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    func number() -> Int {
        guard let text = arguments.popFirst(), let n = Int(text.filter { $0 != "_" && $0 != "," }), n > 0 else {
            say("\(argument) needs a positive number"); exit(2)
        }
        return n
    }
    switch argument {
    case "--count": workload.count = number(); countGiven = true
    case "--batch": workload.batchSize = number()
    case "--keep": keepFiles = true
    case "--insert-only": insertOnly = true
    case "--regex-only": regexOnly = true
    case "--stacks-only": stacksOnly = true
    case "--walk-only": walkOnly = true
    case "--inheritance-only": inheritanceOnly = true
    case "--check": checkOnly = true
    case "--no-history": recordsHistory = false
    default:
        say("usage: managedstore-bench [--count N (default 1000000; 100000 with --stacks-only)] [--batch N (default 10000)] [--keep (keep the store files)] [--insert-only] [--regex-only] [--stacks-only] [--walk-only] [--inheritance-only] [--check] [--no-history]")
        exit(argument == "--help" || argument == "-h" ? 0 : 2)
    }
}

if regexOnly {
    say("MATCHES engine: LinearRegex against NSRegularExpression, whole-string matches per second (best of 3)")
    RegexBenchmark.report(RegexBenchmark.run(), hostile: RegexBenchmark.hostile())
    exit(0)
}

let directory = FileManager.default.temporaryDirectory.appendingPathComponent("managedstore-bench-\(UUID().uuidString)")
let storeURL = directory.appendingPathComponent("managedstore.sqlite")
let rawPath = directory.appendingPathComponent("raw.sqlite").path

if inheritanceOnly {
    if !countGiven { workload.count = 100_000 }
    say("A parent entity's fetches: \(grouped(workload.count)) objects as one entity, and split across two sub-entities; SQLite \(RawDatabase.version), WAL")
    do {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try InheritanceBenchmark.run(directory: directory, workload)
    } catch {
        say("inheritance benchmark failed: \(error)")
        exit(1)
    }
    if !keepFiles { try? FileManager.default.removeItem(at: directory) }
    exit(0)
}

if walkOnly {
    if !countGiven { workload.count = 200_000 }
    say("Walking a long result: \(grouped(workload.count)) Tasks; SQLite \(RawDatabase.version), WAL, durability .normal")
    do {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try WalkBenchmark.run(directory: directory, workload)
    } catch {
        say("managedstore-bench failed: \(error)")
        exit(1)
    }
    if !keepFiles { try? FileManager.default.removeItem(at: directory) }
    exit(0)
}

if stacksOnly {
    if !countGiven { workload.count = 100_000 }
    say("Context stacks: \(grouped(workload.count)) Task objects imported, save every \(grouped(workload.batchSize)), a reader fetching 20 Tasks every 10 ms")
    say("Stores: SQLite \(RawDatabase.version) files, WAL, durability .normal; files in \(directory.path)")
    say()
    do {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var results: [StacksBenchmark.Result] = []
        for stack in StacksBenchmark.Stack.allCases {
            step("\(stack.rawValue)...")
            let result = try StacksBenchmark.run(stack, directory: directory, workload)
            step("  \(fixed(result.importSeconds)) s; longest reader stall \(grouped(result.longestStall * 1000)) ms")
            results.append(result)
        }
        say()
        StacksBenchmark.report(results, workload)
    } catch {
        say("managedstore-bench failed: \(error)")
        exit(1)
    }
    if !keepFiles { try? FileManager.default.removeItem(at: directory) }
    exit(0)
}

/// Checks that both sides did the same work; a mismatch makes the run fail.
var failures: [String] = []
@MainActor func check<T: Equatable>(_ what: String, _ managedStore: T, _ raw: T) {
    if managedStore == raw { step("check \(what): same on both sides") } else {
        failures.append(what)
        step("CHECK FAILED \(what):\n      ManagedStore: \(managedStore)\n      raw SQLite:   \(raw)")
    }
}

/// Runs both sides `workload.readRounds` times, alternating which goes first, checks that they
/// read the same rows, and keeps each side's fastest round.
@MainActor func bestOf(_ what: String, managedStore: () throws -> FetchBenchmark.Result,
                       raw: () throws -> FetchBenchmark.Result) throws -> Report.Pair {
    step("\(what)...")
    var best: (ms: FetchBenchmark.Result?, raw: FetchBenchmark.Result?)
    for round in 0..<workload.readRounds {
        let ms: FetchBenchmark.Result, r: FetchBenchmark.Result
        if round % 2 == 0 {
            ms = try managedStore()
            r = try raw()
        } else {
            r = try raw()
            ms = try managedStore()
        }
        if round == 0 || ms.digest != r.digest { check(round == 0 ? what : "\(what), round \(round + 1)", ms.digest, r.digest) }
        if best.ms.map({ ms.seconds < $0.seconds }) ?? true { best.ms = ms }
        if best.raw.map({ r.seconds < $0.seconds }) ?? true { best.raw = r }
    }
    return (best.ms!, best.raw!)
}

if checkOnly {
    if !countGiven { workload.count = 300_000 }
    say("make bench-check, the library: \(grouped(workload.count)) Tasks inserted (save + reset every \(grouped(workload.batchSize)), history on) and 3-clause fetches, against raw SQLite \(RawDatabase.version); WAL, synchronous=NORMAL on both sides")
    do {
        // Two rounds, each on new files, the side that goes first alternating: an insert is
        // too long to repeat often, and the machine's load moves within a minute.
        var inserts: [(ms: InsertBenchmark.Result, raw: InsertBenchmark.Result)] = []
        var withoutHistoryResults: [InsertBenchmark.Result] = []
        var lastFiles: (store: URL, raw: String)?
        for round in 0..<2 {
            let roundDirectory = directory.appendingPathComponent("round-\(round)")
            try FileManager.default.createDirectory(at: roundDirectory, withIntermediateDirectories: true)
            let store = roundDirectory.appendingPathComponent("managedstore.sqlite")
            let raw = roundDirectory.appendingPathComponent("raw.sqlite").path
            func ours() throws -> InsertBenchmark.Result { try InsertBenchmark.managedStore(at: store, workload) }
            func theirs() throws -> InsertBenchmark.Result {
                try InsertBenchmark.createSchema(at: URL(fileURLWithPath: raw))
                return try InsertBenchmark.rawSQLite(at: raw, workload)
            }
            // Even rounds: history on, raw, history off; odd rounds the other way round.
            func withoutHistory() throws -> InsertBenchmark.Result {
                try InsertBenchmark.managedStore(at: roundDirectory.appendingPathComponent("no-history.sqlite"), workload, recordsHistory: false)
            }
            let pair: (ms: InsertBenchmark.Result, raw: InsertBenchmark.Result)
            let off: InsertBenchmark.Result
            if round % 2 == 0 {
                let ms = try ours()
                pair = (ms, try theirs())
                off = try withoutHistory()
            } else {
                off = try withoutHistory()
                let r = try theirs()
                pair = (try ours(), r)
            }
            check("stored rows, round \(round + 1)", try InsertBenchmark.fingerprint(of: store.path).rows, try InsertBenchmark.fingerprint(of: raw).rows)
            withoutHistoryResults.append(off)
            step("insert round \(round + 1): ManagedStore \(grouped(pair.ms.perSecond))/s (history off \(grouped(off.perSecond))/s), raw \(grouped(pair.raw.perSecond))/s")
            inserts.append(pair)
            lastFiles = (store, raw)
        }
        let container = try PersistentContainer(model: .taskTracker(), store: .sqlite(lastFiles!.store, durability: .normal))
        let rawDB = try RawDatabase(path: lastFiles!.raw, readOnly: true)
        let fetch = try bestOf("3-clause fetches (objects, limit \(PredicateBenchmark.limit))",
                               managedStore: { try PredicateBenchmark.managedStoreObjects(container) },
                               raw: { try PredicateBenchmark.rawObjects(rawDB) })
        let ratios = inserts.map { $0.ms.perSecond / $0.raw.perSecond }
        // Of two rounds, the median is their mean.
        let median = ratios.reduce(0, +) / Double(ratios.count)
        say("check insert \(fixed(median, 3)) (ManagedStore \(inserts.map { grouped($0.ms.perSecond) }.joined(separator: ", "))/s, raw SQLite \(inserts.map { grouped($0.raw.perSecond) }.joined(separator: ", "))/s)")
        let historyShare = zip(inserts, withoutHistoryResults).map { $0.0.ms.perSecond / $0.1.perSecond }.reduce(0, +) / Double(inserts.count)
        say("check history \(fixed(historyShare, 3)) (insert with history / without: \(zip(inserts, withoutHistoryResults).map { "\(grouped($0.0.ms.perSecond)) / \(grouped($0.1.perSecond))" }.joined(separator: ", ")) objects/s)")
        say("check fetch3 \(fixed(fetch.managedStore.perSecond / fetch.raw.perSecond, 3)) (ManagedStore \(grouped(fetch.managedStore.perSecond)) fetches/s, raw SQLite \(grouped(fetch.raw.perSecond)) fetches/s)")
    } catch {
        failures.append("\(error)")
        say("managedstore-bench failed: \(error)")
    }
    if !keepFiles { try? FileManager.default.removeItem(at: directory) }
    exit(failures.isEmpty ? 0 : 1)
}

say("ManagedStore benchmark: \(grouped(workload.count)) Task objects, save + reset every \(grouped(workload.batchSize))")
say("Stores: SQLite \(RawDatabase.version) files, WAL, durability .normal = PRAGMA synchronous=NORMAL on both sides")
say("Files:  \(directory.path)\(keepFiles ? " (kept)" : " (removed at the end)")")
say()

do {
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let memoryAtStart = Memory.Sample()

    // 1. The ManagedStore insert, first in the process.
    step("ManagedStore insert...")
    let msInsert = try InsertBenchmark.managedStore(at: storeURL, workload, recordsHistory: recordsHistory)
    let memoryAfterInsert = Memory.Sample()
    step("  \(fixed(msInsert.seconds)) s; peak memory \(fixed(memoryAfterInsert.peak, 1)) MB")

    // 2. The raw SQLite insert, into a second file with the schema ManagedStore made.
    step("raw SQLite insert...")
    try InsertBenchmark.createSchema(at: URL(fileURLWithPath: rawPath))
    let rawInsert = try InsertBenchmark.rawSQLite(at: rawPath, workload)
    step("  \(fixed(rawInsert.seconds)) s")
    let msFingerprint = try InsertBenchmark.fingerprint(of: storeURL.path)
    let rawFingerprint = try InsertBenchmark.fingerprint(of: rawPath)
    check("Task schema (table + indexes)", msFingerprint.schema, rawFingerprint.schema)
    check("stored rows (count, key range, sums)", msFingerprint.rows, rawFingerprint.rows)
    if insertOnly {
        let ratio = msInsert.perSecond / rawInsert.perSecond
        say("\nInsert: ManagedStore \(grouped(msInsert.perSecond)) objects/s, raw SQLite \(grouped(rawInsert.perSecond)) rows/s, ratio \(fixed(ratio))")
        if !keepFiles { try? FileManager.default.removeItem(at: directory) }
        exit(failures.isEmpty ? 0 : 1)
    }

    // 3. Reads: each side reads its own file; the two files hold the same rows.
    let container = try PersistentContainer(model: .taskTracker(), store: .sqlite(storeURL, durability: .normal))
    let rawDB = try RawDatabase(path: rawPath, readOnly: true)
    let keys = workload.lookupKeys()
    let byID = try bestOf("fetch \(grouped(keys.count)) by ID",
                          managedStore: { try FetchBenchmark.managedStoreByID(container, keys: keys) },
                          raw: { try FetchBenchmark.rawByID(rawDB, keys: keys) })
    // The brief's query sorts by priority descending. With the primary key ascending as the
    // tie-breaker, SQLite sorts the whole top-priority group on every fetch (both sides alike).
    // Ascending, the (done, priority) index yields the order and the fetch stops at the limit,
    // which shows the library's own cost per fetch.
    let descending = try bestOf("predicate fetches, priority descending",
                                managedStore: { try FetchBenchmark.managedStorePredicate(container, workload, descending: true) },
                                raw: { try FetchBenchmark.rawPredicate(rawDB, workload, descending: true) })
    let ascending = try bestOf("predicate fetches, priority ascending",
                               managedStore: { try FetchBenchmark.managedStorePredicate(container, workload, descending: false) },
                               raw: { try FetchBenchmark.rawPredicate(rawDB, workload, descending: false) })

    // 4. The predicate language: parse and compile alone, then 3 clauses over the million rows.
    step("predicate parse + compile...")
    let compile = try PredicateBenchmark.parseAndCompile(container)
    let threeClauses = try bestOf("3-clause fetches (objects, limit \(PredicateBenchmark.limit))",
                                  managedStore: { try PredicateBenchmark.managedStoreObjects(container) },
                                  raw: { try PredicateBenchmark.rawObjects(rawDB) })
    let threeClauseIDs = try bestOf("3-clause fetches (object IDs, limit \(PredicateBenchmark.limit))",
                                    managedStore: { try PredicateBenchmark.managedStoreIDs(container) },
                                    raw: { try PredicateBenchmark.rawIDs(rawDB) })
    let threeClauseCounts = try bestOf("3-clause counts",
                                       managedStore: { try PredicateBenchmark.managedStoreCount(container) },
                                       raw: { try PredicateBenchmark.rawCount(rawDB) })

    // 5. The table.
    say()
    Report(workload: workload, insert: (msInsert, rawInsert), byID: byID,
           predicateDescending: descending, predicateAscending: ascending,
           memory: (memoryAtStart, memoryAfterInsert, Memory.Sample())).print()
    say()
    say("| Predicate language | ManagedStore | raw SQLite | ManagedStore / raw | target |")
    say("|---|---:|---:|---:|---|")
    say("| Parse a 5-clause predicate | \(fixed(compile.parse, 1)) µs | | | |")
    say("| Parse + check + compile it to SQL | \(fixed(compile.compile, 1)) µs | | | < 20 µs: \(compile.compile < 20 ? "met" : "MISSED") |")
    for (name, pair) in [("3-clause fetch, \(PredicateBenchmark.limit) objects each", threeClauses),
                         ("3-clause fetch, \(PredicateBenchmark.limit) object IDs each", threeClauseIDs),
                         ("3-clause count", threeClauseCounts)] {
        let ratio = pair.managedStore.perSecond / pair.raw.perSecond
        say("| \(name) | \(grouped(pair.managedStore.perSecond)) fetches/s | \(grouped(pair.raw.perSecond)) fetches/s | \(fixed(ratio)) | >= 0.8: \(ratio >= 0.8 ? "met" : "MISSED") |")
    }
} catch {
    failures.append("\(error)")
    say("managedstore-bench failed: \(error)")
}

if !keepFiles { try? FileManager.default.removeItem(at: directory) }
if !failures.isEmpty {
    say("\nFAILED (\(failures.joined(separator: "; "))): the numbers above do not compare the same work.")
    exit(1)
}

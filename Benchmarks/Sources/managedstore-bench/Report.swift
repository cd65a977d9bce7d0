import Foundation

/// Everything one run measured, and how it is printed: a Markdown table (pasted as is into
/// RESULTS.md) followed by the memory readings and the split of the insert time.
struct Report {
    typealias Pair = (managedStore: FetchBenchmark.Result, raw: FetchBenchmark.Result)

    var workload: Workload
    var insert: (managedStore: InsertBenchmark.Result, raw: InsertBenchmark.Result)
    var byID: Pair
    var predicateDescending: Pair
    var predicateAscending: Pair
    var memory: (start: Memory.Sample, afterInsert: Memory.Sample, end: Memory.Sample)

    static let insertTarget = 0.5
    static let memoryTargetMB = 250.0

    var insertRatio: Double { insert.managedStore.perSecond / insert.raw.perSecond }

    func print() {
        let ms = insert.managedStore, raw = insert.raw
        say("| Benchmark | ManagedStore | raw SQLite | ManagedStore / raw | target |")
        say("|---|---:|---:|---:|---|")
        say("| Insert \(grouped(workload.count)) Tasks, commit every \(grouped(workload.batchSize)) "
            + "| \(grouped(ms.perSecond)) objects/s (\(fixed(ms.seconds)) s) | \(grouped(raw.perSecond)) rows/s (\(fixed(raw.seconds)) s) "
            + "| \(fixed(insertRatio)) | >= \(fixed(Self.insertTarget)): \(verdict(insertRatio >= Self.insertTarget)) |")
        row("Fetch \(grouped(byID.managedStore.operations)) by ID", byID, unit: ("objects/s", "rows/s"))
        row("\(workload.fetches) predicate fetches, priority DESC, limit \(workload.fetchLimit)", predicateDescending, unit: ("fetches/s", "fetches/s"))
        row("\(workload.fetches) predicate fetches, priority ASC, limit \(workload.fetchLimit)", predicateAscending, unit: ("fetches/s", "fetches/s"))
        let peak = memory.afterInsert.peak
        say("| Peak memory after the ManagedStore insert | \(fixed(peak, 1)) MB | | "
            + "| < \(grouped(Self.memoryTargetMB)) MB: \(verdict(peak < Self.memoryTargetMB)) |")
        say()

        say("Memory (MB, whole process)      at start  after ManagedStore insert  at end")
        let readings: [(String, (Memory.Sample) -> Double?)] = [
            ("VmHWM, this program's peak", { $0.highWaterMark }),
            ("getrusage ru_maxrss", { $0.maxRSS }),
            ("VmRSS, resident now", { $0.resident }),
        ]
        for (name, value) in readings {
            say(name.padding(toLength: 32, withPad: " ", startingAt: 0) + mb(value(memory.start)).leftPadded(8)
                + mb(value(memory.afterInsert)).leftPadded(27) + mb(value(memory.end)).leftPadded(8))
        }
        if let hwm = memory.start.highWaterMark, memory.start.maxRSS > hwm + 10 {
            say("(ru_maxrss started at \(mb(memory.start.maxRSS)) MB: Linux keeps a process's peak across exec, so it includes "
                + "the launcher's (swift run's) own peak. The peak in the table is VmHWM, which counts this program only.)")
        }
        let other = ms.seconds - ms.saveSeconds - ms.resetSeconds
        say("ManagedStore insert time: save() \(percent(ms.saveSeconds, of: ms.seconds)), reset() \(percent(ms.resetSeconds, of: ms.seconds)), "
            + "insertNewObject + setters \(percent(other, of: ms.seconds)).")
    }

    private func row(_ name: String, _ pair: Pair, unit: (String, String)) {
        say("| \(name) | \(grouped(pair.managedStore.perSecond)) \(unit.0) (\(fixed(pair.managedStore.seconds, 3)) s) "
            + "| \(grouped(pair.raw.perSecond)) \(unit.1) (\(fixed(pair.raw.seconds, 3)) s) "
            + "| \(fixed(pair.managedStore.perSecond / pair.raw.perSecond)) | |")
    }

    private func verdict(_ met: Bool) -> String { met ? "met" : "MISSED" }
    private func mb(_ value: Double?) -> String { value.map { fixed($0, 1) } ?? "n/a" }
    private func percent(_ part: Double, of whole: Double) -> String { fixed(100 * part / whole, 0) + "%" }
}

// MARK: Output helpers

/// Prints a line at once, unbuffered, so progress shows while a phase runs (also through a pipe).
func say(_ text: String = "") {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

/// A progress line.
func step(_ text: String) { say("  \(text)") }

/// 1234567 -> "1,234,567".
func grouped<N: BinaryInteger>(_ value: N) -> String {
    let digits = String(value.magnitude)
    var result = ""
    for (i, c) in digits.reversed().enumerated() {
        if i > 0 && i % 3 == 0 { result.append(",") }
        result.append(c)
    }
    return (value < 0 ? "-" : "") + String(result.reversed())
}

func grouped(_ value: Double) -> String { grouped(Int(value.rounded())) }

func fixed(_ value: Double, _ places: Int = 2) -> String { String(format: "%.\(places)f", value) }

extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: " ", count: max(0, width - count)) + self }
}

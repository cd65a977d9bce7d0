import CSQLiteBench
import Foundation

/// The process's memory, as the kernel counts it.
///
/// Two peaks, because they differ under `swift run` (what `make bench` uses): Linux carries a
/// process's `ru_maxrss` across exec, so there it starts at SwiftPM's own peak, while VmHWM
/// (the high-water mark of this program's address space) starts afresh at exec.
enum Memory {
    /// The three numbers at one moment.
    struct Sample {
        var maxRSS = Memory.maxRSSMB()
        var highWaterMark = Memory.highWaterMarkMB()
        var resident = Memory.residentMB()
        /// The peak to judge: VmHWM where there is one, else ru_maxrss.
        var peak: Double { highWaterMark ?? maxRSS }
    }

    /// The largest resident set the process has had so far (getrusage ru_maxrss), in MB.
    /// It never goes down, and includes whatever ran in this process before exec.
    static func maxRSSMB() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_maxrss) / 1024  // Linux reports kilobytes
    }

    /// The largest resident set of this program so far (VmHWM in /proc/self/status), in MB.
    static func highWaterMarkMB() -> Double? { status("VmHWM") }

    /// The resident set now (VmRSS in /proc/self/status), in MB.
    static func residentMB() -> Double? { status("VmRSS") }

    /// A "Name:   1234 kB" line of /proc/self/status, in MB; nil where there is no /proc.
    private static func status(_ name: String) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(name + ":") {
            let kilobytes = line.dropFirst(name.count + 1).split(whereSeparator: \.isWhitespace).first.flatMap { Double($0) }
            return kilobytes.map { $0 / 1024 }
        }
        return nil
    }
}

extension Memory {
    /// Bytes the program holds from malloc now (glibc's mallinfo2: small blocks in use plus
    /// mmapped ones), in MB. Unlike the resident set it goes down when memory is freed, so two
    /// measurements in one process do not see each other.
    static func heapInUseMB() -> Double {
        let info = mallinfo2()
        return Double(info.uordblks + info.hblkhd) / 1_048_576
    }
}

import Foundation

/// The process's memory, as the kernel counts it.
enum Memory {
    /// The largest resident set the process has had so far (getrusage ru_maxrss), in MB.
    /// It never goes down: it covers everything the process did up to the call.
    static func peakResidentMB() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_maxrss) / 1024  // Linux reports kilobytes
    }

    /// The resident set now (/proc/self/statm), in MB; nil where there is no /proc.
    static func currentResidentMB() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Double(fields[1]) else { return nil }
        return pages * Double(sysconf(Int32(_SC_PAGESIZE))) / 1_048_576
    }
}

import Foundation

/// What the kernel says about this process: resident memory and when it started.
enum ProcessStatistics {
    /// Resident set size in bytes (`/proc/self/statm`'s second field, in pages); 0 off Linux.
    static var residentMemoryBytes: Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// When the process started, in seconds since 1970: boot time (`/proc/stat`'s `btime`) plus
    /// the process's start in clock ticks after boot (`/proc/self/stat`'s 22nd field). Read once.
    static let startTime: Double = {
        guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
              let system = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
              let boot = system.split(separator: "\n").first(where: { $0.hasPrefix("btime ") }).flatMap({ Double($0.dropFirst(6)) }),
              // The command name (2nd field) is in parentheses and may hold spaces: count after it.
              let close = stat.lastIndex(of: ")") else { return Date().timeIntervalSince1970 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // Fields after the name start at the 3rd (state); the start time is the 22nd.
        guard fields.count > 19, let ticks = Double(fields[19]) else { return Date().timeIntervalSince1970 }
        return boot + ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }()
}

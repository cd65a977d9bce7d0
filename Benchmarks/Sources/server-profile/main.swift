// server-profile: the managedstore server on the demo model for a fixed time, without the
// signal-handling thread of `managedstore serve` (valgrind cannot run libdispatch's signal
// thread), configured as `serve` is by default: the request log on, to stderr. For counting the
// instructions a request costs:
//
//   valgrind --tool=callgrind .build/release/server-profile STORE PORT SECONDS [--no-history] [--log-requests off]
//
// Benchmarks/http/instructions.sh drives it with wrk and prints instructions per request.
import Foundation
import ManagedStore
import ManagedStoreHTTP
import ManagedStoreServer

var arguments = Array(CommandLine.arguments.dropFirst())
let noHistory = arguments.contains("--no-history")
arguments.removeAll { $0 == "--no-history" }
var logRequests = true
if let flag = arguments.firstIndex(of: "--log-requests"), flag + 1 < arguments.count {
    logRequests = arguments[flag + 1] != "off"
    arguments.removeSubrange(flag...(flag + 1))
}
guard arguments.count == 3, let port = UInt16(arguments[1]), let seconds = UInt32(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: server-profile STORE PORT SECONDS [--no-history] [--log-requests off]\n".utf8))
    exit(2)
}
do {
    var store = StoreDescription.path(arguments[0], readerCount: 4, durability: .full)
    store.recordsHistory = !noHistory  // --no-history: what history costs
    let coordinator = try PersistentStoreCoordinator(model: .taskTracker(), store: store)
    var http = HTTPServer.Configuration()
    http.port = port
    var service = ServiceConfiguration()
    if logRequests { service.requestLog = RequestLog(format: .text) }
    let server = ManagedStoreServer(coordinator: coordinator, service: service, http: http)
    try server.start()
    print("server-profile on 127.0.0.1:\(server.port) for \(seconds) s")
    FileHandle.standardOutput.synchronizeFile()
    sleep(seconds)
    server.stop()
    LogSink.standardError.flush()
} catch {
    FileHandle.standardError.write(Data("server-profile: \(error)\n".utf8))
    exit(1)
}

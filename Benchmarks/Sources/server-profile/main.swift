// server-profile: the managedstore server on the demo model for a fixed time, without the
// signal-handling thread of `managedstore serve` (valgrind cannot run libdispatch's signal
// thread). For counting the instructions a request costs:
//
//   valgrind --tool=callgrind .build/release/server-profile STORE PORT SECONDS
//
// Benchmarks/http/instructions.sh drives it with wrk and prints instructions per request.
import Foundation
import ManagedStore
import ManagedStoreServer

let arguments = CommandLine.arguments
guard arguments.count == 4 || (arguments.count == 5 && arguments[4] == "--no-history"),
      let port = UInt16(arguments[2]), let seconds = UInt32(arguments[3]) else {
    FileHandle.standardError.write(Data("usage: server-profile STORE PORT SECONDS [--no-history]\n".utf8))
    exit(2)
}
do {
    var store = StoreDescription.path(arguments[1], readerCount: 4, durability: .full)
    store.recordsHistory = arguments.count < 5  // --no-history: what history costs
    let coordinator = try PersistentStoreCoordinator(model: .taskTracker(), store: store)
    var http = HTTPServer.Configuration()
    http.port = port
    let server = ManagedStoreServer(coordinator: coordinator, service: ServiceConfiguration(), http: http)
    try server.start()
    print("server-profile on 127.0.0.1:\(server.port) for \(seconds) s")
    FileHandle.standardOutput.synchronizeFile()
    sleep(seconds)
    server.stop()
} catch {
    FileHandle.standardError.write(Data("server-profile: \(error)\n".utf8))
    exit(1)
}

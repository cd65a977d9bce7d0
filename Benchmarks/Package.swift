// swift-tools-version:6.0
// The ManagedStore benchmarks: a package of their own, so CI never builds them.
// `make bench` (or `swift run -c release managedstore-bench` here) runs them.
import PackageDescription

let package = Package(
    name: "ManagedStoreBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        // Named, so the product resolves whatever the checkout directory is called.
        .package(name: "ManagedStore", path: ".."),
    ],
    targets: [
        // The system's SQLite for the raw baseline. (The library's own CSQLite target is not a
        // product, and two targets may not share a name, hence a second module map.)
        .systemLibrary(
            name: "CSQLiteBench",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .executableTarget(
            name: "managedstore-bench",
            dependencies: [
                .product(name: "ManagedStore", package: "ManagedStore"),
                "CSQLiteBench",
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The server for a fixed time, for callgrind (Benchmarks/http/instructions.sh).
        .executableTarget(
            name: "server-profile",
            dependencies: [
                .product(name: "ManagedStore", package: "ManagedStore"),
                .product(name: "ManagedStoreServer", package: "ManagedStore"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)

// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "ManagedStore",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "ManagedStore", targets: ["ManagedStore", "ManagedStoreCore", "ManagedStoreSQLite", "ManagedStorePostgreSQL"]),
        .library(name: "ManagedStoreServer", targets: ["ManagedStoreServer"]),
        .executable(name: "managedstore", targets: ["managedstore"]),
        .plugin(name: "GenerateTypedViews", targets: ["GenerateTypedViews"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
    ],
    targets: [
        // The system's SQLite (WAL, prepared statements) found through pkg-config.
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // The system's libmicrohttpd, the HTTP front of `managedstore serve`.
        .systemLibrary(
            name: "CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]
        ),
        // The system's libpq, the PostgreSQL store's client library.
        .systemLibrary(
            name: "CPostgreSQL",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        // SHA-256 blocks with the x86 SHA extensions, for idempotency fingerprints and token
        // digests; the server falls back to its own Swift loop on other CPUs.
        .target(name: "CSHA256"),
        // The layers, each a target, so that the compiler checks what may use what:
        // the core knows no store; each store knows the core; `ManagedStore` is all of them.
        .target(
            name: "ManagedStoreCore",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .target(
            name: "ManagedStoreSQLite",
            dependencies: ["ManagedStoreCore", "CSQLite"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .target(
            name: "ManagedStorePostgreSQL",
            dependencies: ["ManagedStoreCore", "CPostgreSQL"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .target(
            name: "ManagedStore",
            dependencies: ["ManagedStoreCore", "ManagedStoreSQLite", "ManagedStorePostgreSQL"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .target(
            name: "ManagedStoreServer",
            dependencies: ["ManagedStore", "CMicroHTTPD", "CSHA256", .product(name: "Logging", package: "swift-log")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "managedstore",
            dependencies: [
                "ManagedStore",
                "ManagedStoreServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // Typed entity views at build time, from the models in a target (`managedstore generate swift`).
        .plugin(
            name: "GenerateTypedViews",
            capability: .buildTool(),
            dependencies: ["managedstore"]
        ),
        // What both test targets share: the dictionary store (a second implementation of the
        // store protocol), the table of the five merge policies, and the PostgreSQL test database.
        .target(
            name: "ManagedStoreTestSupport",
            dependencies: ["ManagedStoreCore", "ManagedStorePostgreSQL"],
            path: "Tests/Support",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .testTarget(
            name: "ManagedStoreTests",
            dependencies: ["ManagedStore", "ManagedStoreCore", "ManagedStoreSQLite", "ManagedStorePostgreSQL", "ManagedStoreTestSupport"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The typed views `managedstore generate swift` wrote for the demo model (Generated/),
        // used as an app would use them.
        .testTarget(
            name: "TypedModelTests",
            dependencies: ["ManagedStore"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // A model file in the target, its typed views made by the plugin at build time.
        .testTarget(
            name: "PluginTypedViewTests",
            dependencies: ["ManagedStore"],
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: ["GenerateTypedViews"]
        ),
        .testTarget(
            name: "ManagedStoreServerTests",
            dependencies: ["ManagedStoreServer", "ManagedStore", "ManagedStoreCore", "ManagedStoreSQLite", "ManagedStorePostgreSQL", "ManagedStoreTestSupport",
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)

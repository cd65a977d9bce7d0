// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "ManagedStore",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "ManagedStore", targets: ["ManagedStore", "ManagedStoreCore", "ManagedStoreSQLite", "ManagedStorePostgreSQL"]),
        .library(name: "ManagedStoreServer", targets: ["ManagedStoreServer", "ManagedStoreHTTP", "ManagedStoreOpenAPI"]),
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
        // OpenSSL's libcrypto (libpq links it already): SHA-256 for token digests and
        // idempotency fingerprints, and a constant-time comparison.
        .systemLibrary(
            name: "CCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
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
        // The HTTP front on libmicrohttpd: connections, requests, suspended answers, body
        // streams. It knows nothing of objects: the service reaches it through
        // `HTTPRequestHandler` and `HTTPBodyStream`.
        .target(
            name: "ManagedStoreHTTP",
            dependencies: ["CMicroHTTPD"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The OpenAPI document: the generic one (openapi/openapi.yaml, compiled in) and what a
        // model adds to it. The model alone: no store, no HTTP.
        .target(
            name: "ManagedStoreOpenAPI",
            dependencies: ["ManagedStoreCore"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .target(
            name: "ManagedStoreServer",
            dependencies: ["ManagedStoreCore", "ManagedStoreHTTP", "ManagedStoreOpenAPI", "CCrypto", .product(name: "Logging", package: "swift-log")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The typed entity views' Swift, from a model (the core alone): for `managedstore
        // generate swift` and for the build plugin's tool.
        .target(
            name: "ManagedStoreCodegen",
            dependencies: ["ManagedStoreCore"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The build plugin's tool: a package that uses the plugin builds this and the core, not
        // the server (no libmicrohttpd to install for it).
        .executableTarget(
            name: "managedstore-typed-views",
            dependencies: ["ManagedStoreCore", "ManagedStoreCodegen"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "managedstore",
            dependencies: [
                "ManagedStore",
                "ManagedStoreHTTP",
                "ManagedStoreOpenAPI",
                "ManagedStoreServer",
                "ManagedStoreCodegen",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // Typed entity views at build time, from the models in a target (as `managedstore generate swift`).
        .plugin(
            name: "GenerateTypedViews",
            capability: .buildTool(),
            dependencies: ["managedstore-typed-views"]
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
        // Model files in the target, their typed views made by the plugin at build time: a JSON
        // model, and an Xcode model (one version, as SwiftPM lists it: one file) that the tests
        // also load from the bundle.
        .testTarget(
            name: "PluginTypedViewTests",
            dependencies: ["ManagedStore"],
            resources: [.copy("Garden.xcdatamodel")],
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: ["GenerateTypedViews"]
        ),
        .testTarget(
            name: "ManagedStoreServerTests",
            dependencies: ["ManagedStoreServer", "ManagedStoreHTTP", "ManagedStoreOpenAPI", "ManagedStore", "ManagedStoreCore", "ManagedStoreSQLite", "ManagedStorePostgreSQL", "ManagedStoreTestSupport",
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)

// `MANAGEDSTORE_LIBRARY_ONLY=1`: the library and its suites alone, for ThreadSanitizer's build
// (`make test-tsan` runs only the library's suites): the server, the command line, the plugin
// and their tests are left out rather than compiled for nothing (a third of the build).
if Context.environment["MANAGEDSTORE_LIBRARY_ONLY"] == "1" {
    let library: Set<String> = ["CSQLite", "CPostgreSQL", "ManagedStoreCore", "ManagedStoreSQLite", "ManagedStorePostgreSQL",
                                "ManagedStore", "ManagedStoreTestSupport", "ManagedStoreTests"]
    package.targets.removeAll { !library.contains($0.name) }
    package.products.removeAll { $0.name != "ManagedStore" }
}

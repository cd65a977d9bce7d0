// swift-tools-version:6.0
// A Swift client of ManagedStore generated from the documents the server serves, with Apple's
// swift-openapi-generator: `scripts/client/swift_client_round.sh` (run by `make test`) starts the
// servers, writes each served /v1/openapi.yaml into its target below, builds, and runs the round.
// A package of its own, so that the library and server keep their lean dependencies.
import PackageDescription

let generated: [Target.Dependency] = [
    .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
    .product(name: "OpenAPIURLSession", package: "swift-openapi-urlsession"),
]

let package = Package(
    name: "ManagedStoreSwiftClient",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(url: "https://github.com/apple/swift-openapi-generator", from: "1.14.3"),
        .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.13.4"),
        .package(url: "https://github.com/apple/swift-openapi-urlsession", from: "1.4.0"),
    ],
    targets: [
        // The demo model's client (Task, Project, Tag).
        .target(name: "TrackerClient", dependencies: generated,
                plugins: [.plugin(name: "OpenAPIGenerator", package: "swift-openapi-generator")]),
        // A model with every attribute type and a to-many relationship (scripts/client/catalog.json).
        .target(name: "CatalogClient", dependencies: generated,
                plugins: [.plugin(name: "OpenAPIGenerator", package: "swift-openapi-generator")]),
        .executableTarget(name: "client-round", dependencies: ["TrackerClient", "CatalogClient"] + generated),
    ]
)

// swift-tools-version:6.0
// A package as a Core Data user makes one: ManagedStore checked out beside it, the app's
// `.xcdatamodeld` in its target, and the GenerateTypedViews plugin making the typed classes.
// `make test` builds and runs it (scripts/example-package.sh); the README shows the lines
// between the markers.
import PackageDescription

let package = Package(
    name: "ReadingList",
    platforms: [.macOS(.v15)],
    // README: begin package
    dependencies: [
        // ManagedStore checked out beside this package. SwiftPM names a path dependency after
        // its folder: here "ManagedStore", the name `package:` gives below.
        .package(path: "../ManagedStore"),
        // Or from its Git repository, named after the URL's last part, "ManagedStore" too:
        // .package(url: "https://github.com/YOUR-ORG/ManagedStore.git", branch: "main"),
    ],
    targets: [
        .executableTarget(
            name: "ReadingList",
            dependencies: [.product(name: "ManagedStore", package: "ManagedStore")],
            // The model travels with the program (Bundle.module), as Xcode copies it into an app.
            resources: [.copy("Reading.xcdatamodeld")],
            plugins: [.plugin(name: "GenerateTypedViews", package: "ManagedStore")]
        ),
        // README: end package
        // A real app's model (Kiwix's, from ../shared/coredata-models), copied in by
        // scripts/example-package.sh when it is there; built only then.
        .executableTarget(
            name: "KiwixViews",
            dependencies: [.product(name: "ManagedStore", package: "ManagedStore")],
            exclude: ["README.md"],
            plugins: [.plugin(name: "GenerateTypedViews", package: "ManagedStore")]
        ),
    ],
    swiftLanguageModes: [.v6]
)

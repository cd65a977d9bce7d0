import Foundation

extension ManagedObjectModel {
    /// The model in the file or bundle at `url` [NSManagedObjectModel(contentsOf:)]: the JSON
    /// model format (`.json`), a model Xcode's editor wrote (`.xcdatamodel`), or a versioned
    /// model (`.xcdatamodeld`), of which the version its `.xccurrentversion` names (or its only
    /// version). An Xcode model takes the bundle's (or folder's) name, and as its version the
    /// position of the current version among the bundle's in Xcode's order ("Model",
    /// "Model 2", ...), or for a folder on its own its model version identifier when that is a
    /// number (else 1): a store made from an earlier version is migrated from the model it records.
    ///
    /// An Xcode model's transient attributes are kept as transient, its Transformables as the
    /// bytes their transformer writes (binary, with the transformer's name), and its stored
    /// fetch requests as templates.
    public convenience init(contentsOf url: URL) throws(ModelError) {
        switch url.pathExtension.lowercased() {
        case "xcdatamodeld":
            let (version, number) = try Self.currentVersion(of: url)
            let (contents, _) = try Self.xcodeContents(at: version)
            try self.init(name: url.deletingPathExtension().lastPathComponent, version: number, entities: contents.entities,
                          fetchRequestTemplates: contents.fetchRequestTemplates)
        case "xcdatamodel":
            let (contents, identifier) = try Self.xcodeContents(at: url)
            // A folder on its own: version 1, unless its "Model Version Identifier" is a number
            // (what `xcodeModelContents` writes there).
            try self.init(name: url.deletingPathExtension().lastPathComponent, version: identifier.flatMap { Int($0) } ?? 1,
                          entities: contents.entities, fetchRequestTemplates: contents.fetchRequestTemplates)
        default:
            let data: Data
            do { data = try Data(contentsOf: url) } catch {
                throw ModelError([ModelProblem(message: "cannot read \(url.path): \(error.localizedDescription)")])
            }
            try self.init(jsonData: [UInt8](data))
        }
    }

    /// Every Transformable is now read as its transformer's bytes: the names are not needed.
    @available(*, deprecated, message: "every Transformable is read as the bytes its transformer writes; drop binaryTransformers:")
    public convenience init(contentsOf url: URL, binaryTransformers: Set<String>) throws(ModelError) {
        try self.init(contentsOf: url)
    }

    /// What the `.xcdatamodel` folder at `url` holds (its `contents` file), and its model
    /// version identifier.
    private static func xcodeContents(at url: URL) throws(ModelError) -> (XcodeModelReader.Contents, String?) {
        let contents = url.appendingPathComponent("contents")
        let data: Data
        do { data = try Data(contentsOf: contents) } catch {
            throw ModelError([ModelProblem(message: "cannot read \(contents.path): \(error.localizedDescription)")])
        }
        let root: XMLTreeElement
        do { root = try XMLTreeParser.parse(data) } catch {
            throw ModelError([ModelProblem(message: "\(contents.path) is not a model Xcode wrote: \(error)")])
        }
        let read = XcodeModelReader.contents(of: root)
        guard read.problems.isEmpty else { throw ModelError(read.problems) }
        return (read, root[attribute: "userDefinedModelVersionIdentifier"])
    }

    /// The version folder of the `.xcdatamodeld` bundle at `url` that is current, and its number.
    private static func currentVersion(of url: URL) throws(ModelError) -> (URL, Int) {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: url.path)
                .filter { $0.hasSuffix(".xcdatamodel") }
                .sorted { $0.deletingSuffix(".xcdatamodel").localizedStandardCompare($1.deletingSuffix(".xcdatamodel")) == .orderedAscending }
        } catch {
            throw ModelError([ModelProblem(message: "cannot read \(url.path): \(error.localizedDescription)")])
        }
        let marker = url.appendingPathComponent(".xccurrentversion")
        let current: String?
        if let data = FileManager.default.contents(atPath: marker.path) {
            do {
                current = try plistString(XMLTreeParser.parse(data), key: "_XCCurrentVersionName")
            } catch {
                throw ModelError([ModelProblem(message: "\(marker.path) is not the property list Xcode writes: \(error)")])
            }
        } else {
            guard names.count == 1 else {
                throw ModelError([ModelProblem(message: "\(url.path) holds \(names.count) versions and no .xccurrentversion to say which is current")])
            }
            current = names[0]
        }
        guard let name = current, let position = names.firstIndex(of: name) else {
            throw ModelError([ModelProblem(message: "\(marker.path) names \(current ?? "no version"), which the bundle does not hold")])
        }
        return (url.appendingPathComponent(name), position + 1)
    }

    /// The string under `key` in a property list's top dictionary.
    private static func plistString(_ plist: XMLTreeElement, key: String) -> String? {
        guard let dict = plist.children(named: "dict").first else { return nil }
        let items = dict.children
        for (i, item) in items.enumerated() where item.name == "key" && item.text == key && i + 1 < items.count {
            return items[i + 1].name == "string" ? items[i + 1].text : nil
        }
        return nil
    }
}

private extension String {
    func deletingSuffix(_ suffix: String) -> String { hasSuffix(suffix) ? String(dropLast(suffix.count)) : self }
}

import Foundation

extension ManagedObjectModel {
    /// The model as the `contents` file of an `.xcdatamodel` folder, in the form Xcode's
    /// editor writes, so that a team can go on editing it in Xcode; `XcodeModelReader` reads
    /// it back to the same model. Attributes and relationships keep the model's order. What
    /// Xcode's format cannot hold (a default value of a Binary attribute) is refused, never
    /// left out.
    public func xcodeModelContents() throws(ModelError) -> String {
        let binaryDefaults = authoredEntities.flatMap { entity in
            entity.attributes.filter { $0.type == .binary && !$0.defaultValue.isNull }.map {
                ModelProblem(entity: entity.name, property: $0.name, message: "a Binary attribute's default cannot be written in Xcode's model format")
            }
        }
        let sortedTemplates = fetchRequestTemplates.filter { !$0.sortDescriptors.isEmpty }.map {
            ModelProblem(entity: $0.entityName, message: "fetch request template \($0.name): Xcode's model format has no sort keys for a template")
        }
        guard binaryDefaults.isEmpty && sortedTemplates.isEmpty else { throw ModelError(binaryDefaults + sortedTemplates) }
        var lines = [
            #"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>"#,
            #"<model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" lastSavedToolsVersion="21754" "#
                + #"systemVersion="22F66" minimumToolsVersion="Automatic" sourceLanguage="Swift" "#
                + "userDefinedModelVersionIdentifier=\"\(version)\">",
        ]
        for entity in authoredEntities { lines += Self.xcodeLines(entity) }
        for template in fetchRequestTemplates {
            // Xcode's format has no sort keys for a template: refused above rather than lost.
            lines.append("    <fetchRequest" + Self.attributes([("name", template.name), ("entity", template.entityName),
                                                          ("predicateString", template.predicateFormat),
                                                          ("fetchLimit", template.fetchLimit.map(String.init))]) + "/>")
        }
        lines.append("</model>")
        return lines.joined(separator: "\n") + "\n"
    }

    private static func xcodeLines(_ entity: EntityDescription) -> [String] {
        var lines = ["    <entity" + attributes([("name", entity.name), ("representedClassName", entity.name),
                                                  ("parentEntity", entity.parent), ("isAbstract", entity.isAbstract ? "YES" : nil),
                                                  ("elementID", entity.renamingIdentifier),
                                                  ("syncable", "YES")]) + ">"]
        for attribute in entity.attributes {
            let isString = attribute.type == .string || attribute.type == .uri
            lines.append("        <attribute" + attributes([
                ("name", attribute.name), ("optional", attribute.isOptional ? "YES" : nil),
                ("transient", attribute.isTransient ? "YES" : nil), ("attributeType", attribute.valueTransformerName == nil ? xcodeTypeName(attribute.type) : "Transformable"),
                ("valueTransformerName", attribute.valueTransformerName),
                ("minValueString", isString ? attribute.minLength.map(String.init) : attribute.minValue.flatMap(xcodeText)),
                ("maxValueString", isString ? attribute.maxLength.map(String.init) : attribute.maxValue.flatMap(xcodeText)),
                ("defaultValueString", attribute.type == .date ? nil : xcodeText(attribute.defaultValue)),
                ("defaultDateTimeInterval", attribute.type == .date ? xcodeText(attribute.defaultValue) : nil),
                ("regularExpressionString", attribute.pattern), ("elementID", attribute.renamingIdentifier),
            ]) + "/>")
        }
        for relationship in entity.relationships {
            lines.append("        <relationship" + attributes([
                ("name", relationship.name), ("optional", relationship.isOptional ? "YES" : nil),
                ("toMany", relationship.isToMany ? "YES" : nil),
                ("minCount", relationship.minCount.map(String.init)),
                ("maxCount", relationship.isToMany ? relationship.maxCount.map(String.init) : "1"),
                ("deletionRule", deleteRuleName(relationship.deleteRule)), ("ordered", relationship.isOrdered ? "YES" : nil),
                ("destinationEntity", relationship.destination),
                ("inverseName", relationship.inverse), ("inverseEntity", relationship.inverse == nil ? nil : relationship.destination), ("elementID", relationship.renamingIdentifier),
            ]) + "/>")
        }
        for property in entity.fetchedProperties {
            lines.append("        <fetchedProperty" + attributes([("name", property.name), ("optional", "YES")]) + ">")
            lines.append("            <fetchRequest" + attributes([("name", "fetchedPropertyFetchRequest"), ("entity", property.destinationEntityName),
                                                                  ("predicateString", property.predicateFormat)]) + "/>")
            lines.append("        </fetchedProperty>")
        }
        for (i, index) in entity.indexes.enumerated() {
            lines.append("        <fetchIndex" + attributes([("name", "index\(i + 1)")]) + ">")
            for property in index {
                lines.append("            <fetchIndexElement" + attributes([("property", property), ("type", "Binary"), ("order", "ascending")]) + "/>")
            }
            lines.append("        </fetchIndex>")
        }
        if !entity.uniquenessConstraints.isEmpty {
            lines.append("        <uniquenessConstraints>")
            for constraint in entity.uniquenessConstraints {
                lines.append("            <uniquenessConstraint>")
                for property in constraint { lines.append("                <constraint" + attributes([("value", property)]) + "/>") }
                lines.append("            </uniquenessConstraint>")
            }
            lines.append("        </uniquenessConstraints>")
        }
        lines.append("    </entity>")
        return lines
    }

    /// ` name="value"` for each pair with a value, escaped.
    private static func attributes(_ pairs: [(String, String?)]) -> String {
        pairs.compactMap { name, value in value.map { " \(name)=\"\(escaped($0))\"" } }.joined()
    }

    private static func escaped(_ text: String) -> String {
        var result = ""
        for character in text.unicodeScalars {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "\n": result += "&#10;"
            case "\r": result += "&#13;"
            case "\t": result += "&#9;"
            default: result.unicodeScalars.append(character)
            }
        }
        return result
    }

    static func xcodeTypeName(_ type: AttributeType) -> String {
        XcodeModelReader.attributeTypes.first { $0.value == type }!.key
    }

    private static func deleteRuleName(_ rule: DeleteRule) -> String {
        XcodeModelReader.deleteRules.first { $0.value == rule }!.key
    }

    /// A value as the model file writes it (what `XcodeModelReader.value` reads); nil for none.
    private static func xcodeText(_ value: AttributeValue) -> String? {
        switch value {
        case .null, .binary: return nil
        case .integer(let v): return String(v)
        case .decimal(let v): return "\(v)"
        case .double(let v): return "\(v)"
        case .float(let v): return "\(v)"
        case .string(let v): return v
        case .boolean(let v): return v ? "YES" : "NO"
        case .date(let v): return "\(v.timeIntervalSinceReferenceDate)"
        case .uuid(let v): return v.uuidString
        case .uri(let v): return v.absoluteString
        }
    }
}

/// One attribute of an entity, with its validation rules [NSAttributeDescription].
public struct AttributeDescription: Sendable, Hashable {
    public var name: String
    public var type: AttributeType
    /// Attributes are optional unless said otherwise, as in the JSON model format.
    public var isOptional: Bool
    /// The value a new object starts with; `.null` when none is given.
    public var defaultValue: AttributeValue
    /// Smallest and largest accepted value (numbers and dates).
    public var minValue: AttributeValue?
    public var maxValue: AttributeValue?
    /// Bounds on a string's length in Unicode characters (grapheme clusters).
    public var minLength: Int?
    public var maxLength: Int?
    /// A regular expression the whole string must match.
    public var pattern: String?
    /// The name this attribute had in the model a store was made with, when it was renamed
    /// [renamingIdentifier]: lightweight migration keeps its stored values under the new name.
    public var renamingIdentifier: String?
    /// For a binary attribute: the value transformer of the Core Data model's Transformable it
    /// comes from [valueTransformerName]. The server keeps and serves the bytes the
    /// transformer writes, as Core Data's store does; only the app can turn them into objects.
    /// Kept so that the model goes back to Xcode's format as it came.
    public var valueTransformerName: String?
    /// A transient attribute [isTransient] is part of the model but never stored: an object
    /// holds its value in memory while it lives (inserted objects start at the default,
    /// fetched ones at null), and turning the object back into a fault clears it. Stores,
    /// object JSON and the API's object schemas never see it (`ManagedObjectModel.entities`
    /// leaves it out); the model's formats keep it.
    public var isTransient: Bool

    public init(name: String, type: AttributeType, isOptional: Bool = true, defaultValue: AttributeValue = .null,
                minValue: AttributeValue? = nil, maxValue: AttributeValue? = nil,
                minLength: Int? = nil, maxLength: Int? = nil, pattern: String? = nil, renamingIdentifier: String? = nil,
                valueTransformerName: String? = nil, isTransient: Bool = false) {
        self.isTransient = isTransient
        self.valueTransformerName = valueTransformerName
        self.name = name
        self.type = type
        self.isOptional = isOptional
        self.defaultValue = defaultValue
        self.minValue = minValue
        self.maxValue = maxValue
        self.minLength = minLength
        self.maxLength = maxLength
        self.pattern = pattern
        self.renamingIdentifier = renamingIdentifier
    }
}

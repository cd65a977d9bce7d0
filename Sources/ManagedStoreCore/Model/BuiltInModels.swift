/// Models that ship with ManagedStore.
extension ManagedObjectModel {
    /// The task tracker of the API contract (Project, Task, Tag), used by `make run` and the demo.
    public static let taskTrackerJSON = #"""
    {
      "name": "Tracker", "version": 1,
      "entities": [
        { "name": "Project",
          "attributes": [
            {"name": "name", "type": "string", "optional": false, "minLength": 1, "maxLength": 200},
            {"name": "archived", "type": "boolean", "default": false}
          ],
          "relationships": [
            {"name": "tasks", "destination": "Task", "toMany": true, "inverse": "project", "deleteRule": "cascade"}
          ],
          "uniquenessConstraints": [["name"]] },
        { "name": "Task",
          "attributes": [
            {"name": "title", "type": "string", "optional": false},
            {"name": "priority", "type": "integer64", "default": 0, "min": 0, "max": 5},
            {"name": "done", "type": "boolean", "default": false},
            {"name": "estimate", "type": "double"},
            {"name": "due", "type": "date"}
          ],
          "relationships": [
            {"name": "project", "destination": "Project", "inverse": "tasks", "deleteRule": "nullify"},
            {"name": "tags", "destination": "Tag", "toMany": true, "inverse": "tasks", "deleteRule": "nullify"}
          ],
          "indexes": [["done", "priority"]] },
        { "name": "Tag",
          "attributes": [{"name": "label", "type": "string", "optional": false}],
          "relationships": [{"name": "tasks", "destination": "Task", "toMany": true, "inverse": "tags", "deleteRule": "deny"}],
          "uniquenessConstraints": [["label"]] }
      ]
    }
    """#

    /// The task tracker model, built from `taskTrackerJSON`.
    public static func taskTracker() -> ManagedObjectModel {
        do { return try ManagedObjectModel(jsonData: Array(taskTrackerJSON.utf8)) } catch {
            preconditionFailure("the built-in task tracker model is invalid: \(error)")
        }
    }
}

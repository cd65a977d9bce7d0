// The README's lines that insert and fetch a task with the generated client, as written there
// (section "A Swift client"): the round runs them, so the README stays true.
import Foundation
import OpenAPIRuntime
import OpenAPIURLSession
import TrackerClient

/// Inserts a task of `Project/1` and fetches it back; the task and the page.
func readmeLines(_ base: URL) async throws -> (Components.Schemas.Task, Components.Schemas.TaskFetchResult) {
    let client = Client(serverURL: base,
                        configuration: Configuration(dateTranscoder: .iso8601WithFractionalSeconds), transport: URLSessionTransport())
    let insert = Components.Schemas.TaskInsert(title: "Launch", priority: 3, project: "Project/1")
    let task = try await client.insertTask(body: .json(.init(value1: insert))).created.body.json
    let page = try await client.fetchTask(query: .init(_where: "priority >= 2", sort: "-priority")).ok.body.json
    return (task, page)
}

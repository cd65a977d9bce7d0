import Foundation
import Testing
@testable import ManagedStoreHTTP
@testable import ManagedStoreOpenAPI
@testable import ManagedStoreServer

@Suite("REST endpoints")
struct EndpointTests {
    @Test("model, health, readiness and the OpenAPI document")
    func operations() throws {
        let harness = try ServerHarness()
        let model = try harness.request("GET", "/v1/model")
        #expect(model.status == 200)
        #expect((model.json?["entities"] as? [[String: Any]])?.map { $0["name"] as? String } == ["Project", "Task", "Tag"])
        #expect(try harness.request("GET", "/v1/healthz").json?["status"] as? String == "ok")
        #expect(try harness.request("GET", "/v1/readyz").status == 200)
        let yaml = try harness.request("GET", "/v1/openapi.yaml")
        #expect(yaml.status == 200 && yaml.text.hasPrefix("openapi: \"3.1.0\""))
        let json = try harness.request("GET", "/v1/openapi.json")
        #expect(json.status == 200 && json.json?["openapi"] as? String == "3.1.0")
        #expect((json.json?["paths"] as? [String: Any])?.keys.contains("/v1/transactions") == true)
    }

    @Test("insert, get, patch, put and delete one object, with ETags, Location and versions")
    func objectLifecycle() throws {
        let harness = try ServerHarness()
        let created = try harness.request("POST", "/v1/objects/Project", json: #"{"name": "Apollo"}"#)
        #expect(created.status == 201)
        #expect(created.header("Location") == "/v1/objects/Project/1")
        #expect(created.header("ETag") == "\"1\"")
        #expect(created.json?["_id"] as? String == "Project/1")
        #expect(created.json?["archived"] as? Bool == false, "defaults from the model")

        let task = try harness.request("POST", "/v1/objects/Task", json: #"{"title": "Launch", "priority": 2, "project": "Project/1", "due": "2026-07-16T13:32:00.123456Z"}"#)
        #expect(task.status == 201)
        #expect(task.json?["due"] as? String == "2026-07-16T13:32:00.123456Z", "dates keep microseconds")

        let fetched = try harness.request("GET", "/v1/objects/Task/1")
        #expect(fetched.status == 200 && fetched.header("ETag") == "\"1\"")
        #expect(fetched.json?["project"] as? String == "Project/1")
        #expect(fetched.json?["tags"] as? [String] == [])
        #expect(fetched.json?["estimate"] is NSNull)
        let some = try harness.request("GET", "/v1/objects/Task/1?fields=title,tags")
        #expect(some.json.map { Set($0.keys) } == ["_id", "_version", "title", "tags"])
        let embedded = try harness.request("GET", "/v1/objects/Task/1?include=project")
        #expect((embedded.json?["project"] as? [String: Any])?["name"] as? String == "Apollo")
        #expect(embedded.json?["title"] as? String == "Launch" && embedded.header("ETag") == "\"1\"")

        let patched = try harness.request("PATCH", "/v1/objects/Task/1", json: #"{"done": true}"#, headers: [("If-Match", "\"1\"")])
        #expect(patched.status == 200 && patched.header("ETag") == "\"2\"")
        #expect(patched.json?["done"] as? Bool == true && patched.json?["title"] as? String == "Launch")
        let stale = try harness.request("PATCH", "/v1/objects/Task/1", json: #"{"done": false}"#, headers: [("if-MATCH", "\"1\"")])
        #expect(stale.status == 409, "header names match in any case")

        let replaced = try harness.request("PUT", "/v1/objects/Task/1", json: #"{"title": "Relaunch", "_version": 2}"#)
        #expect(replaced.status == 200 && replaced.json?["_version"] as? Int == 3)
        #expect(replaced.json?["priority"] as? Int == 0 && replaced.json?["done"] as? Bool == false, "PUT resets what it leaves out to defaults")
        #expect(replaced.json?["project"] is NSNull)

        #expect(try harness.request("PUT", "/v1/objects/Task/99", json: #"{"title": "x"}"#).status == 404, "PUT never creates")
        #expect(try harness.request("PATCH", "/v1/objects/Task/99", json: #"{"title": "x"}"#).status == 404)

        let project = try harness.request("GET", "/v1/objects/Project/1?include=tasks")
        #expect((project.json?["tasks"] as? [Any])?.isEmpty == true)

        #expect(try harness.request("DELETE", "/v1/objects/Task/1", headers: [("If-Match", "\"3\"")]).status == 204)
        #expect(try harness.request("GET", "/v1/objects/Task/1").status == 404)
        #expect(try harness.request("DELETE", "/v1/objects/Task/1").status == 404)
    }

    @Test("fetch with where, sort, limit, offset, after, fields, include and count")
    func fetchParameters() throws {
        let harness = try ServerHarness()
        #expect(try harness.request("POST", "/v1/objects/Project", json: #"{"name": "Apollo"}"#).status == 201)
        for i in 0..<12 {
            let body = #"{"title": "Task \#(String(format: "%02d", i))", "priority": \#(i % 4), "project": \#(i % 2 == 0 ? "\"Project/1\"" : "null")}"#
            #expect(try harness.request("POST", "/v1/objects/Task", json: body).status == 201)
        }
        let filter = "priority >= 2 AND project.name BEGINSWITH[c] \"ap\"".queryEncoded
        let page = try harness.request("GET", "/v1/objects/Task?where=\(filter)&sort=-priority,title&limit=2&count=true&fields=title,priority&include=project")
        #expect(page.status == 200)
        let objects = page.json?["objects"] as? [[String: Any]] ?? []
        #expect(objects.map { $0["title"] as? String } == ["Task 02", "Task 06"])
        #expect(Set(objects.first?.keys ?? [:].keys) == ["_id", "_version", "title", "priority", "project"])
        #expect((objects.first?["project"] as? [String: Any])?["name"] as? String == "Apollo", "include embeds the object")
        #expect(page.json?["count"] as? Int == 3)
        let next = try #require(page.json?["next"] as? String)
        let second = try harness.request("GET", "/v1/objects/Task?where=\(filter)&sort=-priority,title&limit=2&after=\(next.queryEncoded)")
        #expect((second.json?["objects"] as? [[String: Any]])?.map { $0["title"] as? String } == ["Task 10"])
        #expect(second.json?["next"] is NSNull)
        let offset = try harness.request("GET", "/v1/objects/Task?sort=title&offset=10")
        #expect((offset.json?["objects"] as? [[String: Any]])?.count == 2)
        let toMany = try harness.request("GET", "/v1/objects/Project?where=\("tasks.@count > 5".queryEncoded)")
        #expect((toMany.json?["objects"] as? [[String: Any]])?.count == 1)
    }

    @Test("a transaction with temporary refs saves everything at once")
    func transaction() throws {
        let harness = try ServerHarness()
        #expect(try harness.request("POST", "/v1/objects/Task", json: #"{"title": "old"}"#).status == 201)
        #expect(try harness.request("POST", "/v1/objects/Task", json: #"{"title": "doomed"}"#).status == 201)
        let body = #"""
        {"operations": [
          {"op": "insert", "entity": "Project", "ref": "t1", "values": {"name": "Apollo"}},
          {"op": "insert", "entity": "Task", "ref": "t2", "values": {"title": "Launch", "project": "t1"}},
          {"op": "update", "object": "t2", "values": {"priority": 3}},
          {"op": "update", "object": "Task/1", "version": 1, "values": {"done": true}},
          {"op": "delete", "object": "Task/2", "version": 1}
        ]}
        """#
        let saved = try harness.request("POST", "/v1/transactions", json: body)
        #expect(saved.status == 200)
        let ids = saved.json?["ids"] as? [String: String]
        #expect(ids == ["t1": "Project/1", "t2": "Task/3"])
        let objects = saved.json?["objects"] as? [[String: Any]] ?? []
        let launch = objects.first { $0["_id"] as? String == "Task/3" }
        #expect(launch?["_version"] as? Int == 1, "inserted then updated in one transaction: saved once")
        #expect(launch?["priority"] as? Int == 3 && launch?["project"] as? String == "Project/1")
        #expect(objects.contains { $0["_id"] as? String == "Task/2" && $0["_deleted"] as? Bool == true })
        #expect(saved.json?.keys.contains("token") == true && saved.json?.keys.contains("resolved") == true)
        #expect(try harness.request("GET", "/v1/objects/Task/1").json?["done"] as? Bool == true)
    }

    @Test("a transaction answers every object an operation names, even when its values end as they were")
    func transactionAnswersNamedObjects() throws {
        let harness = try ServerHarness()
        #expect(try harness.request("POST", "/v1/objects/Tag", json: #"{"label": "a"}"#).status == 201)
        #expect(try harness.request("POST", "/v1/objects/Tag", json: #"{"label": "b"}"#).status == 201)
        #expect(try harness.request("POST", "/v1/objects/Task", json: #"{"title": "kept"}"#).status == 201)
        // The walk's shape: an insert links Tag/2, then an update of Tag/2 removes the link, so
        // Tag/2's stored state ends as it was; the update of Task/1 sets the value it has.
        let body = #"""
        {"operations": [
          {"op": "insert", "entity": "Task", "ref": "t", "values": {"title": "New", "tags": ["Tag/1", "Tag/2"]}},
          {"op": "update", "object": "Tag/2", "values": {"tasks": []}},
          {"op": "update", "object": "Task/1", "values": {"title": "kept"}}
        ]}
        """#
        let saved = try harness.request("POST", "/v1/transactions", json: body)
        #expect(saved.status == 200)
        let objects = saved.json?["objects"] as? [[String: Any]] ?? []
        let ids = objects.compactMap { $0["_id"] as? String }
        #expect(Set(ids) == ["Task/2", "Tag/1", "Tag/2", "Task/1"], "inserted, changed through the inverse, and named: \(ids)")
        #expect(ids.count == Set(ids).count, "each object once")
        let tag2 = objects.first { $0["_id"] as? String == "Tag/2" }
        #expect(tag2?["tasks"] as? [String] == [] && tag2?["_version"] as? Int == 1, "Tag/2's final state, as stored")
        #expect(objects.first { $0["_id"] as? String == "Task/2" }?["tags"] as? [String] == ["Tag/1"])
        let kept = objects.first { $0["_id"] as? String == "Task/1" }
        #expect(kept?["title"] as? String == "kept", "an update to the value it had is answered too")
        for id in ids {
            let read = try harness.request("GET", "/v1/objects/\(id)")
            let listed = objects.first { $0["_id"] as? String == id }
            #expect(read.json?["_version"] as? Int == listed?["_version"] as? Int, "\(id) is answered as a GET now answers it")
        }

        // A delete the merge policy keeps (based on a stale version, store-trump) is named, so
        // the object comes back alive with its stored state, not as deleted.
        #expect(try harness.request("POST", "/v1/objects/Project", json: #"{"name": "a"}"#).status == 201)
        #expect(try harness.request("PATCH", "/v1/objects/Project/1", json: #"{"name": "a2"}"#).status == 200)
        let kept2 = try harness.request("POST", "/v1/transactions?merge=store-trump",
                                        json: #"{"operations": [{"op": "delete", "object": "Project/1", "version": 1}]}"#)
        #expect(kept2.status == 200)
        let keptObjects = kept2.json?["objects"] as? [[String: Any]] ?? []
        #expect(keptObjects.count == 1 && keptObjects.first?["_id"] as? String == "Project/1" && keptObjects.first?["name"] as? String == "a2"
                && keptObjects.first?["_deleted"] == nil, "\(kept2.text)")
    }

    @Test("batch writes without where are 400, merge policies by name")
    func batchWithoutWhere() throws {
        let harness = try ServerHarness()
        func code(_ r: RawHTTPClient.Response) -> String? { r.json?["code"] as? String }
        #expect(try harness.request("GET", "/v1/changes?since=0").status == 200, "the change feed is implemented")
        let noWhere = try harness.request("DELETE", "/v1/objects/Task")
        #expect(noWhere.status == 400 && code(noWhere) == "bad-request")
        #expect(try harness.request("PATCH", "/v1/objects/Task", json: #"{"done": true}"#).status == 400)
        let policy = try harness.request("PATCH", "/v1/objects/Task/1?merge=store-trump", json: #"{"done": true}"#)
        #expect(policy.status == 404, "every merge policy is implemented; Task/1 does not exist")
        let unknown = try harness.request("PATCH", "/v1/objects/Task/1?merge=nope", json: #"{"done": true}"#)
        #expect(unknown.status == 400)
    }
}

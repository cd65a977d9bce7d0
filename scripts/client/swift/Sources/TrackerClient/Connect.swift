import Foundation
import OpenAPIRuntime
import OpenAPIURLSession

extension Client {
    /// A client of the server at `base` (`http://127.0.0.1:8080`), over URLSession. Dates
    /// travel with fractional seconds (`2026-07-16T13:32:00.123456Z`), which the runtime's
    /// default transcoder refuses.
    public static func connecting(to base: URL) -> Client {
        Client(serverURL: base, configuration: Configuration(dateTranscoder: .iso8601WithFractionalSeconds), transport: URLSessionTransport())
    }
}

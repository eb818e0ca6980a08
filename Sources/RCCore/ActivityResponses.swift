/// `activity-remove`: the activity was removed; `activity` is how it was last (as `rcagent activity
/// show --json` prints it).
public struct RemoveActivityResponse: ControlResponse {
    public var id: String
    public var activity: JSONValue

    public init(id: String, activity: JSONValue) {
        self.id = id
        self.activity = activity
    }

    public var members: [(key: String, value: JSONValue)] {
        [("removed", .string(id)), ("activity", activity)]
    }

    public init(reading response: ControlResponseReader) throws(ControlResponseError) {
        id = try response.string("removed")
        activity = response.value("activity") ?? .null
    }
}

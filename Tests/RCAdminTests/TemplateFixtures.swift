import RCAdmin
import RCCore

/// Templates shaped like the ones the Remote Config console and REST API return: conditions with
/// tag colours, conditional values, a parameter group, a rollout and a personalization value,
/// `useInAppDefault`, and the output-only `version` block.
enum TemplateFixtures {
    static let consoleTemplate = #"""
        {
          "conditions": [
            {"name": "beta_devices", "expression": "app.userProperty['channel'].exactlyMatches(['beta'])", "tagColor": "ORANGE"},
            {"name": "ios_users", "expression": "device.os == 'ios'", "tagColor": "BLUE"},
            {"name": "ten_percent", "expression": "percent <= 10"}
          ],
          "parameters": {
            "linux_required_update": {
              "defaultValue": {"value": "{\"version\":\"1.2.0\",\"download\":\"https://dl.example.com/rcagent_1.2.0.deb\"}"},
              "conditionalValues": {
                "beta_devices": {"value": "{\"version\":\"1.3.0\",\"download\":\"https://dl.example.com/rcagent_1.3.0.deb\"}"}
              },
              "description": "Oldest Linux agent allowed to run",
              "valueType": "JSON"
            },
            "welcome_message": {
              "defaultValue": {"value": "Welcome!"},
              "conditionalValues": {"ios_users": {"useInAppDefault": true}},
              "description": "Greeting on the first screen"
            },
            "new_sync_engine": {
              "defaultValue": {"rolloutValue": {"rolloutId": "rollout_7", "value": "true", "percent": 10}},
              "valueType": "BOOLEAN"
            },
            "hero_banner": {
              "defaultValue": {"value": "spring"},
              "conditionalValues": {"ten_percent": {"personalizationValue": {"personalizationId": "p_3"}}}
            }
          },
          "parameterGroups": {
            "updates": {
              "description": "Update offers for every platform",
              "parameters": {
                "linux_recommended_update": {
                  "defaultValue": {"value": "{\"version\":\"1.1.0\",\"download\":\"https://dl.example.com/rcagent_1.1.0.deb\"}"},
                  "conditionalValues": {"ten_percent": {"value": "{\"version\":\"1.2.5\",\"download\":\"https://dl.example.com/rcagent_1.2.5.deb\"}"}},
                  "description": "Nudge to upgrade",
                  "valueType": "JSON"
                },
                "android_recommended_update": {
                  "defaultValue": {"rolloutValue": {"rolloutId": "rollout_9", "value": "{\"version\":\"4.1.0\",\"download\":\"https://play.example.com/app\"}", "percent": 50}},
                  "valueType": "JSON"
                },
                "ios_required_update": {
                  "defaultValue": {"useInAppDefault": true}
                }
              }
            }
          },
          "version": {
            "versionNumber": "42",
            "updateTime": "2026-11-29T10:15:30.123456Z",
            "updateUser": {"email": "ci@project.iam.gserviceaccount.com"},
            "updateOrigin": "REST_API",
            "updateType": "INCREMENTAL_UPDATE"
          }
        }
        """#

    static func template() throws -> JSONValue { try JSONValue.parse(consoleTemplate) }

    /// `template` with member `path` (object keys) replaced by `value`: a test states the one
    /// expected difference and compares everything else byte for byte.
    static func setting(_ path: [String], to value: JSONValue?, in template: JSONValue) -> JSONValue {
        guard let first = path.first, var members = template.objectMembers else { return template }
        let index = members.firstIndex { $0.key == first }
        if path.count == 1 {
            if let value {
                if let index { members[index].value = value } else { members.append((first, value)) }
            } else if let index {
                members.remove(at: index)
            }
        } else if let index {
            members[index].value = setting(Array(path.dropFirst()), to: value, in: members[index].value)
        }
        return .object(members)
    }
}

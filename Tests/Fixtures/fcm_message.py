"""FCM HTTP v1 messages as the Message reference and the error-code page describe them: one
target, topic names, reserved data keys, the payload size limits (4096 bytes, 2048 for topic
messages, keys and values counted). What the fake Google backend accepts on messages:send.
"""
import json, re

from google_errors import fcm_invalid, kind, unknown_field

TOPIC = re.compile(r"^[a-zA-Z0-9-_.~%]+$")
ANALYTICS_LABEL = re.compile(r"^[a-zA-Z0-9-_.~%]{1,50}$")
DURATION = re.compile(r"^[0-9]+(\.[0-9]{1,9})?s$")


def string_map(value, where):
    """A map<string, string>: FCM refuses numbers and booleans as values, as proto3 JSON does."""
    if not isinstance(value, dict):
        raise fcm_invalid("%s must be an object of strings, got %s" % (where, kind(value)), where)
    for key, item in value.items():
        if not isinstance(item, str):
            raise fcm_invalid("Invalid value at '%s[%s]' (TYPE_STRING): values must be strings, got %s %s"
                              % (where, key, kind(item), json.dumps(item)), "%s[%s]" % (where, key))
    return value


def check_data_keys(data, where):
    """Message.data: "The key should not be a reserved word ("from", "message_type", or any word
    starting with "google" or "gcm")."""
    for key in data:
        lowered = key.lower()
        if key in ("from", "message_type") or lowered.startswith("google") or lowered.startswith("gcm"):
            raise fcm_invalid("Invalid data payload key %r in %s: from, message_type and keys starting with google "
                              "or gcm are reserved" % (key, where), where)


def check_message(message):
    """Validates a Message as the FCM v1 reference describes it; returns notes about things FCM
    accepts but a device platform may not deliver as hoped."""
    allowed = {"name", "data", "notification", "android", "webpush", "apns", "fcm_options", "fcmOptions", "token",
               "topic", "condition"}
    for name in message:
        if name not in allowed:
            raise unknown_field(name, "message")
    # The target is a oneof: exactly one of token, topic, condition.
    targets = [name for name in ("token", "topic", "condition") if name in message]
    if not targets:
        raise fcm_invalid("Recipient of the message is not set (exactly one of token, topic, condition)", "message")
    if len(targets) > 1:
        raise fcm_invalid("Invalid value at 'message' (oneof), oneof field 'target' is already set. Cannot set "
                          "'%s' (exactly one of token, topic, condition)" % targets[1], "message." + targets[1])
    target = targets[0]
    value = message[target]
    if not isinstance(value, str) or not value:
        raise fcm_invalid("message.%s must be a non-empty string" % target, "message." + target)
    if target == "topic":
        if value.startswith("/topics/"):
            raise fcm_invalid("Invalid topic name %r: give the bare name, without the /topics/ prefix" % value,
                              "message.topic")
        if not TOPIC.match(value):
            raise fcm_invalid("Invalid topic name %r: must match [a-zA-Z0-9-_.~%%]+" % value, "message.topic")
    if target == "condition":
        topics = re.findall(r"'([^']*)'\s+in\s+topics", value)
        if not topics or len(topics) > 5:
            raise fcm_invalid("Invalid condition %r: it must name 1-5 topics as 'name' in topics" % value,
                              "message.condition")
    # "4096 bytes for most messages, or 2048 bytes in the case of messages to topics. This includes
    # both the keys and the values." A condition fans out to topics, so it counts as a topic message.
    size = 0
    data = string_map(message.get("data", {}), "message.data")
    check_data_keys(data, "message.data")
    size += sum(len(k.encode()) + len(v.encode()) for k, v in data.items())
    notification = message.get("notification")
    if notification is not None:
        if not isinstance(notification, dict):
            raise fcm_invalid("message.notification must be an object", "message.notification")
        for name in notification:
            if name not in ("title", "body", "image"):
                raise unknown_field(name, "message.notification")
        string_map(notification, "message.notification")
        size += sum(len(v.encode()) for v in notification.values())
    limit = 4096 if target == "token" else 2048
    if size > limit:
        raise fcm_invalid("Message is too big: the data (keys and values) and notification hold %d bytes, at most "
                          "%d allowed for %s messages" % (size, limit, "token" if limit == 4096 else "topic"),
                          "message")
    options = message.get("fcm_options", message.get("fcmOptions"))
    if options is not None:
        if not isinstance(options, dict):
            raise fcm_invalid("message.fcm_options must be an object", "message.fcm_options")
        label = options.get("analytics_label", options.get("analyticsLabel"))
        if label is not None and (not isinstance(label, str) or not ANALYTICS_LABEL.match(label)):
            raise fcm_invalid("analytics_label %r must match [a-zA-Z0-9-_.~%%]{1,50}" % label,
                              "message.fcm_options")
    android = message.get("android")
    if android is not None:
        if not isinstance(android, dict):
            raise fcm_invalid("message.android must be an object", "message.android")
        if "priority" in android and android["priority"] not in ("NORMAL", "HIGH"):
            raise fcm_invalid("message.android.priority must be NORMAL or HIGH", "message.android.priority")
        if "ttl" in android and (not isinstance(android["ttl"], str) or not DURATION.match(android["ttl"])):
            raise fcm_invalid("message.android.ttl %r is not a duration like \"3.5s\"" % android["ttl"],
                              "message.android.ttl")
        if "data" in android:
            check_data_keys(string_map(android["data"], "message.android.data"), "message.android.data")
    if message.get("webpush") is not None and not isinstance(message["webpush"], dict):
        raise fcm_invalid("message.webpush must be an object", "message.webpush")
    notes = []
    apns = message.get("apns")
    aps = {}
    if apns is not None:
        if not isinstance(apns, dict):
            raise fcm_invalid("message.apns must be an object", "message.apns")
        for name in apns:
            if name not in ("headers", "payload", "fcm_options", "fcmOptions", "live_activity_token",
                            "liveActivityToken"):
                raise unknown_field(name, "message.apns")
        apns_headers = string_map(apns.get("headers", {}), "message.apns.headers")
        priority = apns_headers.get("apns-priority")
        if priority is not None and priority not in ("5", "10"):
            raise fcm_invalid("apns-priority %r must be \"5\" or \"10\"" % priority, "message.apns.headers")
        payload = apns.get("payload", {})
        if not isinstance(payload, dict):
            raise fcm_invalid("message.apns.payload must be an object", "message.apns.payload")
        aps = payload.get("aps", {})
        if not isinstance(aps, dict):
            raise fcm_invalid("message.apns.payload.aps must be an object", "message.apns.payload.aps")
        if len(json.dumps(payload).encode()) > 4096:
            raise fcm_invalid("Message is too big: apns.payload is over 4096 bytes", "message.apns.payload")
    # "When sending payloads containing only data fields to iOS devices, only normal priority
    # (apns-priority: 5) is allowed": FCM still accepts the message, so the fake only notes it.
    if notification is None and "alert" not in aps:
        priority = ((apns or {}).get("headers") or {}).get("apns-priority")
        if priority != "5":
            notes.append("data-only message without apns-priority 5: iOS only accepts normal priority for it "
                         "(apns-priority %s)" % (priority or "unset, FCM's default 10"))
    return notes

"""Error answers of the fake Google admin backend: Google's JSON error envelope for the REST APIs
and the token endpoint's own {"error", "error_description"} form.
"""
STATUS_NAMES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                409: "ABORTED", 412: "FAILED_PRECONDITION", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL",
                503: "UNAVAILABLE"}


class AdminError(Exception):
    """An error answer. `oauth`: the token endpoint's error code (its body is
    {"error", "error_description"}); otherwise Google's envelope {"error": {code, message, status}}."""

    def __init__(self, status, message, google_status=None, oauth=None, details=None, headers=None, forced=False):
        super().__init__(message)
        self.status, self.message, self.oauth, self.details = status, message, oauth, details
        self.google_status = google_status or STATUS_NAMES.get(status, "UNKNOWN")
        self.headers, self.forced = headers or {}, forced

    def body(self):
        if self.oauth:
            return {"error": self.oauth, "error_description": self.message}
        error = {"code": self.status, "message": self.message, "status": self.google_status}
        if self.details:
            error["details"] = self.details
        return {"error": error}


def invalid(message):
    return AdminError(400, message)


def grant_error(message):
    return AdminError(400, message, oauth="invalid_grant")


def kind(value):
    if isinstance(value, bool):
        return "boolean"
    return {dict: "object", list: "array", str: "string", type(None): "null"}.get(type(value), "number")


def unknown_query(name):
    return invalid("Invalid JSON payload received. Unknown name \"%s\": Cannot bind query parameter. Field '%s' "
                   "could not be found in request message." % (name, name))


def unknown_field(name, where):
    return invalid("Invalid JSON payload received. Unknown name \"%s\" at '%s': Cannot find field." % (name, where))


def fcm_invalid(message, field):
    return AdminError(400, message, details=[
        {"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "INVALID_ARGUMENT"},
        {"@type": "type.googleapis.com/google.rpc.BadRequest",
         "fieldViolations": [{"field": field, "description": message}]}])

#!/usr/bin/env python3
"""A fake Firebase backend for rcagent's tests, one real HTTP server process on loopback. Device
side: the protocol Google's client SDKs speak (Firebase Installations: create an installation and
generate its auth tokens; the Remote Config fetch call; the Remote Config realtime invalidation
stream). Admin side (google_admin.py, with google_oauth.py, rc_template.py, fcm_message.py and
google_errors.py): the OAuth 2.0 token endpoint for service accounts, the Remote Config REST API v1
and FCM HTTP v1 send. The product only ever sees these protocols as Google documents them; tests
script the server through files.

  firebase_server.py DIR

Binds 127.0.0.1 on a free port and prints it on stdout. Python 3.11 standard library only.

APIs (paths as Google documents them; only scheme, host and port differ):
  POST /v1/projects/{p}/installations                                  api "create"
  POST /v1/projects/{p}/installations/{fid}/authTokens:generate        api "token"
  POST /v1/projects/{p}/namespaces/firebase:fetch?key=K                api "fetch"
  POST /v1/projects/{p}/namespaces/firebase:streamFetchInvalidations?key=K   api "realtime"
  POST /token                                                          api "oauth-token"
  GET  /v1/projects/{p}[/namespaces/{ns}]/remoteConfig                 api "rc-get"
  PUT  /v1/projects/{p}[/namespaces/{ns}]/remoteConfig                 api "rc-put"
  GET  /v1/projects/{p}[/namespaces/{ns}]/remoteConfig:listVersions    api "rc-versions"
  POST /v1/projects/{p}[/namespaces/{ns}]/remoteConfig:rollback        api "rc-rollback"
  POST /v1/projects/{p}/messages:send                                  api "fcm-send"
Anything else is api "unknown" and gets 404. The admin APIs are described at the end.

Every header and body field the client must send is checked. A missing or wrong one gets
  400 {"error": {"code": 400, "message": "<what is missing/wrong>", "status": "INVALID_ARGUMENT"}}
Unknown body fields are rejected the way Google's proto3 JSON parser does ("Unknown name").
An auth token this server never issued, or one past its expiry, gets 401 (fetch, realtime); a
refresh token that does not belong to the installation gets 401 and an unknown installation 404
(token). Order of checks: 400 (shape) -> 401/404 (credentials) -> 400 (fields that must agree with
the credentials, e.g. appInstanceId = the token's FID) -> the mode's forced status -> the answer.

DIR/mode.json (optional; re-read on every request; write it atomically, e.g. by rename):
  "template": {"version": N, "entries": {"k": "v", ...}, ...}
        the published template. Other keys (rolloutMetadata, personalizationMetadata,
        experimentDescriptions, ...) are copied into UPDATE answers. Without a template, fetch
        answers state NO_TEMPLATE and the realtime "current version" is 0.
  "apiKey": "K", "project": "P", "appId": "A"
        when set, requests must carry exactly these (400 otherwise).
  "installationExpiresIn": N     auth tokens (from create and from token) last N seconds, sent as
                                 "expiresIn": "<N>s"; default 604800.
  "assignFid": "c..."            create answers with this FID instead of the client's one (the
                                 protocol says the client must use the server's FID).
  "installationsStatus": S       force HTTP status S (e.g. 409, 429, 500) for create
  "takenFids": ["c...", ...]     create answers 409 ALREADY_EXISTS for these FIDs (another
                                 installation has them)
  "tokenStatus": S               force S for token (e.g. 401, 404: the client must re-create)
  "fetchStatus": S               force S for fetch (e.g. 429, 500, 503)
  "retryAfter": "120"            with fetchStatus: also send Retry-After with this value
  "realtimeStatus": S            force S for realtime (e.g. 403, 429, 503)
  "fetchAnswer304": true         an If-None-Match that matches answers HTTP 304 (no body)
                                 instead of 200 {"state": "NO_CHANGE"}
  "fetchState": "NO_TEMPLATE" | "EMPTY_CONFIG"
                                 fetch answers that state whatever the request and template;
                                 EMPTY_CONFIG carries templateVersion and ETag, NO_TEMPLATE neither.
  Forced statuses come with a JSON error body {"error": {"code", "message", "status"}}.

Fetch answers (when nothing is forced): If-None-Match equal to the template's ETag -> 200
{"state": "NO_CHANGE"} (plus the ETag header); otherwise 200 {"entries": {...}, "state": "UPDATE",
"templateVersion": "<N>"} with header ETag: "etag-<N>" (quotes included). If-None-Match "*" never
matches.

Realtime: 200, Transfer-Encoding: chunked, connection kept open. If the template version is greater
than the request's lastKnownVersionNumber the first chunk is {"latestTemplateVersionNumber": "<N>"}.
Then every line appended to DIR/realtime.jsonl after the request arrived is sent as its own chunk
(the line's text + "\\n"; invalid JSON is sent as is, to test the client's parser). Control lines:
  {"_drop": true}    every open stream closes its socket abruptly (no terminating chunk)
  {"_close": true}   every open stream ends its body cleanly (terminating chunk) and closes
Streams poll the file every 50 ms and notice a client that hung up.

DIR/requests.log: one JSON line per request, appended before the answer is sent:
  {"api": "create"|"token"|"fetch"|"realtime"|"unknown", "method": "POST", "path": "/v1/...",
   "query": {"key": "..."}, "headers": {lower-cased name: value}, "body": parsed JSON or raw text
   (null when empty), "status": status sent, "problem": why 400/401/404 or null (null for forced
   statuses), "time": unix seconds, and for accepted streams "stream": id}
DIR/streams.log: {"stream": id, "event": "end", "reason": "client closed"|"dropped"|"closed",
   "time": t} when a realtime stream ends.

Admin APIs. Files the test writes: DIR/service-account.json (Google's key file: project_id,
private_key_id, client_email, token_uri = "http://127.0.0.1:PORT/token", ...) and
DIR/service-account-public.pem (the public half of its private_key, PEM "PUBLIC KEY").

  oauth-token: form-encoded grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer and assertion=JWT.
    The JWT must be three base64url parts without padding ('=', '+', '/' are refused), header alg
    RS256 (typ JWT and kid = private_key_id when present), an RS256 signature the public key
    verifies, iss = client_email, aud = token_uri, sub absent or = iss, integer iat and exp with
    0 < exp - iat <= 3600, iat at most 60 s in the future, exp not past, and a scope claim of
    space-separated scope URLs holding the Remote Config, FCM or cloud-platform scope. Errors are
    the token endpoint's: 400 {"error": "invalid_request" | "unsupported_grant_type" |
    "invalid_grant" | "invalid_scope", "error_description": "..."}. Answer: {"access_token":
    "ya29....", "expires_in": N, "token_type": "Bearer"}; the server keeps each token's expiry and
    scopes in memory.
  Every other admin call needs "Authorization: Bearer <token>": 401 UNAUTHENTICATED when missing,
    unknown or expired, 403 PERMISSION_DENIED without the API's scope (Remote Config:
    firebase.remoteconfig or cloud-platform; FCM: firebase.messaging or cloud-platform) or for a
    project that is neither the key file's project_id nor mode "project"/"projectNumber". Errors
    use Google's envelope {"error": {"code", "message", "status"[, "details"]}}; an unknown query
    parameter is 400, as Google's request binding answers it.
  Remote Config, namespaces "firebase" (the client template, also the un-namespaced path) and
    "firebase-server". Answers are gzip-compressed (Content-Encoding: gzip) when the request has
    Accept-Encoding: gzip (without q=0), and the ETag header ("etag-<project>-<version>") is sent
    ONLY then, as Google does. rc-get: optional versionNumber (404 for one not kept; the answer's
    ETag is then that version's, so publishing over it is stale). rc-put: If-Match required (the
    current ETag, quoted or not, or "*" to force); a stale one is 409 ABORTED, or 412
    FAILED_PRECONDITION with mode "staleEtagStatus": 412; validateOnly=true (or validate_only)
    validates, writes nothing and answers ETag "<current ETag>-0". The template is validated as
    the REST reference describes it ("[VALIDATION_ERROR]: ..." 400s): only conditions,
    parameters, parameterGroups, version; conditions an array of {name, expression, tagColor?}
    with unique non-empty names; parameter keys [A-Za-z_][A-Za-z0-9_]* unique across the top level
    and all groups; values exactly one of {value: string}, {useInAppDefault: true}, rolloutValue,
    personalizationValue, and a static value must read as its valueType (STRING, BOOLEAN: true or
    false, NUMBER, JSON); conditionalValues only name defined conditions; version carries at most
    a description (<= 1024 characters). The server sets versionNumber, updateTime, updateUser
    {email: client_email}, updateOrigin REST_API, updateType INCREMENTAL_UPDATE (or FORCED_UPDATE
    for "*", ROLLBACK with rollbackSource). rc-versions: pageSize 1-300, pageToken,
    endVersionNumber, startTime, endTime; newest first, {versions, nextPageToken}. rc-rollback:
    {"versionNumber": "N"}, N kept and below the current version (404 otherwise), published as a
    new version. The newest 300 versions are kept.
  The device side follows the client template: once one is seeded or published, fetch serves its
    parameters' static default values (top level and groups) as entries, with templateVersion and
    ETag "etag-<version>" from it, instead of mode "template"; useInAppDefault and managed values
    are left out and conditional values are NOT evaluated (the fake has no device context to
    evaluate conditions in). Each publish or rollback appends {"latestTemplateVersionNumber": "N"}
    to DIR/realtime.jsonl, so every open stream announces it, and new streams compare against it.
  fcm-send: {"validate_only"?: bool, "message": Message}, validated as the FCM v1 reference says:
    exactly one of token, topic (bare name matching [a-zA-Z0-9-_.~%]+, no /topics/ prefix),
    condition (1-5 'name' in topics); data a map of strings without reserved keys (from,
    message_type, anything starting with google or gcm); data keys + values plus notification
    fields at most 2048 bytes for topic and condition messages, 4096 for token messages; known
    fields only at the top of the message. Errors: 400 INVALID_ARGUMENT with details
    [{"@type": "...FcmError", "errorCode": "INVALID_ARGUMENT"}, a BadRequest fieldViolation].
    Answer {"name": "projects/{p}/messages/<id>"} ("fake_message_id" for validate_only). A
    data-only message without apns-priority "5" is accepted (as FCM does) with a note.

Admin mode keys (DIR/mode.json, re-read on every request):
  "adminTemplate": {template}      the client template the state starts from (version 1, or the
  "adminServerTemplate": {...}     seed's version.versionNumber); read once, when DIR/admin-state.json
                                   is created. Without seeds the templates start empty at version 0
                                   (ETag "etag-<project>-0") and the first publish is version 1.
  "accessTokenExpiresIn": N        expires_in of new access tokens (default 3600)
  "expireAccessTokens": V          each time V changes to a new value (true, a counter, ...), every
                                   access token issued so far expires (its calls get 401); noticed
                                   first thing at the next admin request of any API, so a token
                                   issued after the change is valid
  "staleEtagStatus": 409 | 412     the answer to a stale If-Match (default 409 ABORTED)
  "publishBeforeNextPut": {template} or {"template": {...}, "namespace"?: ns, "id"?: any}
                                   someone else publishes this template (updateOrigin CONSOLE) just
                                   before the next rc-put is checked (validate-only or not), into
                                   that PUT's namespace unless one is given, so that PUT's If-Match
                                   is stale; once per distinct value (a new id repeats a template)
  "adminFailures": [{"api": "token"|"rc-get"|"rc-put"|"versions"|"rollback"|"fcm" (or the log's
                     names), "status": 429|500|503|401|..., "retryAfter": "1" or an HTTP date,
                     "times": N (default 1), "message"?, "errorCode"? (FCM)}]
                                   the next N calls to that API answer the status (with Retry-After
                                   when given) before any other check; entries for the same API are
                                   used in list order. Counts live in the server's memory; writing a
                                   different list starts afresh. An entry with an unknown api or no
                                   status makes every admin call answer 500 naming it. The token
                                   endpoint answers these in its own format (internal_failure,
                                   rate_limit_exceeded, invalid_client), FCM with an FcmError detail
                                   (QUOTA_EXCEEDED, INTERNAL, UNAVAILABLE).
  "fcmUnregisteredTokens": [...]   token messages to these answer 404 with errorCode UNREGISTERED

Admin files the server writes:
  DIR/admin-state.json  {"firebase"|"firebase-server": {"current": N, "versions": [{"template":
                        {conditions?, parameters?, parameterGroups?}, "version": {...}}]}}
                        (replaced atomically; tests read it, never write it)
  DIR/fcm.log           one JSON line per message sent (not validate_only): {"name", "project",
                        "message", "notes": [...], "time"}
  DIR/requests.log      as above; oauth-token records carry the form's text as "body" and its
                        fields as "form"; injected failures are logged with "problem": null.
"""
import gzip, http.server, json, os, re, secrets, select, socket, sys, threading, time, traceback

from fixture_http import QuietHandler, append_json_line
from google_admin import Admin, AdminError
from urllib.parse import parse_qsl, unquote, urlsplit

directory = sys.argv[1]
lock = threading.Lock()
installations = {}  # fid -> {"refreshToken", "appId", "project"}
auth_tokens = {}  # token -> {"fid", "expires"}
stream_ids = iter(range(1, 1 << 30))

FID = re.compile(r"^[cdef][\w-]{21}$", re.ASCII)
STATUS_NAMES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                408: "DEADLINE_EXCEEDED", 409: "ALREADY_EXISTS", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL",
                501: "UNIMPLEMENTED", 502: "UNAVAILABLE", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}
ROUTES = [
    ("create", re.compile(r"^/v1/projects/([^/]+)/installations$")),
    ("token", re.compile(r"^/v1/projects/([^/]+)/installations/([^/]+)/authTokens:generate$")),
    ("fetch", re.compile(r"^/v1/projects/([^/]+)/namespaces/([^/:]+):fetch$")),
    ("realtime", re.compile(r"^/v1/projects/([^/]+)/namespaces/([^/:]+):streamFetchInvalidations$")),
]
FETCH_REQUIRED = ["appInstanceId", "appInstanceIdToken", "appId", "appVersion", "sdkVersion", "languageCode",
                  "timeZone", "platformVersion"]
FETCH_OPTIONAL = ["appBuild", "packageName", "countryCode", "firstOpenTime"]
REALTIME_FIELDS = ["project", "namespace", "lastKnownVersionNumber", "appId", "sdkVersion", "appInstanceId"]


def path_in_dir(name):
    return os.path.join(directory, name)


def read_mode():
    for _ in range(3):
        try:
            with open(path_in_dir("mode.json")) as f:
                m = json.load(f)
            return m if isinstance(m, dict) else {}
        except FileNotFoundError:
            return {}
        except ValueError:
            time.sleep(0.02)  # a writer that does not rename: try again
    raise Reject(500, "mode.json is not valid JSON")


def append_line(name, record):
    append_json_line(path_in_dir(name), record)


admin = Admin(directory, lambda name, record: append_line(name, record))


def device_template(m):
    """The template devices see: the client template published through the admin API when there
    is one, else the mode's "template"."""
    try:
        return admin.client_template(m) or m.get("template")
    except AdminError as error:
        raise Reject(500, error.message, forced=True)


def accepts_gzip(accept_encoding):
    """Whether an Accept-Encoding header value accepts gzip (listed, with no q=0)."""
    for part in accept_encoding.split(","):
        coding, *parameters = [item.strip().lower() for item in part.split(";")]
        if coding == "gzip":
            for parameter in parameters:
                name, _, value = parameter.partition("=")
                if name.strip() == "q":
                    try:
                        return float(value) > 0
                    except ValueError:
                        return False
            return True
    return False


def realtime_size():
    try:
        return os.path.getsize(path_in_dir("realtime.jsonl"))
    except OSError:
        return 0


def etag_of(version):
    return '"etag-%d"' % version


class Reject(Exception):
    """An error answer: status, message; forced=True when the mode asked for it (not a client problem)."""

    def __init__(self, status, message, forced=False, headers=None):
        super().__init__(message)
        self.status, self.message, self.forced, self.headers = status, message, forced, headers or {}


def kind(value):
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number")


def forced(m, key, api, extra_headers=None):
    status = m.get(key)
    if status is None:
        return
    if api == "realtime" and status == 403:
        message = ("Firebase Remote Config Realtime API has not been used in this project before or it is "
                   "disabled. Enable it by visiting the Google Cloud console, then retry.")
    else:
        message = "%s answers %s (forced by the test's mode.json)" % (api, status)
    raise Reject(int(status), message, forced=True, headers=extra_headers)


class Handler(QuietHandler):
    def do_POST(self):
        self.serve("POST")

    def do_GET(self):
        self.serve("GET")

    def do_PUT(self):
        self.serve("PUT")

    def do_PATCH(self):
        self.serve("PATCH")

    def do_DELETE(self):
        self.serve("DELETE")

    # --- reading -------------------------------------------------------------------------------

    def read_raw_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def header(self, name, required=True):
        """The one value of a header; 400 when it is required and missing, or when it is repeated."""
        values = self.headers.get_all(name) or []
        if len(values) > 1:
            raise Reject(400, "header %s sent %d times: %s" % (name, len(values), values))
        if not values:
            if required:
                raise Reject(400, "missing header %s" % name)
            return None
        return values[0].strip()

    def check_json_headers(self):
        content_type = self.header("Content-Type")
        if content_type.split(";")[0].strip().lower() != "application/json":
            raise Reject(400, "header Content-Type must be application/json, got %r" % content_type)
        accept = self.header("Accept")
        if "application/json" not in [part.split(";")[0].strip().lower() for part in accept.split(",")]:
            raise Reject(400, "header Accept must be application/json, got %r" % accept)

    def check_api_key(self, m, name, query, query_required):
        key = self.header(name)
        if not key:
            raise Reject(400, "header %s is empty" % name)
        if "key" in query:
            if query["key"] != key:
                raise Reject(400, "query parameter key=%r differs from header %s=%r" % (query["key"], name, key))
        elif query_required:
            raise Reject(400, "missing query parameter key (the API key)")
        if m.get("apiKey") is not None and key != m["apiKey"]:
            raise Reject(400, "API key not valid. Please pass a valid API key. (got %r, expected %r)" % (key, m["apiKey"]))
        return key

    @staticmethod
    def check_project(m, project):
        if m.get("project") is not None and project != m["project"]:
            raise Reject(400, "project %r in the path, expected %r" % (project, m["project"]))

    @staticmethod
    def string_field(body, name, where="body", required=True, empty_ok=False):
        if name not in body:
            if required:
                raise Reject(400, "missing field %s%s" % (where + "." if where != "body" else "", name))
            return None
        value = body[name]
        if not isinstance(value, str):
            raise Reject(400, "field %s must be a string, got %s %s" % (name, kind(value), json.dumps(value)))
        if not value and not empty_ok:
            raise Reject(400, "field %s is empty" % name)
        return value

    @staticmethod
    def no_unknown_fields(body, allowed, where="body"):
        for name in body:
            if name not in allowed:
                raise Reject(400, 'Invalid JSON payload received. Unknown name "%s" at \'%s\': Cannot find field.'
                             % (name, where))

    @staticmethod
    def check_app_id(m, app_id, installation=None):
        if m.get("appId") is not None and app_id != m["appId"]:
            raise Reject(400, "appId %r, expected %r" % (app_id, m["appId"]))
        if installation is not None and app_id != installation["appId"]:
            raise Reject(400, "appId %r differs from the installation's %r" % (app_id, installation["appId"]))

    def valid_auth_token(self):
        token = self.header("X-Goog-Firebase-Installations-Auth")
        if not token:
            raise Reject(400, "header X-Goog-Firebase-Installations-Auth is empty")
        with lock:
            info = auth_tokens.get(token)
            installation = installations.get(info["fid"]) if info else None
        if info is None:
            raise Reject(401, "X-Goog-Firebase-Installations-Auth: unknown installation auth token")
        if time.time() >= info["expires"]:
            raise Reject(401, "X-Goog-Firebase-Installations-Auth: the installation auth token expired")
        return token, info["fid"], installation

    @staticmethod
    def expires_in(m):
        return int(m.get("installationExpiresIn", 604800))

    @staticmethod
    def issue_token(fid, expires_in):
        token = "eyFake." + secrets.token_urlsafe(24)
        with lock:
            auth_tokens[token] = {"fid": fid, "expires": time.time() + expires_in}
        return token

    # --- the APIs ------------------------------------------------------------------------------

    def api_create(self, m, match, query, body):
        project = match.group(1)
        self.check_json_headers()
        self.check_api_key(m, "x-goog-api-key", query, query_required=False)
        self.check_project(m, project)
        if not isinstance(body, dict):
            raise Reject(400, "the body must be a JSON object")
        self.no_unknown_fields(body, ["fid", "authVersion", "appId", "sdkVersion"])
        fid = self.string_field(body, "fid")
        if not FID.match(fid):
            raise Reject(400, "field fid %r does not match ^[cdef][\\w-]{21}$" % fid)
        auth_version = self.string_field(body, "authVersion")
        if auth_version != "FIS_v2":
            raise Reject(400, "field authVersion must be FIS_v2, got %r" % auth_version)
        app_id = self.string_field(body, "appId")
        self.check_app_id(m, app_id)
        self.string_field(body, "sdkVersion")
        forced(m, "installationsStatus", "create")
        if fid in m.get("takenFids", []):
            raise Reject(409, "installation %s already exists" % fid)
        fid = m.get("assignFid") or fid
        refresh = "3_" + secrets.token_urlsafe(32)
        expires_in = self.expires_in(m)
        with lock:
            installations[fid] = {"refreshToken": refresh, "appId": app_id, "project": project}
        token = self.issue_token(fid, expires_in)
        return 200, {"name": "projects/%s/installations/%s" % (project, fid), "fid": fid, "refreshToken": refresh,
                     "authToken": {"token": token, "expiresIn": "%ds" % expires_in}}, {}

    def api_token(self, m, match, query, body):
        project, fid = match.group(1), match.group(2)
        self.check_json_headers()
        self.check_api_key(m, "x-goog-api-key", query, query_required=False)
        self.check_project(m, project)
        authorization = self.header("Authorization")
        if not authorization.startswith("FIS_v2 ") or not authorization[7:].strip():
            raise Reject(400, "header Authorization must be 'FIS_v2 <refreshToken>', got %r" % authorization)
        if not isinstance(body, dict):
            raise Reject(400, "the body must be a JSON object")
        self.no_unknown_fields(body, ["installation"])
        installation_field = body.get("installation")
        if not isinstance(installation_field, dict):
            raise Reject(400, "missing field installation (an object with sdkVersion and appId)"
                         if installation_field is None else "field installation must be an object")
        self.no_unknown_fields(installation_field, ["sdkVersion", "appId"], where="installation")
        self.string_field(installation_field, "sdkVersion", where="installation")
        app_id = self.string_field(installation_field, "appId", where="installation")
        with lock:
            installation = installations.get(fid)
        if installation is None:
            raise Reject(404, "installation %s not found" % fid)
        if authorization[7:].strip() != installation["refreshToken"]:
            raise Reject(401, "Authorization: the refresh token does not belong to installation %s" % fid)
        self.check_app_id(m, app_id, installation)
        forced(m, "tokenStatus", "token")
        expires_in = self.expires_in(m)
        return 200, {"token": self.issue_token(fid, expires_in), "expiresIn": "%ds" % expires_in}, {}

    def check_remote_config_call(self, m, match, query):
        """What the fetch and realtime calls both need: JSON headers, the API key, the project and
        the firebase namespace in the path. Returns the project."""
        project, namespace = match.group(1), match.group(2)
        self.check_json_headers()
        self.check_api_key(m, "X-Goog-Api-Key", query, query_required=True)
        self.check_project(m, project)
        if namespace != "firebase":
            raise Reject(400, "namespace %r in the path, expected firebase" % namespace)
        return project

    def api_fetch(self, m, match, query, body):
        self.check_remote_config_call(m, match, query)
        fetch_type = self.header("X-Firebase-RC-Fetch-Type")
        if not re.match(r"^(BASE/1|REALTIME/[1-9][0-9]*)$", fetch_type):
            raise Reject(400, "header X-Firebase-RC-Fetch-Type must be BASE/1 or REALTIME/<n>, got %r" % fetch_type)
        if_none_match = self.header("If-None-Match", required=False)
        if if_none_match == "":
            raise Reject(400, "header If-None-Match is empty")
        self.header("X-Goog-Firebase-Installations-Auth")
        if not isinstance(body, dict):
            raise Reject(400, "the body must be a JSON object")
        self.no_unknown_fields(body, FETCH_REQUIRED + FETCH_OPTIONAL + ["customSignals", "analyticsUserProperties"])
        for name in FETCH_REQUIRED:
            self.string_field(body, name)
        for name in FETCH_OPTIONAL:
            self.string_field(body, name, required=False)
        if "customSignals" in body:
            signals = body["customSignals"]
            if not isinstance(signals, dict):
                raise Reject(400, "field customSignals must be an object, got %s" % kind(signals))
            if not signals:
                raise Reject(400, "field customSignals is empty (leave it out instead)")
            if len(signals) > 100:
                raise Reject(400, "customSignals has %d entries, at most 100 allowed" % len(signals))
            for key, value in signals.items():
                if not isinstance(value, str):
                    raise Reject(400, "customSignals.%s must be a string, got %s" % (key, kind(value)))
                if not key or len(key) > 250:
                    raise Reject(400, "customSignals key %r must be 1-250 characters" % key)
                if len(value) > 500:
                    raise Reject(400, "customSignals.%s is %d characters, at most 500" % (key, len(value)))
        token, fid, installation = self.valid_auth_token()
        if body["appInstanceId"] != fid:
            raise Reject(400, "field appInstanceId %r is not the installation %r of the auth token"
                         % (body["appInstanceId"], fid))
        if body["appInstanceIdToken"] != token:
            raise Reject(400, "field appInstanceIdToken differs from header X-Goog-Firebase-Installations-Auth")
        self.check_app_id(m, body["appId"], installation)
        retry_after = m.get("retryAfter")
        forced(m, "fetchStatus", "fetch", {"Retry-After": str(retry_after)} if retry_after is not None else None)
        template = device_template(m)
        state = m.get("fetchState")
        if state == "NO_TEMPLATE" or (state is None and template is None):
            return 200, {"state": "NO_TEMPLATE"}, {}
        template = template or {"version": 0, "entries": {}}
        version = int(template.get("version", 0))
        etag = etag_of(version)
        if state == "EMPTY_CONFIG":
            return 200, {"state": "EMPTY_CONFIG", "templateVersion": str(version)}, {"ETag": etag}
        if state is not None:
            raise Reject(500, "mode.json: unknown fetchState %r" % state, forced=True)
        if if_none_match == etag:
            if m.get("fetchAnswer304"):
                return 304, None, {"ETag": etag}
            return 200, {"state": "NO_CHANGE"}, {"ETag": etag}
        answer = {k: v for k, v in template.items() if k not in ("version", "entries")}
        answer.update({"entries": template.get("entries", {}), "state": "UPDATE", "templateVersion": str(version)})
        return 200, answer, {"ETag": etag}

    def api_realtime(self, m, match, query, body):
        project = self.check_remote_config_call(m, match, query)
        streaming = self.header("X-Accept-Response-Streaming")
        if streaming != "true":
            raise Reject(400, "header X-Accept-Response-Streaming must be true, got %r" % streaming)
        if not self.header("If-None-Match"):
            raise Reject(400, "header If-None-Match is empty (send the ETag or *)")
        self.header("X-Goog-Firebase-Installations-Auth")
        if not isinstance(body, dict):
            raise Reject(400, "the body must be a JSON object")
        self.no_unknown_fields(body, REALTIME_FIELDS)
        for name in REALTIME_FIELDS:
            self.string_field(body, name)
        if body["project"] != project:
            raise Reject(400, "field project %r differs from the path's %r" % (body["project"], project))
        if body["namespace"] != "firebase":
            raise Reject(400, "field namespace must be firebase, got %r" % body["namespace"])
        if not re.match(r"^[0-9]+$", body["lastKnownVersionNumber"]):
            raise Reject(400, "field lastKnownVersionNumber must be digits, got %r" % body["lastKnownVersionNumber"])
        token, fid, installation = self.valid_auth_token()
        if body["appInstanceId"] != fid:
            raise Reject(400, "field appInstanceId %r is not the installation %r of the auth token"
                         % (body["appInstanceId"], fid))
        self.check_app_id(m, body["appId"], installation)
        forced(m, "realtimeStatus", "realtime")
        return 200, None, {}

    def api_unknown(self, m, match, query, body):
        raise Reject(404, "no such API: %s %s" % (self.command, self.path))

    # --- dispatch ------------------------------------------------------------------------------

    def serve(self, method):
        offset = realtime_size()  # a stream delivers every line appended from now on
        raw = self.read_raw_body()
        split = urlsplit(self.path)
        path = unquote(split.path)
        query = dict(parse_qsl(split.query, keep_blank_values=True))
        api, match = "unknown", None
        admin_route = admin.route(method, path)
        if admin_route is not None:
            self.serve_admin(method, query, raw, *admin_route)
            return
        if method == "POST":
            for name, pattern in ROUTES:
                match = pattern.match(path)
                if match:
                    api = name
                    break
        body_problem = None
        try:
            if self.headers.get("Content-Encoding", "").lower() == "gzip":
                raw = gzip.decompress(raw)
            text = raw.decode("utf-8")
        except (OSError, EOFError, UnicodeDecodeError) as error:
            text, body_problem = raw.decode("latin-1"), "the body is not (gzip of) UTF-8: %s" % error
        try:
            body = json.loads(text) if text else None
        except ValueError as error:
            body = text
            body_problem = body_problem or "the body is not valid JSON: %s" % error
        extra_headers, stream = {}, None
        try:
            m = read_mode()
            if body_problem and api != "unknown":
                raise Reject(400, body_problem)
            if api != "unknown" and body is None:
                raise Reject(400, "missing body (a JSON object)")
            status, answer, extra_headers = getattr(self, "api_" + api)(m, match, query, body)
            problem = None
        except Reject as reject:
            status, extra_headers = reject.status, reject.headers
            problem = None if reject.forced else reject.message
            answer = {"error": {"code": reject.status, "message": reject.message,
                                "status": STATUS_NAMES.get(reject.status, "UNKNOWN")}}
        record = {"api": api, "method": method, "path": self.path, "query": query,
                  "headers": {name.lower(): value for name, value in self.headers.items()},
                  "body": body, "status": status, "problem": problem, "time": time.time()}
        if api == "realtime" and status == 200:
            stream = next(stream_ids)
            record["stream"] = stream
        append_line("requests.log", record)

        if stream is not None:
            self.stream(stream, offset, m, body)
            return
        self.send_response(status)
        for name, value in extra_headers.items():
            self.send_header(name, value)
        if status == 304:
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = json.dumps(answer).encode()
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def serve_admin(self, method, query, raw, api, match):
        """One request to Google's admin APIs (google_admin.py): logged like the others, answered
        gzip-compressed (with the template's ETag, where there is one) when the client accepts gzip."""
        problem, logged, body = None, None, None
        extra_headers, with_etag = {}, False
        try:
            if self.headers.get("Content-Encoding", "").lower() == "gzip":
                raw = gzip.decompress(raw)
            text = raw.decode("utf-8")
        except (OSError, EOFError, UnicodeDecodeError) as error:
            text, problem = raw.decode("latin-1"), "the body is not (gzip of) UTF-8: %s" % error
        if api == "oauth-token":
            # Form-encoded: logged as the text sent, and parsed (strictly) for the handler.
            logged = text or None
            try:
                body = dict(parse_qsl(text, keep_blank_values=True, strict_parsing=True)) if text else {}
            except ValueError:
                body = {}
        elif text:
            try:
                body = logged = json.loads(text)
            except ValueError as error:
                logged, problem = text, problem or "Invalid JSON payload received: %s" % error
        try:
            m = read_mode()
            if problem:
                raise AdminError(400, problem, oauth="invalid_request" if api == "oauth-token" else None)
            status, answer, extra_headers, with_etag = admin.handle(api, match, m, query, self.headers, body)
        except Reject as reject:  # mode.json unreadable
            status, problem = reject.status, reject.message
            answer = {"error": {"code": status, "message": reject.message, "status": "INTERNAL"}}
        except AdminError as error:
            status, extra_headers, answer = error.status, error.headers, error.body()
            problem = None if error.forced else error.message
        except Exception as error:  # a bug in the fake: a 500 that names it beats a dropped connection
            status, problem = 500, "the fake failed: %s" % traceback.format_exc()
            answer = {"error": {"code": 500, "message": "the fake failed: %r" % error, "status": "INTERNAL"}}
        record = {"api": api, "method": method, "path": self.path, "query": query,
                  "headers": {name.lower(): value for name, value in self.headers.items()},
                  "body": logged, "status": status, "problem": problem, "time": time.time()}
        if api == "oauth-token" and isinstance(body, dict):
            record["form"] = body
        append_line("requests.log", record)
        data = json.dumps(answer).encode()
        gzip_ok = accepts_gzip(self.headers.get("Accept-Encoding", ""))
        if not (with_etag and gzip_ok):  # as Google does: the ETag only comes with gzip
            extra_headers = {k: v for k, v in extra_headers.items() if k != "ETag"}
        self.send_response(status)
        for name, value in extra_headers.items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        if gzip_ok:
            data = gzip.compress(data)
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def stream(self, stream, offset, m, body):
        self.send_response(200)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.close_connection = True
        reason = "client closed"
        try:
            template = device_template(m)
            current = int(template.get("version", 0)) if isinstance(template, dict) else 0
            if current > int(body["lastKnownVersionNumber"]):
                self.chunk(json.dumps({"latestTemplateVersionNumber": str(current)}).encode() + b"\n")
            pending = b""
            while True:
                try:
                    with open(path_in_dir("realtime.jsonl"), "rb") as f:
                        f.seek(offset)
                        data = f.read()
                except FileNotFoundError:
                    data = b""
                offset += len(data)
                pending += data
                while b"\n" in pending:
                    line, pending = pending.split(b"\n", 1)
                    line = line.strip()
                    if not line:
                        continue
                    try:
                        message = json.loads(line)
                    except (ValueError, RecursionError):  # garbage and deep nesting go out as they are
                        message = None
                    if isinstance(message, dict) and message.get("_drop"):
                        reason = "dropped"
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                    if isinstance(message, dict) and message.get("_close"):
                        reason = "closed"
                        self.wfile.write(b"0\r\n\r\n")
                        self.wfile.flush()
                        return
                    self.chunk(line + b"\n")
                readable, _, _ = select.select([self.connection], [], [], 0.05)
                if readable and not self.connection.recv(65536):
                    return  # the client hung up
        except OSError:
            return
        finally:
            append_line("streams.log", {"stream": stream, "event": "end", "reason": reason, "time": time.time()})

    def chunk(self, data):
        self.wfile.write(b"%x\r\n" % len(data) + data + b"\r\n")
        self.wfile.flush()


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()

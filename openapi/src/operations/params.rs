//! The query and path parameters of the API's operations. Names and types are the API's;
//! the wording is ours.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum In {
    Path,
    Query,
}

#[derive(Debug)]
pub(crate) struct Param {
    pub name: &'static str,
    pub location: In,
    /// "string", "integer" or "boolean".
    pub kind: &'static str,
    pub description: &'static str,
}

const fn query(name: &'static str, kind: &'static str, description: &'static str) -> Param {
    Param {
        name,
        location: In::Query,
        kind,
        description,
    }
}

pub(crate) static NAME: Param = Param {
    name: "name",
    location: In::Path,
    kind: "string",
    description: "The name of the object.",
};
pub(crate) static NAMESPACE: Param = Param {
    name: "namespace",
    location: In::Path,
    kind: "string",
    description: "The namespace the object lives in: the scope of its name and of access rules.",
};
pub(crate) static PRETTY: Param = query(
    "pretty",
    "string",
    "When 'true', the response is indented for people to read.",
);

static DRY_RUN: Param = query(
    "dryRun",
    "string",
    "When set, the request is checked and processed but nothing is stored. The one valid value is All (every dry-run stage).",
);
static FIELD_MANAGER: Param = query(
    "fieldManager",
    "string",
    "Who is making the change, as recorded in metadata.managedFields. At most 128 printable characters.",
);
pub(crate) static FIELD_VALIDATION: Param = query(
    "fieldValidation",
    "string",
    "What the server does with fields of the body that the schema does not know, or that appear twice: Ignore drops them silently, Warn (the default) drops them and says so in a Warning header for each, Strict rejects the request.",
);
static FORCE: Param = query(
    "force",
    "boolean",
    "Server-side apply only: take over the fields other managers own instead of failing with a conflict. Leave unset for other patch types.",
);

static ALLOW_WATCH_BOOKMARKS: Param = query(
    "allowWatchBookmarks",
    "boolean",
    "Lets a watch send BOOKMARK events, which carry only a newer resourceVersion. Servers may send them when they choose; ignored for other requests.",
);
static CONTINUE: Param = query(
    "continue",
    "string",
    "The token a previous page of a paged list returned: the next page continues from that snapshot. An expired token fails with 410 Gone.",
);
static FIELD_SELECTOR: Param = query(
    "fieldSelector",
    "string",
    "Restricts the result to objects whose fields match, e.g. metadata.name=web. Everything when unset.",
);
static LABEL_SELECTOR: Param = query(
    "labelSelector",
    "string",
    "Restricts the result to objects whose labels match. Everything when unset.",
);
static LIMIT: Param = query(
    "limit",
    "integer",
    "The most items to return in one page; when more remain the list metadata carries a continue token for the next page.",
);
static RESOURCE_VERSION: Param = query(
    "resourceVersion",
    "string",
    "Which version of the data the request may be served from: unset for the latest, \"0\" for any (the cache), other values as resourceVersionMatch says. A watch starts after this version.",
);
static RESOURCE_VERSION_MATCH: Param = query(
    "resourceVersionMatch",
    "string",
    "How resourceVersion is applied to a list: NotOlderThan or Exact. Requires resourceVersion.",
);
static SEND_INITIAL_EVENTS: Param = query(
    "sendInitialEvents",
    "boolean",
    "With watch=true, begins the stream with the current state as ADDED events, then a bookmark marking their end. Requires resourceVersionMatch=NotOlderThan.",
);
static TIMEOUT_SECONDS: Param = query(
    "timeoutSeconds",
    "integer",
    "How long a list or watch call may run, whether or not anything happens.",
);
static WATCH: Param = query(
    "watch",
    "boolean",
    "Streams changes (added, modified, deleted) to the selected objects instead of listing them. Start from a resourceVersion.",
);

static GRACE_PERIOD_SECONDS: Param = query(
    "gracePeriodSeconds",
    "integer",
    "Seconds before the object is removed; must be non-negative, and zero deletes at once. Unset means the kind's default.",
);
static IGNORE_STORE_READ_ERROR: Param = query(
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "boolean",
    "Deletes an object that cannot be read from storage (it fails to decode or decrypt), skipping finalizers and preconditions. Dangerous: needs extra permission.",
);
static ORPHAN_DEPENDENTS: Param = query(
    "orphanDependents",
    "boolean",
    "Deprecated: use propagationPolicy. Whether dependents are orphaned (true) or deleted by the garbage collector (false).",
);
static PROPAGATION_POLICY: Param = query(
    "propagationPolicy",
    "string",
    "What happens to dependents: Orphan leaves them, Background deletes the object at once and its dependents afterwards, Foreground deletes the dependents first. The kind decides when unset.",
);

static CONTAINER: Param = query(
    "container",
    "string",
    "Which container's log to read; may be left out when the pod has one container.",
);
static FOLLOW: Param = query("follow", "boolean", "Keeps streaming the log as it grows.");
static LIMIT_BYTES: Param = query(
    "limitBytes",
    "integer",
    "Stops after this many bytes of log (the last line may be cut).",
);
static PREVIOUS: Param = query(
    "previous",
    "boolean",
    "Reads the log of the container's previous, terminated run.",
);
static SINCE_SECONDS: Param = query(
    "sinceSeconds",
    "integer",
    "Only log lines newer than this many seconds.",
);
static TAIL_LINES: Param = query(
    "tailLines",
    "integer",
    "Only this many lines from the end of the log.",
);
static TIMESTAMPS: Param = query(
    "timestamps",
    "boolean",
    "Starts every log line with its RFC3339 timestamp.",
);

pub(crate) static WRITE: &[&Param] = &[&DRY_RUN, &FIELD_MANAGER, &FIELD_VALIDATION];
pub(crate) static PATCH: &[&Param] = &[&DRY_RUN, &FIELD_MANAGER, &FIELD_VALIDATION, &FORCE];
pub(crate) static READ: &[&Param] = &[];
pub(crate) static LIST: &[&Param] = &[
    &ALLOW_WATCH_BOOKMARKS,
    &CONTINUE,
    &FIELD_SELECTOR,
    &LABEL_SELECTOR,
    &LIMIT,
    &RESOURCE_VERSION,
    &RESOURCE_VERSION_MATCH,
    &SEND_INITIAL_EVENTS,
    &TIMEOUT_SECONDS,
    &WATCH,
];
pub(crate) static DELETE: &[&Param] = &[
    &DRY_RUN,
    &GRACE_PERIOD_SECONDS,
    &IGNORE_STORE_READ_ERROR,
    &ORPHAN_DEPENDENTS,
    &PROPAGATION_POLICY,
];
pub(crate) static DELETE_COLLECTION: &[&Param] = &[
    &CONTINUE,
    &DRY_RUN,
    &FIELD_SELECTOR,
    &GRACE_PERIOD_SECONDS,
    &IGNORE_STORE_READ_ERROR,
    &LABEL_SELECTOR,
    &LIMIT,
    &ORPHAN_DEPENDENTS,
    &PROPAGATION_POLICY,
    &RESOURCE_VERSION,
    &RESOURCE_VERSION_MATCH,
    &SEND_INITIAL_EVENTS,
    &TIMEOUT_SECONDS,
];
pub(crate) static LOG: &[&Param] = &[
    &CONTAINER,
    &FOLLOW,
    &LIMIT_BYTES,
    &PREVIOUS,
    &SINCE_SECONDS,
    &TAIL_LINES,
    &TIMESTAMPS,
];

/// The proxied path of a proxy subresource's `{path}` route.
pub(crate) static PROXY_PATH: Param = Param {
    name: "path",
    location: In::Path,
    kind: "string",
    description: "The path below `proxy/` to request from the far end.",
};
static PROXY_PATH_QUERY: Param = query(
    "path",
    "string",
    "The path to request from the far end, when the route carries none.",
);
static EXEC_COMMAND: Param = query(
    "command",
    "string",
    "The command to run and its arguments, one parameter each; not run by a shell.",
);
static STREAM_CONTAINER: Param = query(
    "container",
    "string",
    "Which container; may be left out when the pod has one container.",
);
static STREAM_STDIN: Param = query(
    "stdin",
    "boolean",
    "Whether the client's standard input is passed to the container.",
);
static STREAM_STDOUT: Param = query(
    "stdout",
    "boolean",
    "Whether the container's standard output is passed back.",
);
static STREAM_STDERR: Param = query(
    "stderr",
    "boolean",
    "Whether the container's standard error is passed back.",
);
static STREAM_TTY: Param = query(
    "tty",
    "boolean",
    "Whether the container's process runs in a terminal.",
);
static PORTS: Param = query(
    "ports",
    "integer",
    "The pod's ports to forward connections to.",
);

static EXEC_OPTIONS: &[&Param] = &[
    &EXEC_COMMAND,
    &STREAM_CONTAINER,
    &STREAM_STDERR,
    &STREAM_STDIN,
    &STREAM_STDOUT,
    &STREAM_TTY,
];
static ATTACH_OPTIONS: &[&Param] = &[
    &STREAM_CONTAINER,
    &STREAM_STDERR,
    &STREAM_STDIN,
    &STREAM_STDOUT,
    &STREAM_TTY,
];
static PORT_FORWARD_OPTIONS: &[&Param] = &[&PORTS];
static PROXY_OPTIONS: &[&Param] = &[&PROXY_PATH_QUERY];

/// The query parameters of a connect options kind (its fields, as upstream documents them).
pub(crate) fn connect_options(kind: &str) -> &'static [&'static Param] {
    match kind {
        "PodExecOptions" => EXEC_OPTIONS,
        "PodAttachOptions" => ATTACH_OPTIONS,
        "PodPortForwardOptions" => PORT_FORWARD_OPTIONS,
        "PodProxyOptions" | "ServiceProxyOptions" | "NodeProxyOptions" => PROXY_OPTIONS,
        _ => &[],
    }
}

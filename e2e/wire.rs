//! The JSON wire format, byte for byte, against the real binary: what kube-apiserver writes
//! for a created object, a get, a list, a 404 Status, a Table, a watch event and a curl
//! user's indented answer. The expected bytes are written by hand from upstream's Go types
//! (field order), encoding/json (newline after a compact body, none after an indented one)
//! and upstream's negotiation; only values the server picks (uid, resourceVersion,
//! timestamps, column descriptions) are taken from the answer.

mod support;

use serde_json::{json, Value};
use support::{start, Response, Server};

const CM: &str = "/api/v1/namespaces/default/configmaps";

fn created(s: &Server) -> Response {
    let body = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "wire", "labels": {"tier": "web", "app": "demo"}},
        "data": {"b": "2", "a": "1"},
    });
    // The field manager is the User-Agent's product name, as upstream derives it.
    let bytes = serde_json::to_vec(&body).unwrap_or_default();
    let headers = [
        ("Content-Type", "application/json"),
        ("User-Agent", "wire-test/v0.1 (linux/amd64)"),
    ];
    let r = s.request("POST", CM, &headers, &bytes);
    assert_eq!(r.status, 201, "{}", r.body);
    r
}

/// The values the server chose, read from an answer.
struct Chosen {
    uid: String,
    rv: String,
    created: String,
}

fn chosen(obj: &Value) -> Chosen {
    let meta = &obj["metadata"];
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    Chosen {
        uid: text(&meta["uid"]),
        rv: text(&meta["resourceVersion"]),
        created: text(&meta["creationTimestamp"]),
    }
}

/// The ConfigMap's metadata and data members as upstream writes them, after `{`.
fn members(c: &Chosen) -> String {
    format!(
        concat!(
            r#""metadata":{{"name":"wire","namespace":"default","uid":"{uid}","#,
            r#""resourceVersion":"{rv}","creationTimestamp":"{ts}","#,
            r#""labels":{{"app":"demo","tier":"web"}},"managedFields":[{{"manager":"wire-test","#,
            r#""operation":"Update","apiVersion":"v1","time":"{ts}","fieldsType":"FieldsV1","#,
            r#""fieldsV1":{{"f:data":{{".":{{}},"f:a":{{}},"f:b":{{}}}},"#,
            r#""f:metadata":{{"f:labels":{{".":{{}},"f:app":{{}},"f:tier":{{}}}}}}}}}}]}},"#,
            r#""data":{{"a":"1","b":"2"}}"#
        ),
        uid = c.uid,
        rv = c.rv,
        ts = c.created,
    )
}

#[test]
fn objects_lists_statuses_tables_and_watches_as_upstream_writes_them() {
    let s = start();
    // The watch below starts here. Not from "1": the watch cache keeps a window of recent
    // events, and a start under that window is rightly 410 Gone.
    let before = s.get(CM).json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let create = created(&s);
    let c = chosen(&create.json());
    let object = format!(
        r#"{{"kind":"ConfigMap","apiVersion":"v1",{}}}"#,
        members(&c)
    );

    // Create, then get (the stored bytes, answered as they are): the same bytes and a
    // newline, as json.Encoder ends them.
    assert_eq!(create.body, format!("{object}\n"));
    let get = s.get(&format!("{CM}/wire"));
    assert_eq!(get.status, 200);
    assert_eq!(get.body, format!("{object}\n"));

    // A list: kind, apiVersion, metadata, items; the items without kind and apiVersion.
    let list = s.get(&format!("{CM}?labelSelector=app%3Ddemo"));
    let list_rv = list.json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(
        list.body,
        format!(
            r#"{{"kind":"ConfigMapList","apiVersion":"v1","metadata":{{"resourceVersion":"{list_rv}"}},"items":[{{{}}}]}}"#,
            members(&c)
        ) + "\n"
    );

    // A 404: a metav1.Status in its Go order.
    let missing = s.get(&format!("{CM}/nope"));
    assert_eq!(missing.status, 404);
    assert_eq!(
        missing.body,
        concat!(
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","#,
            r#""message":"configmaps \"nope\" not found","reason":"NotFound","#,
            r#""details":{"name":"nope","kind":"configmaps"},"code":404}"#,
            "\n"
        )
    );

    // A Table (kubectl get): kind, apiVersion, metadata, columnDefinitions, rows; each
    // column name, type, format, description, priority; each row cells then object, the
    // object a PartialObjectMetadata in its own order.
    let table = s.request(
        "GET",
        &format!("{CM}/wire"),
        &[("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")],
        b"",
    );
    assert_eq!(table.status, 200, "{}", table.body);
    let parsed = table.json();
    let description = |i: usize| {
        let text = parsed["columnDefinitions"][i]["description"].clone();
        serde_json::to_string(&text).unwrap_or_default()
    };
    let age = parsed["rows"][0]["cells"][2].as_str().unwrap_or_default();
    let expected = format!(
        concat!(
            r#"{{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{{"resourceVersion":"{rv}"}},"#,
            r#""columnDefinitions":[{{"name":"Name","type":"string","format":"name","description":{d0},"priority":0}},"#,
            r#"{{"name":"Data","type":"string","format":"","description":{d1},"priority":0}},"#,
            r#"{{"name":"Age","type":"string","format":"","description":{d2},"priority":0}}],"#,
            r#""rows":[{{"cells":["wire",2,"{age}"],"object":{{"kind":"PartialObjectMetadata","#,
            r#""apiVersion":"meta.k8s.io/v1","metadata":{{"name":"wire","namespace":"default","#,
            r#""uid":"{uid}","resourceVersion":"{rv}","creationTimestamp":"{ts}","#,
            r#""labels":{{"app":"demo","tier":"web"}},"managedFields":[{{"manager":"wire-test","#,
            r#""operation":"Update","apiVersion":"v1","time":"{ts}","fieldsType":"FieldsV1","#,
            r#""fieldsV1":{{"f:data":{{".":{{}},"f:a":{{}},"f:b":{{}}}},"#,
            r#""f:metadata":{{"f:labels":{{".":{{}},"f:app":{{}},"f:tier":{{}}}}}}}}}}]}}}}}}]}}"#,
            "\n"
        ),
        rv = c.rv,
        uid = c.uid,
        ts = c.created,
        age = age,
        d0 = description(0),
        d1 = description(1),
        d2 = description(2),
    );
    assert_eq!(table.body, expected);

    // A watch from before the create: the event is a WatchEvent (type, object) and a
    // newline, the object as a get writes it.
    let watch = s.get(&format!(
        "{CM}?watch=true&resourceVersion={before}&timeoutSeconds=1&labelSelector=app%3Ddemo"
    ));
    assert_eq!(watch.status, 200);
    assert_eq!(
        watch.body,
        format!(r#"{{"type":"ADDED","object":{object}}}"#) + "\n"
    );
    // A watch from now (no resourceVersion) starts with the current state, and no bookmark
    // follows it unless the client asked for initial events and bookmarks.
    let legacy = s.get(&format!(
        "{CM}?watch=true&timeoutSeconds=1&labelSelector=app%3Ddemo"
    ));
    assert_eq!(
        legacy.body,
        format!(r#"{{"type":"ADDED","object":{object}}}"#) + "\n"
    );
}

#[test]
fn curl_gets_indented_answers() {
    let s = start();
    let c = chosen(&created(&s).json());
    let get = |headers: &[(&str, &str)], query: &str| {
        s.request("GET", &format!("{CM}/wire{query}"), headers, b"")
            .body
    };
    let curl = [("User-Agent", "curl/8.5.0")];
    // json.MarshalIndent: two spaces, empty objects kept `{}`, no final newline.
    let indented = format!(
        concat!(
            "{{\n",
            "  \"kind\": \"ConfigMap\",\n",
            "  \"apiVersion\": \"v1\",\n",
            "  \"metadata\": {{\n",
            "    \"name\": \"wire\",\n",
            "    \"namespace\": \"default\",\n",
            "    \"uid\": \"{uid}\",\n",
            "    \"resourceVersion\": \"{rv}\",\n",
            "    \"creationTimestamp\": \"{ts}\",\n",
            "    \"labels\": {{\n",
            "      \"app\": \"demo\",\n",
            "      \"tier\": \"web\"\n",
            "    }},\n",
            "    \"managedFields\": [\n",
            "      {{\n",
            "        \"manager\": \"wire-test\",\n",
            "        \"operation\": \"Update\",\n",
            "        \"apiVersion\": \"v1\",\n",
            "        \"time\": \"{ts}\",\n",
            "        \"fieldsType\": \"FieldsV1\",\n",
            "        \"fieldsV1\": {{\n",
            "          \"f:data\": {{\n",
            "            \".\": {{}},\n",
            "            \"f:a\": {{}},\n",
            "            \"f:b\": {{}}\n",
            "          }},\n",
            "          \"f:metadata\": {{\n",
            "            \"f:labels\": {{\n",
            "              \".\": {{}},\n",
            "              \"f:app\": {{}},\n",
            "              \"f:tier\": {{}}\n",
            "            }}\n",
            "          }}\n",
            "        }}\n",
            "      }}\n",
            "    ]\n",
            "  }},\n",
            "  \"data\": {{\n",
            "    \"a\": \"1\",\n",
            "    \"b\": \"2\"\n",
            "  }}\n",
            "}}"
        ),
        uid = c.uid,
        rv = c.rv,
        ts = c.created,
    );
    assert_eq!(get(&curl, ""), indented);
    assert_eq!(get(&[("User-Agent", "Wget/1.21")], ""), indented);
    assert_eq!(get(&[], "?pretty=true"), indented);
    // An explicit answer wins over the user agent; a value that is not a bool is false.
    let compact = format!(
        r#"{{"kind":"ConfigMap","apiVersion":"v1",{}}}"#,
        members(&c)
    ) + "\n";
    assert_eq!(get(&curl, "?pretty=false"), compact);
    assert_eq!(get(&curl, "?pretty=yes"), compact);
    assert_eq!(get(&[("User-Agent", "kubectl/v1.35.0")], ""), compact);

    // Errors too: the 404 a curl user reads.
    let missing = s.request("GET", &format!("{CM}/nope"), &curl, b"");
    assert_eq!(
        missing.body,
        concat!(
            "{\n",
            "  \"kind\": \"Status\",\n",
            "  \"apiVersion\": \"v1\",\n",
            "  \"metadata\": {},\n",
            "  \"status\": \"Failure\",\n",
            "  \"message\": \"configmaps \\\"nope\\\" not found\",\n",
            "  \"reason\": \"NotFound\",\n",
            "  \"details\": {\n",
            "    \"name\": \"nope\",\n",
            "    \"kind\": \"configmaps\"\n",
            "  },\n",
            "  \"code\": 404\n",
            "}"
        )
    );
}

use std::sync::Arc;

use registry::Catalogue;

use super::*;

fn pods() -> Arc<ResourceInfo> {
    Catalogue::builtin()
        .lookup("", "v1", "pods")
        .expect("built-in pods")
}

/// 2024-05-01T12:00:00Z
fn noon() -> Now {
    DateTime::from_timestamp(1_714_564_800, 0).unwrap_or_default()
}

fn pod(name: &str, created: &str) -> Value {
    json!({
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": format!("uid-{name}"),
            "resourceVersion": "41",
            "creationTimestamp": created,
            "labels": {"app": "web"},
        },
        "spec": {
            "nodeName": "node-1",
            "containers": [{"name": "app", "image": "nginx"}],
        },
        "status": {
            "phase": "Running",
            "podIP": "10.0.0.7",
            "containerStatuses": [{
                "name": "app",
                "ready": true,
                "restartCount": 0,
                "state": {"running": {"startedAt": created}},
            }],
        },
    })
}

fn column_names(table: &Value) -> Vec<&str> {
    table["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .map(|c| c["name"].as_str().expect("name"))
        .collect()
}

fn rows(table: &Value) -> &Vec<Value> {
    table["rows"].as_array().expect("rows")
}

/// A resource whose only columns are the given JSONPath columns, as a custom resource's
/// additionalPrinterColumns will arrive.
fn with_paths(columns: &[(&str, &str)]) -> ResourceInfo {
    let mut info = pods().as_ref().clone();
    info.columns = columns
        .iter()
        .map(|(kind, path)| TableColumn {
            name: path.to_string(),
            kind: kind.to_string(),
            format: String::new(),
            description: String::new(),
            priority: 0,
            cell: Cell::Path(path.to_string()),
        })
        .collect();
    info
}

fn path_cells(columns: &[(&str, &str)], obj: &Value) -> Vec<Value> {
    let table = table_at(
        &with_paths(columns),
        std::slice::from_ref(obj),
        json!({}),
        IncludeObject::None,
        noon(),
    );
    rows(&table)[0]["cells"].as_array().expect("cells").clone()
}

#[test]
fn pod_list_prints_upstream_columns_and_cells_in_order() {
    let objects = [
        pod("web-1", "2024-05-01T11:55:00Z"),
        pod("web-2", "2024-05-01T11:57:30Z"),
    ];
    let table = table_at(&pods(), &objects, json!({}), IncludeObject::None, noon());

    assert_eq!(table["kind"], "Table");
    assert_eq!(table["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(
        column_names(&table),
        [
            "Name",
            "Ready",
            "Status",
            "Restarts",
            "Age",
            "IP",
            "Node",
            "Nominated Node",
            "Readiness Gates"
        ]
    );
    let columns = table["columnDefinitions"].as_array().expect("columns");
    let priorities: Vec<i64> = columns
        .iter()
        .map(|c| c["priority"].as_i64().expect("priority"))
        .collect();
    assert_eq!(priorities, [0, 0, 0, 0, 0, 1, 1, 1, 1]);
    assert_eq!(columns[0]["format"], "name");
    assert_eq!(columns[0]["type"], "string");
    assert_eq!(columns[1]["format"], "");
    assert!(columns
        .iter()
        .all(|c| c["description"].as_str().is_some_and(|d| !d.is_empty())));

    let rows = rows(&table);
    assert_eq!(rows.len(), 2);
    assert_eq!(
        rows[0]["cells"],
        json!(["web-1", "1/1", "Running", "0", "5m", "10.0.0.7", "node-1", "<none>", "<none>"])
    );
    assert_eq!(rows[1]["cells"][0], "web-2");
    assert_eq!(rows[1]["cells"][4], "2m30s");
    assert!(rows[0].get("object").is_none());
}

#[test]
fn public_table_ages_against_the_clock() {
    let objects = [
        pod("old", "2001-02-03T04:05:06Z"),
        pod("future", "2999-01-01T00:00:00Z"),
        pod("garbled", "yesterday"),
    ];
    let table = table(&pods(), &objects, None, IncludeObject::Metadata);
    let ages: Vec<&str> = rows(&table)
        .iter()
        .map(|r| r["cells"][4].as_str().expect("age"))
        .collect();
    assert!(ages[0].ends_with('y'), "{}", ages[0]);
    assert_eq!(ages[1], "<invalid>");
    assert_eq!(ages[2], "<unknown>");
}

#[test]
fn include_object_shapes_the_rows() {
    let objects = [pod("web-1", "2024-05-01T11:55:00Z")];
    let at = |include| table_at(&pods(), &objects, json!({}), include, noon());

    let none = at(IncludeObject::None);
    assert!(rows(&none)[0].get("object").is_none());

    let metadata = at(IncludeObject::Metadata);
    assert_eq!(
        rows(&metadata)[0]["object"],
        json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": objects[0]["metadata"],
        })
    );

    let object = at(IncludeObject::Object);
    assert_eq!(rows(&object)[0]["object"], objects[0]);
    // The object never changes the cells.
    assert_eq!(rows(&object)[0]["cells"], rows(&none)[0]["cells"]);
}

#[test]
fn include_object_parses_upstream_values() {
    let parse = |v| IncludeObject::try_parse(v).ok();
    assert_eq!(parse(None), Some(IncludeObject::Metadata));
    assert_eq!(parse(Some("")), Some(IncludeObject::Metadata));
    assert_eq!(parse(Some("Metadata")), Some(IncludeObject::Metadata));
    assert_eq!(parse(Some("None")), Some(IncludeObject::None));
    assert_eq!(parse(Some("Object")), Some(IncludeObject::Object));
    // Upstream's values are case-sensitive.
    assert_eq!(parse(Some("object")), None);
    match IncludeObject::try_parse(Some("All")) {
        Err(RegistryError::BadRequest(message)) => assert_eq!(
            message,
            "Unable to convert to Table as requested: includeObject: Invalid value: \"All\": \
             must be 'Metadata', 'Object', 'None', or empty"
        ),
        other => panic!("want BadRequest, got {other:?}"),
    }
    assert!(matches!(
        IncludeObject::try_parse(Some("None")),
        Ok(IncludeObject::None)
    ));
}

#[test]
fn list_metadata_is_copied() {
    let meta = json!({
        "resourceVersion": "1234",
        "continue": "token",
        "remainingItemCount": 7,
        "selfLink": "/api/v1/pods",
    });
    let t = table(&pods(), &[], Some(&meta), IncludeObject::Metadata);
    assert_eq!(
        t["metadata"],
        json!({"resourceVersion": "1234", "continue": "token", "remainingItemCount": 7})
    );
    assert_eq!(t["rows"], json!([]));
    assert_eq!(column_names(&t).len(), 9);

    // Empty and absent fields stay out, as upstream's omitempty leaves them.
    let sparse = json!({"resourceVersion": "9", "continue": "", "remainingItemCount": null});
    let t = table(&pods(), &[], Some(&sparse), IncludeObject::Metadata);
    assert_eq!(t["metadata"], json!({"resourceVersion": "9"}));
    let t = table(&pods(), &[], None, IncludeObject::Metadata);
    assert_eq!(t["metadata"], json!({}));
}

#[test]
fn watch_event_is_a_one_row_table() {
    let obj = pod("web-1", "2024-05-01T11:55:00Z");
    let event = table_for_watch_event(&pods(), &obj, IncludeObject::Metadata);
    assert_eq!(event["kind"], "Table");
    assert_eq!(event["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(event["metadata"], json!({"resourceVersion": "41"}));
    assert_eq!(column_names(&event).len(), 9);
    let rows = rows(&event);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["cells"][0], "web-1");
    assert_eq!(rows[0]["cells"][1], "1/1");
    assert_eq!(rows[0]["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(rows[0]["object"]["metadata"]["uid"], "uid-web-1");

    let bare = table_for_watch_event(&pods(), &json!({}), IncludeObject::None);
    assert_eq!(bare["metadata"], json!({}));
    assert_eq!(bare["rows"][0]["cells"][0], "");
}

#[test]
fn odd_objects_never_panic() {
    let odd = [
        Value::Null,
        json!(1),
        json!("pod"),
        json!([]),
        json!({}),
        json!({"metadata": 5}),
        json!({"metadata": {"name": 5, "creationTimestamp": 7}}),
        json!({"metadata": {"creationTimestamp": "2024-13-40T99:99:99Z"}}),
        json!({"metadata": null, "spec": [], "status": "broken"}),
        json!({"spec": {"containers": "nope"}, "status": {"conditions": {}}}),
    ];
    for info in Catalogue::builtin().all().iter() {
        for include in [
            IncludeObject::None,
            IncludeObject::Metadata,
            IncludeObject::Object,
        ] {
            let t = table(info, &odd, Some(&json!("not a map")), include);
            assert_eq!(t["metadata"], json!({}));
            let rows = rows(&t);
            assert_eq!(rows.len(), odd.len(), "{}", info.plural);
            for row in rows {
                let cells = row["cells"].as_array().expect("cells");
                assert_eq!(cells.len(), info.columns.len(), "{}", info.plural);
                if include == IncludeObject::Metadata {
                    assert!(row["object"]["metadata"].is_object());
                }
            }
            // Without a string name in its metadata a row's name is Go's zero string.
            if let Some(name_at) = info
                .columns
                .iter()
                .position(|c| matches!(c.cell, Cell::Name))
            {
                for row in &rows[..7] {
                    assert_eq!(row["cells"][name_at], "", "{}", info.plural);
                }
            }
        }
        for obj in &odd {
            table_for_watch_event(info, obj, IncludeObject::Metadata);
        }
    }
    let ages = table(&pods(), &odd, None, IncludeObject::None);
    assert!(rows(&ages).iter().all(|r| r["cells"][4] == "<unknown>"));
}

#[test]
fn times_ahead_of_now_allow_upstream_skew() {
    let now = noon();
    let ahead = |d: TimeDelta| since(now + d, now);
    assert_eq!(ahead(TimeDelta::zero()), "0s");
    assert_eq!(ahead(TimeDelta::milliseconds(1999)), "0s");
    assert_eq!(ahead(TimeDelta::seconds(2)), "<invalid>");
    assert_eq!(since(now - TimeDelta::seconds(45), now), "45s");
}

#[test]
fn path_cells_follow_dotted_paths_and_indices() {
    let obj = json!({
        "metadata": {"name": "x", "labels": {"app.kubernetes.io/name": "web"}},
        "spec": {
            "replicas": 3,
            "type": "ClusterIP",
            "ports": [{"port": 80}, {"port": 443}],
            "paused": false,
            "hosts": ["a", "b"],
            "selector": {"app": "web"},
            "empty": [],
            "nothing": null,
        },
    });
    let cells = path_cells(
        &[
            ("integer", ".spec.replicas"),
            ("string", ".spec.type"),
            ("integer", ".spec.ports[1].port"),
            ("integer", ".spec.ports[-1].port"),
            ("integer", ".spec.ports[2].port"),
            ("string", ".spec.ports[*].port"),
            ("boolean", ".spec.paused"),
            ("string", ".spec.paused"),
            ("string", ".spec.replicas"),
            ("string", ".spec.hosts"),
            ("string", ".spec.selector"),
            ("string", ".spec.missing"),
            ("string", ".spec.nothing"),
            ("string", ".spec.empty"),
            ("string", ".metadata.labels['app.kubernetes.io/name']"),
            ("string", ".metadata.labels.app\\.kubernetes\\.io/name"),
            ("string", "{.metadata.name}"),
            ("string", "$.metadata.name"),
            ("string", "metadata.name"),
        ],
        &obj,
    );
    assert_eq!(
        cells,
        [
            json!(3),
            json!("ClusterIP"),
            json!(443),
            json!(443),
            json!("<none>"),
            json!("80"),
            json!(false),
            json!("false"),
            json!("3"),
            json!("a,b"),
            json!(r#"{"app":"web"}"#),
            json!("<none>"),
            json!("<none>"),
            json!("<none>"),
            json!("web"),
            json!("web"),
            json!("x"),
            json!("x"),
            json!("x"),
        ]
    );
}

#[test]
fn path_cells_take_the_column_type() {
    let obj = json!({
        "metadata": {"creationTimestamp": "2024-05-01T11:00:00Z"},
        "spec": {"ratio": 1.5, "count": 2.9, "flag": "yes", "when": "soon", "n": 4},
    });
    let cells = path_cells(
        &[
            ("integer", ".spec.count"),
            ("integer", ".spec.flag"),
            ("number", ".spec.ratio"),
            ("number", ".spec.n"),
            ("number", ".spec.flag"),
            ("boolean", ".spec.flag"),
            ("date", ".metadata.creationTimestamp"),
            ("date", ".spec.when"),
            ("date", ".spec.n"),
        ],
        &obj,
    );
    assert_eq!(
        cells,
        [
            json!(2),
            json!("<none>"),
            json!(1.5),
            json!(4),
            json!("<none>"),
            json!("<none>"),
            json!("60m"),
            json!("<invalid>"),
            json!("<none>"),
        ]
    );
}

#[test]
fn path_filters_select_matching_elements() {
    let obj = json!({
        "status": {
            "conditions": [
                {"type": "Progressing", "status": "True", "age": 5},
                {"type": "Ready", "status": "False", "reason": "Waiting", "age": 2},
                {"type": "Synced", "status": "True", "age": 2},
            ],
        },
    });
    let cells = path_cells(
        &[
            ("string", r#".status.conditions[?(@.type=="Ready")].status"#),
            ("string", ".status.conditions[?(@.type=='Ready')].reason"),
            (
                "string",
                r#".status.conditions[?(@.type == "Gone")].status"#,
            ),
            (
                "string",
                r#".status.conditions[?(@.type!="Progressing")].type"#,
            ),
            ("string", ".status.conditions[?(@.reason)].type"),
            ("string", ".status.conditions[?(@.age<3)].type"),
            ("string", ".status.conditions[?(@.age>=5)].type"),
            ("string", ".status.conditions[?(@.age==2.0)].type"),
            ("string", r#".status.conditions[?(@.type=="a]b")].type"#),
            ("string", r#".status[?(@.type=="Ready")].status"#),
        ],
        &obj,
    );
    assert_eq!(
        cells,
        [
            json!("False"),
            json!("Waiting"),
            json!("<none>"),
            json!("Ready"),
            json!("Ready"),
            json!("Ready"),
            json!("Progressing"),
            json!("Ready"),
            json!("<none>"),
            json!("<none>"),
        ]
    );
}

#[test]
fn unsupported_or_malformed_paths_print_none() {
    let obj = json!({"spec": {"a": {"b": 1}}, "items": [1, 2, 3]});
    let paths = [
        "..b",
        ".spec..b",
        ".spec[",
        ".spec[0",
        ".spec]",
        ".items[1:2]",
        ".items[0,1]",
        ".items[?(@ === 1)]",
        ".items[?(]",
        ".items[?(@.x==)]",
        ".items[?(@.x==[1])]",
        ".spec.a\\",
        "{",
        "'",
        "[']",
        ".items[99999999999999999999]",
        ".items[-9223372036854775808]",
        "spec a",
    ];
    for path in paths {
        assert_eq!(path_cells(&[("string", path)], &obj)[0], "<none>", "{path}");
    }
    // The root and a trailing dot select something printable rather than nothing.
    assert_eq!(
        path_cells(&[("string", ".spec.a.")], &obj)[0],
        json!(r#"{"b":1}"#)
    );
    assert_eq!(
        path_cells(&[("string", "")], &obj)[0],
        json!(r#"{"items":[1,2,3],"spec":{"a":{"b":1}}}"#)
    );
}

//! Create: names, server-set metadata, defaults, validation, admission, dry run.

mod support;

use serde_json::json;
use support::{dry_run, list, write, Harness};

test_support::embedded_only!(
    crate::support::Harness;
    names_and_server_set_metadata,
    generate_name_draws_a_suffix,
    invalid_objects_are_422_with_causes,
    route_decides_kind_and_namespace,
    defaults_clients_rely_on,
    default_toleration_seconds,
    nodes_register_with_their_status,
    namespace_admission,
    dry_run_persists_nothing,
);

async fn names_and_server_set_metadata(h: &Harness) {
    let cms = h.store("", "configmaps");
    let created = cms
        .create(
            Some("default"),
            json!({"metadata": {"name": "c1", "uid": "client-uid", "resourceVersion": "99", "creationTimestamp": "2001-01-01T00:00:00Z", "deletionTimestamp": "2001-01-01T00:00:00Z", "generation": 7}, "data": {"a": "1"}}),
            &write(),
        )
        .await
        .expect("create");
    let meta = &created["metadata"];
    assert_eq!(meta["namespace"], "default");
    assert_ne!(meta["uid"], "client-uid");
    assert_eq!(meta["uid"].as_str().map(str::len), Some(36));
    assert_ne!(meta["creationTimestamp"], "2001-01-01T00:00:00Z");
    assert!(meta.get("deletionTimestamp").is_none());
    assert!(
        meta.get("generation").is_none(),
        "configmaps have no generation"
    );
    assert_ne!(meta["resourceVersion"], "99");
    assert_eq!(created["apiVersion"], "v1");
    assert_eq!(created["kind"], "ConfigMap");
    let got = cms.get(Some("default"), "c1", &list()).await.expect("get");
    assert_eq!(got, created);
    let again = cms
        .create(
            Some("default"),
            json!({"metadata": {"name": "c1"}}),
            &write(),
        )
        .await
        .expect_err("duplicate");
    assert_eq!((again.code(), again.reason()), (409, "AlreadyExists"));
    assert_eq!(again.to_string(), "configmaps \"c1\" already exists");

    let deploy = h
        .store("apps", "deployments")
        .create(Some("default"), deployment("d1"), &write())
        .await
        .expect("create deployment");
    assert_eq!(deploy["metadata"]["generation"], 1);
}

fn deployment(name: &str) -> serde_json::Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                          "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]}}
        }
    })
}

async fn generate_name_draws_a_suffix(h: &Harness) {
    let cms = h.store("", "configmaps");
    let mut seen = std::collections::HashSet::new();
    for _ in 0..20 {
        let c = cms
            .create(
                Some("default"),
                json!({"metadata": {"generateName": "gen-"}}),
                &write(),
            )
            .await
            .expect("create");
        let name = c["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(name.starts_with("gen-") && name.len() == 9, "{name}");
        assert!(seen.insert(name));
    }
    let missing = cms
        .create(Some("default"), json!({"metadata": {}}), &write())
        .await
        .expect_err("no name");
    assert_eq!(missing.code(), 422);
    assert!(missing
        .to_string()
        .contains("name or generateName is required"));
}

async fn invalid_objects_are_422_with_causes(h: &Harness) {
    let cms = h.store("", "configmaps");
    let err = cms
        .create(
            Some("default"),
            json!({"metadata": {"name": "Bad_Name", "labels": {"ok": "-bad-"}}}),
            &write(),
        )
        .await
        .expect_err("invalid");
    assert_eq!((err.code(), err.reason()), (422, "Invalid"));
    let status = serde_json::to_value(err.status()).expect("status");
    let fields: Vec<&str> = status["details"]["causes"]
        .as_array()
        .map(|c| c.iter().filter_map(|c| c["field"].as_str()).collect())
        .unwrap_or_default();
    assert!(fields.contains(&"metadata.name"), "{status}");
    assert!(
        fields.iter().any(|f| f.starts_with("metadata.labels")),
        "{status}"
    );
    let pod = h
        .store("", "pods")
        .create(
            Some("default"),
            json!({"metadata": {"name": "p"}, "spec": {"containers": []}}),
            &write(),
        )
        .await
        .expect_err("no containers");
    assert!(
        pod.to_string().contains("spec.containers: Required value"),
        "{pod}"
    );
    let deploy = h
        .store("apps", "deployments")
        .create(
            Some("default"),
            json!({"metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"app": "x"}},
                   "template": {"metadata": {"labels": {"app": "y"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
            &write(),
        )
        .await
        .expect_err("selector mismatch");
    assert!(
        deploy
            .to_string()
            .contains("`selector` does not match template `labels`"),
        "{deploy}"
    );
    let ns = h
        .store("", "namespaces")
        .create(None, json!({"metadata": {"name": "a.b"}}), &write())
        .await
        .expect_err("namespaces are DNS labels");
    assert_eq!(ns.code(), 422);
}

async fn route_decides_kind_and_namespace(h: &Harness) {
    let cms = h.store("", "configmaps");
    let wrong_kind = cms
        .create(
            Some("default"),
            json!({"kind": "Secret", "metadata": {"name": "x"}}),
            &write(),
        )
        .await
        .expect_err("kind");
    assert_eq!(wrong_kind.code(), 400);
    let wrong_version = cms
        .create(
            Some("default"),
            json!({"apiVersion": "v2", "metadata": {"name": "x"}}),
            &write(),
        )
        .await
        .expect_err("version");
    assert_eq!(wrong_version.code(), 400);
    let wrong_ns = cms
        .create(
            Some("default"),
            json!({"metadata": {"name": "x", "namespace": "kube-system"}}),
            &write(),
        )
        .await
        .expect_err("namespace");
    assert_eq!(wrong_ns.code(), 400);
    // Cluster-scoped objects carry no namespace.
    let node = h
        .store("", "nodes")
        .create(
            Some("default"),
            json!({"metadata": {"name": "n1", "namespace": "default"}}),
            &write(),
        )
        .await
        .expect("node");
    assert!(node["metadata"].get("namespace").is_none());
}

async fn defaults_clients_rely_on(h: &Harness) {
    let pod = h
        .store("", "pods")
        .create(
            Some("default"),
            json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx"}, {"name": "d", "image": "nginx:1.2"}]}, "status": {"phase": "Running"}}),
            &write(),
        )
        .await
        .expect("pod");
    assert_eq!(pod["spec"]["restartPolicy"], "Always");
    assert_eq!(pod["spec"]["terminationGracePeriodSeconds"], 30);
    assert_eq!(pod["spec"]["dnsPolicy"], "ClusterFirst");
    assert_eq!(pod["spec"]["containers"][0]["imagePullPolicy"], "Always");
    assert_eq!(
        pod["spec"]["containers"][1]["imagePullPolicy"],
        "IfNotPresent"
    );
    assert_eq!(
        pod["spec"]["containers"][0]["terminationMessagePath"],
        "/dev/termination-log"
    );
    assert_eq!(
        pod["spec"]["containers"][0]["terminationMessagePolicy"],
        "File"
    );
    assert_eq!(
        pod["status"]["phase"], "Pending",
        "clients cannot set status on create"
    );

    let d = h
        .store("apps", "deployments")
        .create(Some("default"), deployment("web"), &write())
        .await
        .expect("deployment");
    assert_eq!(d["spec"]["strategy"]["type"], "RollingUpdate");
    assert_eq!(d["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
    assert_eq!(d["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(d["spec"]["progressDeadlineSeconds"], 600);
    assert_eq!(d["spec"]["replicas"], 1);
    assert_eq!(d["spec"]["template"]["spec"]["restartPolicy"], "Always");

    let svc = h
        .store("", "services")
        .create(
            Some("default"),
            json!({"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}),
            &write(),
        )
        .await
        .expect("service");
    assert_eq!(svc["spec"]["type"], "ClusterIP");
    assert_eq!(svc["spec"]["sessionAffinity"], "None");
    assert_eq!(svc["spec"]["ports"][0]["protocol"], "TCP");
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], 80);

    let ns = h
        .store("", "namespaces")
        .create(None, json!({"metadata": {"name": "fresh"}}), &write())
        .await
        .expect("namespace");
    assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
    assert_eq!(ns["status"]["phase"], "Active");
}

async fn namespace_admission(h: &Harness) {
    let listed = h
        .store("", "namespaces")
        .list(None, &list())
        .await
        .expect("list");
    let names = test_support::names(&listed);
    for system in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        assert!(names.contains(&system.to_string()), "{names:?}");
    }
    let missing = h
        .store("", "configmaps")
        .create(Some("nope"), json!({"metadata": {"name": "x"}}), &write())
        .await
        .expect_err("missing namespace");
    assert_eq!(
        (missing.code(), missing.to_string().as_str()),
        (404, "namespaces \"nope\" not found")
    );
    // A namespace created a moment ago is usable at once.
    h.namespace("brand-new").await;
    h.store("", "configmaps")
        .create(
            Some("brand-new"),
            json!({"metadata": {"name": "x"}}),
            &write(),
        )
        .await
        .expect("create in a new namespace");
}

async fn dry_run_persists_nothing(h: &Harness) {
    let cms = h.store("", "configmaps");
    let out = cms
        .create(
            Some("default"),
            json!({"metadata": {"name": "dry"}}),
            &dry_run(),
        )
        .await
        .expect("dry run");
    assert_eq!(out["metadata"]["name"], "dry");
    let err = cms
        .get(Some("default"), "dry", &list())
        .await
        .expect_err("not stored");
    assert_eq!(err.code(), 404);
    let invalid = cms
        .create(
            Some("default"),
            json!({"metadata": {"name": "Dry!"}}),
            &dry_run(),
        )
        .await
        .expect_err("dry run still validates");
    assert_eq!(invalid.code(), 422);
}

/// DefaultTolerationSeconds admission: 300 s for not-ready and unreachable, unless the pod
/// says otherwise.
async fn default_toleration_seconds(h: &Harness) {
    let pods = h.store("", "pods");
    let pod = |name: &str, tolerations: serde_json::Value| {
        json!({"metadata": {"name": name},
               "spec": {"containers": [{"name": "c", "image": "nginx"}], "tolerations": tolerations}})
    };
    let plain = pods
        .create(Some("default"), pod("plain", json!([])), &write())
        .await
        .expect("pod");
    assert_eq!(
        plain["spec"]["tolerations"],
        json!([
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        ])
    );
    let own = json!([{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10}]);
    let created = pods
        .create(Some("default"), pod("own", own.clone()), &write())
        .await
        .expect("pod");
    let tolerations = created["spec"]["tolerations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(tolerations.len(), 2);
    assert_eq!(tolerations[0], own[0]);
    assert_eq!(tolerations[1]["key"], "node.kubernetes.io/not-ready");
    let everything = pods
        .create(
            Some("default"),
            pod("all", json!([{"operator": "Exists"}])),
            &write(),
        )
        .await
        .expect("pod");
    assert_eq!(
        everything["spec"]["tolerations"],
        json!([{"operator": "Exists"}])
    );
}

/// A kubelet creates its Node with its status; other kinds with a status subresource drop a
/// status sent on create.
async fn nodes_register_with_their_status(h: &Harness) {
    let status = json!({"capacity": {"cpu": "4"}, "allocatable": {"cpu": "4"}});
    let node = h
        .store("", "nodes")
        .create(
            None,
            json!({"metadata": {"name": "n1"}, "status": status}),
            &write(),
        )
        .await
        .expect("node");
    assert_eq!(node["status"], status);
    let rs = h
        .store("apps", "replicasets")
        .create(
            Some("default"),
            json!({"metadata": {"name": "rs"}, "spec": {"selector": {"matchLabels": {"a": "b"}},
                   "template": {"metadata": {"labels": {"a": "b"}},
                                "spec": {"containers": [{"name": "c", "image": "i"}]}}},
                   "status": {"replicas": 5}}),
            &write(),
        )
        .await
        .expect("replicaset");
    assert_ne!(rs["status"]["replicas"], 5);
}

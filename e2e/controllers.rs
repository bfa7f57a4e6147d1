//! The in-process controllers through the HTTP surface of the real binary, on the embedded
//! store and on etcd: garbage collection under the three propagation policies (curl and
//! kubectl), foreground deletion blocked and unblocked the seed's three ways, namespace
//! deletion, leader election between two servers on one etcd, and `--controllers`.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{start, start_on_etcd, start_with_args, Kubectl, Server};
use test_support::{wait_until, EtcdServer};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn create(s: &Server, collection: &str, obj: Value) -> Value {
    let r = s.send_json("POST", collection, &obj);
    assert_eq!(r.status, 201, "create in {collection}: {}", r.body);
    r.json()
}

fn exists(s: &Server, path: &str) -> bool {
    let r = s.get(path);
    assert!(matches!(r.status, 200 | 404), "{path}: {}", r.body);
    r.status == 200
}

fn reference(owner: &Value, block: bool) -> Value {
    json!({
        "apiVersion": owner["apiVersion"].as_str().unwrap_or("v1"),
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": block,
    })
}

fn configmap(name: &str, owners: &[Value], finalizers: &[&str]) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "ownerReferences": owners, "finalizers": finalizers},
    })
}

fn delete(s: &Server, path: &str, policy: &str) {
    let r = s.send_json("DELETE", path, &json!({"propagationPolicy": policy}));
    assert!(matches!(r.status, 200 | 202), "delete {path}: {}", r.body);
}

fn patch(s: &Server, path: &str, patch: Value) -> Value {
    let bytes = serde_json::to_vec(&patch).expect("json");
    let r = s.request(
        "PATCH",
        path,
        &[("Content-Type", "application/merge-patch+json")],
        &bytes,
    );
    assert_eq!(r.status, 200, "patch {path}: {}", r.body);
    r.json()
}

const LONG: Duration = Duration::from_secs(20);

#[test]
fn garbage_collection_on_embedded() {
    let s = start();
    propagation_policies(&s);
    blocked_foreground_deletion(&s);
    owners_that_go_or_never_were(&s);
    foreground_chain(&s);
}

#[test]
fn garbage_collection_on_etcd() {
    let s = start_on_etcd();
    propagation_policies(&s);
    blocked_foreground_deletion(&s);
    owners_that_go_or_never_were(&s);
    foreground_chain(&s);
}

/// curl DELETE with each propagationPolicy, then kubectl --cascade.
fn propagation_policies(s: &Server) {
    for policy in ["Background", "Foreground", "Orphan"] {
        let owner_name = format!("owner-{}", policy.to_lowercase());
        let owner = create(s, CMS, configmap(&owner_name, &[], &[]));
        let deps: Vec<String> = (0..3).map(|i| format!("{owner_name}-dep-{i}")).collect();
        for d in &deps {
            create(s, CMS, configmap(d, &[reference(&owner, true)], &[]));
        }
        delete(s, &format!("{CMS}/{owner_name}"), policy);
        wait_until(&format!("{policy} owner gone"), LONG, || {
            !exists(s, &format!("{CMS}/{owner_name}"))
        });
        for d in &deps {
            let path = format!("{CMS}/{d}");
            if policy == "Orphan" {
                let dep = s.get(&path);
                assert_eq!(dep.status, 200, "orphan {d} must stay: {}", dep.body);
                let refs = &dep.json()["metadata"]["ownerReferences"];
                assert!(
                    refs.as_array().is_none_or(Vec::is_empty),
                    "orphaned {d} still names its owner: {refs}"
                );
            } else {
                // Foreground: the owner went last, so its dependents are already gone.
                if policy == "Foreground" {
                    assert!(!exists(s, &path), "{d} outlived its foreground owner");
                }
                wait_until(&format!("{policy} dependent {d} collected"), LONG, || {
                    !exists(s, &path)
                });
            }
        }
    }

    // kubectl --cascade on a deployment owning replicasets.
    for cascade in ["background", "foreground", "orphan"] {
        let name = format!("kube-{cascade}");
        let deployment = create(
            s,
            "/apis/apps/v1/namespaces/default/deployments",
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": name},
                   "spec": {"selector": {"matchLabels": {"app": name}},
                            "template": {"metadata": {"labels": {"app": name}},
                                         "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
        );
        let rs_name = format!("{name}-rs");
        create(
            s,
            "/apis/apps/v1/namespaces/default/replicasets",
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                   "metadata": {"name": rs_name, "ownerReferences": [reference(&deployment, true)]},
                   "spec": {"selector": {"matchLabels": {"app": name}},
                            "template": {"metadata": {"labels": {"app": name}},
                                         "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
        );
        let out = s.kubectl(&[
            "delete",
            "deployment",
            &name,
            &format!("--cascade={cascade}"),
            "--wait=true",
            "--timeout=30s",
        ]);
        assert!(out.contains("deleted"), "{out}");
        assert!(!exists(
            s,
            &format!("/apis/apps/v1/namespaces/default/deployments/{name}")
        ));
        let rs_path = format!("/apis/apps/v1/namespaces/default/replicasets/{rs_name}");
        match cascade {
            "orphan" => {
                let rs = s.get(&rs_path).json();
                assert!(rs["metadata"]["ownerReferences"]
                    .as_array()
                    .is_none_or(Vec::is_empty));
            }
            // kubectl --wait waited for the owner; with foreground, that was after the rs.
            "foreground" => assert!(!exists(s, &rs_path)),
            _ => wait_until("rs collected", LONG, || !exists(s, &rs_path)),
        }
    }
}

/// A foreground owner waits on a dependent that has its own finalizer and blocks; each of
/// the seed's three ways releases it.
fn blocked_foreground_deletion(s: &Server) {
    for way in ["dependent-goes", "reference-removed", "unblocked"] {
        let owner_name = format!("fg-{way}");
        let owner = create(s, CMS, configmap(&owner_name, &[], &[]));
        let dep_name = format!("fg-{way}-dep");
        create(
            s,
            CMS,
            configmap(&dep_name, &[reference(&owner, true)], &["example.com/hold"]),
        );
        let owner_path = format!("{CMS}/{owner_name}");
        let dep_path = format!("{CMS}/{dep_name}");
        delete(s, &owner_path, "Foreground");
        // The collector deletes the dependent (it stays, held by its finalizer) and the
        // owner waits for it.
        wait_until("dependent marked for deletion", LONG, || {
            s.get(&dep_path).json()["metadata"]["deletionTimestamp"].is_string()
        });
        std::thread::sleep(Duration::from_millis(1500));
        let waiting = s.get(&owner_path);
        assert_eq!(waiting.status, 200, "{way}: owner went while blocked");
        assert_eq!(
            waiting.json()["metadata"]["finalizers"],
            json!(["foregroundDeletion"])
        );
        match way {
            "dependent-goes" => {
                patch(s, &dep_path, json!({"metadata": {"finalizers": null}}));
            }
            "reference-removed" => {
                patch(s, &dep_path, json!({"metadata": {"ownerReferences": null}}));
            }
            _ => {
                let mut r = reference(&owner, false);
                r["blockOwnerDeletion"] = json!(false);
                patch(s, &dep_path, json!({"metadata": {"ownerReferences": [r]}}));
            }
        }
        wait_until(&format!("{way}: owner released"), LONG, || {
            !exists(s, &owner_path)
        });
        if way != "dependent-goes" {
            // Still held by its own finalizer: release it to clean up.
            patch(s, &dep_path, json!({"metadata": {"finalizers": null}}));
        }
        wait_until("dependent gone", LONG, || !exists(s, &dep_path));
    }
}

/// A dependent losing one of two owners keeps living; one whose owner never existed goes.
fn owners_that_go_or_never_were(s: &Server) {
    let x = create(s, CMS, configmap("owner-x", &[], &[]));
    let y = create(s, CMS, configmap("owner-y", &[], &[]));
    create(
        s,
        CMS,
        configmap(
            "two-owners",
            &[reference(&x, false), reference(&y, false)],
            &[],
        ),
    );
    delete(s, &format!("{CMS}/owner-x"), "Background");
    wait_until("dangling reference removed", LONG, || {
        let refs =
            s.get(&format!("{CMS}/two-owners")).json()["metadata"]["ownerReferences"].clone();
        refs.as_array().is_some_and(|r| r.len() == 1)
    });
    let refs = s.get(&format!("{CMS}/two-owners")).json()["metadata"]["ownerReferences"].clone();
    assert_eq!(refs[0]["name"], "owner-y");

    let phantom = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "never",
                         "uid": "6f0e1c5a-0000-4000-8000-000000000001"});
    create(s, CMS, configmap("orphan-of-nobody", &[phantom], &[]));
    wait_until("dependent of a phantom owner collected", LONG, || {
        !exists(s, &format!("{CMS}/orphan-of-nobody"))
    });
    assert!(exists(s, &format!("{CMS}/owner-y")));
}

/// deployment → replicaset → pods, deleted in the foreground: the deployment goes last. The
/// owners select nothing of the chain (and want no pods), so the workload controllers leave
/// it to the collector.
fn foreground_chain(s: &Server) {
    let apps = "/apis/apps/v1/namespaces/default";
    let d = create(
        s,
        &format!("{apps}/deployments"),
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "chain"},
               "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "chain-d"}},
                        "template": {"metadata": {"labels": {"app": "chain-d"}},
                                     "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
    );
    let rs = create(
        s,
        &format!("{apps}/replicasets"),
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
               "metadata": {"name": "chain-rs", "ownerReferences": [reference(&d, true)]},
               "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "chain-r"}},
                        "template": {"metadata": {"labels": {"app": "chain-r"}},
                                     "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
    );
    let mut paths = vec![
        format!("{apps}/deployments/chain"),
        format!("{apps}/replicasets/chain-rs"),
    ];
    for i in 0..3 {
        let name = format!("chain-pod-{i}");
        create(
            s,
            "/api/v1/namespaces/default/pods",
            json!({"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": name, "labels": {"app": "chain"},
                                "ownerReferences": [reference(&rs, true)]},
                   "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
        );
        paths.push(format!("/api/v1/namespaces/default/pods/{name}"));
    }
    let before = s.get("/api/v1/namespaces/default/pods").json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    delete(s, &paths[0], "Foreground");
    for path in &paths {
        wait_until(&format!("{path} collected"), LONG, || !exists(s, path));
    }
    // Order by the revisions of the deletions, read back from watches started before.
    let deleted_at = |collection: &str, name: &str| -> i64 {
        let events = s.get(&format!(
            "{collection}?watch=true&resourceVersion={before}&timeoutSeconds=1"
        ));
        events
            .body
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| e["type"] == "DELETED" && e["object"]["metadata"]["name"] == name)
            .and_then(|e| {
                e["object"]["metadata"]["resourceVersion"]
                    .as_str()?
                    .parse()
                    .ok()
            })
            .unwrap_or_else(|| panic!("no DELETED event for {name}"))
    };
    let deployment = deleted_at(&format!("{apps}/deployments"), "chain");
    let replicaset = deleted_at(&format!("{apps}/replicasets"), "chain-rs");
    for i in 0..3 {
        let pod = deleted_at("/api/v1/namespaces/default/pods", &format!("chain-pod-{i}"));
        assert!(
            pod < replicaset,
            "pod {i} ({pod}) outlived its replicaset ({replicaset})"
        );
    }
    assert!(
        replicaset < deployment,
        "deployment ({deployment}) went before its replicaset ({replicaset})"
    );

    // The collector's graph is served for debugging, in DOT.
    let graph = s.get("/debug/controllers/garbagecollector/graph");
    assert_eq!(graph.status, 200, "{}", graph.body);
    assert!(
        graph.body.starts_with("strict digraph") || graph.body.contains("digraph"),
        "{}",
        graph.body
    );
}

#[test]
fn namespace_deletion_on_embedded() {
    namespace_deletion(&start());
}

#[test]
fn namespace_deletion_on_etcd() {
    namespace_deletion(&start_on_etcd());
}

fn namespace_deletion(s: &Server) {
    for ns in ["doomed", "held", "bystander"] {
        create(s, "/api/v1/namespaces", json!({"metadata": {"name": ns}}));
    }
    for ns in ["doomed", "bystander"] {
        let base = format!("/api/v1/namespaces/{ns}");
        create(
            s,
            &format!("{base}/configmaps"),
            json!({"metadata": {"name": "cfg"}}),
        );
        create(
            s,
            &format!("{base}/secrets"),
            json!({"metadata": {"name": "s"}, "stringData": {"k": "v"}}),
        );
        create(
            s,
            &format!("{base}/pods"),
            json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
        );
        create(
            s,
            &format!("{base}/services"),
            json!({"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}]}}),
        );
        create(
            s,
            &format!("/apis/apps/v1/namespaces/{ns}/deployments"),
            json!({"metadata": {"name": "d"},
                   "spec": {"selector": {"matchLabels": {"a": "b"}},
                            "template": {"metadata": {"labels": {"a": "b"}},
                                         "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
        );
        create(
            s,
            &format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles"),
            json!({"metadata": {"name": "r"}, "rules": []}),
        );
    }
    create(
        s,
        "/api/v1/namespaces/held/configmaps",
        json!({"metadata": {"name": "pinned", "finalizers": ["example.com/hold"]}}),
    );

    let out = s.kubectl(&[
        "delete",
        "namespace",
        "doomed",
        "--wait=true",
        "--timeout=60s",
    ]);
    assert!(out.contains("namespace \"doomed\" deleted"), "{out}");
    assert!(!exists(s, "/api/v1/namespaces/doomed"));
    assert!(!exists(s, "/api/v1/namespaces/doomed/configmaps/cfg"));
    assert!(!exists(s, "/apis/apps/v1/namespaces/doomed/deployments/d"));
    for path in [
        "/api/v1/namespaces/bystander/configmaps/cfg",
        "/api/v1/namespaces/bystander/pods/p",
        "/apis/apps/v1/namespaces/bystander/deployments/d",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/bystander/roles/r",
    ] {
        assert!(exists(s, path), "{path} was deleted with another namespace");
    }

    // A finalizer in the content holds the namespace Terminating, and its conditions say so.
    s.kubectl(&["delete", "namespace", "held", "--wait=false"]);
    wait_until(
        "finalizers-remaining condition",
        Duration::from_secs(30),
        || {
            let ns = s.get("/api/v1/namespaces/held").json();
            ns["status"]["conditions"].as_array().is_some_and(|c| {
                c.iter().any(|c| {
                    c["type"] == "NamespaceFinalizersRemaining"
                        && c["status"] == "True"
                        && c["message"]
                            .as_str()
                            .is_some_and(|m| m.contains("example.com/hold"))
                })
            })
        },
    );
    let ns = s.get("/api/v1/namespaces/held").json();
    assert_eq!(ns["status"]["phase"], "Terminating");
    let r = s.send_json(
        "POST",
        "/api/v1/namespaces/held/configmaps",
        &json!({"metadata": {"name": "late"}}),
    );
    assert_eq!(r.status, 403, "{}", r.body);
    patch(
        s,
        "/api/v1/namespaces/held/configmaps/pinned",
        json!({"metadata": {"finalizers": null}}),
    );
    wait_until("held namespace gone", Duration::from_secs(30), || {
        !exists(s, "/api/v1/namespaces/held")
    });
}

/// Two servers on one etcd: the controllers run on exactly one, and the other takes over when
/// it stops.
#[test]
fn two_servers_on_one_etcd_run_the_controllers_once() {
    let etcd = EtcdServer::start_blocking();
    let endpoint = etcd.endpoint();
    let fast = [
        "--leader-elect-lease-duration=2s",
        "--leader-elect-renew-deadline=1500ms",
        "--leader-elect-retry-period=200ms",
    ];
    let mut a = start_with_args(Some(etcd), Some(endpoint.clone()), &fast);
    let mut b = start_with_args(None, Some(endpoint), &fast);
    let lease_path =
        "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager";
    wait_until("a leader", LONG, || {
        a.logged("starting controllers") + b.logged("starting controllers") == 1
    });
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(
        a.logged("starting controllers") + b.logged("starting controllers"),
        1,
        "controllers started on both servers"
    );
    let a_leads = a.logged("starting controllers") == 1;
    let holder = a.get(lease_path).json()["spec"]["holderIdentity"].clone();
    assert!(holder.is_string(), "{holder}");
    // Only the leader serves the collector's graph.
    let (leader, follower) = if a_leads { (&a, &b) } else { (&b, &a) };
    assert_eq!(
        leader
            .get("/debug/controllers/garbagecollector/graph")
            .status,
        200
    );
    assert_eq!(
        follower
            .get("/debug/controllers/garbagecollector/graph")
            .status,
        503
    );

    // Collection works whichever server the request reaches.
    let owner = create(follower, CMS, configmap("ha-owner", &[], &[]));
    create(
        follower,
        CMS,
        configmap("ha-dep", &[reference(&owner, false)], &[]),
    );
    delete(follower, &format!("{CMS}/ha-owner"), "Background");
    wait_until("collected by the leader", LONG, || {
        !exists(follower, &format!("{CMS}/ha-dep"))
    });

    // The leader stops (releasing the lease): the other takes over.
    let transitions = a.get(lease_path).json()["spec"]["leaseTransitions"]
        .as_i64()
        .unwrap_or(0);
    let survivor = if a_leads {
        a.terminate();
        &b
    } else {
        b.terminate();
        &a
    };
    wait_until("takeover", Duration::from_secs(10), || {
        survivor.logged("starting controllers") == 1
    });
    let lease = survivor.get(lease_path).json();
    assert_ne!(lease["spec"]["holderIdentity"], holder);
    assert!(lease["spec"]["leaseTransitions"].as_i64().unwrap_or(0) > transitions);
    let owner = create(survivor, CMS, configmap("ha-owner-2", &[], &[]));
    create(
        survivor,
        CMS,
        configmap("ha-dep-2", &[reference(&owner, false)], &[]),
    );
    delete(survivor, &format!("{CMS}/ha-owner-2"), "Background");
    wait_until("collected by the new leader", LONG, || {
        !exists(survivor, &format!("{CMS}/ha-dep-2"))
    });
}

#[test]
fn every_namespace_gets_a_default_service_account_on_embedded() {
    default_service_accounts(&start());
}

#[test]
fn every_namespace_gets_a_default_service_account_on_etcd() {
    default_service_accounts(&start_on_etcd());
}

fn default_service_accounts(s: &Server) {
    let path = "/api/v1/namespaces/team/serviceaccounts/default";
    s.kubectl(&["create", "namespace", "team"]);
    wait_until("default account created", LONG, || exists(s, path));
    let names = s.kubectl(&["get", "serviceaccounts", "-n", "team", "-o", "name"]);
    assert_eq!(names.trim(), "serviceaccount/default");
    // Existing namespaces got one at start too.
    assert!(exists(
        s,
        "/api/v1/namespaces/default/serviceaccounts/default"
    ));
    let first = s.get(path).json()["metadata"]["uid"].clone();
    s.kubectl(&["delete", "serviceaccount", "default", "-n", "team"]);
    wait_until("default account made again", LONG, || {
        let r = s.get(path);
        r.status == 200 && r.json()["metadata"]["uid"] != first
    });
}

fn workload(kind: &str, name: &str, replicas: u32) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            },
        },
    })
}

fn count(s: &Server, collection: &str, app: &str) -> usize {
    let r = s.get(&format!("{collection}?labelSelector=app%3D{app}"));
    assert_eq!(r.status, 200, "{collection}: {}", r.body);
    r.json()["items"].as_array().map_or(0, Vec::len)
}

/// `--controllers` chooses kube-controller-manager's controllers by upstream's names: without
/// the deployment controller a Deployment gets no ReplicaSet, while the ReplicaSet controller
/// still gives a ReplicaSet its pods; an unknown name is refused at start.
#[test]
fn controllers_are_chosen_by_upstream_names() {
    let s = start_with_args(None, None, &["--controllers=*,-deployment-controller"]);
    let apps = "/apis/apps/v1/namespaces/default";
    // The Deployment first: by the time the later ReplicaSet has its pods, a running
    // deployment controller would have made the Deployment's.
    create(
        &s,
        &format!("{apps}/deployments"),
        workload("Deployment", "dep", 1),
    );
    create(
        &s,
        &format!("{apps}/replicasets"),
        workload("ReplicaSet", "direct", 2),
    );
    wait_until("the ReplicaSet's pods", LONG, || {
        count(&s, "/api/v1/namespaces/default/pods", "direct") == 2
    });
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(count(&s, &format!("{apps}/replicasets"), "dep"), 0);
    assert_eq!(count(&s, "/api/v1/namespaces/default/pods", "dep"), 0);
    let deployment = s.get(&format!("{apps}/deployments/dep")).json();
    assert!(
        deployment["status"]["observedGeneration"].is_null(),
        "synced by a disabled controller: {deployment}"
    );
    assert_eq!(s.logged("controller disabled"), 1);

    let dir = tempfile::tempdir().expect("tempdir");
    let said = support::refused_start(dir.path(), &["--controllers=nosuch"]);
    assert!(
        said.contains(r#"--controllers: "nosuch" is not in the list of known controllers"#),
        "{said}"
    );
    let said = support::refused_start(dir.path(), &["--controllers=*,-nosuch"]);
    assert!(said.contains(r#""nosuch" is not in the list"#), "{said}");
}

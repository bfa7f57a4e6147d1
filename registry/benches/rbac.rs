//! RBAC decision time against the number of bindings in the cluster: a cluster of 10 bindings
//! and one of 10,000 (ClusterRoleBindings and RoleBindings over 200 namespaces, 2,000 users,
//! 300 groups and service accounts), each judging the same user, who holds the same few
//! bindings in both, for a request one of them allows and one nobody allows. Bindings are
//! indexed by subject, so the target is that 10,000 bindings cost about what 10 do.
//!
//! Run: `cargo bench -p registry --bench rbac` (embedded store). `BENCH_DECISIONS` sets the
//! decisions per round (default 1,000,000), `BENCH_BINDINGS` the large cluster's size.

use std::future::Future;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use registry::auth::{Attributes, Authorizer, UserInfo};
use registry::options::WriteOptions;
use registry::rbac::{Kind, RbacAuthorizer};
use registry::{Catalogue, Registry};
use serde_json::{json, Value};
use storage::CacherConfig;
use test_support::stats::median;
use test_support::TestBackend;
use tokio_util::sync::CancellationToken;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const GROUP: &str = "rbac.authorization.k8s.io";
const NAMESPACES: usize = 200;
const USERS: usize = 2_000;
const GROUPS: usize = 300;
const ROUNDS: usize = 5;
/// Writes in flight while a cluster is filled.
const WRITERS: usize = 32;

fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> Value {
    json!({"verbs": verbs, "apiGroups": groups, "resources": resources})
}

fn binding(name: &str, ns: Option<&str>, role_kind: &str, role: &str, subjects: Value) -> Value {
    let kind = if ns.is_some() {
        "RoleBinding"
    } else {
        "ClusterRoleBinding"
    };
    let mut meta = json!({"name": name});
    if let Some(ns) = ns {
        meta["namespace"] = json!(ns);
    }
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta,
           "roleRef": {"apiGroup": GROUP, "kind": role_kind, "name": role}, "subjects": subjects})
}

fn subject(kind: &str, name: &str) -> Value {
    json!({"kind": kind, "apiGroup": GROUP, "name": name})
}

/// Runs `op(i)` for i in 0..n, `WRITERS` at a time.
async fn fill<F, Fut>(n: usize, op: F)
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send,
{
    let op = Arc::new(op);
    let tasks: Vec<_> = (0..WRITERS)
        .map(|w| {
            let op = op.clone();
            tokio::spawn(async move {
                let mut i = w;
                while i < n {
                    op(i).await;
                    i += WRITERS;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("writer");
    }
}

/// A registry holding the bench user's bindings and `others` bindings of other subjects.
async fn cluster(others: usize) -> (Arc<Registry>, TestBackend) {
    let backend = TestBackend::embedded().await;
    let opened = storage::backend::open(&backend.etcd_servers(), backend.data_dir())
        .await
        .expect("open the test backend");
    let registry = Registry::new(
        storage::KvStore::new(opened, "/registry"),
        Arc::new(Catalogue::builtin()),
        CacherConfig::default(),
    );
    registry.bootstrap().await.expect("bootstrap");
    let store = |plural: &str| registry.store(GROUP, "v1", plural).expect("rbac store");
    let (namespaces, roles, cluster_roles, role_bindings, cluster_bindings) = (
        registry.store("", "v1", "namespaces").expect("namespaces"),
        store("roles"),
        store("clusterroles"),
        store("rolebindings"),
        store("clusterrolebindings"),
    );
    let w = WriteOptions::default();
    for name in ["view", "edit", "discovery"] {
        let rules = match name {
            "view" => json!([rule(
                &["get", "list", "watch"],
                &["", "apps", "batch"],
                &["pods", "services", "configmaps", "deployments", "jobs"]
            )]),
            "edit" => json!([rule(
                &["*"],
                &["", "apps"],
                &[
                    "pods",
                    "pods/log",
                    "services",
                    "deployments",
                    "deployments/scale"
                ]
            )]),
            _ => {
                json!([{"verbs": ["get"], "nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/version"]}])
            }
        };
        cluster_roles
            .create(
                None,
                json!({"metadata": {"name": name}, "rules": rules}),
                &w,
            )
            .await
            .expect("cluster role");
    }
    let spaces = if others > 100 { NAMESPACES } else { 1 };
    for n in 0..spaces {
        let ns = format!("ns-{n}");
        namespaces
            .create(None, json!({"metadata": {"name": ns}}), &w)
            .await
            .expect("namespace");
        roles
            .create(
                Some(&ns),
                json!({"metadata": {"name": "app"}, "rules": [
                    rule(&["get", "list"], &[""], &["secrets"]),
                    rule(&["create", "update", "patch"], &[""], &["configmaps"]),
                ]}),
                &w,
            )
            .await
            .expect("role");
    }
    // The bench user's own: discovery for everyone, view through a group, edit in ns-0.
    cluster_bindings
        .create(
            None,
            binding(
                "discovery",
                None,
                "ClusterRole",
                "discovery",
                json!([subject("Group", "system:authenticated")]),
            ),
            &w,
        )
        .await
        .expect("binding");
    cluster_bindings
        .create(
            None,
            binding(
                "viewers",
                None,
                "ClusterRole",
                "view",
                json!([subject("Group", "team-a")]),
            ),
            &w,
        )
        .await
        .expect("binding");
    role_bindings
        .create(
            Some("ns-0"),
            binding(
                "jane-edit",
                Some("ns-0"),
                "ClusterRole",
                "edit",
                json!([subject("User", "jane")]),
            ),
            &w,
        )
        .await
        .expect("binding");
    // Everyone else's: a fifth cluster-wide, the rest in namespaces; users, groups and
    // service accounts.
    let (crbs, rbs) = (cluster_bindings.clone(), role_bindings.clone());
    fill(others, move |i| {
        let (crbs, rbs) = (crbs.clone(), rbs.clone());
        async move {
            let ns = format!("ns-{}", i % spaces);
            let subjects = json!([
                subject("User", &format!("user-{}", i % USERS)),
                subject("Group", &format!("group-{}", i % GROUPS)),
                {"kind": "ServiceAccount", "name": format!("sa-{}", i % 50), "namespace": ns},
            ]);
            let role = ["view", "edit"][i % 2];
            let name = format!("b-{i}");
            let written = if i % 5 == 0 {
                crbs.create(
                    None,
                    binding(&name, None, "ClusterRole", role, subjects),
                    &WriteOptions::default(),
                )
                .await
            } else if i % 3 == 0 {
                rbs.create(
                    Some(&ns),
                    binding(&name, Some(&ns), "Role", "app", subjects),
                    &WriteOptions::default(),
                )
                .await
            } else {
                rbs.create(
                    Some(&ns),
                    binding(&name, Some(&ns), "ClusterRole", role, subjects),
                    &WriteOptions::default(),
                )
                .await
            };
            written.expect("binding");
        }
    })
    .await;
    (registry, backend)
}

/// Median ns per decision of `decisions` judgements of `attributes`.
fn time(rbac: &RbacAuthorizer, attributes: &Attributes, decisions: usize, allowed: bool) -> f64 {
    let mut rounds = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let started = Instant::now();
        for _ in 0..decisions {
            let verdict = rbac.authorize(black_box(attributes));
            assert_eq!(verdict.allowed(), allowed, "{verdict:?}");
        }
        rounds.push(started.elapsed().as_nanos() as f64 / decisions as f64);
    }
    median(rounds)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let decisions: usize = std::env::var("BENCH_DECISIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let large: usize = std::env::var("BENCH_BINDINGS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let jane = Arc::new(UserInfo {
        name: "jane".into(),
        groups: vec!["team-a".into(), "system:authenticated".into()],
        ..Default::default()
    });
    // Allowed by the last binding visited (the namespace's), so every one of hers is seen.
    let allowed = Attributes {
        user: jane.clone(),
        verb: "update".into(),
        resource_request: true,
        namespace: "ns-0".into(),
        api_group: "apps".into(),
        api_version: "v1".into(),
        resource: "deployments".into(),
        subresource: "scale".into(),
        name: "web".into(),
        path: String::new(),
    };
    let denied = Attributes {
        verb: "delete".into(),
        api_group: String::new(),
        resource: "secrets".into(),
        subresource: String::new(),
        ..allowed.clone()
    };
    runtime.block_on(async move {
        println!("RBAC decisions: median of {ROUNDS} rounds of {decisions} decisions, one user holding 3 bindings");
        let mut figures = Vec::new();
        for others in [7, large - 3] {
            let (registry, _backend) = cluster(others).await;
            let rbac = RbacAuthorizer::new(&registry).expect("rbac");
            let stop = CancellationToken::new();
            tokio::spawn(rbac.clone().run(stop.clone()));
            rbac.synced().await;
            let bindings = rbac.count(Kind::RoleBinding) + rbac.count(Kind::ClusterRoleBinding);
            assert_eq!(bindings, others + 3, "every binding indexed");
            let reason = rbac.authorize(&allowed).reason;
            let ns_allowed = time(&rbac, &allowed, decisions, true);
            let ns_denied = time(&rbac, &denied, decisions, false);
            println!("{bindings:>6} bindings  allowed {ns_allowed:>8.1} ns/decision  denied {ns_denied:>8.1} ns/decision  ({reason})");
            figures.push((ns_allowed, ns_denied));
            stop.cancel();
        }
        let (small, big) = (figures[0], figures[1]);
        let (ratio_allowed, ratio_denied) = (big.0 / small.0, big.1 / small.1);
        let verdict = if ratio_allowed <= 1.5 && ratio_denied <= 1.5 { "met" } else { "MISSED" };
        println!("{large} / 10 bindings: allowed x{ratio_allowed:.2}, denied x{ratio_denied:.2}; target about the same (<= x1.5): {verdict}");
    });
}

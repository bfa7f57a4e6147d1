//! Upstream's namespaced bootstrap Roles and RoleBindings (bootstrappolicy/namespace_policy.go)
//! in kube-system and kube-public.

use serde_json::Value;

use super::objects::{role, role_binding, service_account, user};
use super::rule::{core, events, named, res, READ};

const SYSTEM: &str = "kube-system";
const PUBLIC: &str = "kube-public";
const COORDINATION: &str = "coordination.k8s.io";
const LEADER_VERBS: &[&str] = &["watch", "create", "get", "list", "update"];
const KCM: &str = "system:kube-controller-manager";
const SCHEDULER: &str = "system:kube-scheduler";

fn leader_locking(name: &str) -> Value {
    role(
        SYSTEM,
        name,
        vec![
            res(LEADER_VERBS, &[COORDINATION], &["leases"]),
            res(LEADER_VERBS, &[COORDINATION], &["leasecandidates"]),
        ],
    )
}

fn account(name: &str) -> Value {
    service_account(SYSTEM, name)
}

pub fn roles() -> Vec<Value> {
    vec![
        // Reading the configmap with the client CA and request-header settings that
        // extension API servers authenticate with.
        role(
            SYSTEM,
            "extension-apiserver-authentication-reader",
            vec![named(
                core(READ, &["configmaps"]),
                &["extension-apiserver-authentication"],
            )],
        ),
        leader_locking("system::leader-locking-kube-controller-manager"),
        leader_locking("system::leader-locking-kube-scheduler"),
        role(
            SYSTEM,
            "system:controller:bootstrap-signer",
            vec![core(READ, &["secrets"])],
        ),
        role(
            SYSTEM,
            "system:controller:cloud-provider",
            vec![core(&["create", "get", "list", "watch"], &["configmaps"])],
        ),
        role(
            SYSTEM,
            "system:controller:token-cleaner",
            vec![
                core(&["delete", "get", "list", "watch"], &["secrets"]),
                events(),
            ],
        ),
        role(
            PUBLIC,
            "system:controller:bootstrap-signer",
            vec![
                core(READ, &["configmaps"]),
                named(core(&["update"], &["configmaps"]), &["cluster-info"]),
                events(),
            ],
        ),
    ]
}

pub fn role_bindings() -> Vec<Value> {
    vec![
        role_binding(
            SYSTEM,
            "system::extension-apiserver-authentication-reader",
            "extension-apiserver-authentication-reader",
            vec![user(KCM), user(SCHEDULER)],
        ),
        role_binding(
            SYSTEM,
            "system::leader-locking-kube-controller-manager",
            "system::leader-locking-kube-controller-manager",
            vec![
                user(KCM),
                account("kube-controller-manager"),
                account("leader-election-controller"),
            ],
        ),
        role_binding(
            SYSTEM,
            "system::leader-locking-kube-scheduler",
            "system::leader-locking-kube-scheduler",
            vec![user(SCHEDULER), account("kube-scheduler")],
        ),
        role_binding(
            SYSTEM,
            "system:controller:bootstrap-signer",
            "system:controller:bootstrap-signer",
            vec![account("bootstrap-signer")],
        ),
        role_binding(
            SYSTEM,
            "system:controller:cloud-provider",
            "system:controller:cloud-provider",
            vec![account("cloud-provider")],
        ),
        role_binding(
            SYSTEM,
            "system:controller:token-cleaner",
            "system:controller:token-cleaner",
            vec![account("token-cleaner")],
        ),
        role_binding(
            PUBLIC,
            "system:controller:bootstrap-signer",
            "system:controller:bootstrap-signer",
            vec![account("bootstrap-signer")],
        ),
    ]
}

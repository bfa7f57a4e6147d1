//! Every check, passing and refusing, with upstream's reasons and details.

use serde_json::{json, Value};

use super::checks::{evaluate, forbidden_detail, CheckFn, Forbidden};
use super::levels::{Level, LevelVersion, Version};
use super::{baseline, restricted};

const LATEST: u32 = 35;

fn refused(check: CheckFn, minor: u32, meta: Value, spec: Value) -> (String, String) {
    let Forbidden { reason, detail } =
        check(minor, &meta, &spec).unwrap_or_else(|| panic!("allowed: {spec}"));
    (reason, detail)
}

fn allowed(check: CheckFn, minor: u32, meta: Value, spec: Value) {
    assert_eq!(check(minor, &meta, &spec), None, "{meta} {spec}");
}

fn pair(reason: &str, detail: &str) -> (String, String) {
    (reason.to_string(), detail.to_string())
}

fn containers(list: &[(&str, Value)]) -> Value {
    let list: Vec<Value> = list
        .iter()
        .map(|(name, sc)| json!({"name": name, "securityContext": sc}))
        .collect();
    json!({ "containers": list })
}

#[test]
fn privileged_containers() {
    let spec = json!({
        "initContainers": [{"name": "a", "securityContext": {"privileged": false}}],
        "containers": [{"name": "b"}, {"name": "d", "securityContext": {"privileged": true}}],
        "ephemeralContainers": [{"name": "e", "securityContext": {"privileged": true}}],
    });
    assert_eq!(
        refused(baseline::privileged, LATEST, json!({}), spec),
        pair(
            "privileged",
            "containers \"d\", \"e\" must not set securityContext.privileged=true"
        )
    );
    allowed(
        baseline::privileged,
        LATEST,
        json!({}),
        containers(&[("a", json!({"privileged": false}))]),
    );
}

#[test]
fn host_namespaces_ports_and_paths() {
    let spec = json!({"hostNetwork": true, "hostPID": true, "hostIPC": true});
    assert_eq!(
        refused(baseline::host_namespaces, LATEST, json!({}), spec),
        pair(
            "host namespaces",
            "hostNetwork=true, hostPID=true, hostIPC=true"
        )
    );
    allowed(
        baseline::host_namespaces,
        LATEST,
        json!({}),
        json!({"hostNetwork": false}),
    );

    let spec = json!({"containers": [
        {"name": "a", "ports": [{"containerPort": 80}]},
        {"name": "b", "ports": [{"hostPort": 20}, {"hostPort": 10}]},
        {"name": "c", "ports": [{"hostPort": 30}, {"hostPort": 0}]},
    ]});
    assert_eq!(
        refused(baseline::host_ports, LATEST, json!({}), spec),
        pair(
            "hostPort",
            "containers \"b\", \"c\" use hostPorts 10, 20, 30"
        )
    );
    let spec = json!({"containers": [{"name": "b", "ports": [{"hostPort": 20}]}]});
    assert_eq!(
        refused(baseline::host_ports, LATEST, json!({}), spec).1,
        "container \"b\" uses hostPort 20"
    );

    let spec = json!({"volumes": [
        {"name": "a", "hostPath": {"path": "/"}},
        {"name": "c", "emptyDir": {}},
        {"name": "b", "hostPath": {"path": "/etc"}},
    ]});
    assert_eq!(
        refused(baseline::host_path_volumes, LATEST, json!({}), spec),
        pair("hostPath volumes", "volumes \"a\", \"b\"")
    );
}

#[test]
fn baseline_capabilities() {
    let spec = containers(&[
        ("a", json!({"capabilities": {"add": ["FOO", "CHOWN"]}})),
        ("b", json!({"capabilities": {"add": ["BAR", "BAZ", "FOO"]}})),
        (
            "c",
            json!({"capabilities": {"add": ["NET_BIND_SERVICE", "KILL"]}}),
        ),
    ]);
    assert_eq!(
        refused(baseline::capabilities, LATEST, json!({}), spec),
        pair(
            "non-default capabilities",
            "containers \"a\", \"b\" must not include \"BAR\", \"BAZ\", \"FOO\" in securityContext.capabilities.add"
        )
    );
}

#[test]
fn app_armor_profiles() {
    let spec = json!({"securityContext": {"appArmorProfile": {"type": "Unconfined"}}, "containers": [{"name": "a"}]});
    assert_eq!(
        refused(baseline::app_armor_profile, LATEST, json!({}), spec),
        pair(
            "forbidden AppArmor profile",
            "pod must not set AppArmor profile type to \"Unconfined\""
        )
    );
    let spec = containers(&[
        ("foo", json!({"appArmorProfile": {"type": "Unconfined"}})),
        (
            "ok",
            json!({"appArmorProfile": {"type": "Localhost", "localhostProfile": "x"}}),
        ),
    ]);
    assert_eq!(
        refused(baseline::app_armor_profile, LATEST, json!({}), spec).1,
        "container \"foo\" must not set AppArmor profile type to \"Unconfined\""
    );
    let meta = json!({"annotations": {
        "container.apparmor.security.beta.kubernetes.io/b": "unconfined",
        "container.apparmor.security.beta.kubernetes.io/a": "runtime/default",
        "container.apparmor.security.beta.kubernetes.io/c": "localhost/mine",
        "container.apparmor.security.beta.kubernetes.io/": "bogus",
    }});
    assert_eq!(
        refused(baseline::app_armor_profile, LATEST, meta, containers(&[("a", json!(null))])),
        pair(
            "forbidden AppArmor profiles",
            "annotations must not set AppArmor profile type to \"container.apparmor.security.beta.kubernetes.io/=\"bogus\"\", \"container.apparmor.security.beta.kubernetes.io/b=\"unconfined\"\""
        )
    );
}

#[test]
fn proc_mount_baseline_and_restricted() {
    let spec = containers(&[
        ("a", json!({"procMount": "Default"})),
        ("d", json!({"procMount": "Unmasked"})),
        ("e", json!({"procMount": "other"})),
    ]);
    let expected = pair(
        "procMount",
        "containers \"d\", \"e\" must not set securityContext.procMount to \"Unmasked\", \"other\"",
    );
    assert_eq!(
        refused(baseline::proc_mount, LATEST, json!({}), spec.clone()),
        expected
    );
    // A user-namespaced pod may unmask /proc at baseline from v1.35, never at restricted.
    let mut userns = spec;
    userns["hostUsers"] = json!(false);
    allowed(baseline::proc_mount, LATEST, json!({}), userns.clone());
    assert_eq!(
        refused(baseline::proc_mount, 34, json!({}), userns.clone()),
        expected
    );
    assert_eq!(
        refused(restricted::proc_mount, LATEST, json!({}), userns),
        expected
    );
}

#[test]
fn se_linux_options() {
    let spec = json!({
        "securityContext": {"seLinuxOptions": {"type": "foo", "user": "u", "role": "r"}},
        "containers": [
            {"name": "d", "securityContext": {"seLinuxOptions": {"type": "container_t", "level": "s0"}}},
            {"name": "e", "securityContext": {"seLinuxOptions": {"type": "bar"}}},
            {"name": "f", "securityContext": {"seLinuxOptions": {"user": "u"}}},
            {"name": "g", "securityContext": {"seLinuxOptions": {"role": "r"}}},
        ]
    });
    assert_eq!(
        refused(baseline::se_linux_options, LATEST, json!({}), spec),
        pair(
            "seLinuxOptions",
            "pod and containers \"e\", \"f\", \"g\" set forbidden securityContext.seLinuxOptions: types \"bar\", \"foo\"; user may not be set; role may not be set"
        )
    );
    let engine = json!({"securityContext": {"seLinuxOptions": {"type": "container_engine_t"}}});
    allowed(baseline::se_linux_options, 31, json!({}), engine.clone());
    assert_eq!(
        refused(baseline::se_linux_options, 30, json!({}), engine).1,
        "pod set forbidden securityContext.seLinuxOptions: type \"container_engine_t\""
    );
}

#[test]
fn seccomp_baseline_by_field_and_by_annotation() {
    let spec = json!({
        "securityContext": {"seccompProfile": {"type": "Unconfined"}},
        "containers": [
            {"name": "a", "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}},
            {"name": "c", "securityContext": {"seccompProfile": {"type": "Unconfined"}}},
            {"name": "d", "securityContext": {"seccompProfile": {"type": "Unconfined"}}},
        ]
    });
    assert_eq!(
        refused(baseline::seccomp_profile, LATEST, json!({}), spec),
        pair(
            "seccompProfile",
            "pod and containers \"c\", \"d\" must not set securityContext.seccompProfile.type to \"Unconfined\""
        )
    );
    allowed(
        baseline::seccomp_profile,
        LATEST,
        json!({}),
        containers(&[("a", json!(null))]),
    );
    let meta = json!({"annotations": {
        "seccomp.security.alpha.kubernetes.io/pod": "unconfined",
        "container.seccomp.security.alpha.kubernetes.io/a": "unconfined",
        "container.seccomp.security.alpha.kubernetes.io/b": "unknown",
        "container.seccomp.security.alpha.kubernetes.io/c": "docker/default",
    }});
    let spec = json!({"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}]});
    assert_eq!(
        refused(baseline::seccomp_profile, 18, meta.clone(), spec.clone()).1,
        "forbidden annotations container.seccomp.security.alpha.kubernetes.io/a=\"unconfined\", container.seccomp.security.alpha.kubernetes.io/b=\"unknown\", seccomp.security.alpha.kubernetes.io/pod=\"unconfined\""
    );
    // From v1.19 the annotations no longer count.
    allowed(baseline::seccomp_profile, 19, meta, spec);
}

#[test]
fn sysctls_grow_with_the_version() {
    let spec = json!({"securityContext": {"sysctls": [
        {"name": "net.ipv4.tcp_rmem", "value": "1"},
        {"name": "kernel.msgmax", "value": "1"},
        {"name": "net.ipv4.tcp_syncookies", "value": "1"},
    ]}});
    assert_eq!(
        refused(baseline::sysctls, LATEST, json!({}), spec.clone()),
        pair("forbidden sysctls", "kernel.msgmax")
    );
    assert_eq!(
        refused(baseline::sysctls, 31, json!({}), spec).1,
        "net.ipv4.tcp_rmem, kernel.msgmax"
    );
}

#[test]
fn windows_host_process_and_probe_hosts() {
    let spec = json!({
        "securityContext": {"windowsOptions": {"hostProcess": true}},
        "containers": [{"name": "a", "securityContext": {"windowsOptions": {"hostProcess": true}}}],
    });
    assert_eq!(
        refused(baseline::windows_host_process, LATEST, json!({}), spec),
        pair(
            "hostProcess",
            "pod and container \"a\" must not set securityContext.windowsOptions.hostProcess=true"
        )
    );
    let spec = json!({"containers": [
        {"name": "invalid2", "livenessProbe": {"httpGet": {"host": "b.com", "port": 80}}},
        {"name": "invalid1", "lifecycle": {"preStop": {"tcpSocket": {"host": "a.com", "port": 80}}}},
        {"name": "fine", "readinessProbe": {"httpGet": {"host": "", "port": 80}}},
    ]});
    assert_eq!(
        refused(baseline::host_probes_and_lifecycle, LATEST, json!({}), spec),
        pair(
            "probe or lifecycle host",
            "containers \"invalid1\", \"invalid2\" use probe or lifecycle hosts \"a.com\", \"b.com\""
        )
    );
}

#[test]
fn allow_privilege_escalation_must_be_false() {
    let spec = containers(&[
        ("a", json!(null)),
        ("b", json!({"allowPrivilegeEscalation": true})),
        ("c", json!({"allowPrivilegeEscalation": false})),
    ]);
    assert_eq!(
        refused(
            restricted::allow_privilege_escalation,
            LATEST,
            json!({}),
            spec.clone()
        ),
        pair(
            "allowPrivilegeEscalation != false",
            "containers \"a\", \"b\" must set securityContext.allowPrivilegeEscalation=false"
        )
    );
    // Windows pods pass from v1.25.
    let mut windows = spec;
    windows["os"] = json!({"name": "windows"});
    allowed(
        restricted::allow_privilege_escalation,
        25,
        json!({}),
        windows.clone(),
    );
    assert!(restricted::allow_privilege_escalation(24, &json!({}), &windows).is_some());
}

#[test]
fn restricted_capabilities() {
    let spec = containers(&[
        ("a", json!(null)),
        ("b", json!({"capabilities": {"add": ["FOO"]}})),
        (
            "c",
            json!({"capabilities": {"drop": ["ALL"], "add": ["BAR", "BAZ", "CHOWN", "NET_BIND_SERVICE"]}}),
        ),
        (
            "d",
            json!({"capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}),
        ),
    ]);
    assert_eq!(
        refused(restricted::capabilities, LATEST, json!({}), spec),
        pair(
            "unrestricted capabilities",
            "containers \"a\", \"b\" must set securityContext.capabilities.drop=[\"ALL\"]; containers \"b\", \"c\" must not include \"BAR\", \"BAZ\", \"CHOWN\", \"FOO\" in securityContext.capabilities.add"
        )
    );
}

#[test]
fn restricted_volume_types() {
    let spec = json!({"volumes": [
        {"name": "a", "configMap": {"name": "x"}},
        {"name": "b1", "hostPath": {"path": "/"}},
        {"name": "b2", "nfs": {"server": "s", "path": "/"}},
        {"name": "b3", "gitRepo": {"repository": "r"}},
        {"name": "c1", "somethingNew": {}},
        {"name": "d", "image": {"reference": "busybox"}},
    ]});
    assert_eq!(
        refused(restricted::volumes, LATEST, json!({}), spec),
        pair(
            "restricted volume types",
            "volumes \"b1\", \"b2\", \"b3\", \"c1\" use restricted volume types \"gitRepo\", \"hostPath\", \"nfs\", \"unknown\""
        )
    );
}

#[test]
fn run_as_non_root_and_run_as_user() {
    let implicit = containers(&[("a", json!(null)), ("b", json!({}))]);
    assert_eq!(
        refused(
            restricted::run_as_non_root,
            LATEST,
            json!({}),
            implicit.clone()
        ),
        pair(
            "runAsNonRoot != true",
            "pod or containers \"a\", \"b\" must set securityContext.runAsNonRoot=true"
        )
    );
    let mut pod_level = implicit;
    pod_level["securityContext"] = json!({"runAsNonRoot": true});
    allowed(restricted::run_as_non_root, LATEST, json!({}), pod_level);
    let explicit = json!({
        "securityContext": {"runAsNonRoot": false, "runAsUser": 0},
        "containers": [
            {"name": "c", "securityContext": {"runAsNonRoot": false, "runAsUser": 0}},
            {"name": "d", "securityContext": {"runAsNonRoot": false, "runAsUser": 0}},
            {"name": "e", "securityContext": {"runAsNonRoot": true, "runAsUser": 1000}},
        ]
    });
    assert_eq!(
        refused(
            restricted::run_as_non_root,
            LATEST,
            json!({}),
            explicit.clone()
        )
        .1,
        "pod and containers \"c\", \"d\" must not set securityContext.runAsNonRoot=false"
    );
    assert_eq!(
        refused(restricted::run_as_user, LATEST, json!({}), explicit.clone()),
        pair(
            "runAsUser=0",
            "pod and containers \"c\", \"d\" must not set runAsUser=0"
        )
    );
    // Root in a user namespace is not root on the host (from v1.35).
    let mut userns = explicit;
    userns["hostUsers"] = json!(false);
    allowed(
        restricted::run_as_non_root,
        LATEST,
        json!({}),
        userns.clone(),
    );
    allowed(restricted::run_as_user, LATEST, json!({}), userns.clone());
    assert!(restricted::run_as_user(34, &json!({}), &userns).is_some());
}

#[test]
fn restricted_seccomp() {
    let spec = containers(&[
        ("a", json!(null)),
        (
            "b",
            json!({"seccompProfile": {"type": "Localhost", "localhostProfile": "p"}}),
        ),
    ]);
    assert_eq!(
        refused(restricted::seccomp_profile, LATEST, json!({}), spec.clone()),
        pair(
            "seccompProfile",
            "pod or container \"a\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\""
        )
    );
    let mut pod_level = spec;
    pod_level["securityContext"] = json!({"seccompProfile": {"type": "RuntimeDefault"}});
    allowed(
        restricted::seccomp_profile,
        LATEST,
        json!({}),
        pod_level.clone(),
    );
    pod_level["containers"][0]["securityContext"] =
        json!({"seccompProfile": {"type": "Unconfined"}});
    assert_eq!(
        refused(restricted::seccomp_profile, LATEST, json!({}), pod_level).1,
        "container \"a\" must not set securityContext.seccompProfile.type to \"Unconfined\""
    );
}

/// The example of upstream's documentation: a privileged pod in a restricted namespace.
#[test]
fn a_privileged_pod_at_restricted_gets_upstreams_message() {
    let spec = containers(&[("c", json!({"privileged": true}))]);
    let lv = LevelVersion {
        level: Level::Restricted,
        version: Version::Latest,
    };
    assert_eq!(
        forbidden_detail(&evaluate(lv, &json!({}), &spec)),
        "privileged (container \"c\" must not set securityContext.privileged=true), allowPrivilegeEscalation != false (container \"c\" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container \"c\" must set securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot != true (pod or container \"c\" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container \"c\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
    );
    let compliant = json!({
        "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{"name": "c", "securityContext": {
            "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}
        }}],
        "volumes": [{"name": "token", "projected": {"sources": []}}],
    });
    assert!(evaluate(lv, &json!({}), &compliant).is_empty());
}

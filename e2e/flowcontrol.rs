//! flowcontrol.apiserver.k8s.io with the real kubectl on both backends: the configuration
//! every kube-apiserver starts with, printed as upstream prints it (schemas by precedence,
//! MISSINGPL from the Dangling condition), the mandatory objects' fixed specs, and the
//! configuration put back after a restart.

mod support;

use std::time::Duration;

use support::{start, start_on_etcd, Kubectl, Server};
use test_support::wait_until;

#[test]
fn flow_control_with_kubectl() {
    flow_control(start());
}

#[test]
fn flow_control_with_kubectl_on_etcd() {
    flow_control(start_on_etcd());
}

/// The table without its AGE column, each row's cells split on runs of spaces.
fn rows(s: &Server, args: &[&str]) -> Vec<Vec<String>> {
    let out = s.kubectl(args);
    let mut lines = out.lines();
    let header: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    let age = header.iter().position(|h| *h == "AGE");
    let mut rows = vec![header.iter().map(|h| h.to_string()).collect::<Vec<_>>()];
    rows.extend(lines.map(|l| l.split_whitespace().map(str::to_string).collect()));
    if let Some(age) = age {
        for row in &mut rows {
            if row.len() > age {
                row.remove(age);
            }
        }
    }
    rows
}

fn owned(rows: &[&[&str]]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| r.iter().map(|c| c.to_string()).collect())
        .collect()
}

fn flow_control(mut s: Server) {
    // The started configuration, as `kubectl get` shows it on kube-apiserver 1.35.
    let schemas = || rows(&s, &["get", "flowschemas"]);
    wait_until("every schema judged", Duration::from_secs(20), || {
        schemas()
            .iter()
            .skip(1)
            .all(|r| r.last().is_some_and(|c| c == "False"))
    });
    assert_eq!(
        schemas(),
        owned(&[
            &[
                "NAME",
                "PRIORITYLEVEL",
                "MATCHINGPRECEDENCE",
                "DISTINGUISHERMETHOD",
                "MISSINGPL"
            ],
            &["exempt", "exempt", "1", "<none>", "False"],
            &["probes", "exempt", "2", "<none>", "False"],
            &[
                "system-leader-election",
                "leader-election",
                "100",
                "ByUser",
                "False"
            ],
            &["system-node-high", "node-high", "400", "ByUser", "False"],
            &["system-nodes", "system", "500", "ByUser", "False"],
            &[
                "kube-controller-manager",
                "workload-high",
                "800",
                "ByNamespace",
                "False"
            ],
            &[
                "kube-scheduler",
                "workload-high",
                "800",
                "ByNamespace",
                "False"
            ],
            &[
                "kube-system-service-accounts",
                "workload-high",
                "900",
                "ByNamespace",
                "False"
            ],
            &[
                "service-accounts",
                "workload-low",
                "9000",
                "ByUser",
                "False"
            ],
            &[
                "global-default",
                "global-default",
                "9900",
                "ByUser",
                "False"
            ],
            &["catch-all", "catch-all", "10000", "ByUser", "False"],
        ])
    );
    assert_eq!(
        rows(&s, &["get", "prioritylevelconfigurations"]),
        owned(&[
            &[
                "NAME",
                "TYPE",
                "NOMINALCONCURRENCYSHARES",
                "QUEUES",
                "HANDSIZE",
                "QUEUELENGTHLIMIT"
            ],
            &["catch-all", "Limited", "5", "<none>", "<none>", "<none>"],
            &["exempt", "Exempt", "<none>", "<none>", "<none>", "<none>"],
            &["global-default", "Limited", "20", "128", "6", "50"],
            &["leader-election", "Limited", "10", "16", "4", "50"],
            &["node-high", "Limited", "40", "64", "6", "50"],
            &["system", "Limited", "30", "64", "6", "50"],
            &["workload-high", "Limited", "40", "128", "6", "50"],
            &["workload-low", "Limited", "100", "128", "6", "50"],
        ])
    );

    // A schema naming a level that does not exist is dangling until the level comes.
    s.with_manifest(
        "apply",
        "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata:\n  name: batch-jobs\nspec:\n  priorityLevelConfiguration:\n    name: batch\n  rules:\n  - subjects: [{kind: ServiceAccount, serviceAccount: {name: runner, namespace: jobs}}]\n    resourceRules: [{verbs: [create], apiGroups: [batch], resources: [jobs], namespaces: [jobs]}]\n",
    );
    let missing = || {
        rows(&s, &["get", "flowschema", "batch-jobs"])
            .get(1)
            .and_then(|r| r.last().cloned())
            .unwrap_or_default()
    };
    wait_until("Dangling True", Duration::from_secs(20), || {
        missing() == "True"
    });
    let message = s.kubectl(&[
        "get",
        "flowschema",
        "batch-jobs",
        "-o",
        "jsonpath={.status.conditions[0].message}",
    ]);
    assert_eq!(
        message,
        "This FlowSchema references the PriorityLevelConfiguration object named \"batch\" but there is no such object"
    );
    s.with_manifest(
        "apply",
        "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: PriorityLevelConfiguration\nmetadata:\n  name: batch\nspec:\n  type: Limited\n  limited:\n    limitResponse:\n      type: Queue\n      queuing: {}\n",
    );
    wait_until("Dangling False", Duration::from_secs(20), || {
        missing() == "False"
    });
    // v1 defaults.
    assert_eq!(
        rows(&s, &["get", "prioritylevelconfiguration", "batch"])[1],
        ["batch", "Limited", "30", "64", "8", "50"]
    );
    assert_eq!(
        s.kubectl(&[
            "get",
            "flowschema",
            "batch-jobs",
            "-o",
            "jsonpath={.spec.matchingPrecedence}"
        ]),
        "1000"
    );

    // The mandatory specs are fixed (but for the exempt level's own tunables).
    let refused = s.kubectl_raw(&[
        "patch",
        "prioritylevelconfiguration",
        "catch-all",
        "--type=merge",
        "-p",
        r#"{"spec":{"limited":{"nominalConcurrencyShares":50}}}"#,
    ]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        stderr.contains(
            r#"The PriorityLevelConfiguration "catch-all" is invalid: spec: Invalid value: "#
        ) && stderr.contains("spec of 'catch-all' must equal the fixed value"),
        "{stderr}"
    );
    s.kubectl(&[
        "patch",
        "prioritylevelconfiguration",
        "exempt",
        "--type=merge",
        "-p",
        r#"{"spec":{"exempt":{"nominalConcurrencyShares":7}}}"#,
    ]);

    // Deleted, the server's objects come back with the next start; the admin's stay gone.
    s.kubectl(&[
        "delete",
        "flowschema",
        "catch-all",
        "global-default",
        "batch-jobs",
    ]);
    s.kubectl(&["delete", "prioritylevelconfiguration", "workload-low"]);
    s.crash_and_restart();
    let names = s.kubectl(&["get", "flowschemas", "-o", "name"]);
    assert!(names.contains("flowschema.flowcontrol.apiserver.k8s.io/catch-all"));
    assert!(names.contains("flowschema.flowcontrol.apiserver.k8s.io/global-default"));
    assert!(!names.contains("batch-jobs"), "{names}");
    s.kubectl(&["get", "prioritylevelconfiguration", "workload-low"]);
    assert_eq!(
        s.kubectl(&[
            "get",
            "prioritylevelconfiguration",
            "exempt",
            "-o",
            "jsonpath={.spec.exempt.nominalConcurrencyShares}"
        ]),
        "7"
    );
}

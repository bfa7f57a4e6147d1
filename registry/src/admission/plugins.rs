//! Upstream's admission plugins by name, in the order they run (kube-apiserver 1.35's
//! AllOrderedPlugins), which are on by default, and which this server builds. The flags
//! `--enable-admission-plugins` and `--disable-admission-plugins` are resolved here, with
//! upstream's rules and messages.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::{
    always_admit, always_deny, certificate_approval, certificate_signing,
    certificate_subject_restriction, default_ingress_class, default_storage_class,
    default_toleration_seconds, limit_ranger, namespace_lifecycle, persistent_volume_claim_resize,
    pod_security, priority, resource_quota, runtime_class, service_account,
    storage_object_in_use_protection, taint_nodes_by_condition, Chain, Plugin,
};
use crate::Registry;

/// Builds a plugin over the registry it admits writes to.
type Build = fn(&Registry) -> Arc<dyn Plugin>;

/// One of upstream's plugins.
pub struct Entry {
    pub name: &'static str,
    /// In kube-apiserver's default set (enabled unless disabled).
    pub default_on: bool,
    /// None: upstream has it, this server does not build it here: it is `provided` by the
    /// server (built where its dependencies are, handed to the registry at start), or not
    /// built yet.
    build: Option<Build>,
    provided: bool,
}

const fn plugin(name: &'static str, default_on: bool, build: Option<Build>) -> Entry {
    Entry {
        name,
        default_on,
        build,
        provided: false,
    }
}

/// A plugin the server builds and hands in ([`crate::Registry::provide_admission_plugin`]):
/// the webhooks, which call out over HTTPS.
const fn provided(name: &'static str, default_on: bool) -> Entry {
    Entry {
        name,
        default_on,
        build: None,
        provided: true,
    }
}

/// Every upstream plugin in execution order. Webhooks, policies, ResourceQuota and AlwaysDeny
/// stay last, as upstream keeps them.
pub static ORDERED: &[Entry] = &[
    plugin("AlwaysAdmit", false, Some(always_admit::build)),
    plugin("NamespaceAutoProvision", false, None),
    plugin("NamespaceLifecycle", true, Some(namespace_lifecycle::build)),
    plugin("NamespaceExists", false, None),
    plugin("LimitPodHardAntiAffinityTopology", false, None),
    plugin("LimitRanger", true, Some(limit_ranger::build)),
    plugin("ServiceAccount", true, Some(service_account::build)),
    plugin("NodeRestriction", false, None),
    plugin(
        "TaintNodesByCondition",
        true,
        Some(taint_nodes_by_condition::build),
    ),
    plugin("AlwaysPullImages", false, None),
    plugin("ImagePolicyWebhook", false, None),
    plugin("PodSecurity", true, Some(pod_security::build)),
    plugin("PodNodeSelector", false, None),
    plugin("Priority", true, Some(priority::build)),
    plugin(
        "DefaultTolerationSeconds",
        true,
        Some(default_toleration_seconds::build),
    ),
    plugin("PodTolerationRestriction", false, None),
    plugin("EventRateLimit", false, None),
    plugin("ExtendedResourceToleration", false, None),
    plugin(
        "DefaultStorageClass",
        true,
        Some(default_storage_class::build),
    ),
    plugin(
        "StorageObjectInUseProtection",
        true,
        Some(storage_object_in_use_protection::build),
    ),
    plugin("OwnerReferencesPermissionEnforcement", false, None),
    plugin(
        "PersistentVolumeClaimResize",
        true,
        Some(persistent_volume_claim_resize::build),
    ),
    plugin("RuntimeClass", true, Some(runtime_class::build)),
    plugin(
        "CertificateApproval",
        true,
        Some(certificate_approval::build),
    ),
    plugin("CertificateSigning", true, Some(certificate_signing::build)),
    plugin("ClusterTrustBundleAttest", true, None),
    plugin(
        "CertificateSubjectRestriction",
        true,
        Some(certificate_subject_restriction::build),
    ),
    plugin(
        "DefaultIngressClass",
        true,
        Some(default_ingress_class::build),
    ),
    plugin("DenyServiceExternalIPs", false, None),
    plugin("PodTopologyLabels", true, None),
    plugin("MutatingAdmissionPolicy", true, None),
    provided("MutatingAdmissionWebhook", true),
    provided("ValidatingAdmissionPolicy", true),
    provided("ValidatingAdmissionWebhook", true),
    plugin("ResourceQuota", true, Some(resource_quota::build)),
    plugin("AlwaysDeny", false, Some(always_deny::build)),
];

/// The plugins of a registry no flags configured (in-process use and tests): the default
/// ones that need nothing the server sets up at start (ServiceAccount needs the accounts'
/// controller and token keys).
pub const IN_PROCESS: &[&str] = &[
    "NamespaceLifecycle",
    "LimitRanger",
    "PodSecurity",
    "Priority",
    "DefaultTolerationSeconds",
    "DefaultStorageClass",
    "DefaultIngressClass",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "CertificateSubjectRestriction",
    "ResourceQuota",
];

/// A bad `--enable-admission-plugins` / `--disable-admission-plugins`.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PluginConfigError {
    #[error("{flag} plugin {name:?} is unknown")]
    Unknown { flag: &'static str, name: String },
    #[error("[{}] in enable-admission-plugins and disable-admission-plugins overlapped", .0.join(" "))]
    Overlap(Vec<String>),
    #[error("enable-admission-plugins plugin {0:?} is not available in this server yet")]
    Unavailable(String),
    /// `--admission-control-config-file` (or a file it names) does not read.
    #[error("unable to read admission control configuration from {path:?} [{reason}]")]
    ReadFile { path: String, reason: String },
    #[error("admission control configuration {path:?}: {message}")]
    File { path: String, message: String },
    /// A plugin's configuration does not read (upstream's CompleteConfiguration error).
    #[error("{plugin} configuration error: {message}")]
    Configuration {
        plugin: &'static str,
        message: String,
    },
    /// A plugin's configuration reads but is not valid (upstream's ValidateConfiguration).
    #[error("{plugin} invalid: {message}")]
    Invalid {
        plugin: &'static str,
        message: String,
    },
}

/// What the flags make of the plugins.
#[derive(Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The plugins that run, in order.
    pub enabled: Vec<&'static str>,
    /// Default plugins upstream would run that this server does not build yet.
    pub unavailable: Vec<&'static str>,
}

/// Upstream's rules: the default set, plus what `enable` names, less what `disable` names;
/// every name must be one of upstream's, and none may be in both lists.
pub fn resolve(enable: &[String], disable: &[String]) -> Result<Resolved, PluginConfigError> {
    for (flag, names) in [
        ("enable-admission-plugins", enable),
        ("disable-admission-plugins", disable),
    ] {
        if let Some(name) = names.iter().find(|n| entry(n).is_none()) {
            return Err(PluginConfigError::Unknown {
                flag,
                name: name.clone(),
            });
        }
    }
    let enable: BTreeSet<&str> = enable.iter().map(String::as_str).collect();
    let disable: BTreeSet<&str> = disable.iter().map(String::as_str).collect();
    let overlap: Vec<String> = enable
        .intersection(&disable)
        .map(|n| n.to_string())
        .collect();
    if !overlap.is_empty() {
        return Err(PluginConfigError::Overlap(overlap));
    }
    let mut resolved = Resolved {
        enabled: Vec::new(),
        unavailable: Vec::new(),
    };
    for e in ORDERED {
        let on = (e.default_on || enable.contains(e.name)) && !disable.contains(e.name);
        match (on, e.build) {
            (false, _) => {}
            (true, Some(_)) => resolved.enabled.push(e.name),
            (true, None) if e.provided => resolved.enabled.push(e.name),
            (true, None) if enable.contains(e.name) => {
                return Err(PluginConfigError::Unavailable(e.name.to_string()))
            }
            (true, None) => resolved.unavailable.push(e.name),
        }
    }
    Ok(resolved)
}

fn entry(name: &str) -> Option<&'static Entry> {
    ORDERED.iter().find(|e| e.name == name)
}

/// The chain of `names` (each one this server builds), in upstream's order whatever the
/// order given.
pub(crate) fn chain(registry: &Registry, names: &[&str]) -> Chain {
    Chain::new(
        ORDERED
            .iter()
            .filter(|e| names.contains(&e.name))
            .filter_map(|e| match e.build {
                Some(build) => Some(build(registry)),
                None if e.provided => registry.provided_admission_plugin(e.name),
                None => None,
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn defaults_run_in_upstreams_order() {
        let resolved = resolve(&[], &[]).expect("defaults");
        assert_eq!(
            resolved.enabled,
            [
                "NamespaceLifecycle",
                "LimitRanger",
                "ServiceAccount",
                "TaintNodesByCondition",
                "PodSecurity",
                "Priority",
                "DefaultTolerationSeconds",
                "DefaultStorageClass",
                "StorageObjectInUseProtection",
                "PersistentVolumeClaimResize",
                "RuntimeClass",
                "CertificateApproval",
                "CertificateSigning",
                "CertificateSubjectRestriction",
                "DefaultIngressClass",
                "MutatingAdmissionWebhook",
                "ValidatingAdmissionPolicy",
                "ValidatingAdmissionWebhook",
                "ResourceQuota"
            ]
        );
        assert!(!resolved.unavailable.contains(&"PodSecurity"));
        assert!(!resolved.unavailable.contains(&"ResourceQuota"));
    }

    #[test]
    fn enabling_and_disabling_follow_upstreams_rules() {
        let resolved = resolve(
            &names(&["AlwaysDeny", "AlwaysAdmit"]),
            &names(&["DefaultTolerationSeconds", "LimitRanger"]),
        )
        .expect("valid flags");
        assert_eq!(
            resolved.enabled,
            [
                "AlwaysAdmit",
                "NamespaceLifecycle",
                "ServiceAccount",
                "TaintNodesByCondition",
                "PodSecurity",
                "Priority",
                "DefaultStorageClass",
                "StorageObjectInUseProtection",
                "PersistentVolumeClaimResize",
                "RuntimeClass",
                "CertificateApproval",
                "CertificateSigning",
                "CertificateSubjectRestriction",
                "DefaultIngressClass",
                "MutatingAdmissionWebhook",
                "ValidatingAdmissionPolicy",
                "ValidatingAdmissionWebhook",
                "ResourceQuota",
                "AlwaysDeny"
            ]
        );
        assert!(!resolved.unavailable.contains(&"LimitRanger"));
    }

    #[test]
    fn bad_flags_are_refused_with_upstreams_messages() {
        let err = resolve(&[], &names(&["NoSuchPlugin"])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "disable-admission-plugins plugin \"NoSuchPlugin\" is unknown"
        );
        let err = resolve(&names(&["NoSuchPlugin"]), &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "enable-admission-plugins plugin \"NoSuchPlugin\" is unknown"
        );
        let err = resolve(&names(&["AlwaysDeny"]), &names(&["AlwaysDeny"])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "[AlwaysDeny] in enable-admission-plugins and disable-admission-plugins overlapped"
        );
        let err = resolve(&names(&["PodNodeSelector"]), &[]).unwrap_err();
        assert_eq!(
            err,
            PluginConfigError::Unavailable("PodNodeSelector".into())
        );
    }

    #[test]
    fn in_process_plugins_are_built() {
        for name in IN_PROCESS {
            assert!(entry(name).and_then(|e| e.build).is_some(), "{name}");
        }
    }
}

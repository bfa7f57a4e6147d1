//! Typed views of the values controllers, the scheduler, the kubelet and strategies decide on:
//! upstream's string enums (pod phase, restart and concurrency policies, strategy types) as
//! Rust enums, read from an object's JSON where they are needed. Objects stay bytes and JSON
//! everywhere else; a view parses one field, never the whole object again.
//!
//! Each enum reads upstream's spelling (`FromStr`, `of`) and writes it back (`as_str`,
//! `Display`, serde). A value this server does not know reads as `None`, so a caller decides
//! what an unset or unknown value means, as upstream's code does with its zero values.

use serde_json::Value;

/// Declares a string enum with upstream's spellings.
macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every value, in upstream's order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// Upstream's spelling.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// The value a JSON string holds; None when absent, not a string or unknown.
            pub fn from_value(value: &Value) -> Option<Self> {
                value.as_str().and_then(|s| s.parse().ok())
            }
        }

        impl std::str::FromStr for $name {
            type Err = UnknownValue;

            fn from_str(s: &str) -> Result<Self, UnknownValue> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err(UnknownValue),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                text.parse().map_err(|_| {
                    serde::de::Error::unknown_variant(&text, &[$($text),+])
                })
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }
    };
}

/// A value none of an enum's spellings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownValue;

impl std::fmt::Display for UnknownValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("unknown value")
    }
}

impl std::error::Error for UnknownValue {}

string_enum! {
    /// core/v1 PodPhase.
    PodPhase {
        Pending = "Pending",
        Running = "Running",
        Succeeded = "Succeeded",
        Failed = "Failed",
        Unknown = "Unknown",
    }
}

impl PodPhase {
    /// A pod's `status.phase`.
    pub fn of(pod: &Value) -> Option<Self> {
        Self::from_value(&pod["status"]["phase"])
    }

    /// Succeeded or Failed: the pod's containers will not run again.
    pub fn is_terminal(self) -> bool {
        matches!(self, PodPhase::Succeeded | PodPhase::Failed)
    }

    /// Whether a pod's phase is terminal (an unset or unknown phase is not).
    pub fn terminal(pod: &Value) -> bool {
        Self::of(pod).is_some_and(Self::is_terminal)
    }
}

string_enum! {
    /// core/v1 RestartPolicy of a pod.
    RestartPolicy {
        Always = "Always",
        OnFailure = "OnFailure",
        Never = "Never",
    }
}

impl RestartPolicy {
    /// A pod's `spec.restartPolicy`; upstream defaults it to Always.
    pub fn of(pod: &Value) -> Self {
        Self::from_value(&pod["spec"]["restartPolicy"]).unwrap_or(RestartPolicy::Always)
    }

    /// Whether a container that exited with `exit_code` runs again.
    pub fn restarts(self, exit_code: i32) -> bool {
        match self {
            RestartPolicy::Always => true,
            RestartPolicy::OnFailure => exit_code != 0,
            RestartPolicy::Never => false,
        }
    }
}

string_enum! {
    /// core/v1 ContainerRestartPolicy: only `Always`, which makes an init container a
    /// restartable sidecar.
    ContainerRestartPolicy {
        Always = "Always",
    }
}

impl ContainerRestartPolicy {
    /// Whether a container (an init container) is a sidecar that keeps running.
    pub fn restartable(container: &Value) -> bool {
        Self::from_value(&container["restartPolicy"]) == Some(ContainerRestartPolicy::Always)
    }
}

string_enum! {
    /// batch/v1 ConcurrencyPolicy of a CronJob.
    ConcurrencyPolicy {
        Allow = "Allow",
        Forbid = "Forbid",
        Replace = "Replace",
    }
}

impl ConcurrencyPolicy {
    /// A CronJob's `spec.concurrencyPolicy`; upstream defaults it to Allow.
    pub fn of(cron_job: &Value) -> Self {
        Self::from_value(&cron_job["spec"]["concurrencyPolicy"]).unwrap_or(ConcurrencyPolicy::Allow)
    }
}

string_enum! {
    /// apps/v1 DeploymentStrategyType.
    DeploymentStrategyType {
        Recreate = "Recreate",
        RollingUpdate = "RollingUpdate",
    }
}

impl DeploymentStrategyType {
    /// A Deployment's `spec.strategy.type`; upstream defaults it to RollingUpdate.
    pub fn of(deployment: &Value) -> Self {
        Self::from_value(&deployment["spec"]["strategy"]["type"])
            .unwrap_or(DeploymentStrategyType::RollingUpdate)
    }
}

string_enum! {
    /// apps/v1 StatefulSetUpdateStrategyType and DaemonSetUpdateStrategyType.
    UpdateStrategyType {
        RollingUpdate = "RollingUpdate",
        OnDelete = "OnDelete",
    }
}

impl UpdateStrategyType {
    /// A StatefulSet's or DaemonSet's `spec.updateStrategy.type`; upstream defaults it to
    /// RollingUpdate.
    pub fn of(workload: &Value) -> Self {
        Self::from_value(&workload["spec"]["updateStrategy"]["type"])
            .unwrap_or(UpdateStrategyType::RollingUpdate)
    }
}

string_enum! {
    /// A condition's status (metav1.ConditionStatus, core/v1 ConditionStatus).
    ConditionStatus {
        True = "True",
        False = "False",
        Unknown = "Unknown",
    }
}

impl ConditionStatus {
    /// True or False.
    pub fn from_bool(value: bool) -> Self {
        if value {
            ConditionStatus::True
        } else {
            ConditionStatus::False
        }
    }
}

/// The StorageClass a PersistentVolumeClaim names (upstream's GetPersistentVolumeClaimClass):
/// the legacy `volume.beta.kubernetes.io/storage-class` annotation, else
/// `spec.storageClassName`; `Some("")` asks for no class, None names none.
pub fn claim_class(claim: &Value) -> Option<&str> {
    claim["metadata"]["annotations"]["volume.beta.kubernetes.io/storage-class"]
        .as_str()
        .or_else(|| claim["spec"]["storageClassName"].as_str())
}

/// A quantity as a number of base units ("100m" → 0.1, "1Gi" → 1073741824).
pub fn parse_quantity(text: &str) -> Option<f64> {
    let text = text.trim();
    let split = text
        .find(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E')
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let factor = match suffix {
        "" => 1.0,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        _ => return None,
    };
    let value: f64 = number.parse().ok()?;
    value.is_finite().then_some(value * factor)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn quantities() {
        assert_eq!(parse_quantity("100m"), Some(0.1));
        assert_eq!(parse_quantity("2"), Some(2.0));
        assert_eq!(parse_quantity("1Gi"), Some(1073741824.0));
        assert_eq!(parse_quantity("1e3"), Some(1000.0));
        assert_eq!(parse_quantity("1.5k"), Some(1500.0));
        assert_eq!(parse_quantity("bad"), None);
        assert_eq!(parse_quantity("1Zi"), None);
    }

    #[test]
    fn spellings_round_trip() {
        for phase in PodPhase::ALL {
            assert_eq!(phase.as_str().parse::<PodPhase>(), Ok(*phase));
            assert_eq!(
                serde_json::to_value(phase).ok(),
                Some(json!(phase.as_str()))
            );
            let back: PodPhase = serde_json::from_value(json!(phase.as_str())).expect("decodes");
            assert_eq!(back, *phase);
        }
        assert!(
            "running".parse::<PodPhase>().is_err(),
            "case matters, as upstream's"
        );
        assert!(serde_json::from_value::<PodPhase>(json!("Nope")).is_err());
    }

    #[test]
    fn views_read_their_field_and_default_as_upstream() {
        let pod = json!({"spec": {"restartPolicy": "Never"}, "status": {"phase": "Failed"}});
        assert_eq!(PodPhase::of(&pod), Some(PodPhase::Failed));
        assert!(PodPhase::terminal(&pod));
        assert_eq!(RestartPolicy::of(&pod), RestartPolicy::Never);
        assert!(!RestartPolicy::Never.restarts(1));
        assert!(RestartPolicy::OnFailure.restarts(1) && !RestartPolicy::OnFailure.restarts(0));
        let empty = json!({});
        assert_eq!(PodPhase::of(&empty), None);
        assert!(!PodPhase::terminal(&empty));
        assert_eq!(RestartPolicy::of(&empty), RestartPolicy::Always);
        assert_eq!(ConcurrencyPolicy::of(&empty), ConcurrencyPolicy::Allow);
        assert_eq!(
            DeploymentStrategyType::of(&empty),
            DeploymentStrategyType::RollingUpdate
        );
        assert_eq!(
            UpdateStrategyType::of(&json!({"spec": {"updateStrategy": {"type": "OnDelete"}}})),
            UpdateStrategyType::OnDelete
        );
        assert!(ContainerRestartPolicy::restartable(
            &json!({"restartPolicy": "Always"})
        ));
        assert!(!ContainerRestartPolicy::restartable(&json!({})));
        assert!(PodPhase::Running == "Running");
    }

    #[test]
    fn condition_statuses_from_bools() {
        assert_eq!(ConditionStatus::from_bool(true), ConditionStatus::True);
        assert_eq!(ConditionStatus::from_bool(false).as_str(), "False");
        assert_eq!(
            ConditionStatus::from_value(&json!("Unknown")),
            Some(ConditionStatus::Unknown)
        );
        assert_eq!(ConditionStatus::from_value(&json!("true")), None);
    }
}

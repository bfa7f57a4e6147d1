//! kube-scheduler's configuration file (`--config`), a KubeSchedulerConfiguration of
//! kubescheduler.config.k8s.io/v1 in YAML or JSON, read into a `SchedulerConfig`.
//!
//! Honoured: `parallelism` (the pods decided and bound at once), `percentageOfNodesToScore`
//! (top-level, and the default-scheduler profile's, which overrides it),
//! `podInitialBackoffSeconds`, `podMaxBackoffSeconds`, and `profiles[].schedulerName`.
//! Validated as upstream validates them, after upstream's defaulting.
//!
//! Everything else is refused rather than ignored, so that a file never seems to configure
//! what it does not: unknown fields (upstream decodes strictly), a profile for another
//! scheduler name (only default-scheduler is run), plugins, plugin arguments and extenders
//! (the plugin set is fixed), and a leader election or profiling setting other than upstream's
//! default (this scheduler runs under the controller manager's election and serves no
//! profiling endpoint of its own: at the default, a file asks for what runs anyway).
//! `clientConnection` alone is accepted whatever it says: it tells a separate kube-scheduler
//! how to reach the API server, and this one runs inside it, on its informers.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{json, Value};

use crate::error::SchedulerError;
use crate::{SchedulerConfig, DEFAULT_SCHEDULER_NAME};

const API_VERSION: &str = "kubescheduler.config.k8s.io/v1";
const GROUP: &str = "kubescheduler.config.k8s.io";
const KIND: &str = "KubeSchedulerConfiguration";

/// Top-level fields accepted only at upstream's default value, with it.
fn top_level_defaults() -> [(&'static str, Value); 3] {
    [
        ("enableProfiling", json!(true)),
        ("enableContentionProfiling", json!(true)),
        ("delayCacheUntilActive", json!(false)),
    ]
}

/// `leaderElection`'s fields and upstream's defaults for kube-scheduler.
fn leader_election_defaults() -> [(&'static str, Value); 7] {
    [
        ("leaderElect", json!(true)),
        ("leaseDuration", json!("15s")),
        ("renewDeadline", json!("10s")),
        ("retryPeriod", json!("2s")),
        ("resourceLock", json!("leases")),
        ("resourceName", json!("kube-scheduler")),
        ("resourceNamespace", json!("kube-system")),
    ]
}

/// Field errors, reported together as upstream's aggregate.
#[derive(Default)]
struct Errors(Vec<String>);

impl Errors {
    fn invalid(&mut self, path: &str, value: &Value, why: &str) {
        self.0
            .push(format!("{path}: Invalid value: {value}: {why}"));
    }

    fn unknown(&mut self, path: &str) {
        self.0
            .push(format!("strict decoding error: unknown field \"{path}\""));
    }

    fn unsupported(&mut self, path: &str, why: &str) {
        self.0.push(format!(
            "{path}: not supported by the in-process scheduler: {why}"
        ));
    }

    /// An integer field, None (and an error) when it is not one.
    fn integer(&mut self, path: &str, value: &Value) -> Option<i64> {
        let n = value.as_i64();
        if n.is_none() {
            self.invalid(path, value, "must be an integer");
        }
        n
    }
}

fn config_error(message: String) -> SchedulerError {
    SchedulerError::Config(message)
}

impl SchedulerConfig {
    /// The configuration a KubeSchedulerConfiguration file (its text) asks for, on top of
    /// the defaults; a file that is invalid, or asks for what this scheduler does not do,
    /// is refused with every reason.
    pub fn from_config_file(data: &str) -> Result<SchedulerConfig, SchedulerError> {
        let file: Value = serde_yaml_ng::from_str(data)
            .map_err(|e| config_error(format!("not a YAML or JSON document: {e}")))?;
        let Value::Object(fields) = file else {
            return Err(config_error(
                "not a KubeSchedulerConfiguration object".into(),
            ));
        };
        check_type(&fields)?;

        let mut config = SchedulerConfig::default();
        let mut errors = Errors::default();
        let mut percentage = None;
        let (mut initial, mut max) = (1i64, 10i64);
        let defaults: HashMap<&str, Value> = top_level_defaults().into_iter().collect();
        // A null is a field left out, as upstream's decoding has it.
        for (name, value) in fields.iter().filter(|(_, v)| !v.is_null()) {
            match name.as_str() {
                "apiVersion" | "kind" | "clientConnection" => {}
                "parallelism" => {
                    if let Some(n) = errors.integer(name, value) {
                        match usize::try_from(n) {
                            Ok(n) if n > 0 => config.workers = n,
                            _ => errors.invalid(
                                name,
                                value,
                                "should be an integer value greater than zero",
                            ),
                        }
                    }
                }
                "percentageOfNodesToScore" => percentage = percentage_in(name, value, &mut errors),
                "podInitialBackoffSeconds" => {
                    initial = errors.integer(name, value).unwrap_or(initial)
                }
                "podMaxBackoffSeconds" => max = errors.integer(name, value).unwrap_or(max),
                "leaderElection" => leader_election(value, &mut errors),
                "extenders" if is_empty(value) => {}
                "extenders" => errors.unsupported(name, "scheduler extenders are not called"),
                "profiles" => {
                    if let Some(p) = profiles(value, &mut errors) {
                        percentage = Some(p);
                    }
                }
                other => match defaults.get(other) {
                    Some(default) if value == default => {}
                    Some(default) => errors.unsupported(
                        other,
                        &format!("only upstream's default ({default}) is accepted"),
                    ),
                    None => errors.unknown(other),
                },
            }
        }
        if initial <= 0 {
            errors.invalid(
                "podInitialBackoffSeconds",
                &json!(initial),
                "must be greater than 0",
            );
        }
        if max < initial {
            errors.invalid(
                "podMaxBackoffSeconds",
                &json!(max),
                "must be greater than or equal to PodInitialBackoffSeconds",
            );
        }
        if !errors.0.is_empty() {
            return Err(config_error(match errors.0.as_slice() {
                [one] => one.clone(),
                many => format!("[{}]", many.join(", ")),
            }));
        }
        config.initial_backoff = Duration::from_secs(initial.unsigned_abs());
        config.max_backoff = Duration::from_secs(max.unsigned_abs());
        config.percentage_of_nodes_to_score = percentage.unwrap_or(0);
        Ok(config)
    }
}

/// apiVersion and kind, with upstream's decoder's words when they are not this type's.
fn check_type(fields: &serde_json::Map<String, Value>) -> Result<(), SchedulerError> {
    let api_version = fields.get("apiVersion").and_then(Value::as_str);
    let kind = fields.get("kind").and_then(Value::as_str);
    match (api_version, kind) {
        (Some(API_VERSION), Some(KIND)) => Ok(()),
        (_, None) => Err(config_error(
            "Object 'Kind' is missing in the configuration".into(),
        )),
        (None, _) => Err(config_error(
            "Object 'apiVersion' is missing in the configuration".into(),
        )),
        (Some(v), Some(k)) => {
            let hint = match v.split_once('/') {
                Some((GROUP, _)) if v != API_VERSION => {
                    format!(" (only {API_VERSION} is served)")
                }
                _ => String::new(),
            };
            Err(config_error(format!(
                "no kind \"{k}\" is registered for version \"{v}\"{hint}"
            )))
        }
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

fn percentage_in(path: &str, value: &Value, errors: &mut Errors) -> Option<u32> {
    let n = errors.integer(path, value)?;
    match u32::try_from(n) {
        Ok(p) if p <= 100 => Some(p),
        _ => {
            errors.invalid(path, value, "not in valid range [0-100]");
            None
        }
    }
}

fn leader_election(value: &Value, errors: &mut Errors) {
    let Value::Object(fields) = value else {
        errors.invalid("leaderElection", value, "must be an object");
        return;
    };
    let defaults: HashMap<&str, Value> = leader_election_defaults().into_iter().collect();
    for (name, value) in fields {
        let path = format!("leaderElection.{name}");
        match defaults.get(name.as_str()) {
            Some(default) if value == default => {}
            Some(default) => errors.unsupported(
                &path,
                &format!(
                    "the scheduler runs under the controller manager's leader election \
                     (--leader-elect flags); only upstream's default ({default}) is accepted"
                ),
            ),
            None => errors.unknown(&path),
        }
    }
}

/// Validates the profiles; the default-scheduler profile's percentageOfNodesToScore if set.
fn profiles(value: &Value, errors: &mut Errors) -> Option<u32> {
    let profiles = match value {
        Value::Null => return None,
        Value::Array(profiles) => profiles,
        other => {
            errors.invalid("profiles", other, "must be a list");
            return None;
        }
    };
    let mut percentage = None;
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (i, profile) in profiles.iter().enumerate() {
        let path = format!("profiles[{i}]");
        let Value::Object(fields) = profile else {
            errors.invalid(&path, profile, "must be an object");
            continue;
        };
        // Upstream's defaulting names a lone profile default-scheduler.
        let name = match fields.get("schedulerName") {
            Some(Value::String(name)) => name.as_str(),
            None | Some(Value::Null) if profiles.len() == 1 => DEFAULT_SCHEDULER_NAME,
            None | Some(Value::Null) => "",
            Some(other) => {
                errors.invalid(&format!("{path}.schedulerName"), other, "must be a string");
                continue;
            }
        };
        if name.is_empty() {
            errors
                .0
                .push(format!("{path}.schedulerName: Required value"));
        } else if let Some(first) = seen.insert(name, i) {
            errors.0.push(format!(
                "{path}.schedulerName: Duplicate value: \"profiles[{first}].schedulerName\""
            ));
        } else if name != DEFAULT_SCHEDULER_NAME {
            errors.unsupported(
                &format!("{path}.schedulerName"),
                &format!("only the {DEFAULT_SCHEDULER_NAME} profile is run, not \"{name}\""),
            );
        }
        for (field, value) in fields.iter().filter(|(_, v)| !v.is_null()) {
            let at = format!("{path}.{field}");
            match field.as_str() {
                "schedulerName" => {}
                "percentageOfNodesToScore" => {
                    let p = percentage_in(&at, value, errors);
                    if name == DEFAULT_SCHEDULER_NAME && p.is_some() {
                        percentage = p;
                    }
                }
                "plugins" | "pluginConfig" if is_empty(value) => {}
                "plugins" | "pluginConfig" => errors.unsupported(
                    &at,
                    "the plugins and their arguments are upstream's defaults, fixed",
                ),
                _ => errors.unknown(&at),
            }
        }
    }
    percentage
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<SchedulerConfig, String> {
        SchedulerConfig::from_config_file(text).map_err(|e| e.to_string())
    }

    fn refused(text: &str) -> String {
        match parse(text) {
            Ok(c) => panic!("accepted: {c:?}\n{text}"),
            Err(e) => e,
        }
    }

    const HEAD: &str =
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";

    #[test]
    fn honoured_fields_are_applied() {
        let c = parse(&format!(
            "{HEAD}parallelism: 4\npercentageOfNodesToScore: 30\npodInitialBackoffSeconds: 2\npodMaxBackoffSeconds: 20\n"
        ))
        .expect("valid");
        assert_eq!(c.workers, 4);
        assert_eq!(c.percentage_of_nodes_to_score, 30);
        assert_eq!(c.initial_backoff, Duration::from_secs(2));
        assert_eq!(c.max_backoff, Duration::from_secs(20));
        // The rest stays at the defaults.
        let d = SchedulerConfig::default();
        assert_eq!(c.unschedulable_flush, d.unschedulable_flush);
        let c = parse(HEAD).expect("an empty configuration");
        assert_eq!(
            (
                c.workers,
                c.percentage_of_nodes_to_score,
                c.initial_backoff,
                c.max_backoff
            ),
            (
                d.workers,
                d.percentage_of_nodes_to_score,
                d.initial_backoff,
                d.max_backoff
            )
        );
    }

    #[test]
    fn json_is_read_too() {
        let c = parse(
            r#"{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                "percentageOfNodesToScore": 70}"#,
        )
        .expect("valid JSON");
        assert_eq!(c.percentage_of_nodes_to_score, 70);
    }

    #[test]
    fn the_default_profile_overrides_the_top_level_percentage() {
        let c = parse(&format!(
            "{HEAD}percentageOfNodesToScore: 30\nprofiles:\n- schedulerName: default-scheduler\n  percentageOfNodesToScore: 80\n"
        ))
        .expect("valid");
        assert_eq!(c.percentage_of_nodes_to_score, 80);
        // A profile without its own keeps the top-level one; a lone profile without a name
        // is default-scheduler, as upstream's defaulting makes it.
        let c = parse(&format!(
            "{HEAD}percentageOfNodesToScore: 30\nprofiles:\n- plugins: {{}}\n  pluginConfig: []\n"
        ))
        .expect("valid");
        assert_eq!(c.percentage_of_nodes_to_score, 30);
        let c = parse(&format!(
            "{HEAD}profiles:\n- percentageOfNodesToScore: 10\n"
        ))
        .expect("valid");
        assert_eq!(c.percentage_of_nodes_to_score, 10);
        let c = parse(&format!(
            "{HEAD}percentageOfNodesToScore: 30\nparallelism: null\nprofiles:\n- percentageOfNodesToScore: null\n"
        ))
        .expect("nulls are fields left out");
        assert_eq!((c.percentage_of_nodes_to_score, c.workers), (30, 16));
    }

    #[test]
    fn validation_as_upstream() {
        assert_eq!(
            refused(&format!("{HEAD}percentageOfNodesToScore: 101\n")),
            "percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]"
        );
        assert_eq!(
            refused(&format!(
                "{HEAD}profiles:\n- percentageOfNodesToScore: -1\n"
            )),
            "profiles[0].percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]"
        );
        assert_eq!(
            refused(&format!("{HEAD}parallelism: 0\n")),
            "parallelism: Invalid value: 0: should be an integer value greater than zero"
        );
        assert_eq!(
            refused(&format!("{HEAD}podInitialBackoffSeconds: 20\n")),
            "podMaxBackoffSeconds: Invalid value: 10: must be greater than or equal to PodInitialBackoffSeconds"
        );
        assert_eq!(
            refused(&format!(
                "{HEAD}podInitialBackoffSeconds: 0\npodMaxBackoffSeconds: 0\n"
            )),
            "podInitialBackoffSeconds: Invalid value: 0: must be greater than 0"
        );
        // Several profiles must each be named, once.
        assert_eq!(
            refused(&format!(
                "{HEAD}profiles:\n- schedulerName: default-scheduler\n- percentageOfNodesToScore: 5\n- schedulerName: default-scheduler\n"
            )),
            "[profiles[1].schedulerName: Required value, profiles[2].schedulerName: Duplicate value: \"profiles[0].schedulerName\"]"
        );
        assert_eq!(
            refused("apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n"),
            "no kind \"KubeSchedulerConfiguration\" is registered for version \"kubescheduler.config.k8s.io/v1beta3\" (only kubescheduler.config.k8s.io/v1 is served)"
        );
        assert_eq!(
            refused("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeProxyConfiguration\n"),
            "no kind \"KubeProxyConfiguration\" is registered for version \"kubescheduler.config.k8s.io/v1\""
        );
        assert_eq!(
            refused("apiVersion: kubescheduler.config.k8s.io/v1\n"),
            "Object 'Kind' is missing in the configuration"
        );
        assert!(refused("percentageOfNodesToScore: [").starts_with("not a YAML or JSON document"));
    }

    #[test]
    fn what_is_not_honoured_is_refused() {
        assert_eq!(
            refused(&format!("{HEAD}percentageOfNodesToScor: 10\n")),
            "strict decoding error: unknown field \"percentageOfNodesToScor\""
        );
        let other = refused(&format!(
            "{HEAD}profiles:\n- schedulerName: default-scheduler\n- schedulerName: my-scheduler\n"
        ));
        assert!(
            other.starts_with("profiles[1].schedulerName: not supported by the in-process scheduler: only the default-scheduler profile is run"),
            "{other}"
        );
        let plugins = refused(&format!(
            "{HEAD}profiles:\n- plugins:\n    score:\n      disabled:\n      - name: '*'\n"
        ));
        assert!(
            plugins.starts_with("profiles[0].plugins: not supported"),
            "{plugins}"
        );
        let election = refused(&format!("{HEAD}leaderElection:\n  leaderElect: false\n"));
        assert!(
            election.starts_with("leaderElection.leaderElect: not supported"),
            "{election}"
        );
        let profiling = refused(&format!("{HEAD}enableProfiling: false\n"));
        assert!(
            profiling.starts_with("enableProfiling: not supported"),
            "{profiling}"
        );
        let extenders = refused(&format!("{HEAD}extenders:\n- urlPrefix: http://x\n"));
        assert!(
            extenders.starts_with("extenders: not supported"),
            "{extenders}"
        );
    }

    #[test]
    fn upstream_defaults_and_the_connection_are_accepted() {
        // What kubeadm and the documentation's examples write for a kube-scheduler.
        let c = parse(&format!(
            "{HEAD}clientConnection:\n  kubeconfig: /etc/kubernetes/scheduler.conf\n  qps: 100\nleaderElection:\n  leaderElect: true\n  resourceNamespace: kube-system\nenableProfiling: true\ndelayCacheUntilActive: false\nextenders: []\nprofiles:\n- schedulerName: default-scheduler\n"
        ))
        .expect("valid");
        assert_eq!(c.percentage_of_nodes_to_score, 0);
    }
}

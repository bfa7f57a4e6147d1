//! `--admission-control-config-file` (upstream's k8s.io/apiserver/pkg/admission/config.go): an
//! apiserver.config.k8s.io AdmissionConfiguration whose `plugins[]` entries give a plugin its
//! configuration inline (`configuration`) or in another file (`path`, relative to this one's
//! directory). Each enabled plugin that takes a configuration reads its entry at start; a
//! file or configuration that does not read fails start.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use super::pod_security;
use super::PluginConfigError;
use crate::validation::quote;

const API_VERSIONS: [&str; 3] = [
    "apiserver.config.k8s.io/v1",
    "apiserver.config.k8s.io/v1alpha1",
    "apiserver.k8s.io/v1alpha1",
];

/// The configuration of every enabled plugin that takes one.
#[derive(Clone, Debug, Default)]
pub struct Configured {
    pub(crate) pod_security: Arc<pod_security::Config>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct AdmissionConfiguration {
    plugins: Vec<PluginEntry>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct PluginEntry {
    name: String,
    path: String,
    configuration: Option<Value>,
}

/// An AdmissionConfiguration file read, its plugins' paths made absolute.
struct ConfigFile {
    plugins: Vec<PluginEntry>,
}

fn file_error(path: &Path, message: String) -> PluginConfigError {
    PluginConfigError::File {
        path: path.display().to_string(),
        message,
    }
}

impl ConfigFile {
    fn read(path: &Path) -> Result<ConfigFile, PluginConfigError> {
        let data = std::fs::read(path).map_err(|e| PluginConfigError::ReadFile {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        let value: Value =
            serde_yaml_ng::from_slice(&data).map_err(|e| file_error(path, e.to_string()))?;
        let api_version = value["apiVersion"].as_str().unwrap_or_default();
        let kind = value["kind"].as_str().unwrap_or_default();
        if kind.is_empty() {
            return Err(file_error(path, "Object 'Kind' is missing".into()));
        }
        if api_version.is_empty() {
            return Err(file_error(path, "Object 'apiVersion' is missing".into()));
        }
        if kind != "AdmissionConfiguration" || !API_VERSIONS.contains(&api_version) {
            return Err(file_error(
                path,
                format!(
                    "no kind {} is registered for version {}",
                    quote(kind),
                    quote(api_version)
                ),
            ));
        }
        let config: AdmissionConfiguration =
            serde_json::from_value(value).map_err(|e| file_error(path, e.to_string()))?;
        let base = path.parent().unwrap_or(Path::new(""));
        let plugins = config
            .plugins
            .into_iter()
            .map(|mut p| {
                if !p.path.is_empty() {
                    p.path = absolute(&p.path, base).display().to_string();
                }
                p
            })
            .collect();
        Ok(ConfigFile { plugins })
    }

    /// The first entry for `name`: its inline configuration (as JSON), else its file's
    /// contents, else nothing.
    fn config_for(&self, name: &str) -> Result<Option<Vec<u8>>, PluginConfigError> {
        let Some(entry) = self.plugins.iter().find(|p| p.name == name) else {
            return Ok(None);
        };
        if let Some(inline) = &entry.configuration {
            return serde_json::to_vec(inline)
                .map(Some)
                .map_err(|e| file_error(Path::new(&entry.path), e.to_string()));
        }
        if entry.path.is_empty() {
            return Ok(None);
        }
        std::fs::read(&entry.path)
            .map(Some)
            .map_err(|e| PluginConfigError::ReadFile {
                path: entry.path.clone(),
                reason: e.to_string(),
            })
    }
}

/// Upstream's makeAbs: a relative path is relative to the configuration file's directory
/// (the working directory when that is empty).
fn absolute(path: &str, base: &Path) -> PathBuf {
    let path = Path::new(path);
    if path.is_absolute() {
        return path.to_path_buf();
    }
    if base.as_os_str().is_empty() || base == Path::new(".") {
        if let Ok(cwd) = std::env::current_dir() {
            return cwd.join(path);
        }
    }
    base.join(path)
}

/// Reads the configuration of the `enabled` plugins from `file` (none: every plugin's
/// defaults).
pub fn configure(file: Option<&Path>, enabled: &[&str]) -> Result<Configured, PluginConfigError> {
    let file = file.map(ConfigFile::read).transpose()?;
    let mut configured = Configured::default();
    if enabled.contains(&"PodSecurity") {
        let data = match &file {
            Some(f) => f.config_for("PodSecurity")?,
            None => None,
        };
        configured.pod_security = Arc::new(pod_security::Config::parse(data.as_deref())?);
    }
    Ok(configured)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write");
        path
    }

    fn temp_dir(tag: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("admission-config-{tag}-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        dir
    }

    #[test]
    fn plugins_read_their_configuration_inline_or_by_relative_path() {
        let dir = temp_dir("ok");
        write(
            &dir,
            "psa.yaml",
            "apiVersion: pod-security.admission.config.k8s.io/v1\nkind: PodSecurityConfiguration\ndefaults: {enforce: baseline}\n",
        );
        let by_path = write(
            &dir,
            "admission.yaml",
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodSecurity\n  path: psa.yaml\n",
        );
        let configured = configure(Some(&by_path), &["PodSecurity"]).expect("by path");
        assert_eq!(
            configured.pod_security.defaults.enforce.to_string(),
            "baseline:latest"
        );
        let inline = write(
            &dir,
            "inline.yaml",
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodSecurity\n  configuration:\n    apiVersion: pod-security.admission.config.k8s.io/v1beta1\n    kind: PodSecurityConfiguration\n    exemptions: {namespaces: [ci]}\n",
        );
        let configured = configure(Some(&inline), &["PodSecurity"]).expect("inline");
        assert!(configured.pod_security.exemptions.namespace("ci"));
        // A disabled plugin's configuration is not read.
        let configured = configure(Some(&inline), &[]).expect("disabled");
        assert!(!configured.pod_security.exemptions.namespace("ci"));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn bad_files_are_refused() {
        let dir = temp_dir("bad");
        let missing = dir.join("nope.yaml");
        let err = configure(Some(&missing), &["PodSecurity"]).unwrap_err();
        assert!(err.to_string().starts_with(&format!(
            "unable to read admission control configuration from {:?} [",
            missing.display().to_string()
        )));
        let wrong = write(&dir, "wrong.yaml", "apiVersion: v1\nkind: ConfigMap\n");
        let err = configure(Some(&wrong), &["PodSecurity"]).unwrap_err();
        assert!(
            err.to_string()
                .contains("no kind \"ConfigMap\" is registered for version \"v1\""),
            "{err}"
        );
        let dangling = write(
            &dir,
            "dangling.yaml",
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodSecurity\n  path: gone.yaml\n",
        );
        let err = configure(Some(&dangling), &["PodSecurity"]).unwrap_err();
        assert!(err.to_string().contains("gone.yaml"), "{err}");
        let _ = std::fs::remove_dir_all(dir);
    }
}

//! Network configurations of the conf dir (seed 001's `getDefaultCNINetwork` over libcni's
//! `ConfFiles` / `ConfListFromFile` / `ConfFromFile` / `ConfListFromConf`): the first file in
//! lexical order that parses and whose plugins are all in the bin dirs is the network; every
//! other file before it is logged and skipped.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};
use tracing::warn;

/// The extensions upstream's kubelet looks for.
const EXTENSIONS: [&str; 3] = ["conf", "conflist", "json"];

/// upstream's loopback network, set up in every sandbox before the default one.
const LOOPBACK: &str =
    r#"{"cniVersion": "0.3.1", "name": "cni-loopback", "plugins": [{"type": "loopback"}]}"#;

/// A network configuration list (libcni's NetworkConfigList): every plugin's config is kept
/// whole, as the plugin receives it on stdin.
#[derive(Clone, Debug, PartialEq)]
pub struct NetworkConfigList {
    pub name: String,
    pub cni_version: String,
    pub plugins: Vec<Map<String, Value>>,
}

#[derive(Deserialize)]
struct ListHeader {
    name: Option<String>,
    #[serde(rename = "cniVersion", default)]
    cni_version: String,
    plugins: Option<Vec<Value>>,
}

impl NetworkConfigList {
    /// A `.conflist`.
    pub fn from_list_bytes(bytes: &[u8]) -> Result<Self, String> {
        let header: ListHeader = serde_json::from_slice(bytes)
            .map_err(|e| format!("error parsing configuration list: {e}"))?;
        let name = header
            .name
            .filter(|n| !n.is_empty())
            .ok_or("error parsing configuration list: no name")?;
        let plugins = header
            .plugins
            .ok_or("error parsing configuration list: no 'plugins' key")?
            .into_iter()
            .enumerate()
            .map(|(i, p)| plugin_conf(p).map_err(|e| format!("failed to parse plugin {i}: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            name,
            cni_version: header.cni_version,
            plugins,
        })
    }

    /// A single-plugin `.conf` / `.json`, wrapped into a list of one (ConfListFromConf).
    pub fn from_conf_bytes(bytes: &[u8]) -> Result<Self, String> {
        let value: Value = serde_json::from_slice(bytes)
            .map_err(|e| format!("error parsing configuration: {e}"))?;
        let conf = plugin_conf(value).map_err(|e| {
            if e.contains("'type'") {
                format!("{e}; perhaps this is a .conflist?")
            } else {
                e
            }
        })?;
        let text = |key: &str| conf.get(key).and_then(Value::as_str).unwrap_or_default();
        Ok(Self {
            name: text("name").to_string(),
            cni_version: text("cniVersion").to_string(),
            plugins: vec![conf],
        })
    }

    pub fn loopback() -> Self {
        Self::from_list_bytes(LOOPBACK.as_bytes()).unwrap_or_else(|_| Self {
            name: "cni-loopback".into(),
            cni_version: "0.3.1".into(),
            plugins: Vec::new(),
        })
    }

    /// The plugin type (its binary's name) of plugin `i`.
    pub fn plugin_type(&self, i: usize) -> &str {
        self.plugins
            .get(i)
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

/// One plugin's config: an object with a non-empty `type`.
fn plugin_conf(value: Value) -> Result<Map<String, Value>, String> {
    let Value::Object(conf) = value else {
        return Err("error parsing configuration: not a JSON object".into());
    };
    match conf.get("type").and_then(Value::as_str) {
        Some(t) if !t.is_empty() => Ok(conf),
        _ => Err("error parsing configuration: missing 'type'".into()),
    }
}

/// The chosen network and the file it came from.
#[derive(Clone, Debug)]
pub struct CniNetwork {
    pub file: PathBuf,
    pub list: NetworkConfigList,
}

/// A file of the conf dir that was not used, and why.
#[derive(Clone, Debug)]
pub struct Skipped {
    pub file: PathBuf,
    pub reason: String,
}

/// What probing the conf dir found.
pub struct Probe {
    pub network: Result<CniNetwork, String>,
    pub skipped: Vec<Skipped>,
}

/// The config files of `dir` in lexical order; a missing dir has none.
pub fn conf_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| !t.is_dir()))
        .map(|e| e.path())
        .filter(|p| {
            p.extension()
                .and_then(|x| x.to_str())
                .is_some_and(|x| EXTENSIONS.contains(&x))
        })
        .collect();
    files.sort();
    Ok(files)
}

/// The binary of `plugin` in the first of `bin_dirs` that has it (libcni's FindInPath).
pub fn find_in_path(plugin: &str, bin_dirs: &[PathBuf]) -> Result<PathBuf, String> {
    if plugin.contains('/') {
        return Err(format!("invalid plugin name {plugin:?}"));
    }
    bin_dirs
        .iter()
        .map(|d| d.join(plugin))
        .find(|p| p.metadata().is_ok_and(|m| m.is_file()))
        .ok_or_else(|| {
            let dirs: Vec<_> = bin_dirs.iter().map(|d| d.display().to_string()).collect();
            format!("failed to find plugin {plugin:?} in path {dirs:?}")
        })
}

/// getDefaultCNINetwork: the first usable network of `conf_dir`; each unusable file before it
/// is logged at warn and listed in `skipped`.
pub fn probe(conf_dir: &Path, bin_dirs: &[PathBuf]) -> Probe {
    let mut skipped = Vec::new();
    let files = match conf_files(conf_dir) {
        Ok(files) if files.is_empty() => {
            return Probe {
                network: Err(format!("no networks found in {}", conf_dir.display())),
                skipped,
            }
        }
        Ok(files) => files,
        Err(e) => {
            return Probe {
                network: Err(format!("cannot read {}: {e}", conf_dir.display())),
                skipped,
            }
        }
    };
    for file in files {
        match load(&file, bin_dirs) {
            Ok(list) => {
                return Probe {
                    network: Ok(CniNetwork { file, list }),
                    skipped,
                }
            }
            Err(reason) => {
                warn!(file = %file.display(), %reason, "skipping CNI config file");
                skipped.push(Skipped { file, reason });
            }
        }
    }
    Probe {
        network: Err(format!("no valid networks found in {}", conf_dir.display())),
        skipped,
    }
}

fn load(file: &Path, bin_dirs: &[PathBuf]) -> Result<NetworkConfigList, String> {
    let bytes = std::fs::read(file).map_err(|e| format!("cannot read: {e}"))?;
    let list = if file.extension().is_some_and(|x| x == "conflist") {
        NetworkConfigList::from_list_bytes(&bytes)?
    } else {
        NetworkConfigList::from_conf_bytes(&bytes)?
    };
    if list.plugins.is_empty() {
        return Err(format!("CNI config list {:?} has no networks", list.name));
    }
    // ValidateNetworkList: every plugin of the list must be on disk.
    for i in 0..list.plugins.len() {
        find_in_path(list.plugin_type(i), bin_dirs)?;
    }
    Ok(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::write(dir.join(name), text).unwrap();
    }

    fn bin_dir(plugins: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for p in plugins {
            write(dir.path(), p, "#!/bin/sh\n");
        }
        dir
    }

    const BRIDGE_LIST: &str = r#"{"cniVersion": "1.0.0", "name": "pods",
        "plugins": [{"type": "bridge", "bridge": "cni0", "ipam": {"type": "host-local"}},
                    {"type": "portmap"}]}"#;

    #[test]
    fn first_valid_file_in_lexical_order_wins() {
        let conf = tempfile::tempdir().unwrap();
        let bin = bin_dir(&["bridge", "portmap", "ptp"]);
        write(
            conf.path(),
            "20-later.conf",
            r#"{"cniVersion": "0.4.0", "name": "later", "type": "ptp"}"#,
        );
        write(conf.path(), "10-pods.conflist", BRIDGE_LIST);
        write(conf.path(), "05-notes.txt", "not a config");
        let probe = probe(conf.path(), &[bin.path().to_path_buf()]);
        let net = probe.network.unwrap();
        assert!(net.file.ends_with("10-pods.conflist"));
        assert_eq!(net.list.name, "pods");
        assert_eq!(net.list.cni_version, "1.0.0");
        assert_eq!(
            (net.list.plugin_type(0), net.list.plugin_type(1)),
            ("bridge", "portmap")
        );
        assert_eq!(net.list.plugins[0]["bridge"], "cni0");
        assert!(probe.skipped.is_empty());
    }

    #[test]
    fn malformed_files_are_skipped_with_the_reason() {
        let conf = tempfile::tempdir().unwrap();
        let bin = bin_dir(&["bridge", "portmap"]);
        write(conf.path(), "00-broken.conflist", "{\"name\": ");
        write(
            conf.path(),
            "01-nolist.conflist",
            r#"{"name": "x", "cniVersion": "1.0.0"}"#,
        );
        write(conf.path(), "02-list-in-conf.conf", BRIDGE_LIST);
        write(conf.path(), "03-good.conflist", BRIDGE_LIST);
        let probe = probe(conf.path(), &[bin.path().to_path_buf()]);
        assert!(probe.network.unwrap().file.ends_with("03-good.conflist"));
        let reasons: Vec<_> = probe.skipped.iter().map(|s| s.reason.as_str()).collect();
        assert_eq!(reasons.len(), 3, "{reasons:?}");
        assert!(
            reasons[0].starts_with("error parsing configuration list"),
            "{reasons:?}"
        );
        assert!(reasons[1].contains("no 'plugins' key"), "{reasons:?}");
        assert!(
            reasons[2].contains("perhaps this is a .conflist"),
            "{reasons:?}"
        );
    }

    #[test]
    fn a_conf_is_wrapped_into_a_list_of_one() {
        let conf = tempfile::tempdir().unwrap();
        let bin = bin_dir(&["ptp"]);
        write(
            conf.path(),
            "10-ptp.conf",
            r#"{"cniVersion": "0.4.0", "name": "p2p", "type": "ptp", "mtu": 1400}"#,
        );
        let net = probe(conf.path(), &[bin.path().to_path_buf()])
            .network
            .unwrap();
        assert_eq!(
            (net.list.name.as_str(), net.list.cni_version.as_str()),
            ("p2p", "0.4.0")
        );
        assert_eq!(net.list.plugins.len(), 1);
        assert_eq!(net.list.plugins[0]["mtu"], 1400);
    }

    #[test]
    fn a_missing_plugin_binary_makes_the_network_unusable() {
        let conf = tempfile::tempdir().unwrap();
        let bin = bin_dir(&["bridge"]);
        write(conf.path(), "10-pods.conflist", BRIDGE_LIST);
        let probe = probe(conf.path(), &[bin.path().to_path_buf()]);
        assert!(probe.network.unwrap_err().contains("no valid networks"));
        assert!(
            probe.skipped[0].reason.contains("\"portmap\""),
            "{:?}",
            probe.skipped
        );
        // A second bin dir that has it makes it usable.
        let more = bin_dir(&["portmap"]);
        let dirs = [bin.path().to_path_buf(), more.path().to_path_buf()];
        assert!(super::probe(conf.path(), &dirs).network.is_ok());
    }

    #[test]
    fn an_empty_or_missing_dir_has_no_network() {
        let conf = tempfile::tempdir().unwrap();
        let err = probe(conf.path(), &[]).network.unwrap_err();
        assert!(err.starts_with("no networks found"), "{err}");
        let err = probe(&conf.path().join("absent"), &[]).network.unwrap_err();
        assert!(err.starts_with("no networks found"), "{err}");
        assert_eq!(NetworkConfigList::loopback().plugin_type(0), "loopback");
    }
}

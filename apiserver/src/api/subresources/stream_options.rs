//! The options of pods' attach, exec and portforward, read from the query as upstream's
//! parameter codec reads url.Values into PodAttachOptions, PodExecOptions and
//! PodPortForwardOptions (then defaults them), and the query the kubelet is called with
//! (upstream's streamParams, encoded as url.Values.Encode does: keys sorted).

use registry::RegistryError;

use crate::api::params::Params;

/// PodExecOptions (PodAttachOptions is the same without a command).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct StreamOptions {
    pub stdin: bool,
    pub stdout: bool,
    pub stderr: bool,
    pub tty: bool,
    pub container: String,
    pub command: Vec<String>,
}

fn values<'a>(params: &'a Params, key: &'a str) -> impl Iterator<Item = &'a str> {
    params
        .0
        .iter()
        .filter(move |(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// A bool query parameter as the codec converts one: absent is false; otherwise its first
/// value is false only when `0` or `false` (in any case).
fn flag(params: &Params, key: &str) -> bool {
    values(params, key)
        .next()
        .is_some_and(|v| v != "0" && !v.eq_ignore_ascii_case("false"))
}

fn read(params: &Params, command: bool) -> StreamOptions {
    if params.0.is_empty() {
        // The codec leaves the options as they are, undefaulted, when the query is empty.
        return StreamOptions::default();
    }
    StreamOptions {
        stdin: flag(params, "stdin"),
        // Defaulted after conversion: upstream's defaults set both, whatever the query said.
        stdout: true,
        stderr: true,
        tty: flag(params, "tty"),
        container: values(params, "container")
            .next()
            .unwrap_or_default()
            .to_string(),
        command: if command {
            values(params, "command").map(str::to_string).collect()
        } else {
            Vec::new()
        },
    }
}

pub fn exec(params: &Params) -> StreamOptions {
    read(params, true)
}

pub fn attach(params: &Params) -> StreamOptions {
    read(params, false)
}

/// PodPortForwardOptions' ports: every `ports` value, each a comma-separated list of
/// 16-bit port numbers.
pub fn ports(params: &Params) -> Result<Vec<u16>, RegistryError> {
    let mut out = Vec::new();
    for list in values(params, "ports") {
        for port in list.split(',') {
            let parsed = go_parse_u16(port).map_err(|why| {
                RegistryError::BadRequest(format!(
                    "cannot convert to []int32: strconv.ParseUint: parsing {}: {why}",
                    registry::validation::quote(port)
                ))
            })?;
            out.push(parsed);
        }
    }
    Ok(out)
}

/// strconv.ParseUint(s, 10, 16)'s verdict: ASCII digits only, at most 65535.
fn go_parse_u16(s: &str) -> Result<u16, &'static str> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err("invalid syntax");
    }
    s.parse().map_err(|_| "value out of range")
}

impl StreamOptions {
    /// The kubelet's query for these options: `command` repeated, then `error`, `input`,
    /// `output` and `tty` as `1` for the streams asked for.
    pub fn kubelet_query(&self) -> String {
        let mut pairs: Vec<(&str, &str)> = self
            .command
            .iter()
            .map(|c| ("command", c.as_str()))
            .collect();
        for (on, key) in [
            (self.stderr, "error"),
            (self.stdin, "input"),
            (self.stdout, "output"),
            (self.tty, "tty"),
        ] {
            if on {
                pairs.push((key, "1"));
            }
        }
        encode(&pairs)
    }
}

/// PodPortForwardOptions' kubelet query: `port` with the ports joined by commas.
pub fn port_forward_query(ports: &[u16]) -> String {
    if ports.is_empty() {
        return String::new();
    }
    let joined: Vec<String> = ports.iter().map(u16::to_string).collect();
    encode(&[("port", &joined.join(","))])
}

/// Pairs already in key order, escaped as Go's url.QueryEscape escapes them.
fn encode(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", query_escape(k), query_escape(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> Params {
        Params(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    #[test]
    fn exec_options_as_the_codec_reads_and_defaults_them() {
        let opts = exec(&params(&[
            ("command", "sh"),
            ("command", "-c"),
            ("command", "echo a&b"),
            ("container", "web"),
            ("stdin", "true"),
            ("stdout", "false"),
            ("tty", "FALSE"),
        ]));
        assert_eq!(opts.command, ["sh", "-c", "echo a&b"]);
        assert_eq!(opts.container, "web");
        assert!(opts.stdin && !opts.tty);
        // Defaults win over the query: stdout and stderr are always asked for.
        assert!(opts.stdout && opts.stderr);
        assert_eq!(
            opts.kubelet_query(),
            "command=sh&command=-c&command=echo+a%26b&error=1&input=1&output=1"
        );
        // Any value but 0 or false is true, an empty one included.
        assert!(exec(&params(&[("tty", "")])).tty);
        assert!(!exec(&params(&[("stdin", "0")])).stdin);
        assert_eq!(exec(&params(&[])), StreamOptions::default());
        assert!(attach(&params(&[("command", "ls")])).command.is_empty());
    }

    #[test]
    fn ports_as_the_codec_converts_them() {
        assert_eq!(
            ports(&params(&[("ports", "80,8080"), ("ports", "9090")])).ok(),
            Some(vec![80, 8080, 9090])
        );
        assert_eq!(port_forward_query(&[80, 8080]), "port=80%2C8080");
        for (bad, message) in [
            (
                "http",
                r#"cannot convert to []int32: strconv.ParseUint: parsing "http": invalid syntax"#,
            ),
            (
                "70000",
                r#"cannot convert to []int32: strconv.ParseUint: parsing "70000": value out of range"#,
            ),
            (
                "80,",
                r#"cannot convert to []int32: strconv.ParseUint: parsing "": invalid syntax"#,
            ),
        ] {
            let err = ports(&params(&[("ports", bad)])).expect_err(bad);
            assert_eq!(err.to_string(), message);
            assert_eq!(err.status().code, 400);
        }
    }
}

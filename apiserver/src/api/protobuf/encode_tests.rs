//! Byte-identity with upstream: each of upstream's API round-trip fixtures
//! (`staging/src/k8s.io/api/testdata/HEAD/<group>.<version>.<Kind>.{json,pb}` of the release
//! the descriptor set comes from, vendored under `apiserver/protobuf/fixtures/`) encoded from
//! its JSON must give its `.pb` exactly.

use std::path::PathBuf;

use serde_json::{json, Value};

use super::*;

/// Fixtures whose bytes we do not reproduce yet, and why. Every other fixture must match.
const KNOWN_DIFFERENCES: &[(&str, &str)] = &[];

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("protobuf/fixtures")
}

/// A fixture's object as upstream's serializer writes it: the message named by the file
/// (`<group>.<version>.<Kind>`), in an envelope with the object's own apiVersion and kind
/// (empty for core.v1.WatchEvent, which has none).
fn encode_fixture(name: &str, object: &Value) -> Result<Vec<u8>, EncodeError> {
    let (group_version, kind) = name.rsplit_once('.').expect("<group>.<version>.<Kind>");
    let (group, version) = group_version.rsplit_once('.').expect("<group>.<version>");
    let api_version = match group {
        "core" => version.to_string(),
        group => format!("{group}/{version}"),
    };
    let text = |field: &str| {
        object
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let raw = message(&api_version, kind, object)?;
    Ok(envelope(text("apiVersion"), text("kind"), &raw))
}

fn first_difference(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[test]
fn every_upstream_fixture_encodes_byte_for_byte() {
    let mut names: Vec<String> = std::fs::read_dir(fixtures())
        .expect("the fixtures directory")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".json").map(str::to_string))
        .collect();
    names.sort();
    assert!(names.len() > 50, "only {} fixtures", names.len());
    let mut failures = Vec::new();
    let mut matched = 0;
    for name in &names {
        let text = std::fs::read(fixtures().join(format!("{name}.json"))).expect("json");
        let expected = std::fs::read(fixtures().join(format!("{name}.pb"))).expect("pb");
        let object: Value = serde_json::from_slice(&text).expect("fixture JSON");
        let known = KNOWN_DIFFERENCES.iter().find(|(n, _)| n == name);
        match (encode_fixture(name, &object), known) {
            (Ok(bytes), None) if bytes == expected => matched += 1,
            (Ok(bytes), Some(_)) if bytes == expected => failures.push(format!(
                "{name}: matches now; drop it from KNOWN_DIFFERENCES"
            )),
            (_, Some(_)) => {}
            (Ok(bytes), None) => {
                // PB_DUMP=<dir> keeps our bytes, to compare with `protoc --decode_raw`.
                if let Some(dir) = std::env::var_os("PB_DUMP") {
                    let _ = std::fs::write(PathBuf::from(dir).join(format!("{name}.pb")), &bytes);
                }
                let at = first_difference(&bytes, &expected);
                let window =
                    |b: &[u8]| format!("{:02x?}", &b[at.saturating_sub(8)..b.len().min(at + 16)]);
                failures.push(format!(
                    "{name}: {} bytes vs {}; first difference at {at}: ours {} upstream {}",
                    bytes.len(),
                    expected.len(),
                    window(&bytes),
                    window(&expected)
                ));
            }
            (Err(e), None) => failures.push(format!("{name}: {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} matched; failures:\n{}",
        matched,
        failures.join("\n")
    );
}

#[test]
fn go_durations_parse() {
    assert_eq!(parse_go_duration("1h2m3.5s"), Some(3_723_500_000_000));
    assert_eq!(parse_go_duration("-1.5ms"), Some(-1_500_000));
    assert_eq!(parse_go_duration("0"), Some(0));
    assert_eq!(parse_go_duration("3x"), None);
}

#[test]
fn a_watch_frame_is_a_length_then_an_unenveloped_event() {
    let object =
        encode(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}))
            .expect("encodes");
    let frame = watch_frame("ADDED", &object);
    let length = u32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize;
    assert_eq!(length, frame.len() - 4);
    let event = prost_reflect::DynamicMessage::decode(
        pool()
            .get_message_by_name("apimachinery.pkg.apis.meta.v1.WatchEvent")
            .expect("WatchEvent"),
        &frame[4..],
    )
    .expect("decodes");
    let json = serde_json::to_value(&event).expect("to JSON");
    assert_eq!(json["type"], "ADDED");
    let decoded = super::super::decode(&object).expect("the object decodes");
    assert_eq!(decoded["metadata"]["name"], "a");
}

#[test]
fn custom_resources_have_no_schema() {
    assert!(has_schema("v1", "Pod"));
    assert!(has_schema("v1", "PodList"));
    assert!(!has_schema("example.com/v1", "Widget"));
    assert!(matches!(
        encode(&json!({"apiVersion": "example.com/v1", "kind": "Widget"})),
        Err(EncodeError::NoSchema(_))
    ));
}

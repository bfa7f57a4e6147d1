//! The encryption configuration file (`--encryption-provider-config`): parsed, validated and
//! built; a secret then goes through the transformer it picks and must read back as written.

use storage::encryption::EncryptionConfig;

pub fn run(data: &[u8]) {
    let Ok(config) = EncryptionConfig::parse(data, "fuzz.yaml") else {
        return;
    };
    let transformer = config.transformer_for("", "secrets");
    let value = br#"{"kind":"Secret","data":{"k":"dg=="}}"#;
    let context = b"/registry/secrets/default/s";
    let stored = transformer
        .transform_to_storage(value, context)
        .expect("a built transformer writes");
    let (read, _) = transformer
        .transform_from_storage(stored, context)
        .expect("what it wrote reads back");
    assert_eq!(&read[..], &value[..], "encryption round trip");
    // Stored bytes that are not ours fail cleanly.
    let _ = transformer.transform_from_storage(bytes::Bytes::copy_from_slice(data), context);
}

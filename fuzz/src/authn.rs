//! Bearer tokens: the `Authorization` header as the authenticator reads it, then the token
//! as the service-account authenticator reads it (issuer sniffing, JWT header, signature,
//! claims and times). With first byte `s`, the rest becomes a token's subject: a token the
//! server signs must verify, whatever it carries.

use std::sync::LazyLock;

use apiserver::authn::{bearer, Bearer};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey};
use registry::serviceaccount::{Claims, Private, Ref, SigningKey, Verifier, VerifyingKey};

const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
const NOW: i64 = 1_800_000_000;

// A P-256 pair made for these tests only (openssl ecparam -name prime256v1).
const PRIVATE_PEM: &[u8] = include_bytes!("../keys/sa.key");
const PUBLIC_PEM: &[u8] = include_bytes!("../keys/sa.pub");
const PUBLIC_DER: &[u8] = include_bytes!("../keys/sa.pub.der");

static KEYS: LazyLock<Option<(SigningKey, Verifier)>> = LazyLock::new(|| {
    let signing = EncodingKey::from_ec_pem(PRIVATE_PEM).ok()?;
    let verifying = DecodingKey::from_ec_pem(PUBLIC_PEM).ok()?;
    Some((
        SigningKey::new(signing, Algorithm::ES256, PUBLIC_DER),
        Verifier {
            keys: vec![VerifyingKey::new(verifying, Algorithm::ES256, PUBLIC_DER)],
            issuers: vec![ISSUER.into(), "https://other.example".into()],
            audiences: vec![ISSUER.into()],
        },
    ))
});

pub fn run(data: &[u8]) {
    let Some((signing, verifier)) = KEYS.as_ref() else {
        panic!("the test keys do not load");
    };
    if let Some(subject) = data.strip_prefix(b"s") {
        let claims = Claims {
            aud: vec![ISSUER.into()],
            iss: ISSUER.into(),
            sub: String::from_utf8_lossy(subject).into_owned(),
            iat: Some(NOW - 10),
            nbf: Some(NOW - 10),
            exp: Some(NOW + 3600),
            // A service account token names its service account.
            kubernetes: Some(Private {
                namespace: "default".into(),
                serviceaccount: Ref {
                    name: "default".into(),
                    uid: "5c7d3a5e-1f0e-4b8e-9d3c-2a6b1e0f4c11".into(),
                },
                ..Default::default()
            }),
            ..Default::default()
        };
        let token = signing.sign(&claims).expect("a token signs");
        let verified = verifier
            .verify(&token, NOW)
            .unwrap_or_else(|e| panic!("a token we signed is refused: {e}"));
        assert_eq!(verified.sub, claims.sub);
        return;
    }
    if let Bearer::Token(token) = bearer(Some(data)) {
        let Ok(token) = std::str::from_utf8(token) else {
            return;
        };
        if verifier.is_ours(token) {
            // Nobody but us holds the key: a token the fuzzer made never verifies.
            assert!(
                verifier.verify(token, NOW).is_err(),
                "forged token {token:?} verified"
            );
        }
    }
}

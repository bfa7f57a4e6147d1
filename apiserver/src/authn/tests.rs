//! Token authentication, the authenticators' order and Authorization header edge cases.

use super::*;

const FILE: &str = "secret-token,alice,uid-1,\"devs,ops\"\nother-token,bob,uid-2\n";

fn authenticator(anonymous: bool) -> Authenticator {
    Authenticator {
        tokens: TokenFile::parse(FILE).expect("token file"),
        anonymous,
        service_accounts: None,
    }
}

impl Authenticator {
    /// Without a registry nothing awaits anything: the authentication completes at once.
    fn authenticate_now(
        &self,
        connection: Option<&UserInfo>,
        header: Option<&[u8]>,
    ) -> Result<Authenticated, Refusal> {
        futures::executor::block_on(self.authenticate(connection, header))
    }
}

fn with(header: &[u8]) -> Result<Authenticated, Refusal> {
    authenticator(true).authenticate_now(Some(&UserInfo::anonymous()), Some(header))
}

fn user(header: &[u8]) -> Result<UserInfo, Refusal> {
    with(header).map(|a| a.user)
}

#[test]
fn token_users_get_the_authenticated_group() {
    let alice = user(b"Bearer secret-token").expect("alice");
    assert_eq!(alice.name, "alice");
    assert_eq!(alice.uid, "uid-1");
    assert_eq!(alice.groups, ["devs", "ops", AUTHENTICATED]);
    assert!(alice.extra.is_empty());
    let bob = user(b"Bearer other-token").expect("bob");
    assert_eq!(
        (bob.name.as_str(), bob.groups.as_slice()),
        ("bob", &[AUTHENTICATED.to_string()][..])
    );
    assert!(with(b"Bearer secret-token").expect("alice").by_token);
    // The scheme in any case, surrounding blanks trimmed, anything after a second space
    // ignored (upstream's SplitN(" ", 3)).
    assert_eq!(user(b"bearer secret-token").expect("lower").name, "alice");
    assert_eq!(user(b"BEARER secret-token").expect("upper").name, "alice");
    assert_eq!(
        user(b"  Bearer secret-token \t").expect("trimmed").name,
        "alice"
    );
    assert_eq!(
        user(b"Bearer secret-token trailing")
            .expect("trailing")
            .name,
        "alice"
    );
}

#[test]
fn groups_already_there_are_not_repeated() {
    let tokens = TokenFile::parse("a,u1,1,system:authenticated\nb,u2,2,system:unauthenticated\n")
        .expect("file");
    let authn = Authenticator {
        tokens,
        anonymous: true,
        service_accounts: None,
    };
    let u1 = authn
        .authenticate_now(None, Some(b"Bearer a"))
        .expect("u1")
        .user;
    assert_eq!(u1.groups, [AUTHENTICATED]);
    let u2 = authn
        .authenticate_now(None, Some(b"Bearer b"))
        .expect("u2")
        .user;
    assert_eq!(u2.groups, [UNAUTHENTICATED]);
}

#[test]
fn a_bad_token_is_refused_not_anonymous() {
    for header in [
        &b"Bearer wrong"[..],
        b"Bearer secret-tokenx",
        b"Bearer secret-toke",
        b"Bearer Secret-Token",
        "Bearer s\u{e9}cret".as_bytes(),
        b"Bearer \xff\xfe",
        b"Bearer \x00",
    ] {
        assert_eq!(user(header), Err(Refusal::InvalidToken), "{header:?}");
        let off = authenticator(false).authenticate_now(None, Some(header));
        assert_eq!(off.map(|a| a.user), Err(Refusal::InvalidToken));
    }
    // Oversized: refused without being looked up.
    let mut huge = b"Bearer ".to_vec();
    huge.extend(std::iter::repeat_n(b'a', 2 * 1024 * 1024));
    assert_eq!(user(&huge), Err(Refusal::InvalidToken));
    let mut at_limit = b"Bearer ".to_vec();
    at_limit.extend(std::iter::repeat_n(
        b'a',
        crate::authn::tokenfile::MAX_TOKEN_BYTES + 1,
    ));
    assert_eq!(user(&at_limit), Err(Refusal::InvalidToken));
}

#[test]
fn no_credentials_are_anonymous_or_refused() {
    // As upstream's bearertoken authenticator: no header, another scheme, a scheme alone
    // or an empty token are no credentials at all.
    for header in [
        None,
        Some(&b""[..]),
        Some(b"   "),
        Some(b"Basic YWxpY2U6cGFzcw=="),
        Some(b"Bearer"),
        Some(b"Bearer "),
        Some(b"Bearersecret-token"),
        Some(b"Token secret-token"),
        Some(b"\xff\xfe secret-token"),
    ] {
        let got = authenticator(true).authenticate_now(None, header);
        assert_eq!(got.map(|a| a.user), Ok(UserInfo::anonymous()), "{header:?}");
        let got = authenticator(false).authenticate_now(None, header);
        assert_eq!(got, Err(Refusal::NoCredentials), "{header:?}");
    }
    // An empty token before something else: no credentials, with upstream's warning.
    let got = with(b"Bearer  secret-token").expect("anonymous");
    assert!(got.user.is_anonymous() && got.space_before_token && !got.by_token);
    assert!(!with(b"Bearer").expect("anonymous").space_before_token);
}

#[test]
fn the_client_certificate_comes_first() {
    let admin = UserInfo {
        name: "system:admin".into(),
        groups: vec![MASTERS.into(), AUTHENTICATED.into()],
        ..Default::default()
    };
    for anonymous in [true, false] {
        let authn = authenticator(anonymous);
        for header in [
            None,
            Some(&b"Bearer wrong"[..]),
            Some(b"Bearer secret-token"),
        ] {
            let got = authn.authenticate_now(Some(&admin), header).expect("admin");
            assert_eq!(got.user, admin);
            assert!(!got.by_token);
        }
    }
    // A connection whose certificate named no one is anonymous: the token decides.
    let got = authenticator(false)
        .authenticate_now(Some(&UserInfo::anonymous()), Some(b"Bearer secret-token"))
        .expect("alice");
    assert_eq!(got.user.name, "alice");
}

#[test]
fn bearer_parsing() {
    assert_eq!(bearer(Some(b"Bearer abc")), Bearer::Token(b"abc"));
    assert_eq!(bearer(Some(b"bEaReR abc def")), Bearer::Token(b"abc"));
    assert_eq!(
        bearer(Some(b"Bearer  abc")),
        Bearer::None {
            space_before_token: true
        }
    );
    assert_eq!(
        bearer(Some(b"Bearer\tabc")),
        Bearer::None {
            space_before_token: false
        }
    );
    assert_eq!(
        bearer(None),
        Bearer::None {
            space_before_token: false
        }
    );
}

#[test]
fn the_refusal_is_upstreams_status() {
    let response = unauthorized();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
    let status: serde_json::Value = serde_json::from_str(UNAUTHORIZED_BODY).expect("JSON");
    assert_eq!(
        status,
        serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
    );
}

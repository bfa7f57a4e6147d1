use super::*;
use axum::http::HeaderValue;

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (k, v) in pairs {
        map.append(
            axum::http::HeaderName::from_bytes(k.as_bytes()).expect("name"),
            HeaderValue::from_str(v).expect("value"),
        );
    }
    map
}

#[test]
fn headers_name_users_service_accounts_groups_extra_and_uids() {
    let got = targets(&headers(&[
        ("Impersonate-User", "jane"),
        ("Impersonate-Group", "devs"),
        ("Impersonate-Group", "ops"),
        ("Impersonate-Extra-Scopes", "view"),
        ("Impersonate-Extra-Example.Org%2fTeam", "a"),
        ("Impersonate-Uid", "u-1"),
    ]))
    .expect("targets");
    assert_eq!(
        got,
        vec![
            Target::User("jane".into()),
            Target::Group("devs".into()),
            Target::Group("ops".into()),
            Target::Extra {
                key: "scopes".into(),
                value: "view".into()
            },
            Target::Extra {
                key: "example.org/team".into(),
                value: "a".into()
            },
            Target::Uid("u-1".into()),
        ]
    );
    assert_eq!(
        targets(&headers(&[(
            "Impersonate-User",
            "system:serviceaccount:ns:sa"
        )])),
        Ok(vec![Target::ServiceAccount {
            namespace: "ns".into(),
            name: "sa".into()
        }])
    );
    // Not a valid service account name: an ordinary user.
    for user in [
        "system:serviceaccount:NS:sa",
        "system:serviceaccount:ns:a:b",
    ] {
        assert_eq!(
            targets(&headers(&[("Impersonate-User", user)])),
            Ok(vec![Target::User(user.into())])
        );
    }
    assert_eq!(targets(&HeaderMap::new()), Ok(Vec::new()));
    // A malformed escape keeps the key as sent.
    assert_eq!(extra_key("A%zz"), "a%zz");
}

#[test]
fn groups_without_a_user_are_refused_with_upstreams_message() {
    let err = targets(&headers(&[("Impersonate-Group", "devs")])).expect_err("no user");
    assert_eq!(
        err.to_string(),
        "requested [{Group  devs    }] without impersonating a user"
    );
    let err = targets(&headers(&[("Impersonate-Uid", "u")])).expect_err("no user");
    assert_eq!(
        err.to_string(),
        "requested [{UID  u  authentication.k8s.io/v1  }] without impersonating a user"
    );
}

#[test]
fn each_target_is_authorized_as_upstream_names_it() {
    let bob = Arc::new(UserInfo {
        name: "bob".into(),
        ..Default::default()
    });
    let sa = Target::ServiceAccount {
        namespace: "ns".into(),
        name: "sa".into(),
    };
    let a = sa.attributes(&bob);
    assert_eq!(
        (
            a.verb.as_str(),
            a.api_group.as_str(),
            a.resource.as_str(),
            a.namespace.as_str(),
            a.name.as_str()
        ),
        ("impersonate", "", "serviceaccounts", "ns", "sa")
    );
    let extra = Target::Extra {
        key: "scopes".into(),
        value: "view".into(),
    }
    .attributes(&bob);
    assert_eq!(
        (
            extra.api_group.as_str(),
            extra.resource.as_str(),
            extra.subresource.as_str()
        ),
        ("authentication.k8s.io", "userextras", "scopes")
    );
    assert_eq!(
        authz::forbidden_status(&Target::User("jane".into()).attributes(&bob), "").message,
        r#"users "jane" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope"#
    );
}

#[test]
fn the_impersonated_user_gets_upstreams_groups() {
    let jane = impersonated(&[Target::User("jane".into())], false);
    assert_eq!(jane.name, "jane");
    assert_eq!(jane.groups, vec![AUTHENTICATED.to_string()]);
    let devs = impersonated(
        &[Target::User("jane".into()), Target::Group("devs".into())],
        true,
    );
    assert_eq!(devs.groups, vec!["devs".to_string(), AUTHENTICATED.into()]);
    let unauthenticated = impersonated(
        &[
            Target::User("jane".into()),
            Target::Group(UNAUTHENTICATED.into()),
        ],
        true,
    );
    assert_eq!(unauthenticated.groups, vec![UNAUTHENTICATED.to_string()]);
    let sa = impersonated(
        &[Target::ServiceAccount {
            namespace: "ns".into(),
            name: "sa".into(),
        }],
        false,
    );
    assert_eq!(sa.name, "system:serviceaccount:ns:sa");
    assert_eq!(
        sa.groups,
        vec![
            "system:serviceaccounts".to_string(),
            "system:serviceaccounts:ns".into(),
            AUTHENTICATED.into()
        ]
    );
    let anonymous = impersonated(&[Target::User(ANONYMOUS.into())], false);
    assert_eq!(anonymous.groups, vec![UNAUTHENTICATED.to_string()]);
    let extra = impersonated(
        &[
            Target::User("jane".into()),
            Target::Uid("u".into()),
            Target::Extra {
                key: "k".into(),
                value: "a".into(),
            },
            Target::Extra {
                key: "k".into(),
                value: "b".into(),
            },
        ],
        false,
    );
    assert_eq!(extra.uid, "u");
    assert_eq!(extra.extra["k"], vec!["a".to_string(), "b".into()]);
}

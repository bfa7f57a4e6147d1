//! The audit policy file (`--audit-policy-file`, YAML or JSON): parsed, then judged against
//! a few requests' attributes.

use std::sync::Arc;

use apiserver::audit::Policy;
use registry::auth::{Attributes, UserInfo};

pub fn run(data: &[u8]) {
    let Ok(policy) = Policy::parse(data) else {
        return;
    };
    let user = Arc::new(UserInfo {
        name: "system:serviceaccount:kube-system:default".into(),
        groups: vec![
            "system:authenticated".into(),
            "system:serviceaccounts".into(),
        ],
        ..Default::default()
    });
    let resource = Attributes {
        user: Arc::clone(&user),
        verb: "update".into(),
        resource_request: true,
        namespace: "kube-system".into(),
        api_group: "apps".into(),
        api_version: "v1".into(),
        resource: "deployments".into(),
        subresource: "status".into(),
        name: "coredns".into(),
        path: "/apis/apps/v1/namespaces/kube-system/deployments/coredns/status".into(),
    };
    let non_resource = Attributes {
        user,
        verb: "get".into(),
        path: "/healthz/etcd".into(),
        ..Default::default()
    };
    let _ = policy.evaluate(&resource);
    let _ = policy.evaluate(&non_resource);
}

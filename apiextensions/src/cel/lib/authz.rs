//! The authorizer library of admission expressions (upstream's library/authz.go): the
//! `authorizer` variable asks the server's authorizer whether the requesting user (or, through
//! `serviceAccount(namespace, name)`, a service account) may do something:
//! `authorizer.group('apps').resource('deployments').namespace('ns').name('web').check('get')`,
//! `authorizer.path('/healthz').check('get')`, and `authorizer.requestResource.check(verb)` for
//! the resource of the request being admitted. A check gives a decision: `allowed()`,
//! `reason()`, `errored()`, `error()`. `fieldSelector` and `labelSelector` narrow a resource
//! check; like upstream's RBAC, none of this server's authorization modes reads them, so they
//! only refuse a selector that does not parse.
//!
//! CRD rules have no authorizer (as upstream): the variable is bound only where admission
//! evaluates expressions.

use std::sync::Arc;

use cel::common::types::{Type, STRING_TYPE};
use cel::common::value::CowVal;
use cel::{DeclarationError, Env};
use registry::auth::{Attributes, Authorizer as Judge, UserInfo};

use super::{arg, boolean, opaque_val, string, text, Out};

pub(in crate::cel) static AUTHORIZER_TYPE: Type =
    Type::new_unspecified_type("kubernetes.authorization.Authorizer");
pub(in crate::cel) static PATH_CHECK_TYPE: Type =
    Type::new_unspecified_type("kubernetes.authorization.PathCheck");
pub(in crate::cel) static GROUP_CHECK_TYPE: Type =
    Type::new_unspecified_type("kubernetes.authorization.GroupCheck");
pub(in crate::cel) static RESOURCE_CHECK_TYPE: Type =
    Type::new_unspecified_type("kubernetes.authorization.ResourceCheck");
pub(in crate::cel) static DECISION_TYPE: Type =
    Type::new_unspecified_type("kubernetes.authorization.Decision");

/// The `authorizer` variable: the server's authorizer and the user checks are made as.
#[derive(Clone)]
pub struct Authorizer {
    judge: Arc<dyn Judge>,
    user: Arc<UserInfo>,
}

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "authorizer({})", self.user.name)
    }
}

impl PartialEq for Authorizer {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.judge, &other.judge) && self.user == other.user
    }
}

opaque_val!(Authorizer, AUTHORIZER_TYPE);

impl Authorizer {
    /// Checks made as `user`, judged by `judge`.
    pub fn new(judge: Arc<dyn Judge>, user: Arc<UserInfo>) -> Self {
        Self { judge, user }
    }

    /// `authorizer.requestResource`: a check of the request's own resource.
    pub fn request_resource(&self, resource: RequestResource) -> ResourceCheck {
        ResourceCheck {
            authorizer: self.clone(),
            group: resource.group,
            version: resource.version,
            resource: resource.resource,
            subresource: resource.subresource,
            namespace: resource.namespace,
            name: resource.name,
            field_selector: String::new(),
            label_selector: String::new(),
        }
    }
}

/// The resource of the request being admitted.
#[derive(Clone, Debug, Default)]
pub struct RequestResource {
    pub group: String,
    pub version: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
}

#[derive(Clone, Debug, PartialEq)]
struct PathCheck {
    authorizer: Authorizer,
    path: String,
}

opaque_val!(PathCheck, PATH_CHECK_TYPE);

#[derive(Clone, Debug, PartialEq)]
struct GroupCheck {
    authorizer: Authorizer,
    group: String,
}

opaque_val!(GroupCheck, GROUP_CHECK_TYPE);

/// A resource check being built.
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceCheck {
    authorizer: Authorizer,
    group: String,
    /// `*` but for the request's own resource.
    version: String,
    resource: String,
    subresource: String,
    namespace: String,
    name: String,
    field_selector: String,
    label_selector: String,
}

opaque_val!(ResourceCheck, RESOURCE_CHECK_TYPE);

#[derive(Clone, Debug, PartialEq)]
struct Decision {
    allowed: bool,
    reason: String,
    error: Option<String>,
}

opaque_val!(Decision, DECISION_TYPE);

pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let authorizer = || AUTHORIZER_TYPE.to_owned();
    let resource = || RESOURCE_CHECK_TYPE.to_owned();
    let decision = || DECISION_TYPE.to_owned();
    env.add_member_overload(
        "path",
        "authorizer_path",
        authorizer(),
        vec![STRING_TYPE],
        path,
    )?;
    env.add_member_overload(
        "group",
        "authorizer_group",
        authorizer(),
        vec![STRING_TYPE],
        group,
    )?;
    env.add_member_overload(
        "serviceAccount",
        "authorizer_serviceaccount",
        authorizer(),
        vec![STRING_TYPE, STRING_TYPE],
        service_account,
    )?;
    env.add_member_overload(
        "resource",
        "groupcheck_resource",
        GROUP_CHECK_TYPE.to_owned(),
        vec![STRING_TYPE],
        with_resource,
    )?;
    let narrowers: [(&str, &str, cel::common::functions::Function); 5] = [
        ("subresource", "resourcecheck_subresource", subresource),
        ("namespace", "resourcecheck_namespace", namespace),
        ("name", "resourcecheck_name", name),
        (
            "fieldSelector",
            "resourcecheck_fieldselector",
            field_selector,
        ),
        (
            "labelSelector",
            "resourcecheck_labelselector",
            label_selector,
        ),
    ];
    for (name, id, function) in narrowers {
        env.add_member_overload(name, id, resource(), vec![STRING_TYPE], function)?;
    }
    env.add_member_overload(
        "check",
        "pathcheck_check",
        PATH_CHECK_TYPE.to_owned(),
        vec![STRING_TYPE],
        check_path,
    )?;
    env.add_member_overload(
        "check",
        "resourcecheck_check",
        resource(),
        vec![STRING_TYPE],
        check_resource,
    )?;
    env.add_member_overload("allowed", "decision_allowed", decision(), vec![], allowed)?;
    env.add_member_overload("reason", "decision_reason", decision(), vec![], reason)?;
    env.add_member_overload("errored", "decision_errored", decision(), vec![], errored)?;
    env.add_member_overload("error", "decision_error", decision(), vec![], error)?;
    Ok(())
}

fn path<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let authorizer = arg::<Authorizer>("path", &args, 0)?.clone();
    let path = text("path", &args, 1)?.to_string();
    Ok(CowVal::owned(PathCheck { authorizer, path }))
}

fn group<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let authorizer = arg::<Authorizer>("group", &args, 0)?.clone();
    let group = text("group", &args, 1)?.to_string();
    Ok(CowVal::owned(GroupCheck { authorizer, group }))
}

/// The user a service account's token authenticates as (upstream's serviceaccount.UserInfo).
fn service_account<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let authorizer = arg::<Authorizer>("serviceAccount", &args, 0)?;
    let namespace = text("serviceAccount", &args, 1)?;
    let name = text("serviceAccount", &args, 2)?;
    let user = UserInfo {
        name: format!("system:serviceaccount:{namespace}:{name}"),
        groups: vec![
            "system:serviceaccounts".to_string(),
            format!("system:serviceaccounts:{namespace}"),
        ],
        ..Default::default()
    };
    Ok(CowVal::owned(Authorizer {
        judge: authorizer.judge.clone(),
        user: Arc::new(user),
    }))
}

fn with_resource<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let check = arg::<GroupCheck>("resource", &args, 0)?;
    let resource = text("resource", &args, 1)?.to_string();
    Ok(CowVal::owned(ResourceCheck {
        authorizer: check.authorizer.clone(),
        group: check.group.clone(),
        version: "*".to_string(),
        resource,
        subresource: String::new(),
        namespace: String::new(),
        name: String::new(),
        field_selector: String::new(),
        label_selector: String::new(),
    }))
}

/// A copy of the resource check (argument 0) with one of its fields set to argument 1.
fn narrow<'b, 'v>(
    function: &str,
    args: &[CowVal<'b, 'v>],
    field: fn(&mut ResourceCheck) -> &mut String,
) -> Out<'b, 'v> {
    let mut check = arg::<ResourceCheck>(function, args, 0)?.clone();
    *field(&mut check) = text(function, args, 1)?.to_string();
    Ok(CowVal::owned(check))
}

fn subresource<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    narrow("subresource", &args, |c| &mut c.subresource)
}

fn namespace<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    narrow("namespace", &args, |c| &mut c.namespace)
}

fn name<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    narrow("name", &args, |c| &mut c.name)
}

fn field_selector<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    narrow("fieldSelector", &args, |c| &mut c.field_selector)
}

fn label_selector<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    narrow("labelSelector", &args, |c| &mut c.label_selector)
}

fn check_path<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let check = arg::<PathCheck>("check", &args, 0)?;
    let verb = text("check", &args, 1)?;
    let attributes = Attributes {
        user: check.authorizer.user.clone(),
        verb: verb.to_string(),
        resource_request: false,
        path: check.path.clone(),
        ..Default::default()
    };
    Ok(CowVal::owned(decide(&check.authorizer, &attributes)))
}

fn check_resource<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let check = arg::<ResourceCheck>("check", &args, 0)?;
    let verb = text("check", &args, 1)?;
    if let Some(error) = check.selector_error() {
        return Ok(CowVal::owned(Decision {
            allowed: false,
            reason: String::new(),
            error: Some(error),
        }));
    }
    let attributes = Attributes {
        user: check.authorizer.user.clone(),
        verb: verb.to_string(),
        resource_request: true,
        namespace: check.namespace.clone(),
        api_group: check.group.clone(),
        api_version: check.version.clone(),
        resource: check.resource.clone(),
        subresource: check.subresource.clone(),
        name: check.name.clone(),
        path: String::new(),
    };
    Ok(CowVal::owned(decide(&check.authorizer, &attributes)))
}

impl ResourceCheck {
    /// Why a selector given to the check does not parse.
    fn selector_error(&self) -> Option<String> {
        use registry::selector::{fields::FieldSelector, labels::LabelSelector};
        if !self.field_selector.is_empty() {
            if let Err(e) = FieldSelector::parse(&self.field_selector) {
                return Some(format!("invalid field selector: {}", e.message()));
            }
        }
        if !self.label_selector.is_empty() {
            if let Err(e) = LabelSelector::parse(&self.label_selector) {
                return Some(format!("invalid label selector: {}", e.message()));
            }
        }
        None
    }
}

fn decide(authorizer: &Authorizer, attributes: &Attributes) -> Decision {
    let verdict = authorizer.judge.authorize(attributes);
    Decision {
        allowed: verdict.allowed(),
        reason: verdict.reason,
        error: None,
    }
}

fn allowed<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    boolean(arg::<Decision>("allowed", &args, 0)?.allowed)
}

fn reason<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    string(arg::<Decision>("reason", &args, 0)?.reason.clone())
}

fn errored<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    boolean(arg::<Decision>("errored", &args, 0)?.error.is_some())
}

fn error<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    string(
        arg::<Decision>("error", &args, 0)?
            .error
            .clone()
            .unwrap_or_default(),
    )
}

/// A copy of a value of one of the library's types.
pub(super) fn clone_static(any: &dyn std::any::Any) -> Option<Box<dyn cel::common::value::Val>> {
    use super::copy;
    copy::<Authorizer>(any)
        .or_else(|| copy::<PathCheck>(any))
        .or_else(|| copy::<GroupCheck>(any))
        .or_else(|| copy::<ResourceCheck>(any))
        .or_else(|| copy::<Decision>(any))
}

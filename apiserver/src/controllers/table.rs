//! The kube-controller-manager controllers this server runs, one table entry each under
//! upstream's name (cmd/kube-controller-manager/names), and upstream's `--controllers`
//! selection over them: `*` is every controller on by default, `name` turns one on, `-name`
//! one off, and the first item naming a controller decides (upstream's IsControllerEnabled).

use std::fmt::Display;
use std::future::Future;
use std::sync::Arc;

use client::informer::InformerFactory;
use controllers::certificates::{
    CsrApprovingController, CsrCleanerController, CsrSigningController, SigningAuthority,
};
use controllers::clusterrole_aggregation::ClusterRoleAggregationController;
use controllers::cronjob::{CronJobController, CronJobControllerConfig};
use controllers::daemonset::{DaemonSetController, DaemonSetControllerConfig};
use controllers::deployment::{DeploymentController, DeploymentControllerConfig};
use controllers::disruption::{DisruptionController, DisruptionControllerConfig};
use controllers::endpoints::{EndpointsController, EndpointsControllerConfig};
use controllers::endpointslice::{EndpointSliceController, EndpointSliceControllerConfig};
use controllers::garbage_collector::{GarbageCollector, GcConfig};
use controllers::job::{JobController, JobControllerConfig};
use controllers::namespace::{NamespaceController, NamespaceControllerConfig};
use controllers::node_lifecycle::{
    NodeLifecycleConfig, NodeLifecycleController, TaintEvictionController,
};
use controllers::podautoscaler::HorizontalController;
use controllers::replicaset::{ReplicaSetController, ReplicaSetControllerConfig, ReplicaSetKind};
use controllers::resourceclaim::ResourceClaimController;
use controllers::resourcequota::ResourceQuotaController;
use controllers::root_ca_publisher::RootCaPublisher;
use controllers::serviceaccount::ServiceAccountController;
use controllers::statefulset::{StatefulSetController, StatefulSetControllerConfig};
use controllers::ttl_after_finished::{TtlAfterFinishedConfig, TtlAfterFinishedController};
use controllers::volume::PersistentVolumeController;
use controllers::volume::{PvProtectionController, PvcProtectionController};
use futures::future::BoxFuture;
use futures::FutureExt;
use thiserror::Error;
use tokio_util::sync::CancellationToken;

use super::{ControllerOptions, Controllers};

/// A controller running until the token it was given fires.
pub(super) type Running = BoxFuture<'static, ()>;

/// What a controller is made from.
pub(super) struct Context<'a> {
    pub informers: &'a Arc<InformerFactory>,
    pub options: &'a ControllerOptions,
    pub handle: &'a Arc<Controllers>,
    pub stop: &'a CancellationToken,
}

impl Context<'_> {
    /// `made` run until `stop`; an error is why it cannot run.
    fn run<C, E, F>(
        &self,
        made: Result<Arc<C>, E>,
        run: impl FnOnce(Arc<C>, CancellationToken) -> F,
    ) -> Started
    where
        E: Display,
        F: Future<Output = ()> + Send + 'static,
    {
        let controller = made.map_err(|e| e.to_string())?;
        Ok(Some(run(controller, self.stop.clone()).boxed()))
    }
}

/// Makes a controller and its run; None when it has nothing to do in this server.
type Start = fn(&Context<'_>) -> Started;
type Started = Result<Option<Running>, String>;

pub struct Descriptor {
    /// Upstream's name.
    pub name: &'static str,
    /// Run when `--controllers` has `*` and does not name it.
    pub default_on: bool,
    pub(super) start: Start,
}

const ON: bool = true;

const fn controller(name: &'static str, default_on: bool, start: Start) -> Descriptor {
    Descriptor {
        name,
        default_on,
        start,
    }
}

/// Every controller, in the order they start: upstream's name, whether `*` runs it, its start.
#[rustfmt::skip]
pub static CONTROLLERS: &[Descriptor] = &[
    controller("garbage-collector-controller",             ON, garbage_collector),
    controller("namespace-controller",                     ON, namespace),
    controller("serviceaccount-controller",                ON, serviceaccount),
    controller("clusterrole-aggregation-controller",       ON, clusterrole_aggregation),
    controller("root-ca-certificate-publisher-controller", ON, root_ca_publisher),
    controller("replicaset-controller",                    ON, replicaset),
    controller("replicationcontroller-controller",         ON, replicationcontroller),
    controller("deployment-controller",                    ON, deployment),
    controller("daemonset-controller",                     ON, daemonset),
    controller("statefulset-controller",                   ON, statefulset),
    controller("job-controller",                           ON, job),
    controller("cronjob-controller",                       ON, cronjob),
    controller("ttl-after-finished-controller",            ON, ttl_after_finished),
    controller("node-lifecycle-controller",                ON, node_lifecycle),
    controller("taint-eviction-controller",                ON, taint_eviction),
    controller("endpointslice-controller",                 ON, endpointslice),
    controller("endpoints-controller",                     ON, endpoints),
    controller("disruption-controller",                    ON, disruption),
    controller("persistentvolume-binder-controller",       ON, persistentvolume_binder),
    controller("persistentvolumeclaim-protection-controller",    ON, pvc_protection),
    controller("persistentvolume-protection-controller",         ON, pv_protection),
    controller("horizontal-pod-autoscaler-controller",           ON, horizontal_pod_autoscaler),
    controller("certificatesigningrequest-signing-controller",   ON, csr_signing),
    controller("certificatesigningrequest-approving-controller", ON, csr_approving),
    controller("certificatesigningrequest-cleaner-controller",   ON, csr_cleaner),
    controller("resourcequota-controller",                       ON, resourcequota),
    controller("resourceclaim-controller",                       ON, resourceclaim),
];

/// Upstream's older names (its ControllerDescriptor aliases), still accepted.
#[rustfmt::skip]
const ALIASES: &[(&str, &str)] = &[
    ("garbagecollector",        "garbage-collector-controller"),
    ("namespace",               "namespace-controller"),
    ("serviceaccount",          "serviceaccount-controller"),
    ("clusterrole-aggregation", "clusterrole-aggregation-controller"),
    ("root-ca-cert-publisher",  "root-ca-certificate-publisher-controller"),
    ("replicaset",              "replicaset-controller"),
    ("replicationcontroller",   "replicationcontroller-controller"),
    ("deployment",              "deployment-controller"),
    ("daemonset",               "daemonset-controller"),
    ("statefulset",             "statefulset-controller"),
    ("job",                     "job-controller"),
    ("cronjob",                 "cronjob-controller"),
    ("ttl-after-finished",      "ttl-after-finished-controller"),
    ("nodelifecycle",           "node-lifecycle-controller"),
    ("endpointslice",           "endpointslice-controller"),
    ("endpoint",                "endpoints-controller"),
    ("disruption",              "disruption-controller"),
    ("persistentvolume-binder", "persistentvolume-binder-controller"),
    ("pvc-protection",          "persistentvolumeclaim-protection-controller"),
    ("pv-protection",           "persistentvolume-protection-controller"),
    ("horizontalpodautoscaling", "horizontal-pod-autoscaler-controller"),
    ("csrsigning",              "certificatesigningrequest-signing-controller"),
    ("csrapproving",            "certificatesigningrequest-approving-controller"),
    ("csrcleaner",              "certificatesigningrequest-cleaner-controller"),
    ("resourcequota",           "resourcequota-controller"),
    ("resourceclaim",           "resourceclaim-controller"),
];

fn garbage_collector(cx: &Context<'_>) -> Started {
    let gc = GarbageCollector::new(cx.informers.clone(), GcConfig::default());
    // The HTTP side serves its graph.
    cx.handle.set_gc(Some(gc.clone()));
    Ok(Some(gc.run(cx.stop.clone()).boxed()))
}

fn namespace(cx: &Context<'_>) -> Started {
    let made = NamespaceController::new(cx.informers, NamespaceControllerConfig::default());
    cx.run(made, NamespaceController::run)
}

fn serviceaccount(cx: &Context<'_>) -> Started {
    let made = ServiceAccountController::new(cx.informers);
    cx.run(made, ServiceAccountController::run)
}

/// Only with a CA to sign with (the server's own, or --cluster-signing-cert-file's).
fn csr_signing(cx: &Context<'_>) -> Started {
    let Some((cert, key, duration)) = cx.options.signing.clone() else {
        return Ok(None);
    };
    let authority = SigningAuthority::new(&cert, &key, duration).map_err(|e| e.to_string())?;
    cx.run(
        CsrSigningController::new(cx.informers, authority),
        CsrSigningController::run,
    )
}

fn pvc_protection(cx: &Context<'_>) -> Started {
    cx.run(
        PvcProtectionController::new(cx.informers),
        PvcProtectionController::run,
    )
}

fn pv_protection(cx: &Context<'_>) -> Started {
    cx.run(
        PvProtectionController::new(cx.informers),
        PvProtectionController::run,
    )
}

fn horizontal_pod_autoscaler(cx: &Context<'_>) -> Started {
    cx.run(
        HorizontalController::new(
            cx.informers,
            controllers::podautoscaler::HorizontalConfig {
                sync_period: cx.options.hpa_sync_period,
                metrics: cx.options.resource_metrics.clone(),
            },
        ),
        HorizontalController::run,
    )
}

fn resourcequota(cx: &Context<'_>) -> Started {
    cx.run(
        ResourceQuotaController::new(cx.informers),
        ResourceQuotaController::run,
    )
}

fn resourceclaim(cx: &Context<'_>) -> Started {
    cx.run(
        ResourceClaimController::new(cx.informers),
        ResourceClaimController::run,
    )
}

fn csr_approving(cx: &Context<'_>) -> Started {
    cx.run(
        CsrApprovingController::new(cx.informers),
        CsrApprovingController::run,
    )
}

fn csr_cleaner(cx: &Context<'_>) -> Started {
    cx.run(
        CsrCleanerController::new(cx.informers.registry()),
        CsrCleanerController::run,
    )
}

fn clusterrole_aggregation(cx: &Context<'_>) -> Started {
    let made = ClusterRoleAggregationController::new(cx.informers);
    cx.run(made, ClusterRoleAggregationController::run)
}

/// Only with a secure port: without one there is no CA bundle to publish.
fn root_ca_publisher(cx: &Context<'_>) -> Started {
    let Some(bundle) = cx.options.root_ca.clone() else {
        return Ok(None);
    };
    cx.run(
        RootCaPublisher::new(cx.informers, bundle),
        RootCaPublisher::run,
    )
}

fn replicaset(cx: &Context<'_>) -> Started {
    let config = ReplicaSetControllerConfig::for_kind(ReplicaSetKind::ReplicaSet);
    cx.run(
        ReplicaSetController::new(cx.informers, config),
        ReplicaSetController::run,
    )
}

fn replicationcontroller(cx: &Context<'_>) -> Started {
    let config = ReplicaSetControllerConfig::for_kind(ReplicaSetKind::ReplicationController);
    cx.run(
        ReplicaSetController::new(cx.informers, config),
        ReplicaSetController::run,
    )
}

fn deployment(cx: &Context<'_>) -> Started {
    let made = DeploymentController::new(cx.informers, DeploymentControllerConfig::default());
    cx.run(made, DeploymentController::run)
}

fn daemonset(cx: &Context<'_>) -> Started {
    let made = DaemonSetController::new(cx.informers, DaemonSetControllerConfig::default());
    cx.run(made, DaemonSetController::run)
}

fn statefulset(cx: &Context<'_>) -> Started {
    let made = StatefulSetController::new(cx.informers, StatefulSetControllerConfig::default());
    cx.run(made, StatefulSetController::run)
}

fn job(cx: &Context<'_>) -> Started {
    let made = JobController::new(cx.informers, JobControllerConfig::default());
    cx.run(made, JobController::run)
}

fn cronjob(cx: &Context<'_>) -> Started {
    let made = CronJobController::new(cx.informers, CronJobControllerConfig::default());
    cx.run(made, CronJobController::run)
}

fn ttl_after_finished(cx: &Context<'_>) -> Started {
    let made = TtlAfterFinishedController::new(cx.informers, TtlAfterFinishedConfig::default());
    cx.run(made, TtlAfterFinishedController::run)
}

fn node_lifecycle(cx: &Context<'_>) -> Started {
    let made = NodeLifecycleController::new(cx.informers, NodeLifecycleConfig::default());
    cx.run(made, NodeLifecycleController::run)
}

fn taint_eviction(cx: &Context<'_>) -> Started {
    let made = TaintEvictionController::new(cx.informers);
    cx.run(made, TaintEvictionController::run)
}

fn endpointslice(cx: &Context<'_>) -> Started {
    let config = EndpointSliceControllerConfig::default();
    cx.run(
        EndpointSliceController::new(cx.informers, config),
        EndpointSliceController::run,
    )
}

fn endpoints(cx: &Context<'_>) -> Started {
    let made = EndpointsController::new(cx.informers, EndpointsControllerConfig::default());
    cx.run(made, EndpointsController::run)
}

fn disruption(cx: &Context<'_>) -> Started {
    let made = DisruptionController::new(cx.informers, DisruptionControllerConfig::default());
    cx.run(made, DisruptionController::run)
}

fn persistentvolume_binder(cx: &Context<'_>) -> Started {
    let made = PersistentVolumeController::new(cx.informers);
    cx.run(made, PersistentVolumeController::run)
}

/// The controller `name` (or an alias) stands for.
fn descriptor(name: &str) -> Option<&'static Descriptor> {
    let name = ALIASES
        .iter()
        .find_map(|(alias, canonical)| (*alias == name).then_some(*canonical))
        .unwrap_or(name);
    CONTROLLERS.iter().find(|d| d.name == name)
}

#[derive(Debug, Error, PartialEq)]
#[error("{name:?} is not in the list of known controllers ({})", known())]
pub struct UnknownController {
    pub name: String,
}

fn known() -> String {
    let names: Vec<&str> = CONTROLLERS.iter().map(|d| d.name).collect();
    names.join(", ")
}

/// `--controllers`, checked: every name known, aliases made upstream's names.
#[derive(Clone, Debug, PartialEq)]
pub struct Selection(Vec<String>);

impl Selection {
    /// Refuses a name no controller has, with or without its `-`.
    pub fn parse(items: &[String]) -> Result<Self, UnknownController> {
        let mut checked = Vec::new();
        for item in items.iter().map(|i| i.trim()).filter(|i| !i.is_empty()) {
            if item == "*" {
                checked.push(item.to_string());
                continue;
            }
            let (sign, name) = match item.strip_prefix('-') {
                Some(name) => ("-", name),
                None => ("", item),
            };
            let Some(d) = descriptor(name) else {
                return Err(UnknownController { name: name.into() });
            };
            checked.push(format!("{sign}{}", d.name));
        }
        Ok(Self(checked))
    }

    /// The first item that names the controller decides; else `*` runs it if it is on by
    /// default; else it does not run.
    pub fn is_enabled(&self, d: &Descriptor) -> bool {
        let mut star = false;
        for item in &self.0 {
            if item == d.name {
                return true;
            }
            if item.strip_prefix('-') == Some(d.name) {
                return false;
            }
            star |= item == "*";
        }
        star && d.default_on
    }
}

impl Default for Selection {
    /// `*`, upstream's default.
    fn default() -> Self {
        Self(vec!["*".into()])
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::options::Options;

    fn selection(args: &[&str]) -> Result<Selection, UnknownController> {
        let options = Options::parse_from([&["apiserver"], args].concat());
        Selection::parse(&options.controllers)
    }

    fn enabled(selection: &Selection) -> Vec<&'static str> {
        CONTROLLERS
            .iter()
            .filter(|d| selection.is_enabled(d))
            .map(|d| d.name)
            .collect()
    }

    fn all() -> Vec<&'static str> {
        CONTROLLERS.iter().map(|d| d.name).collect()
    }

    #[test]
    fn every_controller_runs_by_default_and_with_a_star() {
        let default = selection(&[]).expect("default");
        assert_eq!(default, Selection::default());
        assert_eq!(enabled(&default), all());
        assert_eq!(enabled(&selection(&["--controllers=*"]).expect("*")), all());
        assert!(all().contains(&"garbage-collector-controller"));
        assert!(all().contains(&"persistentvolume-binder-controller"));
    }

    #[test]
    fn a_minus_turns_one_off() {
        let s = selection(&["--controllers=*,-deployment-controller"]).expect("parsed");
        let expected: Vec<_> = all()
            .into_iter()
            .filter(|n| *n != "deployment-controller")
            .collect();
        assert_eq!(enabled(&s), expected);
        // By an alias too, repeated flags adding up.
        let s = selection(&["--controllers", "*", "--controllers", "-deployment"]).expect("parsed");
        assert_eq!(enabled(&s), expected);
    }

    #[test]
    fn names_alone_run_only_those() {
        let s = selection(&["--controllers=job-controller,cronjob"]).expect("parsed");
        assert_eq!(enabled(&s), ["job-controller", "cronjob-controller"]);
        // Nothing named, no star: nothing runs.
        let s = selection(&["--controllers="]).expect("parsed");
        assert!(enabled(&s).is_empty());
    }

    #[test]
    fn the_first_item_naming_a_controller_decides() {
        let s = selection(&["--controllers=-job-controller,*,job-controller"]).expect("parsed");
        assert!(!enabled(&s).contains(&"job-controller"));
        let s = selection(&["--controllers=job-controller,-job-controller"]).expect("parsed");
        assert_eq!(enabled(&s), ["job-controller"]);
    }

    #[test]
    fn a_star_leaves_controllers_off_by_default_off() {
        let off = controller("off-by-default-controller", false, |_| Ok(None));
        let star = Selection::default();
        assert!(!star.is_enabled(&off));
        let named = Selection(vec!["*".into(), off.name.into()]);
        assert!(named.is_enabled(&off));
    }

    #[test]
    fn unknown_names_are_refused() {
        let refused = selection(&["--controllers=*,nosuch"]).expect_err("unknown");
        assert_eq!(refused.name, "nosuch");
        let said = refused.to_string();
        assert!(
            said.starts_with("\"nosuch\" is not in the list of known controllers"),
            "{said}"
        );
        assert!(said.contains("deployment-controller"), "{said}");
        let refused = selection(&["--controllers=-nosuch"]).expect_err("unknown");
        assert_eq!(refused.name, "nosuch");
        // The scheduler is not a kube-controller-manager controller.
        assert!(selection(&["--controllers=scheduler"]).is_err());
    }

    #[test]
    fn names_are_unique_and_aliases_name_controllers() {
        let aliases = ALIASES.iter().map(|(alias, _)| *alias);
        let mut names: Vec<&str> = CONTROLLERS.iter().map(|d| d.name).chain(aliases).collect();
        let count = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), count);
        for (alias, name) in ALIASES {
            assert_eq!(descriptor(alias).map(|d| d.name), Some(*name));
        }
    }
}

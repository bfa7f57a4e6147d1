//! Every built-in kind whose schema is generated: the types k8s-openapi implements `Resource`
//! for, in the release we describe. discover.rs checks this list against k8s-openapi's
//! sources, so an upgrade that adds or drops kinds fails the build until the list follows.

use std::borrow::Cow;

use k8s_openapi::{ListableResource, Resource};
use schemars::{JsonSchema, Schema, SchemaGenerator};

pub struct Kind {
    /// The type's path under k8s_openapi, as written in the list.
    pub path: &'static str,
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub list_kind: Option<&'static str>,
    /// Upstream's definition name, e.g. "io.k8s.api.core.v1.Pod".
    pub name: fn() -> Cow<'static, str>,
    /// Adds the kind's schema (and all it references) to the generator's definitions.
    pub generate: fn(&mut SchemaGenerator) -> Schema,
}

impl Kind {
    const fn listable<T: ListableResource + JsonSchema>(path: &'static str) -> Kind {
        Kind {
            list_kind: Some(T::LIST_KIND),
            ..Kind::single::<T>(path)
        }
    }

    const fn single<T: Resource + JsonSchema>(path: &'static str) -> Kind {
        Kind {
            path,
            group: T::GROUP,
            version: T::VERSION,
            kind: T::KIND,
            list_kind: None,
            name: T::schema_name,
            generate: SchemaGenerator::subschema_for::<T>,
        }
    }
}

macro_rules! kinds {
    ($($constructor:ident $($segment:ident)::+;)*) => {
        &[$(Kind::$constructor::<k8s_openapi::$($segment)::+>(stringify!($($segment)::+)),)*]
    };
}

/// `listable` kinds have a List kind too.
pub static KINDS: &[Kind] = kinds! {
    listable api::admissionregistration::v1::MutatingWebhookConfiguration;
    listable api::admissionregistration::v1::ValidatingAdmissionPolicy;
    listable api::admissionregistration::v1::ValidatingAdmissionPolicyBinding;
    listable api::admissionregistration::v1::ValidatingWebhookConfiguration;
    listable api::admissionregistration::v1alpha1::MutatingAdmissionPolicy;
    listable api::admissionregistration::v1alpha1::MutatingAdmissionPolicyBinding;
    listable api::admissionregistration::v1beta1::MutatingAdmissionPolicy;
    listable api::admissionregistration::v1beta1::MutatingAdmissionPolicyBinding;
    listable api::apiserverinternal::v1alpha1::StorageVersion;
    listable api::apps::v1::ControllerRevision;
    listable api::apps::v1::DaemonSet;
    listable api::apps::v1::Deployment;
    listable api::apps::v1::ReplicaSet;
    listable api::apps::v1::StatefulSet;
    single api::authentication::v1::SelfSubjectReview;
    single api::authentication::v1::TokenRequest;
    single api::authentication::v1::TokenReview;
    single api::authorization::v1::LocalSubjectAccessReview;
    single api::authorization::v1::SelfSubjectAccessReview;
    single api::authorization::v1::SelfSubjectRulesReview;
    single api::authorization::v1::SubjectAccessReview;
    listable api::autoscaling::v1::HorizontalPodAutoscaler;
    single api::autoscaling::v1::Scale;
    listable api::autoscaling::v2::HorizontalPodAutoscaler;
    listable api::batch::v1::CronJob;
    listable api::batch::v1::Job;
    listable api::certificates::v1::CertificateSigningRequest;
    listable api::certificates::v1alpha1::ClusterTrustBundle;
    listable api::certificates::v1beta1::ClusterTrustBundle;
    listable api::certificates::v1beta1::PodCertificateRequest;
    listable api::coordination::v1::Lease;
    listable api::coordination::v1alpha2::LeaseCandidate;
    listable api::coordination::v1beta1::LeaseCandidate;
    single api::core::v1::Binding;
    listable api::core::v1::ComponentStatus;
    listable api::core::v1::ConfigMap;
    listable api::core::v1::Endpoints;
    listable api::core::v1::Event;
    listable api::core::v1::LimitRange;
    listable api::core::v1::Namespace;
    listable api::core::v1::Node;
    listable api::core::v1::PersistentVolume;
    listable api::core::v1::PersistentVolumeClaim;
    listable api::core::v1::Pod;
    listable api::core::v1::PodTemplate;
    listable api::core::v1::ReplicationController;
    listable api::core::v1::ResourceQuota;
    listable api::core::v1::Secret;
    listable api::core::v1::Service;
    listable api::core::v1::ServiceAccount;
    listable api::discovery::v1::EndpointSlice;
    listable api::events::v1::Event;
    listable api::flowcontrol::v1::FlowSchema;
    listable api::flowcontrol::v1::PriorityLevelConfiguration;
    listable api::networking::v1::IPAddress;
    listable api::networking::v1::Ingress;
    listable api::networking::v1::IngressClass;
    listable api::networking::v1::NetworkPolicy;
    listable api::networking::v1::ServiceCIDR;
    listable api::networking::v1beta1::IPAddress;
    listable api::networking::v1beta1::ServiceCIDR;
    listable api::node::v1::RuntimeClass;
    single api::policy::v1::Eviction;
    listable api::policy::v1::PodDisruptionBudget;
    listable api::rbac::v1::ClusterRole;
    listable api::rbac::v1::ClusterRoleBinding;
    listable api::rbac::v1::Role;
    listable api::rbac::v1::RoleBinding;
    listable api::resource::v1::DeviceClass;
    listable api::resource::v1::ResourceClaim;
    listable api::resource::v1::ResourceClaimTemplate;
    listable api::resource::v1::ResourceSlice;
    listable api::resource::v1alpha3::DeviceTaintRule;
    listable api::resource::v1beta1::DeviceClass;
    listable api::resource::v1beta1::ResourceClaim;
    listable api::resource::v1beta1::ResourceClaimTemplate;
    listable api::resource::v1beta1::ResourceSlice;
    listable api::resource::v1beta2::DeviceClass;
    listable api::resource::v1beta2::ResourceClaim;
    listable api::resource::v1beta2::ResourceClaimTemplate;
    listable api::resource::v1beta2::ResourceSlice;
    listable api::scheduling::v1::PriorityClass;
    listable api::scheduling::v1alpha1::Workload;
    listable api::storage::v1::CSIDriver;
    listable api::storage::v1::CSINode;
    listable api::storage::v1::CSIStorageCapacity;
    listable api::storage::v1::StorageClass;
    listable api::storage::v1::VolumeAttachment;
    listable api::storage::v1::VolumeAttributesClass;
    listable api::storage::v1beta1::VolumeAttributesClass;
    listable api::storagemigration::v1beta1::StorageVersionMigration;
    listable apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    single apimachinery::pkg::apis::meta::v1::APIGroup;
    single apimachinery::pkg::apis::meta::v1::APIGroupList;
    single apimachinery::pkg::apis::meta::v1::APIResourceList;
    single apimachinery::pkg::apis::meta::v1::APIVersions;
    single apimachinery::pkg::apis::meta::v1::Status;
    listable kube_aggregator::pkg::apis::apiregistration::v1::APIService;
};

//! The APIs that configure and ask the server itself: admission configuration, aggregation,
//! API Priority and Fairness, certificate requests, and the authentication and authorization
//! reviews.

use super::super::printers;
use super::super::{GcPolicy, ResourceInfo, SubresourceInfo};
use super::{resource, strings, CLUSTER, NAMESPACED};
use crate::strategy::{admissionregistration, apiregistration, certificates, flowcontrol};

/// What admission consults besides its built-in plugins.
pub(super) fn admission() -> Vec<ResourceInfo> {
    const GROUP: &str = "admissionregistration.k8s.io";
    vec![
        ResourceInfo {
            categories: strings(&["api-extensions"]),
            columns: printers::webhookconfiguration_columns(),
            strategy: |_, _| {
                Box::new(admissionregistration::WebhookConfigurationStrategy { mutating: true })
            },
            ..resource(
                GROUP,
                "MutatingWebhookConfiguration",
                "mutatingwebhookconfigurations",
                CLUSTER,
            )
        },
        ResourceInfo {
            categories: strings(&["api-extensions"]),
            subresources: vec![SubresourceInfo::status()],
            columns: printers::admissionpolicy_columns(),
            has_generation: true,
            strategy: |_, _| Box::new(admissionregistration::PolicyStrategy),
            ..resource(
                GROUP,
                "ValidatingAdmissionPolicy",
                "validatingadmissionpolicies",
                CLUSTER,
            )
        },
        ResourceInfo {
            categories: strings(&["api-extensions"]),
            columns: printers::admissionpolicybinding_columns(),
            has_generation: true,
            strategy: |_, _| Box::new(admissionregistration::PolicyBindingStrategy),
            ..resource(
                GROUP,
                "ValidatingAdmissionPolicyBinding",
                "validatingadmissionpolicybindings",
                CLUSTER,
            )
        },
        ResourceInfo {
            categories: strings(&["api-extensions"]),
            columns: printers::webhookconfiguration_columns(),
            strategy: |_, _| {
                Box::new(admissionregistration::WebhookConfigurationStrategy { mutating: false })
            },
            ..resource(
                GROUP,
                "ValidatingWebhookConfiguration",
                "validatingwebhookconfigurations",
                CLUSTER,
            )
        },
    ]
}

/// Which server answers each group-version (the aggregation layer's registrations).
pub(super) fn aggregation() -> Vec<ResourceInfo> {
    vec![ResourceInfo {
        categories: strings(&["api-extensions"]),
        subresources: vec![SubresourceInfo::status()],
        columns: printers::apiservice_columns(),
        strategy: |_, _| Box::new(apiregistration::APIServiceStrategy),
        ..resource(
            "apiregistration.k8s.io",
            "APIService",
            "apiservices",
            CLUSTER,
        )
    }]
}

/// Requests for certificates from the cluster's signers.
pub(super) fn certificate_requests() -> Vec<ResourceInfo> {
    vec![ResourceInfo {
        short_names: strings(&["csr"]),
        subresources: vec![
            SubresourceInfo::status(),
            SubresourceInfo::in_place("approval", super::super::subresource::READ_WRITE),
        ],
        columns: printers::csr_columns(),
        strategy: |_, _| Box::new(certificates::CertificateSigningRequestStrategy),
        ..resource(
            "certificates.k8s.io",
            "CertificateSigningRequest",
            "certificatesigningrequests",
            CLUSTER,
        )
    }]
}

/// API Priority and Fairness' configuration.
pub(super) fn flow_control() -> Vec<ResourceInfo> {
    const GROUP: &str = "flowcontrol.apiserver.k8s.io";
    vec![
        ResourceInfo {
            subresources: vec![SubresourceInfo::status()],
            columns: printers::flowschema_columns(),
            row_order: Some(printers::flowschema_order),
            has_generation: true,
            strategy: |_, _| Box::new(flowcontrol::FlowSchemaStrategy),
            ..resource(GROUP, "FlowSchema", "flowschemas", CLUSTER)
        },
        ResourceInfo {
            subresources: vec![SubresourceInfo::status()],
            columns: printers::prioritylevelconfiguration_columns(),
            has_generation: true,
            strategy: |_, _| Box::new(flowcontrol::PriorityLevelConfigurationStrategy),
            ..resource(
                GROUP,
                "PriorityLevelConfiguration",
                "prioritylevelconfigurations",
                CLUSTER,
            )
        },
    ]
}

/// The authentication and authorization reviews: create only, nothing stored (upstream
/// registers them as REST storage without a store); the apiserver answers each from the
/// request.
pub(super) fn reviews() -> Vec<ResourceInfo> {
    const AUTHZ: &str = "authorization.k8s.io";
    let review = |group: &str, kind: &str, plural: &str, namespaced: bool| ResourceInfo {
        verbs: strings(&["create"]),
        create_only: true,
        default_gc_policy: GcPolicy::Unsupported,
        storage_path: String::new(),
        ..resource(group, kind, plural, namespaced)
    };
    vec![
        review(
            "authentication.k8s.io",
            "SelfSubjectReview",
            "selfsubjectreviews",
            CLUSTER,
        ),
        review(
            "authentication.k8s.io",
            "TokenReview",
            "tokenreviews",
            CLUSTER,
        ),
        review(
            AUTHZ,
            "LocalSubjectAccessReview",
            "localsubjectaccessreviews",
            NAMESPACED,
        ),
        review(
            AUTHZ,
            "SelfSubjectAccessReview",
            "selfsubjectaccessreviews",
            CLUSTER,
        ),
        review(
            AUTHZ,
            "SelfSubjectRulesReview",
            "selfsubjectrulesreviews",
            CLUSTER,
        ),
        review(
            AUTHZ,
            "SubjectAccessReview",
            "subjectaccessreviews",
            CLUSTER,
        ),
    ]
}

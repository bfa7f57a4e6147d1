//! apps/v1 and batch/v1: the workload kinds, all built around core's pod template.

use super::core::{POD_TEMPLATE_SPEC, TEMPLATED_SPEC};
use super::{Field, PatchSchema, CONDITIONS_STATUS, OBJECT_META};

static DEPLOYMENT_SPEC: PatchSchema = PatchSchema {
    name: "DeploymentSpec",
    fields: &[
        Field::nested("template", &POD_TEMPLATE_SPEC),
        Field::retain("strategy"),
    ],
};

pub(super) static DEPLOYMENT: PatchSchema = PatchSchema {
    name: "Deployment",
    fields: &[
        Field::nested("metadata", &OBJECT_META),
        Field::nested("spec", &DEPLOYMENT_SPEC),
        Field::nested("status", &CONDITIONS_STATUS),
    ],
};

/// ReplicaSet, StatefulSet, DaemonSet and Job share this shape: a templated spec and
/// conditions merged by type (StatefulSet's volumeClaimTemplates are atomic upstream).
static TEMPLATED_WITH_CONDITIONS: PatchSchema = PatchSchema {
    name: "Workload",
    fields: &[
        Field::nested("metadata", &OBJECT_META),
        Field::nested("spec", &TEMPLATED_SPEC),
        Field::nested("status", &CONDITIONS_STATUS),
    ],
};

pub(super) static REPLICA_SET: &PatchSchema = &TEMPLATED_WITH_CONDITIONS;
pub(super) static STATEFUL_SET: &PatchSchema = &TEMPLATED_WITH_CONDITIONS;
pub(super) static DAEMON_SET: &PatchSchema = &TEMPLATED_WITH_CONDITIONS;
pub(super) static JOB: &PatchSchema = &TEMPLATED_WITH_CONDITIONS;

static JOB_TEMPLATE_SPEC: PatchSchema = PatchSchema {
    name: "JobTemplateSpec",
    fields: &[
        Field::nested("metadata", &OBJECT_META),
        Field::nested("spec", &TEMPLATED_SPEC),
    ],
};

static CRON_JOB_SPEC: PatchSchema = PatchSchema {
    name: "CronJobSpec",
    fields: &[Field::nested("jobTemplate", &JOB_TEMPLATE_SPEC)],
};

/// CronJobStatus.active is atomic upstream; nothing in the status is merged.
pub(super) static CRON_JOB: PatchSchema = PatchSchema {
    name: "CronJob",
    fields: &[
        Field::nested("metadata", &OBJECT_META),
        Field::nested("spec", &CRON_JOB_SPEC),
    ],
};
